package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/verify/verifytest"
)

// signedFleet is a repository made with the real git whose one target
// writes the ConfigMap settings into ns; ferry.yaml's verify block is
// verifyBlock ("" for none).
type signedFleet struct {
	t    *testing.T
	repo *verifytest.Repo
	ns   string
	vars map[string]string
}

func newSignedFleet(t *testing.T, verifyBlock string) *signedFleet {
	t.Helper()
	f := &signedFleet{t: t, repo: verifytest.NewRepo(t), ns: cp.Require(t).Namespace(t)}
	f.vars = map[string]string{"TEST_KUBECONFIG": string(cp.Kubeconfig())}
	ferryYAML := "targets:\n  - {name: app, path: app}\n" + verifyBlock
	f.write("ferry.yaml", ferryYAML)
	return f
}

func (f *signedFleet) write(file, content string) {
	f.t.Helper()
	f.repo.Commit(nil, file, content) // staged by the next commit too; this one is the base
}

// commit changes the ConfigMap's value and commits, signed by s (nil:
// unsigned); extra files are written first.
func (f *signedFleet) commit(s *verifytest.Signer, value string) string {
	f.t.Helper()
	return f.repo.Commit(s, "app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "+f.ns+"}\ndata: {value: "+value+"}\n")
}

func (f *signedFleet) apply(rev string, extra ...string) result {
	f.t.Helper()
	args := append([]string{"apply", "--repo", f.repo.Dir, "--revision", rev, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", f.ns}, extra...)
	return ferry(f.t, f.vars, args...)
}

// value is the applied ConfigMap's value, "" when there is none.
func (f *signedFleet) value() string {
	f.t.Helper()
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	cm, err := cs.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "settings", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return cm.Data["value"]
}

func refusedApply(t *testing.T, res result, want ...string) {
	t.Helper()
	if res.code != exitError {
		t.Fatalf("exit %d, want 2:\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, w := range append([]string{"nothing was applied", "signature verification"}, want...) {
		if !strings.Contains(res.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
		}
	}
}

// TestVerifiedApply: with verify in ferry.yaml and trusted keys in the
// step's input, ferry apply applies commits signed (by the real git) with
// a trusted SSH or OpenPGP key and refuses, before any write, unsigned
// commits, untrusted keys, a signature over other content, an expired
// key, an unsigned tag in Tag mode and an unsigned commit under a signed
// merge with --verify-range, naming the commit and why.
func TestVerifiedApply(t *testing.T) {
	sshKey := verifytest.SSHKey(t, "alice@example.com")
	pgpKey := verifytest.GPGKey(t, "Alice", "alice@example.com", false)
	stranger := verifytest.SSHKey(t, "mallory@example.com")
	expired := verifytest.GPGKey(t, "Old", "old@example.com", true)
	trusted := sshKey.Public + "\n" + pgpKey.Public + "\n" + expired.Public + "\n"

	t.Run("signed by trusted keys", func(t *testing.T) {
		f := newSignedFleet(t, "verify: {mode: HEAD}\n")
		f.vars["FERRY_TRUSTED_KEYS"] = trusted
		res := f.apply(f.commit(&sshKey, "ssh"))
		if res.code != 0 || f.value() != "ssh" {
			t.Fatalf("ssh-signed: exit %d, value %q:\n%s", res.code, f.value(), res.stderr)
		}
		if !strings.Contains(res.stderr, "verified commit") || !strings.Contains(res.stderr, "signed by SSH key SHA256:") {
			t.Errorf("the log does not say what verified:\n%s", res.stderr)
		}
		res = f.apply(f.commit(&pgpKey, "pgp"))
		if res.code != 0 || f.value() != "pgp" {
			t.Fatalf("openpgp-signed: exit %d, value %q:\n%s", res.code, f.value(), res.stderr)
		}
		inv, err := kubeClient(t).ReadInventory(context.Background(), "app", f.ns)
		if err != nil || inv.Verify != "HEAD" {
			t.Errorf("the inventory records verify %q (%v), want HEAD", inv.Verify, err)
		}
	})
	for _, c := range []struct {
		name string
		rev  func(f *signedFleet) string
		want []string
	}{
		{name: "unsigned", rev: func(f *signedFleet) string { return f.commit(nil, "x") }, want: []string{"(author Alice <alice@example.com>): unsigned"}},
		{name: "untrusted key", rev: func(f *signedFleet) string { return f.commit(&stranger, "x") }, want: []string{"signed by a key that is not trusted"}},
		{name: "signature over other content", rev: func(f *signedFleet) string { return f.repo.Rewrite(f.commit(&sshKey, "x"), "rewritten") },
			want: []string{"the signature does not match the content"}},
		{name: "expired key", rev: func(f *signedFleet) string { return f.commit(&expired, "x") }, want: []string{"Old <old@example.com>", "signed by an expired key"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newSignedFleet(t, "verify: {mode: HEAD}\n")
			f.vars["FERRY_TRUSTED_KEYS"] = trusted
			rev := c.rev(f)
			refusedApply(t, f.apply(rev), append(c.want, "commit "+rev[:7], "ferry.yaml verify (HEAD)")...)
			if v := f.value(); v != "" {
				t.Errorf("the ConfigMap was written: %q", v)
			}
		})
	}
	t.Run("keys of a Secret", func(t *testing.T) {
		f := newSignedFleet(t, "")
		f.repo.Commit(nil, "ferry.yaml", "targets:\n  - {name: app, path: app}\nverify: {mode: HEAD, secretRef: {name: git-keys, namespace: "+f.ns+"}}\n")
		// Its variables, as a workflow passes a Secret's keys.
		f.vars["FERRY_SECRET_GIT__KEYS_ALICE_PUB"] = sshKey.Public
		if res := f.apply(f.commit(&sshKey, "from-variables")); res.code != 0 {
			t.Fatalf("keys from FERRY_SECRET_GIT__KEYS_*: exit %d:\n%s", res.code, res.stderr)
		}
		// Without them, the Secret in the cluster, read with get.
		delete(f.vars, "FERRY_SECRET_GIT__KEYS_ALICE_PUB")
		cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
		_, err := cs.CoreV1().Secrets(f.ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "git-keys", Namespace: f.ns},
			Data:       map[string][]byte{"alice.pub": []byte(sshKey.Public), "old.asc": []byte(expired.Public)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res := f.apply(f.commit(&sshKey, "from-cluster")); res.code != 0 || f.value() != "from-cluster" {
			t.Fatalf("keys from the cluster's Secret: exit %d:\n%s", res.code, res.stderr)
		}
		refusedApply(t, f.apply(f.commit(&stranger, "x")), "signed by a key that is not trusted")
	})
	t.Run("the Secret of the last apply", func(t *testing.T) {
		// A revision that drops its verify block, secretRef and all,
		// is checked with the Secret the last apply recorded.
		f := newSignedFleet(t, "")
		f.repo.Commit(nil, "ferry.yaml", "targets:\n  - {name: app, path: app}\nverify: {mode: HEAD, secretRef: {name: git-keys, namespace: "+f.ns+"}}\n")
		f.vars["FERRY_SECRET_GIT__KEYS_ALICE_PUB"] = sshKey.Public
		if res := f.apply(f.commit(&sshKey, "one")); res.code != 0 {
			t.Fatalf("first apply: exit %d:\n%s", res.code, res.stderr)
		}
		inv, err := kubeClient(t).ReadInventory(context.Background(), "app", f.ns)
		if want := "HEAD secretRef=" + f.ns + "/git-keys"; err != nil || inv.Verify != want {
			t.Fatalf("the inventory records verify %q (%v), want %q", inv.Verify, err, want)
		}
		f.repo.Commit(nil, "ferry.yaml", "targets:\n  - {name: app, path: app}\n")
		if res := f.apply(f.commit(&sshKey, "dropped")); res.code != 0 || f.value() != "dropped" {
			t.Fatalf("a signed commit that drops the verify block: exit %d:\n%s", res.code, res.stderr)
		}
		refusedApply(t, f.apply(f.commit(&stranger, "x")), "the last apply of target app (HEAD)", "signed by a key that is not trusted")
		refusedApply(t, f.apply(f.commit(nil, "y")), "unsigned")
		if v := f.value(); v != "dropped" {
			t.Errorf("the ConfigMap holds %q, want dropped", v)
		}
	})
	t.Run("drift --heal", func(t *testing.T) {
		f := newSignedFleet(t, "verify: {mode: HEAD}\n")
		f.vars["FERRY_TRUSTED_KEYS"] = trusted
		if res := f.apply(f.commit(&sshKey, "one")); res.code != 0 {
			t.Fatalf("apply: %s", res.stderr)
		}
		unsigned := f.commit(nil, "two")
		heal := func(rev string) result {
			return ferry(t, f.vars, "drift", "--repo", f.repo.Dir, "--revision", rev, "--kubeconfig-env", "TEST_KUBECONFIG", "--inventory-namespace", f.ns, "--heal", "--report", "none")
		}
		res := heal(unsigned)
		if res.code != exitError || !strings.Contains(res.stderr, "nothing was checked or healed") || !strings.Contains(res.stderr, "commit "+unsigned[:7]) {
			t.Errorf("drift --heal of an unsigned commit: exit %d:\n%s", res.code, res.stderr)
		}
		if v := f.value(); v != "one" {
			t.Errorf("the heal wrote %q", v)
		}
		signed := f.commit(&sshKey, "three")
		if res := heal(signed); res.code != 0 || f.value() != "three" {
			t.Errorf("drift --heal of a signed commit: exit %d, value %q:\n%s", res.code, f.value(), res.stderr)
		}
	})
	t.Run("unsigned tag in Tag mode", func(t *testing.T) {
		f := newSignedFleet(t, "verify: {mode: Tag}\n")
		f.vars["FERRY_TRUSTED_KEYS"] = trusted
		rev := f.commit(&sshKey, "x")
		f.repo.Tag(nil, "v1.0.0")
		refusedApply(t, f.apply(rev), "tag v1.0.0", "unsigned")
		f.repo.Tag(&sshKey, "v1.0.1")
		if res := f.apply(rev); res.code != 0 || f.value() != "x" {
			t.Errorf("with a signed tag too: exit %d:\n%s", res.code, res.stderr)
		}
	})
	t.Run("unsigned commit under a signed merge", func(t *testing.T) {
		f := newSignedFleet(t, "verify: {mode: HEAD}\n")
		f.vars["FERRY_TRUSTED_KEYS"] = trusted
		if res := f.apply(f.commit(&sshKey, "one")); res.code != 0 {
			t.Fatalf("first apply: %s", res.stderr)
		}
		f.repo.Git(nil, "checkout", "-q", "-b", "topic")
		sneaky := f.commit(nil, "sneaky")
		f.repo.Git(nil, "checkout", "-q", "main")
		f.repo.Commit(&sshKey, "README.md", "fleet\n")
		f.repo.Git(&sshKey, "merge", "-q", "--no-ff", "-S", "-m", "merge topic", "topic")
		merge := f.repo.Git(nil, "rev-parse", "HEAD")
		refusedApply(t, f.apply(merge, "--verify-range"), "commit "+sneaky[:7], "unsigned")
		if v := f.value(); v != "one" {
			t.Errorf("the ConfigMap holds %q, want the first apply's", v)
		}
	})
}

// TestVerificationCannotBeTurnedOffByTheRevision: the mode the last apply
// was held to holds for the next one, even when its ferry.yaml drops the
// verify block; keys the repository holds count as of the last applied
// revision, so a commit that adds its own key is refused; --skip-verify
// applies anyway, saying so.
func TestVerificationCannotBeTurnedOffByTheRevision(t *testing.T) {
	alice := verifytest.SSHKey(t, "alice@example.com")
	mallory := verifytest.SSHKey(t, "mallory@example.com")
	f := newSignedFleet(t, "verify: {mode: HEAD, keys: [.ferry/keys]}\n")
	f.repo.Commit(nil, ".ferry/keys/alice.pub", alice.AllowedSigners+"\n")
	f.vars["FERRY_TRUSTED_KEYS"] = alice.Public
	if res := f.apply(f.commit(&alice, "one")); res.code != 0 {
		t.Fatalf("first apply: %s", res.stderr)
	}
	// The first apply took Alice's key from the input; from now on the
	// repository's key files as of that revision are enough.
	delete(f.vars, "FERRY_TRUSTED_KEYS")
	if res := f.apply(f.commit(&alice, "two")); res.code != 0 || f.value() != "two" {
		t.Fatalf("with the repository's keys: exit %d:\n%s", res.code, res.stderr)
	}
	// Mallory adds her key and signs with it.
	f.repo.Commit(nil, ".ferry/keys/mallory.pub", mallory.AllowedSigners+"\n")
	own := f.commit(&mallory, "mallory")
	refusedApply(t, f.apply(own), "commit "+own[:7], "signed by a key that is not trusted")
	// An unsigned commit that drops the verify block.
	f.repo.Commit(nil, "ferry.yaml", "targets:\n  - {name: app, path: app}\nnotifications:\n  providers:\n    - {name: hook, type: generic, address: http://127.0.0.1:1/hook}\n"+
		"  alerts:\n    - {name: all, providerRef: {name: hook}, eventSources: [{kind: Kustomization, name: \"*\"}]}\n")
	dropped := f.commit(nil, "unverified")
	refusedApply(t, f.apply(dropped), "the last apply of target app (HEAD)", "unsigned")
	if v := f.value(); v != "two" {
		t.Errorf("the ConfigMap holds %q, want two", v)
	}
	// Loud in the log, the step summary and the notifications.
	summary := filepath.Join(t.TempDir(), "summary.md")
	f.vars["GITHUB_ACTIONS"], f.vars["GITHUB_STEP_SUMMARY"], f.vars["GITHUB_OUTPUT"] = "true", summary, filepath.Join(t.TempDir(), "output")
	res := f.apply(dropped, "--skip-verify", "--notify-dry-run")
	if res.code != 0 || f.value() != "unverified" || !strings.Contains(res.stderr, "signature verification skipped (--skip-verify)") {
		t.Errorf("--skip-verify: exit %d, value %q:\n%s", res.code, f.value(), res.stderr)
	}
	if b, err := os.ReadFile(summary); err != nil || !strings.Contains(string(b), "**Signature verification skipped** (`--skip-verify`)") {
		t.Errorf("the step summary does not say it (%v):\n%s", err, b)
	}
	if !strings.Contains(res.stdout, "Signature verification skipped (--skip-verify): "+kube.ShortRevision(dropped)+" is unverified. Applied revision") || !strings.Contains(res.stdout, `"verification": "skipped"`) {
		t.Errorf("the notification does not say it:\n%s", res.stdout)
	}
	inv, err := kubeClient(t).ReadInventory(context.Background(), "app", f.ns)
	if err != nil || inv.Verify != "HEAD" {
		t.Errorf("after --skip-verify the inventory records verify %q (%v), want HEAD still", inv.Verify, err)
	}
}

func kubeClient(t *testing.T) *kube.Client {
	t.Helper()
	c, err := kube.NewClient(kube.ClientOptions{KubeconfigData: cp.Kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDiffSignatures: a pull request's diff says how its commits verify
// with the keys the base trusts (its verify.keys files as of the base),
// in text, markdown and JSON; a key the head adds to those files does not
// count; --require-signed fails on an unsigned commit.
func TestDiffSignatures(t *testing.T) {
	alice := verifytest.SSHKey(t, "alice@example.com")
	mallory := verifytest.SSHKey(t, "mallory@example.com")
	r := verifytest.NewRepo(t)
	r.Commit(nil, "ferry.yaml", "targets:\n  - {name: app, path: app}\nverify: {mode: HEAD, keys: [keys]}\n")
	r.Commit(nil, "keys/alice", alice.AllowedSigners+"\n")
	base := r.Commit(&alice, "app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\ndata: {value: one}\n")
	r.Git(nil, "checkout", "-q", "-b", "pr")
	r.Commit(&alice, "app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\ndata: {value: two}\n")
	unsigned := r.Commit(nil, "app/other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: apps}\ndata: {value: x}\n")
	r.Commit(nil, "keys/mallory", mallory.AllowedSigners+"\n")
	byMallory := r.Commit(&mallory, "app/other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: apps}\ndata: {value: y}\n")
	head := r.Git(nil, "rev-parse", "HEAD")

	diffArgs := []string{"diff", "--repo", r.Dir, "--base", base, "--head", head}
	res := ferry(t, nil, diffArgs...)
	want := "signatures (the base's trusted keys): 4 commits, 1 signed by trusted keys, 1 signed by a key that is not trusted: " + byMallory[:7] + ", 2 unsigned: "
	if res.code != 0 || !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, unsigned[:7]) {
		t.Errorf("text: exit %d, want %q:\n%s%s", res.code, want, res.stdout, res.stderr)
	}
	md := ferry(t, nil, append(diffArgs, "--format", "markdown")...)
	if !strings.Contains(md.stdout, "⚠️ **Signatures** (the base's trusted keys): 4 commits, 1 signed by trusted keys") {
		t.Errorf("markdown lacks the signatures line:\n%s", md.stdout)
	}
	js := ferry(t, nil, append(diffArgs, "--format", "json")...)
	if !strings.Contains(js.stdout, `"signatures": {`) || !strings.Contains(js.stdout, `"reason": "unsigned"`) {
		t.Errorf("json lacks the signatures:\n%s", js.stdout)
	}
	req := ferry(t, nil, append(diffArgs, "--require-signed")...)
	if req.code != exitError || !strings.Contains(req.stderr, "--require-signed: 4 commits, 1 signed by trusted keys") {
		t.Errorf("--require-signed: exit %d:\n%s", req.code, req.stderr)
	}
	// Only the signed commit: every commit verifies.
	signedHead := r.Git(nil, "rev-parse", "pr~3")
	ok := ferry(t, nil, "diff", "--repo", r.Dir, "--base", base, "--head", signedHead, "--require-signed")
	if ok.code != 0 || !strings.Contains(ok.stdout, "1 commit, 1 signed by trusted keys\n") {
		t.Errorf("a signed pull request: exit %d:\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
}
