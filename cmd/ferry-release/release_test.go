package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/release"
)

// repoRoot is ferry's checkout.
var repoRoot, _ = filepath.Abs("../..")

// releaseEnv is what every make release-local of the test gets: the
// registry's credentials (DOCKER_CONFIG), the signing key and cosign.
type releaseEnv struct {
	checkout, testbin, key, pub, dockerConfig string
	reg                                       *registrytest.Registry
}

const (
	testVersion  = "v9.8.7"
	testPassword = "release-test-pa55"
)

// setupRelease clones the committed HEAD of this checkout, tags it
// testVersion, makes a cosign key pair and starts a registry with
// credentials.
func setupRelease(t *testing.T) *releaseEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a release builds ferry twice")
	}
	if _, err := os.Stat(registrytest.Binary); err != nil && os.Getenv("CI") == "true" {
		if out, err := exec.Command("bash", filepath.Join(repoRoot, "hack", "registry.sh")).CombinedOutput(); err != nil {
			t.Fatalf("hack/registry.sh: %v\n%s", err, out)
		}
	}
	e := &releaseEnv{reg: registrytest.Start(t), testbin: filepath.Join(repoRoot, ".cache", "testbin")}
	if tb := os.Getenv("FERRY_TESTBIN"); tb != "" {
		e.testbin = tb
	}
	tmp := t.TempDir()
	e.checkout = filepath.Join(tmp, "ferry")
	sh(t, tmp, nil, "git", "clone", "-q", repoRoot, e.checkout)
	sh(t, e.checkout, nil, "git", "tag", testVersion)
	if out, err := exec.Command("make", "-C", repoRoot, "cosign", "TESTBIN="+e.testbin).CombinedOutput(); err != nil {
		t.Fatalf("make cosign: %v\n%s", err, out)
	}
	keys := filepath.Join(tmp, "keys")
	os.MkdirAll(keys, 0o700)
	sh(t, keys, []string{"COSIGN_PASSWORD=" + testPassword}, filepath.Join(e.testbin, "cosign"), "generate-key-pair")
	e.key, e.pub = filepath.Join(keys, "cosign.key"), filepath.Join(keys, "cosign.pub")
	e.dockerConfig = filepath.Join(tmp, "docker")
	os.MkdirAll(e.dockerConfig, 0o700)
	auth := base64.StdEncoding.EncodeToString([]byte(e.reg.Username + ":" + e.reg.Password))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, e.reg.Host, auth)
	if err := os.WriteFile(filepath.Join(e.dockerConfig, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func sh(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeRelease runs make release-local in the clone with vars (NAME=value)
// and returns its output and error.
func (e *releaseEnv) makeRelease(dist string, vars ...string) (string, error) {
	args := []string{"-C", e.checkout, "release-local", "TESTBIN=" + e.testbin, "DIST=" + dist, "PLATFORMS=linux/amd64,linux/arm64"}
	cmd := exec.Command("make", append(args, vars...)...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+e.dockerConfig, "COSIGN_KEY="+e.key, "COSIGN_PASSWORD="+testPassword)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestReleaseLocal runs `make release-local` against a real registry:
// bad inputs first (each a clear error with nothing pushed), then a
// release of a tagged commit for linux/amd64 and linux/arm64, and checks
// what it published with the tools a user verifies with (cosign,
// sha256sum) and by reading the registry back.
func TestReleaseLocal(t *testing.T) {
	e := setupRelease(t)
	tmp := t.TempDir()

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			vars []string
			env  []string
			prep func(t *testing.T) func()
			want string
		}{
			{name: "no registry", want: "no registry: say where the images go with REGISTRY=host:port"},
			{name: "wrong password", vars: []string{"REGISTRY=" + e.reg.Host, "COSIGN_PASSWORD=wrong"}, want: "is COSIGN_PASSWORD right?"},
			{name: "no key", vars: []string{"REGISTRY=" + e.reg.Host, "COSIGN_KEY="}, want: "COSIGN_KEY is not set"},
			{name: "version not the tag", vars: []string{"REGISTRY=" + e.reg.Host, "VERSION=v9.9.9"}, want: "version v9.9.9 is not a tag of HEAD ("},
			{name: "dirty tree", vars: []string{"REGISTRY=" + e.reg.Host}, want: "uncommitted changes (README.md)", prep: func(t *testing.T) func() {
				readme := filepath.Join(e.checkout, "README.md")
				b, _ := os.ReadFile(readme)
				os.WriteFile(readme, append(b, "changed\n"...), 0o644)
				return func() { os.WriteFile(readme, b, 0o644) }
			}},
			{name: "registry refuses the credentials", vars: []string{"REGISTRY=" + e.reg.Host}, env: []string{"DOCKER_CONFIG=" + t.TempDir()}, want: "registry " + e.reg.Host + ": cannot push"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.prep != nil {
					defer tc.prep(t)()
				}
				dist := filepath.Join(tmp, "refused")
				cmd := exec.Command("make", append([]string{"-C", e.checkout, "release-local", "TESTBIN=" + e.testbin, "DIST=" + dist}, tc.vars...)...)
				cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+e.dockerConfig, "COSIGN_KEY="+e.key, "COSIGN_PASSWORD="+testPassword)
				cmd.Env = append(cmd.Env, tc.env...)
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), tc.want) {
					t.Fatalf("make release-local: %v, want a failure saying %q:\n%s", err, tc.want, out)
				}
				if strings.Contains(string(out), testPassword) {
					t.Errorf("the output holds the key's password:\n%s", out)
				}
				if _, err := os.Stat(dist); err == nil {
					t.Errorf("%s was written", dist)
				}
				repos, err := remote.Catalog(context.Background(), mustRegistry(t, e.reg.Host), remote.WithAuth(e.reg.Auth()))
				if err != nil || len(repos) != 0 {
					t.Errorf("the registry holds %v (%v) after a refused release", repos, err)
				}
			})
		}
	})

	dist := filepath.Join(tmp, "dist")
	out, err := e.makeRelease(dist, "REGISTRY="+e.reg.Host, "VERSION="+testVersion)
	if err != nil {
		t.Fatalf("make release-local: %v\n%s", err, out)
	}
	t.Logf("make release-local:\n%s", out)
	if strings.Contains(out, testPassword) {
		t.Errorf("the output holds the key's password")
	}
	var res release.Result
	readJSON(t, filepath.Join(dist, "release.json"), &res)
	head := strings.TrimSpace(sh(t, e.checkout, nil, "git", "rev-parse", "HEAD"))
	if res.Version != testVersion || res.Commit != head || !res.Tagged || res.Signed != "key" {
		t.Fatalf("release.json: %+v", res)
	}

	t.Run("images", func(t *testing.T) { checkImages(t, e, res) })
	t.Run("signatures", func(t *testing.T) { checkSignatures(t, e, res, dist) })
	t.Run("checksums", func(t *testing.T) { checkChecksums(t, e, res, dist) })
	t.Run("action", func(t *testing.T) { checkAction(t, e, res, dist) })
}

func mustRegistry(t *testing.T, host string) name.Registry {
	r, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkImages reads both indexes back: two platforms, the annotations,
// the users; the arm64 binary is an arm64 executable (checked, not run);
// the amd64 image's /ferry prints the release's version and commit.
func checkImages(t *testing.T, e *releaseEnv, res release.Result) {
	for _, v := range release.Variants {
		ref := res.Images[v.Name]
		if ref.Ref != e.reg.Host+"/ferry:"+testVersion+v.TagSuffix || !strings.HasPrefix(ref.Digest, "sha256:") {
			t.Fatalf("%s: %+v", v.Name, ref)
		}
		d, err := name.NewDigest(ref.Pinned())
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(d, remote.WithAuth(e.reg.Auth()))
		if err != nil {
			t.Fatal(err)
		}
		// The tag names the same index.
		tagged, err := remote.Head(mustTag(t, ref.Ref), remote.WithAuth(e.reg.Auth()))
		if err != nil || tagged.Digest.String() != ref.Digest {
			t.Errorf("%s names %v (%v), want %s", ref.Ref, tagged, err, ref.Digest)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.Annotations["org.opencontainers.image.version"] != testVersion || m.Annotations["org.opencontainers.image.revision"] != res.Commit {
			t.Errorf("%s annotations %v", v.Name, m.Annotations)
		}
		var platforms []string
		for _, desc := range m.Manifests {
			platforms = append(platforms, desc.Platform.String())
			img, err := idx.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Config.User != v.User || cf.Architecture != desc.Platform.Architecture {
				t.Errorf("%s %s: user %q architecture %q", v.Name, desc.Platform, cf.Config.User, cf.Architecture)
			}
			bin := extract(t, img, "ferry")
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil {
				t.Fatalf("%s %s: /ferry: %v", v.Name, desc.Platform, err)
			}
			wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[desc.Platform.Architecture]
			if f.Machine != wantMachine {
				t.Errorf("%s %s: /ferry is for %v", v.Name, desc.Platform, f.Machine)
			}
			if v.Name == "image" && desc.Platform.Architecture == runtime.GOARCH {
				runVersion(t, bin, res)
			}
		}
		if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
			t.Errorf("%s platforms %v", v.Name, platforms)
		}
	}
}

func mustTag(t *testing.T, ref string) name.Tag {
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// extract returns a file of the image's layers.
func extract(t *testing.T, img v1.Image, file string) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if h.Name == file {
				b, err := io.ReadAll(tr)
				rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
		rc.Close()
	}
	t.Fatalf("no %s in the image", file)
	return nil
}

// runVersion runs the binary's `version` and `version --format json`.
func runVersion(t *testing.T, bin []byte, res release.Result) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ferry")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "version").Output()
	want := regexp.MustCompile(`^ferry ` + regexp.QuoteMeta(testVersion) + ` linux/` + runtime.GOARCH + ` go1\.\S+ \(commit ` + res.Commit[:12] + `, ` + regexp.QuoteMeta(res.Date) + `\)\n$`)
	if err != nil || !want.MatchString(string(out)) {
		t.Errorf("/ferry version: %v\n%s", err, out)
	}
	out, err = exec.Command(path, "version", "--format", "json").Output()
	var info map[string]any
	if err != nil || json.Unmarshal(out, &info) != nil || info["version"] != testVersion || info["commit"] != res.Commit || info["date"] != res.Date {
		t.Errorf("/ferry version --format json: %v\n%s", err, out)
	}
}

func (e *releaseEnv) cosign(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(e.testbin, "cosign"), args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+e.dockerConfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkSignatures verifies both images' signatures and attestations with
// the public key, as a user would, and that another key does not verify.
func checkSignatures(t *testing.T, e *releaseEnv, res release.Result, dist string) {
	other := t.TempDir()
	sh(t, other, []string{"COSIGN_PASSWORD=x"}, filepath.Join(e.testbin, "cosign"), "generate-key-pair")
	offline := []string{"--insecure-ignore-tlog=true", "--allow-insecure-registry", "--allow-http-registry"}
	for _, v := range release.Variants {
		ref := res.Images[v.Name].Pinned()
		if out, err := e.cosign(t, append([]string{"verify", "--key", e.pub}, append(offline, ref)...)...); err != nil {
			t.Errorf("cosign verify %s: %v\n%s", ref, err, out)
		}
		for _, typ := range []string{"cyclonedx", "slsaprovenance1"} {
			if out, err := e.cosign(t, append([]string{"verify-attestation", "--key", e.pub, "--type", typ}, append(offline, ref)...)...); err != nil {
				t.Errorf("cosign verify-attestation --type %s %s: %v\n%s", typ, ref, err, out)
			}
		}
		if out, err := e.cosign(t, append([]string{"verify", "--key", filepath.Join(other, "cosign.pub")}, append(offline, ref)...)...); err == nil {
			t.Errorf("cosign verify with another key passed:\n%s", out)
		}
	}
	sums := filepath.Join(dist, release.ChecksumsName(testVersion))
	if out, err := e.cosign(t, "verify-blob", "--key", e.pub, "--bundle", sums+".sigstore.json", "--insecure-ignore-tlog=true", sums); err != nil {
		t.Errorf("cosign verify-blob %s: %v\n%s", sums, err, out)
	}
	prov := filepath.Join(dist, release.ProvenanceName(testVersion))
	if out, err := e.cosign(t, "verify-blob-attestation", "--key", e.pub, "--bundle", prov, "--type", "slsaprovenance1", "--insecure-ignore-tlog=true", sums); err != nil {
		t.Errorf("cosign verify-blob-attestation %s: %v\n%s", prov, err, out)
	}
	if pub, _ := os.ReadFile(filepath.Join(dist, "cosign.pub")); !bytes.Equal(pub, mustRead(t, e.pub)) {
		t.Errorf("dist/cosign.pub is not the signing key's public half")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkChecksums runs sha256sum -c on the checksums file, checks the
// archives and SBOMs it lists, and runs the amd64 archive's binary.
func checkChecksums(t *testing.T, e *releaseEnv, res release.Result, dist string) {
	sums := release.ChecksumsName(testVersion)
	out := sh(t, dist, nil, "sha256sum", "--strict", "-c", sums)
	var want []string
	for _, p := range []string{"linux_amd64", "linux_arm64"} {
		want = append(want, "ferry_"+testVersion+"_"+p+".tar.gz: OK", "ferry_"+testVersion+"_"+p+".cdx.json: OK")
	}
	want = append(want, "ferry_"+testVersion+"_image.cdx.json: OK")
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("sha256sum -c: no %q in:\n%s", w, out)
		}
	}
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct{ Name, Version string }
		}
		Components []struct{ Name, Version string }
	}
	readJSON(t, filepath.Join(dist, "ferry_"+testVersion+"_linux_arm64.cdx.json"), &bom)
	names := map[string]string{}
	for _, c := range bom.Components {
		names[c.Name] = c.Version
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Version != testVersion || names["helm.sh/helm/v4"] == "" || names["k8s.io/client-go"] == "" {
		t.Errorf("SBOM: format %q subject %+v, %d components", bom.BOMFormat, bom.Metadata.Component, len(bom.Components))
	}
	if runtime.GOARCH == "amd64" {
		bin := fromTarGz(t, filepath.Join(dist, "ferry_"+testVersion+"_linux_amd64.tar.gz"), "ferry")
		runVersion(t, bin, res)
	}
}

func fromTarGz(t *testing.T, path, file string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no %s in %s: %v", file, path, err)
		}
		if h.Name == file {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// checkAction reads dist/action: every container action pins the action
// image by the digest pushed; the setup action carries the release's
// version, its checksums, the bundle and the public key.
func checkAction(t *testing.T, e *releaseEnv, res release.Result, dist string) {
	pinned := "image: docker://" + res.Images["action"].Pinned() + "\n"
	files := []string{"action.yml"}
	steps, _ := filepath.Glob(filepath.Join(dist, "action", "steps", "*", "action.yml"))
	if len(steps) < 6 {
		t.Errorf("steps in dist/action: %v", steps)
	}
	for _, s := range steps {
		rel, _ := filepath.Rel(filepath.Join(dist, "action"), s)
		files = append(files, rel)
	}
	for _, f := range files {
		b := mustRead(t, filepath.Join(dist, "action", f))
		if !strings.Contains(string(b), pinned) || strings.Contains(string(b), "Dockerfile") {
			t.Errorf("dist/action/%s does not pin %q:\n%s", f, pinned, b)
		}
	}
	env := string(mustRead(t, filepath.Join(dist, "action", "setup", "release.env")))
	if !strings.Contains(env, "FERRY_VERSION="+testVersion+"\n") {
		t.Errorf("setup/release.env:\n%s", env)
	}
	sums := mustRead(t, filepath.Join(dist, release.ChecksumsName(testVersion)))
	if !bytes.Equal(sums, mustRead(t, filepath.Join(dist, "action", "setup", "checksums.txt"))) {
		t.Errorf("setup/checksums.txt is not the release's checksums")
	}
	for _, f := range []string{"checksums.txt.sigstore.json", "cosign.pub"} {
		if _, err := os.Stat(filepath.Join(dist, "action", "setup", f)); err != nil {
			t.Errorf("setup/%s: %v", f, err)
		}
	}
}
