package forge_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge"
)

func TestCommitStatuses(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		got, err := w.ferry.CommitStatuses(ctx, w.head)
		if err != nil || len(got) != 0 {
			t.Fatalf("statuses of a fresh commit: %+v, %v; want none", got, err)
		}

		set := func(s forge.CommitStatus) {
			t.Helper()
			if err := w.ferry.SetCommitStatus(ctx, w.head, s); err != nil {
				t.Fatalf("setting %+v: %v", s, err)
			}
		}
		apps := forge.CommitStatus{State: forge.StatusPending, Context: "kustomization/apps", Description: "applying", TargetURL: "https://ci.example.com/runs/1"}
		infra := forge.CommitStatus{State: forge.StatusSuccess, Context: "kustomization/infra", Description: "applied revision main@sha1:0123456"}
		set(apps)
		set(infra)
		want := []forge.CommitStatus{apps, infra}
		if got, err := w.ferry.CommitStatuses(ctx, w.head); err != nil || !cmp.Equal(want, got) {
			t.Fatalf("after two contexts (err %v) (-want +got):\n%s", err, cmp.Diff(want, got))
		}

		// A second and a third state of one context, within the same
		// second on a forge that keeps seconds: the last one set is the
		// latest, whatever the order the forge lists them in.
		failed := forge.CommitStatus{State: forge.StatusFailure, Context: "kustomization/apps", Description: "apply failed: 1 object invalid"}
		set(failed)
		retried := forge.CommitStatus{State: forge.StatusError, Context: "kustomization/apps", Description: "not attempted: dependency infra failed", TargetURL: "https://ci.example.com/runs/2"}
		set(retried)
		want = []forge.CommitStatus{retried, infra}
		if got, err := w.ferry.CommitStatuses(ctx, w.head); err != nil || !cmp.Equal(want, got) {
			t.Errorf("after a new state of kustomization/apps (err %v) (-want +got):\n%s", err, cmp.Diff(want, got))
		}
		// Another reader of the repository sees the same.
		if got, err := w.other.CommitStatuses(ctx, w.head); err != nil || !cmp.Equal(want, got) {
			t.Errorf("as another user (err %v) (-want +got):\n%s", err, cmp.Diff(want, got))
		}
		if n := len(w.ferry.Writes()); n != 4 {
			t.Errorf("%d write calls, want the 4 statuses", n)
		}
	})
}
