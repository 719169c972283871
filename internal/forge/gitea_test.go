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
