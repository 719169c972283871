package inputprovider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/adler32"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ferry-ci/ferry/internal/origin"
	"github.com/ferry-ci/ferry/internal/resourceset"
)

// The provider types Resolve calls an API for.
const (
	GitHubPullRequest = "GitHubPullRequest"
	GitHubBranch      = "GitHubBranch"
	GitHubTag         = "GitHubTag"
	GiteaPullRequest  = "GiteaPullRequest"
	GiteaBranch       = "GiteaBranch"
	GiteaTag          = "GiteaTag"
	OCIArtifactTag    = "OCIArtifactTag"
)

// Types are the provider types Resolve supports, in the order the API
// documents them.
var Types = []string{GitHubPullRequest, GitHubBranch, GitHubTag, GiteaPullRequest, GiteaBranch, GiteaTag, OCIArtifactTag}

// DefaultLimit and MaxLimit bound spec.filter.limit, as documented.
const (
	DefaultLimit = 100
	MaxLimit     = 10000
)

// Forge kinds, as forge.Kind spells them.
const (
	KindGitHub = "github"
	KindGitea  = "gitea"
)

// Forge is the forge the job runs on: its API is called with Token, and
// Token goes to the origin of APIURL alone.
type Forge struct {
	// Kind is KindGitHub or KindGitea.
	Kind string
	// ServerURL is the forge's web root (https://github.com, a Gitea
	// server's ROOT_URL): a provider whose spec.url is under it is on this
	// forge.
	ServerURL string
	// APIURL is the REST API's base: https://api.github.com/ or
	// <server>/api/v3/ for GitHub, the server's root (or <root>/api/v1)
	// for Gitea.
	APIURL string
	Token  string
}

// Options say which APIs Resolve may call, and with what.
type Options struct {
	// Forge, when set, is called with its token for providers of its
	// kind whose spec.url is on its server.
	Forge *Forge
	// AllowHosts are the host:port pairs (a host alone means its scheme's
	// default port) of other forges and of registries that may be read
	// anonymously.
	AllowHosts []string
	// Transport carries every request; nil is http.DefaultTransport.
	Transport http.RoundTripper
}

// Resolve returns the input sets provider exports, as the Flux Operator
// computes them: one per change request, branch or tag its filter keeps,
// each over its spec.defaultValues. A provider Resolve may not or cannot
// call (a type it does not support, a host opts do not allow, a skip
// rule ferry cannot follow offline) gives a *resourceset.SkipError that
// says why.
func Resolve(ctx context.Context, provider *unstructured.Unstructured, opts Options) ([]map[string]any, error) {
	p, err := parse(provider)
	if err != nil {
		return nil, err
	}
	var items []item
	switch p.typ {
	case GitHubPullRequest, GitHubBranch, GitHubTag, GiteaPullRequest, GiteaBranch, GiteaTag:
		items, err = p.git(ctx, opts)
	case OCIArtifactTag:
		items, err = p.oci(ctx, opts)
	default:
		return nil, p.skip(fmt.Sprintf("ferry does not call the API of type %s (it resolves %s): give its inputs in ferry.yaml inputProviders", typeOrNone(p.typ), strings.Join(Types, ", ")))
	}
	if err != nil {
		return nil, err
	}
	return p.export(items), nil
}

// provider is the part of a ResourceSetInputProvider's spec Resolve reads.
type provider struct {
	ref      string // ResourceSetInputProvider/namespace/name
	typ      string
	url      string
	insecure bool
	defaults map[string]any

	limit                        int
	labels                       []string
	includeBranch, excludeBranch *regexp.Regexp
	includeTag, excludeTag       *regexp.Regexp
	semver                       *semver.Constraints
	skipLabels                   []string
}

// item is one change request, branch or tag, before export.
type item struct {
	number int // change requests
	fields map[string]string
	labels []string
	name   string // branch or tag name, for filters and ids
}

func typeOrNone(t string) string { return cmp.Or(t, "(none)") }

func parse(u *unstructured.Unstructured) (*provider, error) {
	p := &provider{ref: "ResourceSetInputProvider/" + u.GetNamespace() + "/" + u.GetName(), limit: DefaultLimit}
	p.typ, _, _ = unstructured.NestedString(u.Object, "spec", "type")
	p.url, _, _ = unstructured.NestedString(u.Object, "spec", "url")
	p.insecure, _, _ = unstructured.NestedBool(u.Object, "spec", "insecure")
	if dv, ok, _ := unstructured.NestedMap(u.Object, "spec", "defaultValues"); ok {
		p.defaults = dv
	}
	f, _, _ := unstructured.NestedMap(u.Object, "spec", "filter")
	if v, ok := f["limit"]; ok {
		n, ok := toInt(v)
		if !ok || n < 0 || n > MaxLimit {
			return nil, fmt.Errorf("%s: spec.filter.limit %v is not a number from 0 to %d", p.ref, v, MaxLimit)
		}
		if n > 0 {
			p.limit = n
		}
	}
	p.labels = stringList(f["labels"])
	var err error
	re := func(field string) *regexp.Regexp {
		s, _ := f[field].(string)
		if s == "" || err != nil {
			return nil
		}
		r, e := regexp.Compile(s)
		if e != nil {
			err = fmt.Errorf("%s: spec.filter.%s: %w", p.ref, field, e)
		}
		return r
	}
	p.includeBranch, p.excludeBranch = re("includeBranch"), re("excludeBranch")
	p.includeTag, p.excludeTag = re("includeTag"), re("excludeTag")
	if err != nil {
		return nil, err
	}
	if s, _ := f["semver"].(string); s != "" {
		c, err := semver.NewConstraint(s)
		if err != nil {
			return nil, fmt.Errorf("%s: spec.filter.semver %q: %w", p.ref, s, err)
		}
		p.semver = c
	}
	sk, _, _ := unstructured.NestedMap(u.Object, "spec", "skip")
	p.skipLabels = stringList(sk["labels"])
	return p, nil
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		return int(n), true
	case int:
		return n, true
	case float64:
		return int(n), n == float64(int(n))
	}
	return 0, false
}

// stringList is the strings of a YAML list.
func stringList(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *provider) skip(reason string) error {
	return &resourceset.SkipError{ResourceSet: p.ref, Reason: p.ref + " of type " + typeOrNone(p.typ) + ": " + reason}
}

// isChangeRequest reports whether p lists pull requests.
func (p *provider) isChangeRequest() bool { return strings.HasSuffix(p.typ, "PullRequest") }

func (p *provider) isTag() bool { return strings.HasSuffix(p.typ, "Tag") }

// keep applies the filter to items in the API's order: labels (every one
// must be on a change request), the branch or tag expressions, then
// semver (which also sorts, highest first), then the limit. A change
// request the skip rules hold is an error: the operator keeps the
// inputs it exported before, which ferry cannot know.
func (p *provider) keep(items []item) ([]item, error) {
	var out []item
	for _, it := range items {
		if p.isChangeRequest() && slices.ContainsFunc(p.labels, func(l string) bool { return !slices.Contains(it.labels, l) }) {
			continue
		}
		name := it.name
		if p.isTag() {
			if (p.includeTag != nil && !p.includeTag.MatchString(name)) || (p.excludeTag != nil && p.excludeTag.MatchString(name)) {
				continue
			}
		} else if (p.includeBranch != nil && !p.includeBranch.MatchString(name)) || (p.excludeBranch != nil && p.excludeBranch.MatchString(name)) {
			continue
		}
		out = append(out, it)
	}
	if p.isChangeRequest() {
		for _, it := range out {
			if l, ok := skipped(it.labels, p.skipLabels); ok {
				return nil, p.skip(fmt.Sprintf("change request %d is held by spec.skip.labels (%s): the cluster keeps the inputs it exported for it before, which a render cannot know", it.number, l))
			}
		}
	}
	if p.semver != nil && p.isTag() {
		type versioned struct {
			it item
			v  *semver.Version
		}
		var vs []versioned
		for _, it := range out {
			if v, err := semver.NewVersion(it.name); err == nil && p.semver.Check(v) {
				vs = append(vs, versioned{it, v})
			}
		}
		slices.SortStableFunc(vs, func(a, b versioned) int { return b.v.Compare(a.v) })
		out = out[:0]
		for _, v := range vs {
			out = append(out, v.it)
		}
	}
	if len(out) > p.limit {
		out = out[:p.limit]
	}
	return out, nil
}

// sortNewestFirst orders change requests by number, highest first, as
// the API's examples list them.
func sortNewestFirst(items []item) {
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(b.number, a.number) })
}

// skipped reports the skip label that holds a change request with labels.
func skipped(labels, rules []string) (string, bool) {
	for _, r := range rules {
		if not, ok := strings.CutPrefix(r, "!"); ok {
			if !slices.Contains(labels, not) {
				return r, true
			}
		} else if slices.Contains(labels, r) {
			return r, true
		}
	}
	return "", false
}

// export turns the kept items into input sets over spec.defaultValues,
// with the documented fields and ids.
func (p *provider) export(items []item) []map[string]any {
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		in := map[string]any{}
		maps.Copy(in, deepCopy(p.defaults))
		for k, v := range it.fields {
			in[k] = v
		}
		if p.isChangeRequest() {
			in["id"] = strconv.Itoa(it.number)
		} else {
			in["id"] = Checksum(it.name)
		}
		out = append(out, in)
	}
	return out
}

func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return runtime.DeepCopyJSON(m)
}

// Checksum is the id of a branch or tag: the decimal Adler-32 of its
// name, as the API documents.
func Checksum(name string) string {
	return strconv.FormatUint(uint64(adler32.Checksum([]byte(name))), 10)
}

// hostAllowed reports whether u's host and port are in allow, where an
// entry without a port means the default port of u's scheme. For GitHub
// an allowed github.com also allows its API, api.github.com.
func hostAllowed(u *url.URL, allow []string) bool {
	def := "443"
	if strings.EqualFold(u.Scheme, "http") {
		def = "80"
	}
	hp := strings.ToLower(u.Hostname()) + ":" + cmp.Or(u.Port(), def)
	for _, a := range allow {
		a = strings.ToLower(a)
		if _, _, err := net.SplitHostPort(a); err != nil {
			a += ":" + def
		}
		if a == hp {
			return true
		}
	}
	return false
}

// sameOrigin reports whether raw is on the server at base (same
// scheme, host and port, and under its path).
func sameOrigin(u *url.URL, base string) bool {
	b, err := url.Parse(base)
	if err != nil {
		return false
	}
	bo, ok1 := origin.Of(b)
	uo, ok2 := origin.Of(u)
	if !ok1 || !ok2 || bo != uo {
		return false
	}
	return strings.HasPrefix(strings.TrimSuffix(u.Path, "/")+"/", strings.TrimSuffix(b.Path, "/")+"/")
}

// apiError is how a failed call reads: a refusal of an anonymous call
// skips the provider (it needs credentials ferry does not have), any
// other failure is an error.
func (p *provider) apiError(what string, status int, anonymous bool, err error) error {
	if anonymous && (status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound) {
		return p.skip(fmt.Sprintf("%s %s answered %d to an anonymous call: it needs credentials, and ferry does not read spec.secretRef (only the forge the job runs on gets the job's token)", what, p.url, status))
	}
	return fmt.Errorf("%s: %s %s: %w", p.ref, what, p.url, err)
}

var errNotRepo = errors.New("spec.url must be the repository's address, <server>/<owner>/<repo>")
