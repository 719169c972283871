package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/images"
)

// ImagePolicies returns the image policies of the repository at root:
// those ferry.yaml declares under imagePolicies, otherwise the Flux
// ImagePolicy objects (image.toolkit.fluxcd.io, v1beta2 or v1) of its YAML
// files, each joined with the ImageRepository it references. One
// ImageRepository may feed several policies. The same policy found twice
// (a fleet repository's clusters) is kept once when both say the same,
// and is an error naming both files otherwise. Policies are ordered by
// namespace and name; they are not validated here (images.Policy.Compile
// does that, for the policies a run uses).
func ImagePolicies(root string) ([]*images.Policy, error) {
	data, err := os.ReadFile(filepath.Join(root, FileName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		f, err := ParseFile(data)
		if err != nil {
			return nil, err
		}
		if len(f.ImagePolicies) > 0 {
			return fileImagePolicies(f, imagePolicyLines(data)), nil
		}
	}
	objs, err := scanFluxObjects(root)
	if err != nil {
		return nil, err
	}
	return fluxImagePolicies(objs)
}

// fileImagePolicies converts ferry.yaml's entries.
func fileImagePolicies(f *File, lines []int) []*images.Policy {
	var out []*images.Policy
	for i, c := range f.ImagePolicies {
		p := &images.Policy{
			Name:                   c.Name,
			Namespace:              c.Namespace,
			Origin:                 FileName,
			Image:                  c.Image,
			ExclusionList:          c.ExclusionList,
			Insecure:               c.Insecure,
			DigestReflectionPolicy: c.DigestReflectionPolicy,
		}
		if i < len(lines) {
			p.Origin = fmt.Sprintf("%s:%d", FileName, lines[i])
		}
		if p.Namespace == "" {
			p.Namespace = DefaultNamespace
		}
		if c.SecretRef != nil {
			p.SecretRef = c.SecretRef.Name
		}
		if c.FilterTags != nil {
			p.FilterTags = &images.TagFilter{Pattern: c.FilterTags.Pattern, Extract: c.FilterTags.Extract}
		}
		if c.Policy.SemVer != nil {
			p.SemVer = &images.SemVerPolicy{Range: c.Policy.SemVer.Range}
		}
		if c.Policy.Numerical != nil {
			p.Numerical = &images.OrderPolicy{Order: c.Policy.Numerical.Order}
		}
		if c.Policy.Alphabetical != nil {
			p.Alphabetical = &images.OrderPolicy{Order: c.Policy.Alphabetical.Order}
		}
		out = append(out, p)
	}
	sortPolicies(out)
	return out
}

// imagePolicyLines returns the line of each imagePolicies entry of
// ferry.yaml (already parsed, so errors cannot occur here).
func imagePolicyLines(data []byte) []int {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "imagePolicies" {
			var lines []int
			for _, n := range m.Content[i+1].Content {
				lines = append(lines, n.Line)
			}
			return lines
		}
	}
	return nil
}

// imageRepo is an ImageRepository's spec, with where it was found.
type imageRepo struct {
	Image         string
	ExclusionList []string
	SecretRef     string
	Insecure      bool
	origin        string
}

// fluxImagePolicies joins the ImagePolicy objects with their
// ImageRepository objects.
func fluxImagePolicies(objs []FluxObject) ([]*images.Policy, error) {
	repos := map[string]*imageRepo{}
	var policies []FluxObject
	var errs []error
	for _, o := range objs {
		gvk := o.Object.GroupVersionKind()
		if gvk.Group != ImageGroup {
			continue
		}
		switch gvk.Kind {
		case "ImagePolicy":
			policies = append(policies, o)
		case "ImageRepository":
			r, err := readImageRepository(o)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			key := objectNamespace(o.Object) + "/" + o.Object.GetName()
			if prev, ok := repos[key]; ok {
				if !reflect.DeepEqual(*prev, withOrigin(*r, prev.origin)) {
					errs = append(errs, fmt.Errorf("ImageRepository/%s is declared twice, differently: %s and %s", key, prev.origin, r.origin))
				}
				continue
			}
			repos[key] = r
		}
	}
	byKey := map[string]*images.Policy{}
	var out []*images.Policy
	for _, o := range policies {
		p, err := readImagePolicy(o, repos)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		key := p.Namespace + "/" + p.Name
		if prev, ok := byKey[key]; ok {
			a, b := *prev, *p
			a.Origin, b.Origin = "", ""
			if !reflect.DeepEqual(a, b) {
				errs = append(errs, fmt.Errorf("ImagePolicy/%s is declared twice, differently: %s and %s", key, prev.Origin, p.Origin))
			}
			continue
		}
		byKey[key] = p
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sortPolicies(out)
	return out, nil
}

func withOrigin(r imageRepo, origin string) imageRepo {
	r.origin = origin
	return r
}

func sortPolicies(ps []*images.Policy) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Namespace != ps[j].Namespace {
			return ps[i].Namespace < ps[j].Namespace
		}
		return ps[i].Name < ps[j].Name
	})
}

// objectNamespace is the object's namespace, DefaultNamespace when it
// names none.
func objectNamespace(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns
	}
	return DefaultNamespace
}

func readImageRepository(o FluxObject) (*imageRepo, error) {
	u := o.Object
	fail := func(err error) error {
		return fmt.Errorf("ImageRepository/%s/%s (%s): %w", objectNamespace(u), u.GetName(), o.Where(), err)
	}
	r := &imageRepo{origin: o.Where()}
	var err error
	if r.Image, _, err = unstructured.NestedString(u.Object, "spec", "image"); err != nil {
		return nil, fail(err)
	}
	if r.ExclusionList, _, err = unstructured.NestedStringSlice(u.Object, "spec", "exclusionList"); err != nil {
		return nil, fail(err)
	}
	if r.SecretRef, _, err = unstructured.NestedString(u.Object, "spec", "secretRef", "name"); err != nil {
		return nil, fail(err)
	}
	if r.Insecure, _, err = unstructured.NestedBool(u.Object, "spec", "insecure"); err != nil {
		return nil, fail(err)
	}
	if r.Image == "" {
		return nil, fail(errors.New("spec.image is required"))
	}
	return r, nil
}

func readImagePolicy(o FluxObject, repos map[string]*imageRepo) (*images.Policy, error) {
	u := o.Object
	p := &images.Policy{Name: u.GetName(), Namespace: objectNamespace(u), Origin: o.Where()}
	var errs []error
	str := func(fields ...string) (string, bool) {
		s, found, err := unstructured.NestedString(u.Object, fields...)
		if err != nil {
			errs = append(errs, err)
		}
		return s, found
	}
	has := func(fields ...string) bool {
		_, found, _ := unstructured.NestedFieldNoCopy(u.Object, fields...)
		return found
	}
	repoName, _ := str("spec", "imageRepositoryRef", "name")
	repoNS, _ := str("spec", "imageRepositoryRef", "namespace")
	if repoNS == "" {
		repoNS = p.Namespace
	}
	if has("spec", "filterTags") {
		p.FilterTags = &images.TagFilter{}
		p.FilterTags.Pattern, _ = str("spec", "filterTags", "pattern")
		p.FilterTags.Extract, _ = str("spec", "filterTags", "extract")
	}
	if has("spec", "policy", "semver") {
		r, _ := str("spec", "policy", "semver", "range")
		p.SemVer = &images.SemVerPolicy{Range: r}
	}
	if has("spec", "policy", "numerical") {
		order, _ := str("spec", "policy", "numerical", "order")
		p.Numerical = &images.OrderPolicy{Order: order}
	}
	if has("spec", "policy", "alphabetical") {
		order, _ := str("spec", "policy", "alphabetical", "order")
		p.Alphabetical = &images.OrderPolicy{Order: order}
	}
	p.DigestReflectionPolicy, _ = str("spec", "digestReflectionPolicy")
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s (%s): %w", p.ID(), o.Where(), errors.Join(errs...))
	}
	if repoName == "" {
		return nil, fmt.Errorf("%s (%s): spec.imageRepositoryRef.name is required", p.ID(), o.Where())
	}
	r, ok := repos[repoNS+"/"+repoName]
	if !ok {
		return nil, fmt.Errorf("%s (%s): spec.imageRepositoryRef: ImageRepository/%s/%s is not in the repository", p.ID(), o.Where(), repoNS, repoName)
	}
	p.Repository = repoName
	p.Image = r.Image
	p.ExclusionList = r.ExclusionList
	p.SecretRef = r.SecretRef
	p.Insecure = r.Insecure
	return p, nil
}
