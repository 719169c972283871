package forge_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge"
)

func TestIssueSyncLifeCycle(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		s := forge.IssueSync{Marker: "<!-- ferry:drift stage -->", Label: "ferry-drift"}
		title := "Drift detected in stage"

		// Clean with nothing open: nothing to do.
		res, err := s.Sync(ctx, w.ferry, title, "", false, "clean")
		if err != nil || res.Action != forge.IssueNone || len(w.ferry.Writes()) != 0 {
			t.Fatalf("clean first: %+v, %v; want nothing done", res, err)
		}

		// Drift: the issue is created, with the label and the marker.
		created, err := s.Sync(ctx, w.ferry, title, "2 objects drifted", true, "")
		if err != nil || created.Action != forge.IssueCreated || created.Number == 0 {
			t.Fatalf("drift: %+v, %v; want an issue created", created, err)
		}

		// Someone else opens an issue with the same marker and label.
		theirs, err := w.other.CreateIssue(ctx, forge.NewIssue{Title: title, Body: s.Marker + "\nmy own notes", Labels: []string{"ferry-drift"}})
		if err != nil {
			t.Fatal(err)
		}
		w.label(t, theirs.Number, "ferry-drift")
		w.ferry.Writes()

		// The same drift again: nothing written.
		res, err = s.Sync(ctx, w.ferry, title, "2 objects drifted", true, "")
		if err != nil || res.Action != forge.IssueUnchanged || res.Number != created.Number {
			t.Fatalf("same drift: %+v, %v; want #%d unchanged", res, err, created.Number)
		}
		if calls := w.ferry.Writes(); len(calls) != 0 {
			t.Errorf("same drift made write calls %v", calls)
		}

		// Other drift: the same issue is edited, not duplicated.
		res, err = s.Sync(ctx, w.ferry, title, "3 objects drifted", true, "")
		if err != nil || res.Action != forge.IssueEdited || res.Number != created.Number {
			t.Fatalf("other drift: %+v, %v; want #%d edited", res, err, created.Number)
		}
		open, err := w.ferry.Issues(ctx, "ferry-drift", "open")
		if err != nil {
			t.Fatal(err)
		}
		var ours []forge.Issue
		for _, is := range open {
			if is.Author == w.me && strings.Contains(is.Body, s.Marker) {
				ours = append(ours, is)
			}
		}
		if len(ours) != 1 || ours[0].Number != created.Number || !strings.Contains(ours[0].Body, "3 objects drifted") ||
			!strings.HasPrefix(ours[0].Body, s.Marker) || !slices.Contains(ours[0].Labels, "ferry-drift") {
			t.Fatalf("ferry's open drift issues: %+v, want #%d with the new body, marker and label", ours, created.Number)
		}

		// Clean: commented and closed; the other user's issue stays as it was.
		res, err = s.Sync(ctx, w.ferry, title, "", false, "No drift any more.")
		if err != nil || res.Action != forge.IssueClosed || res.Number != created.Number {
			t.Fatalf("clean: %+v, %v; want #%d closed", res, err, created.Number)
		}
		closed, err := w.ferry.Issues(ctx, "ferry-drift", "closed")
		if err != nil {
			t.Fatal(err)
		}
		if len(closed) != 1 || closed[0].Number != created.Number {
			t.Errorf("closed drift issues: %+v, want #%d", closed, created.Number)
		}
		comments, err := w.ferry.Comments(ctx, created.Number)
		if err != nil {
			t.Fatal(err)
		}
		if len(comments) != 1 || comments[0].Body != "No drift any more." || comments[0].Author != w.me {
			t.Errorf("comments on the closed issue: %+v, want the closing comment", comments)
		}
		open, err = w.ferry.Issues(ctx, "ferry-drift", "open")
		if err != nil {
			t.Fatal(err)
		}
		if len(open) != 1 || open[0].Number != theirs.Number || open[0].Body != s.Marker+"\nmy own notes" || open[0].Title != title {
			t.Errorf("open drift issues: %+v, want the other user's #%d untouched", open, theirs.Number)
		}

		// Clean again: nothing to do.
		w.ferry.Writes()
		res, err = s.Sync(ctx, w.ferry, title, "", false, "No drift any more.")
		if err != nil || res.Action != forge.IssueNone || len(w.ferry.Writes()) != 0 {
			t.Errorf("clean again: %+v, %v; want nothing done", res, err)
		}

		// Drift comes back: a new issue, the closed one stays closed.
		res, err = s.Sync(ctx, w.ferry, title, "1 object drifted", true, "")
		if err != nil || res.Action != forge.IssueCreated || res.Number == created.Number {
			t.Errorf("drift again: %+v, %v; want a new issue", res, err)
		}
	})
}

func TestIssueSyncNeedsMarker(t *testing.T) {
	if _, err := (forge.IssueSync{Label: "x"}).Sync(context.Background(), nil, "t", "b", true, ""); err == nil {
		t.Error("no error without a marker")
	}
}
