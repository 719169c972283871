// Package budget bounds the work a repository's own files can make ferry
// do: how much a chart may render and for how long, how deep its
// templates may recurse, how large a chart may unpack to, and how much a
// JSON patch may copy. The limits are ferry.yaml's limits: block, read
// from the revision ferry trusts for the command (the base of a diff).
package budget

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Limits are the budgets of one run. The zero value of a field means its
// default (Defaults); Fill fills them in.
type Limits struct {
	// RenderedBytes bounds what one HelmRelease renders: its objects and
	// hooks as YAML, after post-renderers (limits.renderedBytes).
	RenderedBytes int64
	// RenderTime bounds the rendering of one HelmRelease: its templates
	// and its post-renderers (limits.renderTime).
	RenderTime time.Duration
	// RenderMemory bounds the memory the process that renders charts may
	// take (limits.renderMemory).
	RenderMemory int64
	// TemplateStack bounds how deeply a chart's templates may recurse
	// through include and tpl, as the stack they take
	// (limits.templateStack).
	TemplateStack int64
	// ChartFiles bounds the files of one chart, archive or folder, its
	// subcharts' archives included (limits.chartFiles).
	ChartFiles int
	// ChartSize bounds the unpacked size of one chart
	// (limits.chartSize).
	ChartSize int64
	// PatchCopySize bounds how much the copy operations of one JSON
	// patch may add to one object (limits.patchCopySize).
	PatchCopySize int64
}

// The defaults: wide enough for the largest public charts (hundreds of
// templates, tens of MiB of CRDs) on a slow runner, narrow enough that a
// hostile chart fails in seconds and well under 1 GiB of memory.
const (
	DefaultRenderedBytes int64 = 64 << 20
	DefaultRenderTime          = 20 * time.Second
	DefaultRenderMemory  int64 = 512 << 20
	DefaultTemplateStack int64 = 16 << 20
	DefaultChartFiles          = 10_000
	DefaultChartSize     int64 = 100 << 20
	DefaultPatchCopySize int64 = 8 << 20
)

// Defaults are the limits of a repository whose ferry.yaml sets none.
func Defaults() Limits {
	return Limits{
		RenderedBytes: DefaultRenderedBytes,
		RenderTime:    DefaultRenderTime,
		RenderMemory:  DefaultRenderMemory,
		TemplateStack: DefaultTemplateStack,
		ChartFiles:    DefaultChartFiles,
		ChartSize:     DefaultChartSize,
		PatchCopySize: DefaultPatchCopySize,
	}
}

// Fill returns l with every zero field set to its default.
func (l Limits) Fill() Limits {
	d := Defaults()
	if l.RenderedBytes == 0 {
		l.RenderedBytes = d.RenderedBytes
	}
	if l.RenderTime == 0 {
		l.RenderTime = d.RenderTime
	}
	if l.RenderMemory == 0 {
		l.RenderMemory = d.RenderMemory
	}
	if l.TemplateStack == 0 {
		l.TemplateStack = d.TemplateStack
	}
	if l.ChartFiles == 0 {
		l.ChartFiles = d.ChartFiles
	}
	if l.ChartSize == 0 {
		l.ChartSize = d.ChartSize
	}
	if l.PatchCopySize == 0 {
		l.PatchCopySize = d.PatchCopySize
	}
	return l
}

// Exceeded is work stopped by a budget: what went over (a file, a
// template, a post-renderer), and which limit.
type Exceeded struct {
	// What went over, with its file or place ("templates/loop.yaml").
	What string
	// Doing says what went over ("took longer than", "renders more than").
	Doing string
	// Limit is the ferry.yaml field (renderTime) and Value its value as
	// a reader writes it (20s, 64 MiB).
	Limit, Value string
}

func (e *Exceeded) Error() string {
	msg := e.Doing + " " + e.Value + " (limits." + e.Limit + " in ferry.yaml)"
	if e.What == "" {
		return msg
	}
	return e.What + ": " + msg
}

// ParseSize reads a size as Kubernetes writes quantities: 512Mi, 1Gi,
// 100M, or a number of bytes. It must be positive.
func ParseSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (64Mi, 1Gi, 500000)", s)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive whole number of bytes", s)
	}
	return n, nil
}

// ParseDuration reads a positive Go duration (30s, 2m).
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (30s, 2m)", s)
	}
	return d, nil
}

// ParseCount reads a positive whole number.
func ParseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, errors.New(strconv.Quote(s) + " is not a positive whole number")
	}
	return n, nil
}

// Size writes n bytes for a reader: whole MiB or GiB when it is one,
// else bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
