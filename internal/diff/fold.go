package diff

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// chartLabels are the labels Helm charts stamp on every object they
// render, which change with every chart version.
var chartLabels = map[string]bool{
	"helm.sh/chart":             true,
	"app.kubernetes.io/version": true,
	"chart":                     true,
}

// checksumPrefix starts the annotations charts put on pod templates so
// that pods roll when a ConfigMap or Secret they read changes
// (checksum/config, checksum/secret).
const checksumPrefix = "checksum/"

// chartMetadata reports whether a label (annotation false) or an
// annotation (annotation true) is one a Helm chart stamps on every object
// and changes with every chart version: the labels helm.sh/chart,
// app.kubernetes.io/version and chart, and the annotations checksum/*.
func chartMetadata(annotation bool, key string) bool {
	if annotation {
		return strings.HasPrefix(key, checksumPrefix)
	}
	return chartLabels[key]
}

// Folded sums the objects of a target whose only changes are chart
// metadata (the labels helm.sh/chart, app.kubernetes.io/version and
// chart, the annotations checksum/*): the reports show them as one line
// instead of one diff each. They still count as changed: applying them
// changes the cluster (and a pod template's labels roll its pods).
type Folded struct {
	// Objects counts them; they are the target's objects with
	// MetadataOnly set.
	Objects int `json:"objects"`
	// Keys are the labels and annotations that changed on them, sorted.
	Keys []string `json:"keys"`
}

// FoldedOf sums the folded objects among objs; nil when there are none.
func FoldedOf(objs []Object) *Folded {
	var f Folded
	for _, o := range objs {
		if len(o.MetadataOnly) == 0 {
			continue
		}
		f.Objects++
		f.Keys = append(f.Keys, o.MetadataOnly...)
	}
	if f.Objects == 0 {
		return nil
	}
	slices.Sort(f.Keys)
	f.Keys = slices.Compact(f.Keys)
	return &f
}

// folded is the target's Folded, else the sum of its objects folded (a
// report made by hand): the renderers leave out every object with
// MetadataOnly and must then say so.
func (t *Target) folded() *Folded {
	if t.Folded != nil {
		return t.Folded
	}
	return FoldedOf(t.Objects)
}

// line is the one line the text and markdown reports give the folded
// objects, with the keys as quote renders them.
func (f *Folded) line(quote func(string) string, flag string) string {
	what := "objects"
	if f.Objects == 1 {
		what = "object"
	}
	keys := make([]string, len(f.Keys))
	for i, k := range f.Keys {
		keys[i] = quote(k)
	}
	return fmt.Sprintf("%d %s: only chart labels and annotations changed (%s); %s shows them", f.Objects, what, strings.Join(keys, ", "), flag)
}

// metadataOnly returns the chart metadata keys that differ between two
// versions of an object when nothing else does; nil when anything else
// differs, or nothing does. Labels and annotations are looked at on the
// object and on every object template it embeds (a pod template's
// metadata, a CronJob's job template, a StatefulSet's claim templates).
// The objects are compared as written, before masking: nothing of them
// leaves this function but key names.
func metadataOnly(base, head *unstructured.Unstructured) []string {
	b, h := base.DeepCopy(), head.DeepCopy()
	bm, hm := map[string]string{}, map[string]string{}
	stripChartMetadata(b.Object, "", bm)
	stripChartMetadata(h.Object, "", hm)
	changed := map[string]bool{}
	for at, v := range bm {
		if hv, ok := hm[at]; !ok || hv != v {
			changed[keyOf(at)] = true
		}
	}
	for at := range hm {
		if _, ok := bm[at]; !ok {
			changed[keyOf(at)] = true
		}
	}
	if len(changed) == 0 {
		return nil
	}
	by, err := manifest.YAML(b)
	if err != nil {
		return nil
	}
	hy, err := manifest.YAML(h)
	if err != nil || string(by) != string(hy) {
		return nil
	}
	keys := make([]string, 0, len(changed))
	for k := range changed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// keyOf is the label or annotation key of a place stripChartMetadata
// recorded.
func keyOf(at string) string {
	_, key, _ := strings.Cut(at, "\x00")
	return key
}

// stripChartMetadata deletes the chart metadata from every metadata
// map's labels and annotations under v (in place) and records each value
// in out under its place (path, then NUL, then key). A labels or
// annotations map left empty is deleted too (the API server makes no
// difference between an empty map and none), so that an object that had
// no other labels compares equal to one without.
func stripChartMetadata(v any, path string, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			at := path + "/" + k
			if meta, ok := e.(map[string]any); ok && k == "metadata" {
				for _, field := range []string{"labels", "annotations"} {
					m, ok := meta[field].(map[string]any)
					if !ok {
						continue
					}
					for key, val := range m {
						if chartMetadata(field == "annotations", key) {
							out[at+"/"+field+"\x00"+key] = fmt.Sprint(val)
							delete(m, key)
						}
					}
					if len(m) == 0 {
						delete(meta, field)
					}
				}
			}
			stripChartMetadata(e, at, out)
		}
	case []any:
		for i, e := range t {
			stripChartMetadata(e, fmt.Sprintf("%s/%d", path, i), out)
		}
	}
}
