package config_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/gittest"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testbin"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// tenantFleet is a multi-tenancy fleet in a Git repository: the staging
// cluster's flux-system (this repository at branch main) and a tenant,
// dev-team, whose GitRepository has the URL of this repository written
// another way, with the ref given (YAML under spec, indented by two
// spaces; "" for none). The tenant's folder says which commit it is
// from in ConfigMap apps/dev-team: the commits tagged v1.0.0 (a light
// tag) and v1.1.0 (an annotated one), the tip of origin's dev-team
// branch, a local branch "local-only" (at v1.0.0's commit), v2.0.0, and
// main, checked out, whose work tree says "work tree" (not committed).
type tenantFleet struct {
	*gittest.Repo
	commits map[string]string // by the tenant folder's "from"
}

// tenantFile is the tenant's GitRepository and Kustomization; the
// Kustomization starts on line 12 when the ref is one line.
func tenantFile(url, ref string) string {
	return `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: dev-team
  namespace: apps
spec:
  interval: 1m
  url: ` + url + `
` + ref + `---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: dev-team
  namespace: apps
spec:
  interval: 10m
  path: ./tenants/dev-team
  prune: true
  targetNamespace: dev-team
  sourceRef:
    kind: GitRepository
    name: dev-team
`
}

func tenantFolder(from string) map[string]string {
	return map[string]string{
		"tenants/dev-team/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamePrefix: team-\nlabels:\n  - pairs:\n      tenant: dev-team\nresources:\n  - app.yaml\n",
		"tenants/dev-team/app.yaml":           configMap("", "dev-team", "from", from),
	}
}

func newTenantFleet(t *testing.T, url, ref string) *tenantFleet {
	t.Helper()
	f := &tenantFleet{Repo: gittest.Init(t, filepath.Join(t.TempDir(), "fleet")), commits: map[string]string{}}
	f.Write(t, "clusters/staging/flux-system/gotk-sync.yaml", gotkSync("clusters/staging"))
	f.Write(t, "clusters/staging/apps.yaml", fluxKustomization("apps", "apps", ""))
	f.Write(t, "apps/settings.yaml", configMap("shop", "settings", "env", "staging"))
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, from := range []string{"v1.0.0", "v1.1.0", "dev-team", "v2.0.0", "main"} {
		for p, c := range tenantFolder(from) {
			f.Write(t, p, c)
		}
		f.commits[from] = f.Commit(t, from)
	}
	hash := func(from string) plumbing.Hash { return plumbing.NewHash(f.commits[from]) }
	refs := map[string]string{"refs/remotes/origin/dev-team": "dev-team", "refs/heads/local-only": "v1.0.0"}
	for name, from := range refs {
		if err := f.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), hash(from))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tag := range []string{"v1.0.0", "v2.0.0"} {
		if _, err := f.CreateTag(tag, hash(tag), nil); err != nil {
			t.Fatal(err)
		}
	}
	who := &object.Signature{Name: "ferry test", Email: "test@ferry.invalid", When: when}
	if _, err := f.CreateTag("v1.1.0", hash("v1.1.0"), &git.CreateTagOptions{Tagger: who, Message: "v1.1.0"}); err != nil {
		t.Fatal(err)
	}
	f.Write(t, "tenants/dev-team/app.yaml", configMap("", "dev-team", "from", "work tree"))
	f.Write(t, "clusters/staging/tenant.yaml", tenantFile(url, ref))
	return f
}

// loadClosed loads a repository and closes it when the test ends.
func loadClosed(t *testing.T, dir string, opts render.Options) *config.Repo {
	t.Helper()
	repo, err := config.Load(t.Context(), dir, opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { repo.Close() })
	return repo
}

// A tenant's GitRepository of this repository at another ref renders
// that ref's commit as the clone holds it; at the ref checked out, or
// with no ref, the checkout (work tree included).
func TestOtherRefRendersThatRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ref  string // under spec, "" for none
		// from is what the tenant's ConfigMap says: which commit, or
		// "work tree" for the checkout.
		from string
		// ref and name of the revision recorded, none for the checkout.
		wantRef, wantName string
	}{
		{name: "branch of origin", ref: "  ref:\n    branch: dev-team\n", from: "dev-team", wantRef: "branch dev-team", wantName: "refs/remotes/origin/dev-team"},
		{name: "local branch", ref: "  ref:\n    branch: local-only\n", from: "v1.0.0", wantRef: "branch local-only", wantName: "refs/heads/local-only"},
		{name: "light tag", ref: "  ref:\n    tag: v1.0.0\n", from: "v1.0.0", wantRef: "tag v1.0.0", wantName: "refs/tags/v1.0.0"},
		{name: "annotated tag", ref: "  ref:\n    tag: v1.1.0\n", from: "v1.1.0", wantRef: "tag v1.1.0", wantName: "refs/tags/v1.1.0"},
		{name: "semver range", ref: "  ref:\n    semver: \">=1.0.0 <2.0.0\"\n", from: "v1.1.0", wantRef: "semver >=1.0.0 <2.0.0", wantName: "refs/tags/v1.1.0"},
		{name: "semver over branch", ref: "  ref:\n    branch: dev-team\n    semver: \"*\"\n", from: "v2.0.0", wantRef: "semver *", wantName: "refs/tags/v2.0.0"},
		{name: "commit", ref: "  ref:\n    commit: COMMIT\n", from: "v1.1.0", wantRef: "commit COMMIT"},
		{name: "full ref name", ref: "  ref:\n    name: refs/heads/dev-team\n", from: "dev-team", wantRef: "name refs/heads/dev-team", wantName: "refs/remotes/origin/dev-team"},
		{name: "the ref of flux-system", ref: "  ref:\n    branch: main\n", from: "work tree"},
		{name: "the same ref by its full name", ref: "  ref:\n    name: refs/heads/main\n", from: "work tree"},
		{name: "the commit checked out", ref: "  ref:\n    commit: HEAD\n", from: "work tree"},
		{name: "no ref", ref: "", from: "work tree"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newTenantFleet(t, "https://Example.com/fleet.git/", "")
			ref := strings.ReplaceAll(tc.ref, "COMMIT", f.commits["v1.1.0"])
			ref = strings.ReplaceAll(ref, "HEAD", f.commits["main"])
			f.Write(t, "clusters/staging/tenant.yaml", tenantFile("https://Example.com/fleet.git/", ref))
			repo := loadClosed(t, f.Dir, render.Options{})
			if len(repo.Skipped) != 0 {
				t.Fatalf("Skipped = %+v", repo.Skipped)
			}
			tg := mustTarget(t, repo, "dev-team")
			if got := renderedData(t, repo, tg, "dev-team", "team-dev-team")["from"]; got != tc.from {
				t.Errorf("dev-team renders from %q, want %q", got, tc.from)
			}
			if tc.wantRef == "" {
				if tg.Revision != nil || tg.Root != repo.Root {
					t.Errorf("Revision = %+v, Root = %s; want the checkout", tg.Revision, tg.Root)
				}
				return
			}
			want := &config.SourceRevision{
				Source: "GitRepository/apps/dev-team",
				Ref:    strings.ReplaceAll(tc.wantRef, "COMMIT", f.commits["v1.1.0"]),
				Name:   tc.wantName,
				Commit: f.commits[tc.from],
			}
			if diff := cmp.Diff(want, tg.Revision); diff != "" {
				t.Errorf("Revision (-want +got):\n%s", diff)
			}
			if tg.Root == repo.Root {
				t.Error("Root is the checkout")
			}
			// The export is the Repo's, and goes with it.
			if err := repo.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(tg.Root); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after Close, %s is still there (%v)", tg.Root, err)
			}
		})
	}
}

// A ref the clone lacks skips the tenant, naming its GitRepository, the
// ref and what to fetch; selecting it is an error with that reason.
// Nothing is fetched: origin here is a URL no test can reach.
func TestOtherRefMissing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, want string
	}{
		{"  ref:\n    branch: gone\n", "GitRepository/apps/dev-team is this repository at branch gone, which this clone lacks: fetch it before ferry runs (git fetch origin gone:refs/remotes/origin/gone), or check out with actions/checkout fetch-depth: 0"},
		{"  ref:\n    tag: v9.9.9\n", "at tag v9.9.9, which this clone lacks: fetch it before ferry runs (git fetch origin tag v9.9.9)"},
		{"  ref:\n    semver: \">=3.0.0\"\n", "at semver >=3.0.0, which this clone lacks: fetch it before ferry runs (git fetch origin --tags)"},
		{"  ref:\n    commit: " + strings.Repeat("ab", 20) + "\n", "(git fetch origin " + strings.Repeat("ab", 20) + ")"},
		{"  ref:\n    semver: \"not a range\"\n", `source GitRepository/apps/dev-team: spec.ref.semver: semver range "not a range"`},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSpace(tc.ref), func(t *testing.T) {
			t.Parallel()
			f := newTenantFleet(t, "https://example.com/acme/fleet", tc.ref)
			f.AddRemote(t, "origin", "git@example.com:acme/fleet.git")
			repo := loadClosed(t, f.Dir, render.Options{})
			if len(repo.Skipped) != 1 || repo.Skipped[0].Name != "dev-team" || repo.Skipped[0].Origin != "clusters/staging/tenant.yaml:"+tenantLine(tc.ref) {
				t.Fatalf("Skipped = %+v, want dev-team", repo.Skipped)
			}
			if !strings.Contains(repo.Skipped[0].Reason, tc.want) {
				t.Errorf("reason %q does not say %q", repo.Skipped[0].Reason, tc.want)
			}
			_, err := repo.Target("dev-team")
			wantError(t, err, `target "dev-team" is skipped`, tc.want)
			if _, err := repo.Target("apps"); err != nil {
				t.Errorf("the rest of the fleet: %v", err)
			}
		})
	}
}

// tenantLine is the line the tenant's Kustomization starts on.
func tenantLine(ref string) string {
	return map[int]string{0: "10", 1: "11", 2: "12", 3: "13"}[strings.Count(ref, "\n")]
}

// Only this repository's URL makes a GitRepository this repository: one
// of another URL, at any ref, is another repository as before (skipped,
// or the folder ferry.yaml sources: maps it to), and is never read from
// the clone.
func TestOtherRefOnlyForThisRepository(t *testing.T) {
	t.Parallel()
	t.Run("skipped", func(t *testing.T) {
		t.Parallel()
		f := newTenantFleet(t, "https://example.com/dev-team", "  ref:\n    branch: dev-team\n")
		repo := loadClosed(t, f.Dir, render.Options{})
		want := []config.Skipped{{
			Name: "dev-team", Cluster: "staging", Origin: "clusters/staging/tenant.yaml:12",
			Reason: "source GitRepository/apps/dev-team is another repository: check it out beside this one and add it to ferry.yaml: sources: {dev-team: ../<checkout>}",
		}}
		if diff := cmp.Diff(want, repo.Skipped); diff != "" {
			t.Errorf("Skipped (-want +got):\n%s", diff)
		}
	})
	t.Run("mapped by ferry.yaml", func(t *testing.T) {
		t.Parallel()
		f := newTenantFleet(t, "https://example.com/dev-team", "  ref:\n    branch: dev-team\n")
		f.Write(t, "ferry.yaml", "sources:\n  dev-team: ../dev-team\n")
		testtree.Write(t, filepath.Dir(f.Dir), map[string]string{"dev-team/tenants/dev-team/app.yaml": configMap("", "dev-team", "from", "beside")})
		repo := loadClosed(t, f.Dir, render.Options{})
		tg := mustTarget(t, repo, "dev-team")
		if tg.Revision != nil {
			t.Errorf("Revision = %+v, want none", tg.Revision)
		}
		if got := renderedData(t, repo, tg, "dev-team", "dev-team")["from"]; got != "beside" {
			t.Errorf("dev-team renders from %q, want the mapped folder", got)
		}
	})
}

// A revision exported elsewhere (diff's base and head) reads other refs
// from the clone of render.Options.Checkout, where its Git objects are.
func TestOtherRefOfAnExport(t *testing.T) {
	t.Parallel()
	f := newTenantFleet(t, "ssh://git@example.com/fleet", "  ref:\n    branch: dev-team\n")
	head := f.Commit(t, "tenant on dev-team")
	g, err := gitrepo.Open(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(t.TempDir(), "head")
	if err := g.Export(t.Context(), head, "", export); err != nil {
		t.Fatal(err)
	}
	repo := loadClosed(t, export, render.Options{Checkout: f.Dir})
	tg := mustTarget(t, repo, "dev-team")
	if got := renderedData(t, repo, tg, "dev-team", "team-dev-team")["from"]; got != "dev-team" {
		t.Errorf("dev-team renders from %q, want dev-team", got)
	}
	if tg.Revision == nil || tg.Revision.Commit != f.commits["dev-team"] {
		t.Errorf("Revision = %+v, want dev-team's commit %s", tg.Revision, f.commits["dev-team"])
	}
	// At the ref of flux-system, the tenant is the revision itself: a
	// pull request to main changes it.
	f.Write(t, "clusters/staging/tenant.yaml", tenantFile("ssh://git@example.com/fleet", "  ref:\n    branch: main\n"))
	f.Write(t, "tenants/dev-team/app.yaml", configMap("", "dev-team", "from", "pull request"))
	pr := f.Commit(t, "tenant on main")
	exportPR := filepath.Join(t.TempDir(), "pr")
	if err := g.Export(t.Context(), pr, "", exportPR); err != nil {
		t.Fatal(err)
	}
	repo = loadClosed(t, exportPR, render.Options{Checkout: f.Dir})
	tg = mustTarget(t, repo, "dev-team")
	if got := renderedData(t, repo, tg, "dev-team", "team-dev-team")["from"]; got != "pull request" || tg.Revision != nil {
		t.Errorf("tenant on main renders from %q (revision %+v), want the revision exported", got, tg.Revision)
	}
	// An export is not the checkout: the commit HEAD is at is read from
	// the clone like any other. Here the tenant is at the commit main
	// goes back to.
	f.Write(t, "clusters/staging/tenant.yaml", tenantFile("ssh://git@example.com/fleet", "  ref:\n    commit: "+head+"\n"))
	at := f.Commit(t, "tenant at a commit")
	if err := f.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", plumbing.NewHash(head))); err != nil {
		t.Fatal(err)
	}
	export2 := filepath.Join(t.TempDir(), "at")
	if err := g.Export(t.Context(), at, "", export2); err != nil {
		t.Fatal(err)
	}
	repo = loadClosed(t, export2, render.Options{Checkout: f.Dir})
	if tg := mustTarget(t, repo, "dev-team"); tg.Revision == nil || tg.Revision.Commit != head {
		t.Errorf("export: Revision = %+v, want commit %s", tg.Revision, head)
	}
	repo = loadClosed(t, f.Dir, render.Options{})
	if tg := mustTarget(t, repo, "dev-team"); tg.Revision != nil {
		t.Errorf("work tree at that commit: Revision = %+v, want the checkout", tg.Revision)
	}
}

// flux build of the tenant over the branch exported by git itself gives
// the objects ferry renders of it.
func TestOtherRefMatchesFluxBuild(t *testing.T) {
	bin := testbin.Tool(t, "flux", "tools")
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is needed to export the branch independently of ferry")
	}
	f := newTenantFleet(t, "https://example.com/fleet", "  ref:\n    branch: dev-team\n")
	repo := loadClosed(t, f.Dir, render.Options{})
	tg := mustTarget(t, repo, "dev-team")
	res, err := repo.Render(t.Context(), tg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), gitBin, "-C", f.Dir, "archive", "--format=tar", "refs/remotes/origin/dev-team").Output()
	if err != nil {
		t.Fatalf("git archive: %v", err)
	}
	root := untar(t, out)
	want := fluxBuild(t, bin, root, tg.Path, tg.Namespace, tg.Kustomization)
	if len(want) == 0 {
		t.Fatal("flux built nothing")
	}
	if diff := cmp.Diff(want, byID(res.Set.Objects)); diff != "" {
		t.Errorf("ferry render differs from flux build ks dev-team of the branch (-flux +ferry):\n%s", diff)
	}
}

// untar writes a tar stream's files into a new folder.
func untar(t *testing.T, b []byte) string {
	t.Helper()
	dir := t.TempDir()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
