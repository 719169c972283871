package forge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/forge/giteatest"
)

// Gitea-only behaviour; the contract every forge keeps is in forge_test.go.

func TestGiteaFollowsPagination(t *testing.T) {
	w := giteaWorld(t)
	ctx := context.Background()
	n := giteatest.PageSize + 3
	for i := range n {
		if _, err := w.ferry.CreateIssue(ctx, forge.NewIssue{Title: "issue", Body: "b", Labels: []string{"many"}}); err != nil {
			t.Fatalf("issue %d: %v", i, err)
		}
	}
	got, err := w.ferry.Issues(ctx, "many", "open")
	if err != nil || len(got) != n {
		t.Fatalf("Issues: %d, %v; want %d (more than one page of %d)", len(got), err, n, giteatest.PageSize)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Number >= got[i].Number {
			t.Fatalf("issues not oldest first: #%d before #%d", got[i-1].Number, got[i].Number)
		}
	}
}

func TestGiteaErrors(t *testing.T) {
	g := giteatest.Require(t)
	w := giteaWorld(t)
	ctx := context.Background()

	missing, err := forge.NewGitea(forge.Config{Kind: forge.KindGitea, APIURL: g.URL, Token: w.token, Owner: w.owner, Repo: "no-such-repo"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = missing.Issues(ctx, "x", "open")
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), w.owner+"/no-such-repo") {
		t.Errorf("a repository that does not exist: %v, want ErrNotFound naming it", err)
	}
	t.Logf("error: %v", err)

	bad, err := forge.NewGitea(forge.Config{Kind: forge.KindGitea, APIURL: g.URL, Token: "0123456789abcdef0123456789abcdef01234567", Owner: w.owner, Repo: w.repo})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Me(ctx)
	if !errors.Is(err, forge.ErrPermission) || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Errorf("a wrong token: %v, want ErrPermission without the token", err)
	}
	t.Logf("error: %v", err)
}

func TestGiteaAPIURLForms(t *testing.T) {
	g := giteatest.Require(t)
	w := giteaWorld(t)
	for _, api := range []string{g.URL, strings.TrimSuffix(g.URL, "/"), g.URL + "api/v1", g.URL + "api/v1/"} {
		f, err := forge.New(forge.Config{Kind: forge.KindGitea, APIURL: api, Token: w.token, Owner: w.owner, Repo: w.repo})
		if err != nil {
			t.Fatal(err)
		}
		if me, err := f.Me(context.Background()); err != nil || me != w.me {
			t.Errorf("APIURL %s: Me = %q, %v", api, me, err)
		}
	}
}

func TestGiteaCommitStatuses(t *testing.T) {
	w := giteaWorld(t)
	ctx := context.Background()
	applied := forge.CommitStatus{State: forge.StatusSuccess, Context: "kustomization/apps", Description: "applied"}

	// Gitea knows a warning state GitHub does not.
	warn := forge.CommitStatus{State: forge.StatusWarning, Context: "kustomization/apps", Description: "applied with warnings"}
	if err := w.ferry.SetCommitStatus(ctx, w.head, warn); err != nil {
		t.Errorf("a warning status: %v", err)
	}
	if got, err := w.ferry.CommitStatuses(ctx, w.head); err != nil || len(got) != 1 || got[0] != warn {
		t.Errorf("statuses: %+v, %v; want the warning", got, err)
	}

	// Gitea would store any word as a state: ferry asks nothing.
	w.ferry.Writes()
	err := w.ferry.SetCommitStatus(ctx, w.head, forge.CommitStatus{State: "bogus", Context: "kustomization/apps"})
	if err == nil || !strings.Contains(err.Error(), `state "bogus" is not one of`) || !strings.Contains(err.Error(), "kustomization/apps") {
		t.Errorf("an unknown state: %v, want it refused naming the status", err)
	}
	if got, _ := w.ferry.CommitStatuses(ctx, w.head); len(got) != 1 || got[0] != warn {
		t.Errorf("statuses after an unknown state: %+v, want the warning still", got)
	}

	// A user without write access to the repository.
	err = w.other.SetCommitStatus(ctx, w.head, applied)
	if !errors.Is(err, forge.ErrPermission) || !strings.Contains(err.Error(), "write:repository") || strings.Contains(err.Error(), w.token) {
		t.Errorf("a status set by a reader: %v, want ErrPermission naming write:repository", err)
	}
	t.Logf("error: %v", err)

	// A commit the repository does not have: Gitea says 500, ferry says
	// which commit is missing.
	missing := "0123456789012345678901234567890123456789"
	err = w.ferry.SetCommitStatus(ctx, missing, applied)
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("a status on a missing commit: %v, want ErrNotFound naming the commit", err)
	}
	t.Logf("error: %v", err)
	if _, err := w.ferry.CommitStatuses(ctx, missing); !errors.Is(err, forge.ErrNotFound) {
		t.Errorf("statuses of a missing commit: %v, want ErrNotFound", err)
	}
}

func TestGiteaLabelPermissions(t *testing.T) {
	w := giteaWorld(t)
	ctx := context.Background()
	const label = "ferry: render fails"

	// A user who may read the repository but not write to it can neither
	// create the label nor put an existing one on.
	err := w.other.SetPullRequestLabel(ctx, w.pr, label, true)
	if !errors.Is(err, forge.ErrPermission) || !strings.Contains(err.Error(), "creating label") || strings.Contains(err.Error(), w.token) {
		t.Errorf("a reader creating a label: %v, want ErrPermission about creating it", err)
	}
	t.Logf("error: %v", err)
	if err := w.ferry.SetPullRequestLabel(ctx, w.pr, label, true); err != nil {
		t.Fatal(err)
	}
	if err := w.ferry.SetPullRequestLabel(ctx, w.pr, label, false); err != nil {
		t.Fatal(err)
	}
	err = w.other.SetPullRequestLabel(ctx, w.pr, label, true)
	if !errors.Is(err, forge.ErrPermission) || !strings.Contains(err.Error(), "pull-requests: write") {
		t.Errorf("a reader labelling: %v, want ErrPermission naming pull-requests: write", err)
	}
	t.Logf("error: %v", err)
	if got := w.prLabels(t, w.pr); len(got) != 0 {
		t.Errorf("labels after the refused calls: %v, want none", got)
	}
}
