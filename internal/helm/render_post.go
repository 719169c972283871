package helm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"helm.sh/helm/v4/pkg/postrenderer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/ferry-ci/ferry/internal/budget"
	"github.com/ferry-ci/ferry/internal/kschema"
)

// postRenderer runs a release's kustomize post-renderers in order over
// what the chart rendered, each bounded: its JSON patches by
// limits.PatchCopySize, its output by limits.RenderedBytes.
type postRenderer struct {
	kustomizations []Kustomize
	limits         budget.Limits
	at             stage
}

var _ postrenderer.PostRenderer = (*postRenderer)(nil)

func (p *postRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := in
	for i, k := range p.kustomizations {
		field := fmt.Sprintf("spec.postRenderers[%d].kustomize", i)
		p.at(field)
		b, err := k.build(out.Bytes(), p.limits.PatchCopySize)
		var over *budget.Exceeded
		if errors.As(err, &over) {
			over.What = field
			return nil, over
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if n := int64(len(b)); n > p.limits.RenderedBytes {
			return nil, &budget.Exceeded{What: field, Doing: fmt.Sprintf("its output (%d bytes) is more than", n),
				Limit: "renderedBytes", Value: budget.Size(p.limits.RenderedBytes)}
		}
		out = bytes.NewBuffer(b)
	}
	p.at(stageTemplates)
	return out, nil
}

// build runs kustomize over manifests with k's patches and images, in
// memory, plugins off, JSON patches bounded to patchCopy bytes of copies
// (budget.WithPatchCopyLimit). A kustomize panic comes back as an error.
func (k Kustomize) build(manifests []byte, patchCopy int64) (out []byte, err error) {
	const input = "helm-output.yaml"
	kust := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{input},
	}
	for _, im := range k.Images {
		kust.Images = append(kust.Images, kustypes.Image{Name: im.Name, NewName: im.NewName, NewTag: im.NewTag, Digest: im.Digest})
	}
	for _, p := range k.Patches {
		kp := kustypes.Patch{Patch: p.Patch}
		if s := p.Target; s != nil {
			kp.Target = &kustypes.Selector{LabelSelector: s.LabelSelector, AnnotationSelector: s.AnnotationSelector}
			kp.Target.Group, kp.Target.Version, kp.Target.Kind = s.Group, s.Version, s.Kind
			kp.Target.Name, kp.Target.Namespace = s.Name, s.Namespace
		}
		kust.Patches = append(kust.Patches, kp)
	}
	kb, err := json.Marshal(kust)
	if err != nil {
		return nil, err
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile(input, manifests); err != nil {
		return nil, err
	}
	if err := fs.WriteFile("kustomization.yaml", kb); err != nil {
		return nil, err
	}

	// The kustomization is made here and sets no openapi: it shares
	// kustomize's schema with other builds.
	defer kschema.Share()()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize build panicked: %v", r)
		}
	}()
	var rm resmap.ResMap
	err = budget.WithPatchCopyLimit(patchCopy, func() error {
		var err error
		rm, err = krusty.MakeKustomizer(&krusty.Options{
			LoadRestrictions: kustypes.LoadRestrictionsRootOnly,
			PluginConfig:     kustypes.DisabledPluginConfig(),
		}).Run(fs, ".")
		return err
	})
	if err != nil {
		return nil, err
	}
	return rm.AsYaml()
}
