package budget_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/budget"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"64Mi", 64 << 20, true}, {"1Gi", 1 << 30, true}, {"100M", 100_000_000, true}, {"500000", 500_000, true},
		{"0", 0, false}, {"-1Mi", 0, false}, {"lots", 0, false}, {"1.5", 0, false}, {"", 0, false},
	} {
		got, err := budget.ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{64 << 20: "64 MiB", 2 << 30: "2 GiB", 8 << 10: "8 KiB", 1_000_000: "1000000 bytes", 3: "3 bytes"} {
		if got := budget.Size(in); got != want {
			t.Errorf("Size(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestFill: a field set stays, the others take their defaults.
func TestFill(t *testing.T) {
	t.Parallel()
	want := budget.Defaults()
	want.RenderTime = time.Minute
	if diff := cmp.Diff(want, budget.Limits{RenderTime: time.Minute}.Fill()); diff != "" {
		t.Errorf("Fill (-want +got):\n%s", diff)
	}
}

func TestExceededError(t *testing.T) {
	t.Parallel()
	e := &budget.Exceeded{What: "loop/templates/loop.yaml", Doing: "rendering took longer than", Limit: "renderTime", Value: "2s"}
	if got, want := e.Error(), "loop/templates/loop.yaml: rendering took longer than 2s (limits.renderTime in ferry.yaml)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestWithPatchCopyLimit: the build's error is kept unless it is the
// copy bound's, which becomes an *Exceeded.
func TestWithPatchCopyLimit(t *testing.T) {
	t.Parallel()
	other := errors.New("no such file")
	if err := budget.WithPatchCopyLimit(1, func() error { return other }); !errors.Is(err, other) {
		t.Errorf("err %v, want the build's", err)
	}
	err := budget.WithPatchCopyLimit(1<<10, func() error {
		return errors.New("Unable to complete the copy, the accumulated size increase of copy is 2000, exceeding the limit 1024")
	})
	var over *budget.Exceeded
	if !errors.As(err, &over) || over.Limit != "patchCopySize" || over.Value != "1 KiB" {
		t.Errorf("err %v, want limits.patchCopySize of 1 KiB", err)
	}
}
