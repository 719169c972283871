package forge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge"
)

func TestSetPullRequestLabel(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		const failing = "ferry: render fails" // a colon and a space
		const area = "area/charts"            // a slash
		steps := []struct {
			name    string
			label   string
			present bool
			writes  bool
			want    []string
		}{
			{"add a label the repository lacks", failing, true, true, []string{failing}},
			{"add again", failing, true, false, []string{failing}},
			{"add another", area, true, true, []string{area, failing}},
			{"remove", failing, false, true, []string{area}},
			{"remove again", failing, false, false, []string{area}},
			{"add a label the repository has", failing, true, true, []string{area, failing}},
			{"remove a label the repository lacks", "never: made", false, false, []string{area, failing}},
			{"remove the label with a slash", area, false, true, []string{failing}},
			{"remove the last", failing, false, true, nil},
		}
		for _, st := range steps {
			before := w.serverWrites()
			if err := w.ferry.SetPullRequestLabel(ctx, w.pr, st.label, st.present); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if wrote := w.serverWrites() - before; (wrote > 0) != st.writes {
				t.Errorf("%s: %d write requests, want writes %v", st.name, wrote, st.writes)
			}
			if diff := cmp.Diff(st.want, w.prLabels(t, w.pr)); diff != "" {
				t.Errorf("%s: labels on the pull request (-want +got):\n%s", st.name, diff)
			}
		}
	})
}

func TestSetPullRequestLabelErrors(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		err := w.ferry.SetPullRequestLabel(ctx, w.pr, " ", true)
		if err == nil || !strings.Contains(err.Error(), "empty label") {
			t.Errorf("an empty label: %v, want it refused", err)
		}
		for _, present := range []bool{true, false} {
			err := w.ferry.SetPullRequestLabel(ctx, 9999, "ferry: render fails", present)
			if about := w.owner + "/" + w.repo + "#9999"; !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), about) || strings.Contains(err.Error(), w.token) {
				t.Errorf("present=%v on a missing pull request: %v, want ErrNotFound naming %s", present, err, about)
			}
		}
		if got := w.prLabels(t, w.pr); len(got) != 0 {
			t.Errorf("labels after the refused calls: %v, want none", got)
		}
	})
}

func TestMaskedSetPullRequestLabel(t *testing.T) {
	t.Parallel()
	w := githubWorld(t)
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cr3t", "***") }
	f := forge.Masked(w.ferry, mask)
	if err := f.SetPullRequestLabel(context.Background(), w.pr, "leak s3cr3t", true); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"leak ***"}, w.prLabels(t, w.pr)); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if err := f.SetPullRequestLabel(context.Background(), w.pr, "leak s3cr3t", false); err != nil {
		t.Fatal(err)
	}
	if got := w.prLabels(t, w.pr); len(got) != 0 {
		t.Errorf("labels after removing the masked label: %v, want none", got)
	}
}
