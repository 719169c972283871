package acttest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/testbin"
)

// releasePlatforms bounds the test's release to what the images hold
// (the binaries of darwin and windows cost minutes more and are
// cmd/ferry-release's own tests' concern).
var releasePlatforms = []string{"linux/amd64", "linux/arm64"}

// TestReleaseWorkflowOnGitea runs .gitea/workflows/release.yaml, as it is
// in this checkout, for a pushed tag of a copy of ferry on a real Gitea,
// in the real runner: Go and cosign come from the host through the
// stand-ins of actions/setup-go and sigstore/cosign-installer (nothing
// else stands in but checkout), the images go to Gitea's own container
// registry, signed with a cosign key from the job's secrets. Then:
// Gitea's release holds the archives, SBOMs, checksums and bundle (each
// matching the checksums); both indexes hold linux/amd64 and linux/arm64
// and `cosign verify --key` passes on them; the tag and the major tag are
// a release commit whose parent is the tagged commit and whose action
// files pin the action index's digest; no secret reached the log. Last, a
// pull request's diff workflow using that release commit as
// ferry-ci/ferry@v1 runs ferry from the pinned image, pulled from the
// registry by digest, and builds nothing.
func TestReleaseWorkflowOnGitea(t *testing.T) {
	t.Parallel()
	r := Require(t)
	g := giteatest.Require(t)
	cosign := testbin.Tool(t, "cosign", "cosign")
	key := newCosignKey(t, cosign)

	const version, major = "v1.4.2", "v1"
	f := newRepo(t, g, "ferry")
	copyCheckout(t, f.dir)
	src := f.commit("ferry at " + gitHead(t))
	f.git("tag", "-a", "-m", "ferry "+version, version)
	f.push("main")
	f.pushTag(version)

	wf := ".gitea/workflows/release.yaml"
	tools := HostGo(t, cosign)
	env := f.giteaEnv()
	maps.Copy(env, tools.Env)
	begin := time.Now()
	res := r.Run(t, Job{
		Dir:              f.dir,
		Workflow:         wf,
		Event:            "push",
		ServerHost:       f.host(),
		Env:              env,
		Vars:             map[string]string{"RELEASE_PLATFORMS": strings.Join(releasePlatforms, ",")},
		Secrets:          map[string]string{"GITHUB_TOKEN": f.token, "COSIGN_KEY": key.private, "COSIGN_PASSWORD": key.password},
		Actions:          StandIns(t, filepath.Join(f.dir, wf)),
		ContainerOptions: tools.ContainerOptions,
		Timeout:          50 * time.Minute,
		// act's masking off: the log is what the steps printed.
		ShowSecrets: true,
		Payload: map[string]any{
			"ref":        "refs/tags/" + version,
			"before":     strings.Repeat("0", 40),
			"after":      src,
			"created":    true,
			"deleted":    false,
			"forced":     false,
			"repository": f.repositoryPayload(),
			"pusher":     map[string]any{"name": f.owner},
			"sender":     map[string]any{"login": f.owner},
		},
	})
	runOK(t, res)
	t.Logf("release job: %v", time.Since(begin).Round(time.Second))
	noSecrets(t, "the release job's log", res.Log, key.password, f.token, key.body(), base64.StdEncoding.EncodeToString([]byte(f.owner+":"+f.token)))

	// The images: both indexes, both platforms, signed with the key.
	repo := f.host() + "/" + f.owner + "/ferry"
	auth := &authn.Basic{Username: f.owner, Password: f.token}
	var actionDigest string
	for _, tag := range []string{version, version + "-action"} {
		digest, platforms := readIndex(t, repo+":"+tag, auth)
		if !slices.Equal(platforms, releasePlatforms) {
			t.Errorf("%s:%s holds %v, want %v", repo, tag, platforms, releasePlatforms)
		}
		key.verify(t, f, repo+"@"+digest)
		if tag == version+"-action" {
			actionDigest = digest
		}
	}
	pinned := repo + ":" + version + "-action@" + actionDigest

	// The release: the archives, the binaries' and the image's SBOMs,
	// each matching the checksums, which one bundle signs and another
	// attests the binaries' provenance of.
	files := giteaRelease(t, g, f, version)
	sumsName := "ferry_" + version + "_checksums.txt"
	provName := "ferry_" + version + "_provenance.sigstore.json"
	want := []string{sumsName, sumsName + ".sigstore.json", provName, "ferry_" + version + "_image.cdx.json"}
	for _, p := range releasePlatforms {
		base := "ferry_" + version + "_" + strings.ReplaceAll(p, "/", "_")
		want = append(want, base+".tar.gz", base+".cdx.json")
	}
	sort.Strings(want)
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, want) {
		t.Fatalf("the release's attachments:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sums := checksums(t, files[sumsName])
	for _, name := range want {
		if strings.HasPrefix(name, sumsName) || name == provName {
			continue
		}
		sum := sha256.Sum256(files[name])
		if got := hex.EncodeToString(sum[:]); sums[name] != got {
			t.Errorf("%s: sha256 %s, the checksums file says %q", name, got, sums[name])
		}
	}
	key.verifyBlob(t, files[sumsName], files[sumsName+".sigstore.json"], "")
	key.verifyBlob(t, files[sumsName], files[provName], "slsaprovenance1")

	// The release commit, which the tags now name.
	f.git("fetch", "-q", "--force", "origin", "+refs/tags/*:refs/tags/*", "+refs/heads/main:refs/remotes/origin/main")
	release := f.git("rev-parse", version+"^{commit}")
	if release == src {
		t.Fatalf("%s still names the tagged commit", version)
	}
	if got := f.git("rev-parse", major+"^{commit}"); got != release {
		t.Errorf("%s is %s, want the release commit %s", major, got, release)
	}
	if got := f.git("rev-parse", release+"^@"); got != src {
		t.Errorf("the release commit's parents: %s, want the tagged %s alone", got, src)
	}
	if got := f.git("rev-parse", "origin/main"); got != src {
		t.Errorf("main moved to %s", got)
	}
	for _, p := range strings.Split(f.git("diff", "--name-only", src, release), "\n") {
		if p != "action.yml" && !strings.HasPrefix(p, "steps/") && !strings.HasPrefix(p, "setup/") {
			t.Errorf("the release commit changed %s", p)
		}
	}
	actions := 0
	for _, p := range strings.Split(f.git("ls-tree", "-r", "--name-only", release), "\n") {
		if path.Base(p) != "action.yml" || (p != "action.yml" && !strings.HasPrefix(p, "steps/")) {
			continue
		}
		actions++
		text := f.git("show", release+":"+p)
		m := imageLine.FindStringSubmatch(text)
		if m == nil || m[1] != "docker://"+pinned {
			t.Errorf("%s of the release commit runs %q, want docker://%s", p, m, pinned)
		}
		if orig := f.git("show", src+":"+p); !dockerfileImage.MatchString(orig) {
			t.Errorf("%s of the tagged commit does not build the Dockerfile", p)
		}
	}
	if actions < 2 {
		t.Errorf("the release commit has %d container actions, want action.yml and steps/*", actions)
	}

	// A diff job using the release: the pinned image, pulled, no build.
	ferry := filepath.Join(t.TempDir(), "ferry")
	f.git("worktree", "add", "-q", "--detach", ferry, major)
	ctx := context.Background()
	if d, err := r.ImageDigests(ctx, pinned); err != nil || d != nil {
		t.Fatalf("the runner's store has %s before the diff job (%v, %v)", pinned, d, err)
	}
	fl := newFleet(t, g)
	dwf := fl.installWorkflow("gitea", "diff")
	base, head := fl.change(func() { diffFleet(fl, "hello", "release-pa55-1") }, func() { diffFleet(fl, "hello-release", "release-pa55-1") })
	pr := g.CreatePullRequest(t, fl.token, fl.owner, fl.name, "change", "main", "web: greeting")
	begin = time.Now()
	dres := r.Run(t, fl.giteaPullRequest(dwf, ferry, "opened", pr.Number, base, head))
	runOK(t, dres)
	t.Logf("diff job with the pinned image: %v", time.Since(begin).Round(time.Second))
	if strings.Contains(dres.Log, "docker build") {
		t.Errorf("the diff job built an image:\n%s", grepLines(dres.Log, "docker build"))
	}
	if !strings.Contains(dres.Log, "docker run image="+pinned+" ") {
		t.Errorf("the diff job did not run %s:\n%s", pinned, grepLines(dres.Log, "docker run image="))
	}
	digests, err := r.ImageDigests(ctx, pinned)
	if err != nil || !slices.ContainsFunc(digests, func(d string) bool { return strings.HasSuffix(d, "@"+actionDigest) }) {
		t.Errorf("after the diff job the runner's store has %s as %v (%v), want it pulled by %s", pinned, digests, err, actionDigest)
	}
	steps := strings.Join(StepLines(dres.Log), "\n")
	for _, want := range []string{"--- ConfigMap/web/web-config (changed)", "+  greeting: hello-release"} {
		if !strings.Contains(steps, want) {
			t.Errorf("ferry's diff in the job log lacks %q:\n%s", want, steps)
		}
	}
	comments := ferryComments(t, g, fl, pr.Number)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "hello-release") || !strings.Contains(comments[0].Body, "ConfigMap/web/web-config") {
		t.Errorf("ferry's comments: %+v, want one with the ConfigMap's diff", comments)
	}
}

// imageLine is an action's runs.image.
var imageLine = regexp.MustCompile(`(?m)^\s*image:\s*["']?([^"'\s]+)`)

// pushTag pushes the tag to Gitea as the owner.
func (f *fleet) pushTag(tag string) {
	f.t.Helper()
	u, err := url.Parse(f.gitea.CloneURL(f.owner, f.name))
	if err != nil {
		f.t.Fatal(err)
	}
	u.User = url.UserPassword(f.owner, f.token)
	f.git("push", "-q", u.String(), "refs/tags/"+tag)
}

// gitHead is this checkout's commit, for the copy's message.
func gitHead(t *testing.T) string {
	out, err := exec.Command("git", "-C", RepoRoot(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// copyCheckout copies this checkout's files (tracked, and untracked ones
// not ignored, as they are in the work tree) into dst: a repository as
// ferry's maintainers have it.
func copyCheckout(t *testing.T, dst string) {
	t.Helper()
	root := RepoRoot()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		st, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err == nil {
				err = os.Symlink(target, to)
			}
			if err != nil {
				t.Fatal(err)
			}
		case st.Mode().IsRegular():
			b, err := os.ReadFile(src)
			if err == nil {
				err = os.WriteFile(to, b, st.Mode().Perm())
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// readIndex returns the digest of the index ref names and its manifests'
// platforms (os/arch, sorted).
func readIndex(t *testing.T, ref string, auth authn.Authenticator) (string, []string) {
	t.Helper()
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(parsed, remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("reading the index %s: %v", ref, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		if d.Platform != nil {
			platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		}
	}
	sort.Strings(platforms)
	return digest.String(), platforms
}

// giteaRelease returns the files attached to the tag's release on Gitea,
// by name.
func giteaRelease(t *testing.T, g *giteatest.Gitea, f *fleet, tag string) map[string][]byte {
	t.Helper()
	rel, _, err := g.Client(t, f.token).GetReleaseByTag(f.owner, f.name, tag)
	if err != nil {
		t.Fatalf("the release of %s: %v", tag, err)
	}
	files := map[string][]byte{}
	for _, a := range rel.Attachments {
		resp, err := http.Get(a.DownloadURL)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("downloading %s: %v %s", a.DownloadURL, err, resp.Status)
		}
		files[a.Name] = b
	}
	return files
}

// checksums parses a sha256sum file: name -> hex.
func checksums(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("checksums line %q", sc.Text())
		}
		out[file] = sum
	}
	return out
}

func grepLines(log, s string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// cosignKey is a key pair made for the test by the cosign the tests use.
type cosignKey struct {
	cosign, dir       string
	private, password string
	public            string // path
}

func newCosignKey(t *testing.T, cosign string) cosignKey {
	t.Helper()
	k := cosignKey{cosign: cosign, dir: t.TempDir(), password: "release-key-pa55-" + fmt.Sprint(os.Getpid())}
	cmd := exec.Command(cosign, "generate-key-pair")
	cmd.Dir = k.dir
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD="+k.password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(k.dir, "cosign.key"))
	if err != nil {
		t.Fatal(err)
	}
	k.private, k.public = string(b), filepath.Join(k.dir, "cosign.pub")
	return k
}

// body is the private key's longest line: what must never be printed.
func (k cosignKey) body() string {
	var longest string
	for _, line := range strings.Split(k.private, "\n") {
		if len(line) > len(longest) && !strings.HasPrefix(line, "-----") {
			longest = line
		}
	}
	return longest
}

// verify runs cosign verify --key on an image of Gitea's registry.
func (k cosignKey) verify(t *testing.T, f *fleet, ref string) {
	t.Helper()
	config := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(f.owner + ":" + f.token))
	if err := os.WriteFile(filepath.Join(config, "config.json"), []byte(`{"auths":{"`+f.host()+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(k.cosign, "verify", "--key", k.public, "--insecure-ignore-tlog=true", "--allow-insecure-registry", "--allow-http-registry", ref)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+config)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("cosign verify --key %s: %v\n%s", ref, err, out)
	}
}

// verifyBlob runs cosign verify-blob --key on the checksums and their
// bundle, or verify-blob-attestation when the bundle is an attestation of
// that type.
func (k cosignKey) verifyBlob(t *testing.T, blob, bundle []byte, attestation string) {
	t.Helper()
	dir := t.TempDir()
	for name, b := range map[string][]byte{"checksums.txt": blob, "bundle.json": bundle} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"verify-blob", "--key", k.public, "--bundle", filepath.Join(dir, "bundle.json"), "--insecure-ignore-tlog=true"}
	if attestation != "" {
		args = append([]string{"verify-blob-attestation", "--type", attestation}, args[1:]...)
	}
	cmd := exec.Command(k.cosign, append(args, filepath.Join(dir, "checksums.txt"))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("cosign %s --key of the checksums: %v\n%s", args[0], err, out)
	}
}
