package forge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/forge"
)

// These tests hold every Forge method to the same contract on each forge.

func TestForgeMe(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		me, err := w.ferry.Me(ctx)
		if err != nil || me != w.me {
			t.Errorf("Me = %q, %v; want %q", me, err, w.me)
		}
		other, err := w.other.Me(ctx)
		if err != nil || other == me || other == "" {
			t.Errorf("Me of the other user = %q, %v; want another login", other, err)
		}
	})
}

func TestForgeComments(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		var want []forge.Comment
		for i := range 7 { // more than a page of the GitHub test server
			f := forge.Forge(w.ferry)
			if i%3 == 2 {
				f = w.other
			}
			c, err := f.CreateComment(ctx, w.pr, fmt.Sprintf("comment %d é", i))
			if err != nil {
				t.Fatal(err)
			}
			if c.ID == 0 || c.URL == "" || c.Body != fmt.Sprintf("comment %d é", i) {
				t.Errorf("CreateComment returned %+v", c)
			}
			want = append(want, c)
		}
		got, err := w.ferry.Comments(ctx, w.pr)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Comments (-want +got):\n%s", diff)
		}
		if got[0].Author != w.me || got[2].Author == w.me {
			t.Errorf("authors %q, %q: want ferry's then the other user's", got[0].Author, got[2].Author)
		}

		if err := w.ferry.EditComment(ctx, want[1].ID, "edited"); err != nil {
			t.Fatal(err)
		}
		if err := w.ferry.DeleteComment(ctx, want[0].ID); err != nil {
			t.Fatal(err)
		}
		got, err = w.ferry.Comments(ctx, w.pr)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 6 || got[0].ID != want[1].ID || got[0].Body != "edited" {
			t.Errorf("after edit and delete: %+v", got)
		}
	})
}

func TestForgePullRequests(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		pr, err := w.ferry.OpenPullRequest(ctx, "feature", "main")
		if err != nil {
			t.Fatal(err)
		}
		if pr == nil || pr.Number != w.pr || pr.Head != "feature" || pr.Base != "main" || pr.State != "open" || pr.URL == "" {
			t.Fatalf("OpenPullRequest(feature, main) = %+v, want #%d", pr, w.pr)
		}
		for _, hb := range [][2]string{{"nope", "main"}, {"feature", "release"}} {
			if pr, err := w.ferry.OpenPullRequest(ctx, hb[0], hb[1]); err != nil || pr != nil {
				t.Errorf("OpenPullRequest(%s, %s) = %+v, %v; want none", hb[0], hb[1], pr, err)
			}
		}

		// More pull requests than a page of the GitHub test server.
		var made []forge.PullRequest
		for i := range 4 {
			head := fmt.Sprintf("bump-%d", i)
			w.branch(t, head)
			created, err := w.ferry.CreatePullRequest(ctx, forge.NewPullRequest{Title: "Bump " + head, Body: "body " + head, Head: head, Base: "main"})
			if err != nil {
				t.Fatal(err)
			}
			if created.Number == 0 || created.Head != head || created.Base != "main" || created.Title != "Bump "+head || created.State != "open" {
				t.Errorf("CreatePullRequest returned %+v", created)
			}
			made = append(made, created)
		}
		first := made[0]
		got, err := w.ferry.OpenPullRequest(ctx, first.Head, "main")
		if err != nil || got == nil || got.Number != first.Number || got.Body != "body bump-0" {
			t.Fatalf("OpenPullRequest(%s, main) = %+v, %v; want #%d", first.Head, got, err, first.Number)
		}
		if err := w.ferry.EditPullRequest(ctx, first.Number, "Bump, retitled", "new body"); err != nil {
			t.Fatal(err)
		}
		if err := w.ferry.EditPullRequest(ctx, made[1].Number, "", "body only"); err != nil {
			t.Fatal(err)
		}
		got, err = w.ferry.OpenPullRequest(ctx, first.Head, "main")
		if err != nil || got == nil || got.Title != "Bump, retitled" || got.Body != "new body" {
			t.Errorf("after EditPullRequest: %+v, %v", got, err)
		}
		got, err = w.ferry.OpenPullRequest(ctx, made[1].Head, "main")
		if err != nil || got == nil || got.Title != "Bump bump-1" || got.Body != "body only" {
			t.Errorf("an empty title must keep the title: %+v, %v", got, err)
		}
	})
}

func TestForgeIssues(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		var made []forge.Issue
		for i := range 4 {
			labels := []string{"ferry-drift"}
			if i == 2 {
				labels = nil
			}
			is, err := w.ferry.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprintf("issue %d", i), Body: fmt.Sprintf("body %d", i), Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			if is.Number == 0 || is.Author != w.me || is.State != "open" || is.URL == "" || !slices.Equal(is.Labels, labels) {
				t.Errorf("CreateIssue returned %+v", is)
			}
			made = append(made, is)
		}
		numbers := func(label, state string) []int {
			t.Helper()
			got, err := w.ferry.Issues(ctx, label, state)
			if err != nil {
				t.Fatal(err)
			}
			var out []int
			for _, is := range got {
				if is.Number == w.pr {
					t.Errorf("Issues(%q, %q) lists pull request #%d", label, state, w.pr)
				}
				out = append(out, is.Number)
			}
			return out
		}
		labelled := []int{made[0].Number, made[1].Number, made[3].Number}
		if got := numbers("ferry-drift", "open"); !slices.Equal(got, labelled) {
			t.Errorf("open issues labelled ferry-drift: %v, want %v", got, labelled)
		}
		if got := numbers("", ""); len(got) != 4 {
			t.Errorf("open issues: %v, want the 4 issues and no pull request", got)
		}
		if got := numbers("no-such-label", "open"); len(got) != 0 {
			t.Errorf("issues with a label nobody uses: %v, want none", got)
		}

		if err := w.ferry.EditIssue(ctx, made[0].Number, "issue 0, retitled", "new body"); err != nil {
			t.Fatal(err)
		}
		if err := w.ferry.EditIssue(ctx, made[1].Number, "", "body only"); err != nil {
			t.Fatal(err)
		}
		if err := w.ferry.CloseIssue(ctx, made[3].Number); err != nil {
			t.Fatal(err)
		}
		got, err := w.ferry.Issues(ctx, "ferry-drift", "open")
		if err != nil {
			t.Fatal(err)
		}
		want := []forge.Issue{
			{Number: made[0].Number, Author: w.me, Title: "issue 0, retitled", Body: "new body", State: "open", Labels: []string{"ferry-drift"}, URL: made[0].URL},
			{Number: made[1].Number, Author: w.me, Title: "issue 1", Body: "body only", State: "open", Labels: []string{"ferry-drift"}, URL: made[1].URL},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("open issues after edits (-want +got):\n%s", diff)
		}
		if got := numbers("ferry-drift", "closed"); !slices.Equal(got, []int{made[3].Number}) {
			t.Errorf("closed issues: %v, want [%d]", got, made[3].Number)
		}
		if got := numbers("ferry-drift", "all"); !slices.Equal(got, labelled) {
			t.Errorf("all issues: %v, want %v", got, labelled)
		}
	})
}

func TestForgeNotFound(t *testing.T) {
	eachForge(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		slug := w.owner + "/" + w.repo
		checks := []struct {
			name  string
			err   error
			about string
		}{}
		add := func(name, about string, err error) {
			checks = append(checks, struct {
				name  string
				err   error
				about string
			}{name, err, about})
		}
		_, err := w.ferry.Comments(ctx, 9999)
		add("Comments", slug+"#9999", err)
		_, err = w.ferry.CreateComment(ctx, 9999, "x")
		add("CreateComment", slug+"#9999", err)
		add("EditComment", "comment 999999999", w.ferry.EditComment(ctx, 999999999, "x"))
		add("DeleteComment", "comment 999999999", w.ferry.DeleteComment(ctx, 999999999))
		add("EditIssue", slug+"#9999", w.ferry.EditIssue(ctx, 9999, "t", "b"))
		add("CloseIssue", slug+"#9999", w.ferry.CloseIssue(ctx, 9999))
		add("EditPullRequest", slug+"#9999", w.ferry.EditPullRequest(ctx, 9999, "t", "b"))
		for _, c := range checks {
			if !errors.Is(c.err, forge.ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", c.name, c.err)
				continue
			}
			if msg := c.err.Error(); !strings.Contains(msg, c.about) || strings.Contains(msg, w.token) {
				t.Errorf("%s: error %q should name %q and never the token", c.name, msg, c.about)
			}
		}
	})
}
