package acttest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/testtree"
)

// scriptRepo is a Git repository for hack/release-commit.sh's tests, with
// a bare repository as its origin.
type scriptRepo struct {
	t           *testing.T
	dir, remote string
	home        string
}

const pinnedDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func newScriptRepo(t *testing.T) *scriptRepo {
	t.Helper()
	tmp := t.TempDir()
	r := &scriptRepo{t: t, dir: filepath.Join(tmp, "src"), remote: filepath.Join(tmp, "remote.git"), home: filepath.Join(tmp, "home")}
	for _, d := range []string{r.dir, r.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.git("init", "-q", "--bare", r.remote)
	r.git("init", "-q", "-b", "main")
	r.git("remote", "add", "origin", r.remote)
	testtree.Write(t, r.dir, map[string]string{
		"action.yml":            "name: ferry\nruns:\n  using: docker\n  image: Dockerfile\n",
		"steps/diff/action.yml": "name: diff\nruns:\n  using: docker\n  image: ../../Dockerfile\n",
		"steps/diff/README.md":  "diff\n",
		"steps/gone/action.yml": "name: gone\nruns:\n  using: docker\n  image: ../../Dockerfile\n",
		"setup/action.yml":      "name: setup\nruns:\n  using: composite\n",
		"setup/install.sh":      "#!/bin/sh\necho install\n",
		"cmd/ferry/main.go":     "package main\n",
		"README.md":             "ferry\n",
	})
	if err := os.Chmod(filepath.Join(r.dir, "setup", "install.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.commit("source")
	r.git("push", "-q", "origin", "main")
	return r
}

func (r *scriptRepo) git(args ...string) string {
	r.t.Helper()
	out, err := r.run("git", args...)
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

func (r *scriptRepo) run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=maintainer", "GIT_AUTHOR_EMAIL=maintainer@ferry.invalid",
		"GIT_COMMITTER_NAME=maintainer", "GIT_COMMITTER_EMAIL=maintainer@ferry.invalid")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (r *scriptRepo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// dist writes a dist/action folder as ferry-release does: action.yml,
// steps/diff and setup, the images pinned (unless image is given), every
// file 0644 but setup/new.sh (0755).
func (r *scriptRepo) dist(version, image string) string {
	r.t.Helper()
	if image == "" {
		image = "docker://127.0.0.1:5000/acme/ferry:" + version + "-action@" + pinnedDigest
	}
	dir := filepath.Join(r.t.TempDir(), "action")
	testtree.Write(r.t, dir, map[string]string{
		"action.yml":            "name: ferry\nruns:\n  using: docker\n  image: " + image + "\n",
		"steps/diff/action.yml": "name: diff\nruns:\n  using: docker\n  image: " + image + "\n",
		"steps/diff/README.md":  "diff\n",
		"setup/action.yml":      "name: setup\nruns:\n  using: composite\n",
		"setup/release.env":     "FERRY_VERSION=" + version + "\n",
		"setup/install.sh":      "#!/bin/sh\necho install\n",
		"setup/new.sh":          "#!/bin/sh\n",
	})
	if err := os.Chmod(filepath.Join(dir, "setup", "new.sh"), 0o755); err != nil {
		r.t.Fatal(err)
	}
	return dir
}

// script runs hack/release-commit.sh in the repository.
func (r *scriptRepo) script(args ...string) (string, error) {
	return r.run("bash", append([]string{filepath.Join(RepoRoot(), "hack", "release-commit.sh")}, args...)...)
}

// remoteTag is what the remote's tag peels to, "" when it has none.
func (r *scriptRepo) remoteTag(tag string) string {
	r.t.Helper()
	out := r.git("ls-remote", "--tags", "origin", "refs/tags/"+tag, "refs/tags/"+tag+"^{}")
	var plain, peeled string
	for _, line := range strings.Split(out, "\n") {
		sha, ref, _ := strings.Cut(line, "\t")
		switch ref {
		case "refs/tags/" + tag:
			plain = sha
		case "refs/tags/" + tag + "^{}":
			peeled = sha
		}
	}
	if peeled != "" {
		return peeled
	}
	return plain
}

// TestReleaseCommitScript runs hack/release-commit.sh, the release
// workflows' last step, on local repositories: the release commit is a
// child of the tagged commit whose action files are dist/action's and
// nothing else changed; the tags move (on the remote too, leased); and each
// refusal leaves every tag where it was.
func TestReleaseCommitScript(t *testing.T) {
	t.Parallel()
	t.Run("release", func(t *testing.T) {
		t.Parallel()
		r := newScriptRepo(t)
		src := r.git("rev-parse", "HEAD")
		r.git("tag", "-a", "-m", "v1.2.3", "v1.2.3")
		r.git("push", "-q", "origin", "v1.2.3")
		out, err := r.script("--push", "origin", "--name", "release bot", "--email", "bot@ferry.invalid", r.dist("v1.2.3", ""), "v1.2.3")
		if err != nil {
			t.Fatalf("release-commit.sh: %v\n%s", err, out)
		}
		commit := lastLine(out)
		if got := r.git("rev-parse", commit+"^"); got != src {
			t.Errorf("the release commit's parent is %s, want the tagged %s", got, src)
		}
		if got := r.git("log", "-1", "--format=%an <%ae>|%cn <%ce>", commit); got != "release bot <bot@ferry.invalid>|release bot <bot@ferry.invalid>" {
			t.Errorf("author|committer %q", got)
		}
		for _, tag := range []string{"v1.2.3", "v1"} {
			if got := r.git("rev-parse", tag+"^{commit}"); got != commit {
				t.Errorf("local %s is %s, want the release commit %s", tag, got, commit)
			}
			if got := r.remoteTag(tag); got != commit {
				t.Errorf("origin's %s is %s, want the release commit %s", tag, got, commit)
			}
		}
		if got := r.git("ls-remote", "origin", "refs/heads/main"); !strings.HasPrefix(got, src) {
			t.Errorf("origin's main moved: %s, want %s", got, src)
		}
		changed := strings.Split(r.git("diff", "--name-status", src, commit), "\n")
		want := []string{"M\taction.yml", "A\tsetup/new.sh", "A\tsetup/release.env", "M\tsteps/diff/action.yml", "D\tsteps/gone/action.yml"}
		if !slices.Equal(changed, want) {
			t.Errorf("the release commit changed:\n%s\nwant:\n%s", strings.Join(changed, "\n"), strings.Join(want, "\n"))
		}
		for _, f := range []string{"setup/install.sh", "setup/new.sh"} {
			if got := r.git("ls-tree", commit, f); !strings.HasPrefix(got, "100755 ") {
				t.Errorf("%s is not executable in the release commit: %s", f, got)
			}
		}
		if got := r.git("show", commit+":steps/diff/action.yml"); !strings.Contains(got, "ferry:v1.2.3-action@"+pinnedDigest) {
			t.Errorf("steps/diff/action.yml of the release commit:\n%s", got)
		}
		if msg := r.git("log", "-1", "--format=%B", commit); !strings.Contains(msg, src) || !strings.Contains(msg, pinnedDigest) {
			t.Errorf("the message names neither the source commit nor the digest:\n%s", msg)
		}
		if status := r.git("status", "--porcelain"); status != "" {
			t.Errorf("the checkout was changed:\n%s", status)
		}
	})

	t.Run("an older release leaves the major tag", func(t *testing.T) {
		t.Parallel()
		r := newScriptRepo(t)
		old := r.git("rev-parse", "HEAD")
		testtree.Write(t, r.dir, map[string]string{"README.md": "ferry 1.3\n"})
		newer := r.commit("1.3")
		r.git("tag", "v1.3.0")
		r.git("tag", "v1", newer)
		r.git("push", "-q", "origin", "v1.3.0", "v1")
		r.git("tag", "-d", "v1.3.0", "v1") // the job's checkout has only its own tag
		r.git("checkout", "-q", old)
		r.git("tag", "v1.2.4")
		r.git("push", "-q", "origin", "v1.2.4")
		out, err := r.script("--push", "origin", r.dist("v1.2.4", ""), "v1.2.4")
		if err != nil {
			t.Fatalf("release-commit.sh: %v\n%s", err, out)
		}
		commit := lastLine(out)
		if got := r.remoteTag("v1.2.4"); got != commit {
			t.Errorf("origin's v1.2.4 is %s, want %s", got, commit)
		}
		if got := r.remoteTag("v1"); got != newer {
			t.Errorf("origin's v1 is %s, want it left at v1.3.0's %s", got, newer)
		}
		if !strings.Contains(out, "v1.3.0 is newer than v1.2.4") {
			t.Errorf("the script does not say why v1 stays:\n%s", out)
		}
	})

	t.Run("a pre-release leaves the major tag", func(t *testing.T) {
		t.Parallel()
		r := newScriptRepo(t)
		r.git("tag", "v2.0.0-rc.1")
		out, err := r.script(r.dist("v2.0.0-rc.1", ""), "v2.0.0-rc.1")
		if err != nil {
			t.Fatalf("release-commit.sh: %v\n%s", err, out)
		}
		if got := r.git("rev-parse", "v2.0.0-rc.1^{commit}"); got != lastLine(out) {
			t.Errorf("v2.0.0-rc.1 is %s, want the release commit %s", got, lastLine(out))
		}
		if tags := r.git("tag", "-l", "v2"); tags != "" {
			t.Errorf("a pre-release made the major tag v2")
		}
	})

	refusals := []struct {
		name    string
		prepare func(r *scriptRepo) (dist, tag string)
		want    string
	}{
		{"the tag is not at HEAD", func(r *scriptRepo) (string, string) {
			r.git("tag", "v1.2.3")
			testtree.Write(r.t, r.dir, map[string]string{"README.md": "later\n"})
			r.commit("later")
			return r.dist("v1.2.3", ""), "v1.2.3"
		}, "not HEAD"},
		{"no such tag", func(r *scriptRepo) (string, string) {
			return r.dist("v1.2.3", ""), "v1.2.3"
		}, "v1.2.3: no such tag"},
		{"not a version", func(r *scriptRepo) (string, string) {
			r.git("tag", "release-1")
			return r.dist("v1.2.3", ""), "release-1"
		}, "not a release version"},
		{"an action that builds the Dockerfile", func(r *scriptRepo) (string, string) {
			r.git("tag", "v1.2.3")
			return r.dist("v1.2.3", "Dockerfile"), "v1.2.3"
		}, "is not pinned by digest"},
		{"an action pinned by tag only", func(r *scriptRepo) (string, string) {
			r.git("tag", "v1.2.3")
			return r.dist("v1.2.3", "docker://127.0.0.1:5000/acme/ferry:v1.2.3-action"), "v1.2.3"
		}, "is not pinned by digest"},
		{"the remote's tag moved", func(r *scriptRepo) (string, string) {
			r.git("tag", "v1.2.3")
			testtree.Write(r.t, r.dir, map[string]string{"README.md": "elsewhere\n"})
			other := r.commit("elsewhere")
			r.git("push", "-q", "origin", other+":refs/tags/v1.2.3")
			r.git("checkout", "-q", "v1.2.3")
			return r.dist("v1.2.3", ""), "v1.2.3"
		}, "refusing to move it"},
	}
	for _, tc := range refusals {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			t.Parallel()
			r := newScriptRepo(t)
			dist, tag := tc.prepare(r)
			before := r.git("for-each-ref", "refs/tags")
			remoteBefore := r.git("ls-remote", "--tags", "origin")
			out, err := r.script("--push", "origin", dist, tag)
			var exit *exec.ExitError
			if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("release-commit.sh: %v, want exit 2\n%s", err, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("the error does not say %q:\n%s", tc.want, out)
			}
			if after := r.git("for-each-ref", "refs/tags"); after != before {
				t.Errorf("local tags changed:\n%s\nwas:\n%s", after, before)
			}
			if after := r.git("ls-remote", "--tags", "origin"); after != remoteBefore {
				t.Errorf("origin's tags changed:\n%s\nwas:\n%s", after, remoteBefore)
			}
		})
	}
}
