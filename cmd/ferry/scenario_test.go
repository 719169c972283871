package main

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/gittest"
	"github.com/ferry-ci/ferry/internal/helm/helmtest"
	"github.com/ferry-ci/ferry/internal/images"
	"github.com/ferry-ci/ferry/internal/images/registrytest"
	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// scenario is one command scenario, as kustomize's kusttest is for
// builds: a repository the test writes or copies, its SOPS files
// encrypted for a throwaway age key, committed with Git when the test
// asks; the real servers the scenario needs, started on first use (a
// namespace of the package's control plane, a chart repository, the
// image registry of the bump tests); and ferry run in-process in it with
// exactly the variables the scenario holds, nothing of the test
// process's environment. A command test reads:
//
//	s := newScenario(t)
//	s.write("ferry.yaml", "targets:\n  - name: app\n    path: app\n")
//	s.write("app/kustomization.yaml", "resources: [config.yaml]\n")
//	s.encrypt("app/config.yaml", secretYAML, "^data$")
//	res := s.ferry("render", "--repo", s.dir)
type scenario struct {
	t   *testing.T
	dir string
	// key is the age key encrypt encrypts for, and ageKey its text as
	// SOPS_AGE_KEY holds it.
	key    secretstest.Key
	ageKey string
	// git is the repository in dir, made by the first commit.
	git *gittest.Repo
	env map[string]string
}

// newScenario is an empty repository with a throwaway age key of its
// own, handed to ferry as SOPS_AGE_KEY.
func newScenario(t *testing.T) *scenario {
	t.Helper()
	key := secretstest.NewKey(t)
	s := &scenario{t: t, dir: t.TempDir(), key: key, ageKey: "# test key\n" + key.Identity + "\n"}
	s.env = map[string]string{"SOPS_AGE_KEY": s.ageKey}
	return s
}

// scenarioIn is newScenario in the folder dir, for a test that places the
// repository itself (in a workspace beside other checkouts, say).
func scenarioIn(t *testing.T, dir string) *scenario {
	t.Helper()
	s := newScenario(t)
	s.dir = dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// exampleScenario is a copy of examples/<name>, whose SOPS files are
// encrypted for the examples' throwaway key, handed to ferry.
func exampleScenario(t *testing.T, name string) *scenario {
	t.Helper()
	return copyScenario(t, filepath.Join(examplesDir, name)).withExampleKey()
}

// withExampleKey has the scenario's SOPS files encrypted for the
// examples' throwaway key, and hands that key to ferry.
func (s *scenario) withExampleKey() *scenario {
	s.t.Helper()
	s.ageKey = exampleKeyText(s.t)
	s.key = secretstest.Key{Recipient: exampleRecipient}
	for _, l := range strings.Split(s.ageKey, "\n") {
		if strings.HasPrefix(l, "AGE-SECRET-KEY-") {
			s.key.Identity = l
		}
	}
	s.env["SOPS_AGE_KEY"] = s.ageKey
	return s
}

// copyScenario is a copy of the folder src (in a folder of the same
// name), each pair of strings of replace replaced in every file on the
// way: placeholders such as REGISTRY, the address of a server the test
// started.
func copyScenario(t *testing.T, src string, replace ...string) *scenario {
	t.Helper()
	s := newScenario(t)
	s.dir = filepath.Join(s.dir, filepath.Base(src))
	testtree.Copy(t, src, s.dir)
	if len(replace) > 0 {
		r := strings.NewReplacer(replace...)
		for rel, content := range s.tree() {
			s.write(rel, r.Replace(content))
		}
	}
	return s
}

// write writes a file (a slash-separated path), making its folders.
func (s *scenario) write(rel, content string) {
	s.t.Helper()
	testtree.Write(s.t, s.dir, map[string]string{rel: content})
}

// writeAll writes files, by slash-separated path.
func (s *scenario) writeAll(files map[string]string) {
	s.t.Helper()
	testtree.Write(s.t, s.dir, files)
}

// read returns a file.
func (s *scenario) read(rel string) string {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(rel)))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// replace rewrites the first occurrence of old in a file, and fails the
// test when there is none.
func (s *scenario) replace(rel, old, new string) {
	s.t.Helper()
	content := s.read(rel)
	if !strings.Contains(content, old) {
		s.t.Fatalf("%s does not contain %q", rel, old)
	}
	s.write(rel, strings.Replace(content, old, new, 1))
}

// remove removes a file.
func (s *scenario) remove(rel string) {
	s.t.Helper()
	if err := os.Remove(filepath.Join(s.dir, filepath.FromSlash(rel))); err != nil {
		s.t.Fatal(err)
	}
}

// encrypt writes plaintext encrypted with SOPS for the scenario's key,
// the values of the keys encryptedRegex matches.
func (s *scenario) encrypt(rel, plaintext, encryptedRegex string) {
	s.t.Helper()
	s.write(rel, string(secretstest.Encrypt(s.t, rel, []byte(plaintext), encryptedRegex, s.key.Recipient)))
}

// tree is every file of the repository (Git's own aside), by
// slash-separated path.
func (s *scenario) tree() map[string]string {
	s.t.Helper()
	return readTree(s.t, s.dir)
}

// commit commits everything in the work tree, removals included
// (gittest.Repo.Commit: the same steps make the same hashes), making the
// repository on the first commit, and returns the commit's hash.
func (s *scenario) commit(msg string) string {
	s.t.Helper()
	return s.repo().Commit(s.t, msg)
}

// repo is the Git repository of the scenario, made on first use.
func (s *scenario) repo() *gittest.Repo {
	s.t.Helper()
	if s.git == nil {
		s.git = gittest.Init(s.t, s.dir)
	}
	return s.git
}

// set sets variables of ferry's environment (a value "" unsets one).
func (s *scenario) set(vars map[string]string) {
	for k, v := range vars {
		if v == "" {
			delete(s.env, k)
			continue
		}
		s.env[k] = v
	}
}

// vars are the variables ferry runs with: a copy, for a caller to add to.
func (s *scenario) vars() map[string]string { return maps.Clone(s.env) }

// ferry runs ferry in-process with the scenario's variables.
func (s *scenario) ferry(args ...string) result {
	s.t.Helper()
	return ferry(s.t, s.vars(), args...)
}

// ferryProcess runs the built ferry in a process of its own with the
// scenario's variables (and PATH, HOME and TMPDIR): for what is read
// once per process, such as SSL_CERT_FILE.
func (s *scenario) ferryProcess(args ...string) result {
	s.t.Helper()
	cmd := exec.Command(builtFerry(s.t), args...)
	cmd.Env = append(environOf(s.vars()), "PATH="+os.Getenv("PATH"), "HOME="+s.t.TempDir(), "TMPDIR="+s.t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		s.t.Fatal(err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// push pushes the scenario's repository, at branch, to the Gitea
// repository owner/name, as Gitea's admin.
func (s *scenario) push(g *giteatest.Gitea, owner, name, branch string) {
	s.t.Helper()
	s.repo().AddRemote(s.t, "gitea", g.CloneURL(owner, name))
	s.repo().PushHead(s.t, "gitea", branch, gittest.Auth{User: giteatest.AdminUser, Password: g.AdminToken})
}

// cluster gives the scenario the package's control plane (see TestMain):
// its kubeconfig as the content of TEST_KUBECONFIG, the way CI secrets
// hand it over, and a namespace of its own for the inventories. It
// returns the flags that reach it: --kubeconfig-env and
// --inventory-namespace.
func (s *scenario) cluster() []string {
	s.t.Helper()
	s.env["TEST_KUBECONFIG"] = string(cp.Require(s.t).Kubeconfig())
	return []string{"--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", cp.Namespace(s.t)}
}

// charts is a chart repository served over HTTP for the scenario, holding
// the charts given (files by path, see testtree.New) at their versions.
func (s *scenario) charts(versions map[string]map[string]string) *helmtest.Repo {
	s.t.Helper()
	repo := helmtest.NewRepo(s.t, helmtest.RepoOptions{})
	for version, files := range versions {
		repo.Add(s.t, testtree.New(s.t, files), version)
	}
	return repo
}

// bumpRegistry is a real docker-registry holding the fixture's images:
// app (semver), mono (api-* and sherpa-* tags of two components) and
// build (numerical build numbers), with signature, floating and
// pre-release tags mixed in.
type bumpRegistry struct {
	*registrytest.Registry
	digests map[string]string // repo:tag -> digest
}

func startBumpRegistry(t *testing.T) *bumpRegistry {
	t.Helper()
	reg := registrytest.Start(t)
	r := &bumpRegistry{Registry: reg, digests: map[string]string{}}
	for repo, tags := range map[string][]string{
		"team/app":   {"1.23.0", "1.24.0", "1.25.0", "1.26.0-rc.1", "latest", "1.27.0.sig"},
		"team/mono":  {"api-0.20.0", "api-0.21.0", "api-0.22.0-rc.1", "sherpa-0.20.0", "sherpa-0.20.1"},
		"team/build": {"03300206", "03300207", "03300208", "3300199", "latest", "main-abc1234"},
	} {
		for tag, d := range reg.MustPush(t, repo, tags...) {
			r.digests[repo+":"+tag] = d
		}
	}
	return r
}

// env is what a CI job sets: the registry's credentials per host, and the
// app ImageRepository's secretRef.
func (r *bumpRegistry) env() map[string]string {
	host, _ := images.RegistryEnv(r.Host) // 127.0.0.1:PORT has a spelling
	return map[string]string{
		host + "_USERNAME":              r.Username,
		host + "_PASSWORD":              r.Password,
		"FERRY_SECRET_REGCRED_USERNAME": r.Username,
		"FERRY_SECRET_REGCRED_PASSWORD": r.Password,
	}
}

// placeholders turns the run's registry host and digests back into the
// names the golden files use.
func (r *bumpRegistry) placeholders(s string) string {
	keys := make([]string, 0, len(r.digests))
	for k := range r.digests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s = strings.ReplaceAll(s, r.digests[k], "<digest of "+k+">")
	}
	return strings.ReplaceAll(s, r.Host, "REGISTRY")
}

// bumpScenario is a copy of testdata/bump/<fixture> whose images are in
// the registry at host (the placeholder REGISTRY replaced by it), with
// edits (file -> old, new) made on the way.
func bumpScenario(t *testing.T, host, fixture string, edits map[string][2]string) *scenario {
	t.Helper()
	s := copyScenario(t, filepath.Join("testdata", "bump", fixture), "REGISTRY", host)
	for rel, e := range edits {
		s.replace(rel, e[0], e[1])
	}
	return s
}

// readTree returns every file under dir by slash path, Git's own
// (.git) aside.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bootstrap writes clusters/<cluster>/flux-system/gotk-sync.yaml as
// `flux bootstrap` does (helmtest.FluxSync), its GitRepository of url.
func (s *scenario) bootstrap(cluster, url string) {
	s.t.Helper()
	s.write("clusters/"+cluster+"/flux-system/gotk-sync.yaml", helmtest.FluxSync(cluster, url))
}
