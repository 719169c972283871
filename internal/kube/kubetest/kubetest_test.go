package kubetest_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

// shared is the package-wide plane started by TestMain through kubetest.Run.
var shared *kubetest.ControlPlane

func TestMain(m *testing.M) { os.Exit(kubetest.Run(m, &shared)) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestSharedPlane uses the plane of TestMain: namespace and ConfigMap round
// trip through client-go, from parallel subtests.
func TestSharedPlane(t *testing.T) {
	cp := shared.Require(t)
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	for _, name := range []string{"a", "b", "c"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := cp.Namespace(t)
			roundTripConfigMap(t, cs, ns, name)
		})
	}
}

func roundTripConfigMap(t *testing.T, cs kubernetes.Interface, ns, value string) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns},
		Data:       map[string]string{"key": value},
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx(t), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ConfigMap: %v", err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx(t), "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap: %v", err)
	}
	if got.Data["key"] != value {
		t.Fatalf("ConfigMap data = %v, want key=%s", got.Data, value)
	}
}

// TestControlPlane starts its own plane, because it stops and restarts the
// apiserver.
func TestControlPlane(t *testing.T) {
	cp := kubetest.Start(t)
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())

	if !strings.HasPrefix(cp.URL(), "https://127.0.0.1:") {
		t.Errorf("URL() = %q", cp.URL())
	}

	ns := cp.Namespace(t)
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		t.Errorf("namespace %q: %v", ns, errs)
	}
	if !strings.HasPrefix(ns, "testcontrolplane-") {
		t.Errorf("namespace %q not named after the test", ns)
	}
	roundTripConfigMap(t, cs, ns, "before")

	t.Run("kubeconfig", func(t *testing.T) {
		fi, err := os.Stat(cp.KubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("kubeconfig mode = %v, want 0600", perm)
		}
		b, err := os.ReadFile(cp.KubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, cp.Kubeconfig()) {
			t.Error("Kubeconfig() differs from the file at KubeconfigPath()")
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		kubectl := cp.KubectlPath()
		if _, err := os.Stat(kubectl); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("kubectl: %v", err)
			}
			t.Skipf("kubectl: %v; run hack/controlplane.sh", err)
		}
		cmd := exec.Command(kubectl, "--kubeconfig", cp.KubeconfigPath(), "get", "ns", ns, "-o", "name")
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get ns: %v\n%s", err, out)
		}
		if got, want := strings.TrimSpace(string(out)), "namespace/"+ns; got != want {
			t.Errorf("kubectl get ns = %q, want %q", got, want)
		}
		out, err = exec.Command(kubectl, "--kubeconfig", cp.KubeconfigPath(), "config", "current-context").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != kubetest.ContextName {
			t.Errorf("kubectl config current-context = %q, %v; want %q", out, err, kubetest.ContextName)
		}
	})

	t.Run("restart apiserver", func(t *testing.T) {
		url := cp.URL()
		begin := time.Now()
		cp.StopAPIServer()
		t.Logf("StopAPIServer took %v", time.Since(begin).Round(time.Millisecond))
		cp.StopAPIServer() // idempotent

		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx(t), "cm", metav1.GetOptions{}); err == nil {
			t.Fatal("get ConfigMap with the apiserver stopped: no error")
		} else {
			t.Logf("with the apiserver stopped: %v", err)
		}

		begin = time.Now()
		cp.StartAPIServer(t)
		t.Logf("StartAPIServer took %v", time.Since(begin).Round(time.Millisecond))
		cp.StartAPIServer(t) // no-op while running
		if cp.URL() != url {
			t.Fatalf("URL changed: %s -> %s", url, cp.URL())
		}
		got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx(t), "cm", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get ConfigMap after restart: %v", err)
		}
		if got.Data["key"] != "before" {
			t.Errorf("ConfigMap after restart = %v", got.Data)
		}
		roundTripConfigMap(t, cs, cp.Namespace(t), "after")
	})

	t.Run("stop", func(t *testing.T) {
		dir := cp.Dir()
		begin := time.Now()
		cp.Stop()
		t.Logf("Stop took %v", time.Since(begin).Round(time.Millisecond))
		cp.Stop() // idempotent; the Cleanup registered by Start calls it again
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("temp dir %s still there: %v", dir, err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx(t), ns, metav1.GetOptions{}); err == nil {
			t.Error("apiserver still answers after Stop")
		}
	})
}

func TestNamespaceNames(t *testing.T) {
	cp := shared.Require(t)
	for _, name := range []string{
		"plain",
		"With_Upper/and spaces#1",
		"--leading-and-trailing--",
		"ünïcödé/ø",
		strings.Repeat("very-long-name-", 10),
		"x/" + strings.Repeat("a", 56) + "/-tail",
		"123digits",
	} {
		t.Run(name, func(t *testing.T) {
			ns := cp.Namespace(t)
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				t.Errorf("Namespace() = %q: %v", ns, errs)
			}
			if len(ns) > 63 {
				t.Errorf("Namespace() = %q: %d characters", ns, len(ns))
			}
			if ns2 := cp.Namespace(t); ns2 == ns {
				t.Errorf("Namespace() twice = %q", ns)
			}
		})
	}
}

// TestMissingBinaries reruns this test binary with FERRY_TESTBIN pointing at
// an empty directory: outside CI, tests skip naming hack/controlplane.sh; in
// CI, the package fails before running any test.
func TestMissingBinaries(t *testing.T) {
	if os.Getenv("KUBETEST_CHILD") != "" {
		t.Skip("child process")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	run := func(ci string) (string, error) {
		cmd := exec.Command(bin, "-test.run=^(TestSharedPlane|TestControlPlane)$", "-test.v", "-test.count=1")
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, kubetest.EnvTestBin+"=") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, "KUBETEST_CHILD=1", "CI="+ci, kubetest.EnvTestBin+"="+empty)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("")
	if err != nil {
		t.Fatalf("outside CI: %v\n%s", err, out)
	}
	for _, want := range []string{"--- SKIP: TestSharedPlane", "--- SKIP: TestControlPlane", "hack/controlplane.sh", filepath.Base(empty)} {
		if !strings.Contains(out, want) {
			t.Errorf("outside CI: output lacks %q:\n%s", want, out)
		}
	}

	out, err = run("true")
	if err == nil {
		t.Fatalf("in CI: exit status 0, want failure:\n%s", out)
	}
	if !strings.Contains(out, "hack/controlplane.sh") || strings.Contains(out, "=== RUN") {
		t.Errorf("in CI: want a message naming hack/controlplane.sh and no test run:\n%s", out)
	}
}
