package config

import (
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/ferry-ci/ferry/internal/budget"
)

// LimitsConfig is ferry.yaml's limits: the budgets of the work a
// repository's own files make ferry do (budget.Limits; a field left out
// keeps its default). Sizes are written as Kubernetes quantities (64Mi,
// 1Gi), times as Go durations (20s, 1m), counts as numbers:
//
//	limits:
//	  renderedBytes: 128Mi
//	  renderTime: 1m
type LimitsConfig struct {
	budget.Limits
}

// limitFields are the fields of a limits: block, each with how its
// value is read into budget.Limits.
var limitFields = []struct {
	name string
	set  func(l *budget.Limits, v string) error
}{
	{"renderedBytes", func(l *budget.Limits, v string) (err error) { l.RenderedBytes, err = budget.ParseSize(v); return }},
	{"renderTime", func(l *budget.Limits, v string) (err error) { l.RenderTime, err = budget.ParseDuration(v); return }},
	{"renderMemory", func(l *budget.Limits, v string) (err error) { l.RenderMemory, err = budget.ParseSize(v); return }},
	{"templateStack", func(l *budget.Limits, v string) (err error) { l.TemplateStack, err = budget.ParseSize(v); return }},
	{"chartFiles", func(l *budget.Limits, v string) (err error) { l.ChartFiles, err = budget.ParseCount(v); return }},
	{"chartSize", func(l *budget.Limits, v string) (err error) { l.ChartSize, err = budget.ParseSize(v); return }},
	{"patchCopySize", func(l *budget.Limits, v string) (err error) { l.PatchCopySize, err = budget.ParseSize(v); return }},
}

// UnmarshalYAML reads a limits: block, each value checked where it is
// written: an unknown field or an unreadable value is an error with its
// line.
func (c *LimitsConfig) UnmarshalYAML(n *yamlv3.Node) error {
	if n.Kind != yamlv3.MappingNode {
		return fmt.Errorf("line %d: limits: want a mapping of budgets", n.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		idx := -1
		for j, f := range limitFields {
			if f.name == k.Value {
				idx = j
			}
		}
		if idx < 0 {
			names := make([]string, len(limitFields))
			for j, f := range limitFields {
				names[j] = f.name
			}
			return fmt.Errorf("line %d: limits: unknown field %q (want %s)", k.Line, k.Value, strings.Join(names, ", "))
		}
		if seen[k.Value] {
			return fmt.Errorf("line %d: limits: %s is set twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		if v.Kind != yamlv3.ScalarNode || v.Tag == "!!null" {
			return fmt.Errorf("line %d: limits.%s: want a value", v.Line, k.Value)
		}
		if err := limitFields[idx].set(&c.Limits, v.Value); err != nil {
			return fmt.Errorf("line %d: limits.%s: %w", v.Line, k.Value, err)
		}
	}
	return nil
}

// Limits are the budgets r renders under: those render.Options gave (the
// base revision's, in a diff), else ferry.yaml's, defaults filled in.
func (r *Repo) Limits() budget.Limits {
	if r.opts.Limits == nil {
		return limitsOf(r.File)
	}
	return *r.opts.Limits
}

// limitsOf are the budgets of a repository whose ferry.yaml is f (nil:
// none), defaults filled in.
func limitsOf(f *File) budget.Limits {
	if f == nil || f.Limits == nil {
		return budget.Defaults()
	}
	return f.Limits.Fill()
}
