package helm

import (
	"fmt"

	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/budget"
)

// The messages between a Sandbox and its child process, gob-encoded on
// the child's stdin (requests) and stdout (replies).

// sandboxRequest asks the child for one render.
type sandboxRequest struct {
	Release Release // Values left out: the values come composed
	Chart   Fetched // Archive left out when the child holds it (by Digest)
	Values  wireValue
	Options wireOptions
	Limits  budget.Limits
	// Attribute renders the templates one at a time (attribute), to
	// find which one a budget stopped.
	Attribute bool
}

// wireOptions are the RenderOptions a child needs.
type wireOptions struct {
	KubeVersion string
	APIVersions []string
	ValuesRoot  string
}

// sandboxReply is one message of the child about the request it works
// on: a stage it reached, or the end, with the render or its error.
type sandboxReply struct {
	Stage string
	Done  bool
	// Exits says the child exits after this reply: a budget stopped a
	// render that goes on running.
	Exits bool
	// Over is a budget that stopped the render; Err any other error.
	Over *budget.Exceeded
	Err  string
	// Rendered is the render, its objects as JSON.
	Rendered *wireRendered
}

// wireRendered is a Rendered with each object as JSON.
type wireRendered struct {
	Chart, Version, Name, Namespace string
	Objects                         [][]byte
	Sources                         []string
	Hooks                           []wireHook
}

// wireHook is a Hook with its object as JSON.
type wireHook struct {
	Object    []byte
	Pre, Post bool
	Source    string
}

func toWire(r *Rendered) (*wireRendered, error) {
	w := &wireRendered{Chart: r.Chart, Version: r.Version, Name: r.Name, Namespace: r.Namespace, Sources: r.Sources}
	for _, o := range r.Objects {
		b, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		w.Objects = append(w.Objects, b)
	}
	for _, h := range r.Hooks {
		b, err := h.Object.MarshalJSON()
		if err != nil {
			return nil, err
		}
		w.Hooks = append(w.Hooks, wireHook{Object: b, Pre: h.Pre, Post: h.Post, Source: h.Source})
	}
	return w, nil
}

func fromWire(w *wireRendered) (*Rendered, error) {
	r := &Rendered{Chart: w.Chart, Version: w.Version, Name: w.Name, Namespace: w.Namespace, Sources: w.Sources}
	read := func(b []byte) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return nil, fmt.Errorf("reading the sandbox's objects: %w", err)
		}
		return u, nil
	}
	for _, b := range w.Objects {
		u, err := read(b)
		if err != nil {
			return nil, err
		}
		r.Objects = append(r.Objects, u)
	}
	for _, h := range w.Hooks {
		u, err := read(h.Object)
		if err != nil {
			return nil, err
		}
		r.Hooks = append(r.Hooks, Hook{Object: u, Pre: h.Pre, Post: h.Post, Source: h.Source})
	}
	return r, nil
}

// wireValue is a value of a values tree with its Go type kept: gob
// cannot carry nil in an interface, and JSON would turn int64 into
// float64, which templates print differently (printf "%d").
type wireValue struct {
	Kind byte // see wireKinds
	Bool bool
	Int  int64
	Uint uint64
	Num  float64
	Str  string
	List []wireValue
	Map  map[string]wireValue
}

// The kinds of wireValue.
const (
	wireNil byte = iota
	wireBool
	wireInt
	wireInt64
	wireInt32
	wireUint64
	wireFloat64
	wireFloat32
	wireString
	wireList
	wireMap
	wireValues // a common.Values
)

func encodeValue(v any) (wireValue, error) {
	switch v := v.(type) {
	case nil:
		return wireValue{Kind: wireNil}, nil
	case bool:
		return wireValue{Kind: wireBool, Bool: v}, nil
	case int:
		return wireValue{Kind: wireInt, Int: int64(v)}, nil
	case int64:
		return wireValue{Kind: wireInt64, Int: v}, nil
	case int32:
		return wireValue{Kind: wireInt32, Int: int64(v)}, nil
	case uint64:
		return wireValue{Kind: wireUint64, Uint: v}, nil
	case float64:
		return wireValue{Kind: wireFloat64, Num: v}, nil
	case float32:
		return wireValue{Kind: wireFloat32, Num: float64(v)}, nil
	case string:
		return wireValue{Kind: wireString, Str: v}, nil
	case []any:
		out := wireValue{Kind: wireList, List: make([]wireValue, len(v))}
		for i, e := range v {
			w, err := encodeValue(e)
			if err != nil {
				return out, err
			}
			out.List[i] = w
		}
		return out, nil
	case map[string]any:
		return encodeMap(wireMap, v)
	case common.Values:
		return encodeMap(wireValues, v)
	}
	return wireValue{}, fmt.Errorf("a value of type %T cannot be passed to the render", v)
}

func encodeMap(kind byte, m map[string]any) (wireValue, error) {
	out := wireValue{Kind: kind, Map: make(map[string]wireValue, len(m))}
	for k, e := range m {
		w, err := encodeValue(e)
		if err != nil {
			return out, err
		}
		out.Map[k] = w
	}
	return out, nil
}

func decodeValue(w wireValue) any {
	switch w.Kind {
	case wireBool:
		return w.Bool
	case wireInt:
		return int(w.Int)
	case wireInt64:
		return w.Int
	case wireInt32:
		return int32(w.Int)
	case wireUint64:
		return w.Uint
	case wireFloat64:
		return w.Num
	case wireFloat32:
		return float32(w.Num)
	case wireString:
		return w.Str
	case wireList:
		out := make([]any, len(w.List))
		for i, e := range w.List {
			out[i] = decodeValue(e)
		}
		return out
	case wireMap, wireValues:
		out := make(map[string]any, len(w.Map))
		for k, e := range w.Map {
			out[k] = decodeValue(e)
		}
		if w.Kind == wireValues {
			return common.Values(out)
		}
		return out
	}
	return nil
}
