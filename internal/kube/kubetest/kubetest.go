// Package kubetest starts a real Kubernetes control plane for tests: etcd and
// kube-apiserver on free 127.0.0.1 ports, in a temporary directory, with an
// admin bearer token and a generated CA. It is like controller-runtime's
// envtest, without controller-runtime.
//
// No controllers run: nothing garbage-collects, no ServiceAccount tokens or
// kube-root-ca.crt ConfigMaps appear, Pods are never scheduled, and a deleted
// Namespace stays Terminating forever. Create fresh namespaces with
// [ControlPlane.Namespace] instead of deleting and reusing names.
//
// The binaries (etcd, kube-apiserver, kubectl; Kubernetes v1.37.2) are built
// by hack/controlplane.sh into .cache/testbin at the repository root. Set
// FERRY_TESTBIN to use another directory. When they are missing, [Start]
// skips the test, or fails it when the CI environment variable is set.
//
// One plane per test:
//
//	func TestX(t *testing.T) {
//		cp := kubetest.Start(t)
//		ns := cp.Namespace(t)
//		cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
//		...
//	}
//
// One plane per test package (starting takes a few seconds):
//
//	var cp *kubetest.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Run(m, &cp)) }
//
//	func TestX(t *testing.T) {
//		ns := cp.Require(t).Namespace(t)
//		...
//	}
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ferry-ci/ferry/internal/testbin"
)

const (
	// ContextName is the name of the only context (and of its cluster and
	// user) in the kubeconfig file.
	ContextName = "test"

	// EnvTestBin names the environment variable that overrides the binary
	// directory.
	EnvTestBin = testbin.Env

	readyTimeout = 60 * time.Second
	stopGrace    = 10 * time.Second
	pollInterval = 50 * time.Millisecond
	startTries   = 3 // fresh ports on "address already in use"
)

// ControlPlane is a running etcd and kube-apiserver. Its methods are safe for
// concurrent use.
type ControlPlane struct {
	binDir   string
	dir      string // temporary directory, removed by Stop
	etcdPort int
	etcdName string // this plane's own etcd member name
	apiPort  int
	token    string
	pki      *pki

	kubeconfig     []byte
	kubeconfigPath string

	mu        sync.Mutex
	etcd      *process
	api       *process
	apiStarts int
	stopped   bool

	// apiArgs are more kube-apiserver flags (Options.APIServerArgs).
	apiArgs []string

	clientOnce sync.Once
	client     kubernetes.Interface
	clientErr  error
}

// Start starts etcd and kube-apiserver on free 127.0.0.1 ports in a
// temporary directory, waits until the apiserver's /readyz answers "ok" and
// returns the running plane. It registers tb.Cleanup(cp.Stop).
//
// If the binaries are missing, Start calls tb.Fatal when the CI environment
// variable is non-empty and tb.Skip otherwise, naming hack/controlplane.sh.
// Any other failure is fatal and includes the tail of the failing process's
// log.
func Start(tb testing.TB) *ControlPlane {
	tb.Helper()
	return StartWith(tb, Options{})
}

// Options change the plane a test starts on its own.
type Options struct {
	// APIServerArgs are more kube-apiserver flags, after kubetest's own
	// (--authentication-config=FILE, say).
	APIServerArgs []string
}

// StartWith is Start with opts.
func StartWith(tb testing.TB, opts Options) *ControlPlane {
	tb.Helper()
	begin := time.Now()
	cp, err := start(opts)
	if err != nil {
		var me *missingError
		if errors.As(err, &me) && os.Getenv("CI") == "" {
			tb.Skip(err.Error())
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			cp.mu.Lock()
			api := cp.api
			cp.mu.Unlock()
			if api != nil {
				tb.Logf("kubetest: last %d lines of %s:\n%s", logTailLines, filepath.Base(api.logPath), tail(api.logPath, logTailLines))
			}
		}
		cp.Stop()
	})
	tb.Logf("kubetest: control plane %s ready in %v", cp.URL(), time.Since(begin).Round(time.Millisecond))
	return cp
}

// Run is a TestMain for packages that share one control plane among all
// their tests. It starts the plane, stores it in *cp, runs m.Run, stops the
// plane and returns the exit code for os.Exit:
//
//	var cp *kubetest.ControlPlane
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Run(m, &cp)) }
//
// The plane is stopped after m.Run whatever the tests' outcome. (A panicking
// or timed-out test kills the test binary before that; on Linux the kernel
// then kills etcd and kube-apiserver too, and a later start removes the
// abandoned temp directory.) The plane starts even if -run selects no test
// that uses it.
//
// If the binaries are missing and the CI environment variable is non-empty,
// Run prints why and returns 1 without running any test. Outside CI it leaves
// *cp nil and runs the tests; tests start with cp.Require(t), which skips
// them. Any other start failure prints the error and returns 1.
func Run(m *testing.M, cp **ControlPlane) int {
	if !flag.Parsed() {
		flag.Parse() // for testing.Verbose
	}
	begin := time.Now()
	p, err := start(Options{})
	if err != nil {
		var me *missingError
		if errors.As(err, &me) && os.Getenv("CI") == "" {
			fmt.Fprintf(os.Stderr, "kubetest: tests needing the control plane will be skipped: %v\n", err)
			*cp = nil
			return m.Run()
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer p.Stop()
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "kubetest: control plane %s ready in %v\n", p.URL(), time.Since(begin).Round(time.Millisecond))
	}
	*cp = p
	return m.Run()
}

// Require returns cp, or skips the test when cp is nil because [Run] found
// no binaries (outside CI).
func (cp *ControlPlane) Require(tb testing.TB) *ControlPlane {
	tb.Helper()
	if cp == nil {
		tb.Skip("kubetest: no control plane: binaries missing; run hack/controlplane.sh")
	}
	return cp
}

// URL is the apiserver's address, https://127.0.0.1:PORT.
func (cp *ControlPlane) URL() string {
	return "https://127.0.0.1:" + strconv.Itoa(cp.apiPort)
}

// RESTConfig returns a new admin configuration: bearer token of a member of
// system:masters, the plane's CA pinned. Client-side rate limiting is off
// (QPS -1); the caller may change the copy freely.
func (cp *ControlPlane) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            cp.URL(),
		BearerToken:     cp.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), cp.pki.caPEM...)},
		QPS:             -1,
	}
}

// CA is the PEM of the CA that signs the API server's certificate.
func (cp *ControlPlane) CA() []byte { return append([]byte(nil), cp.pki.caPEM...) }

// KubeconfigPath is a kubeconfig file (mode 0600) with one context, cluster
// and user, all named "test", the current context. It holds the same
// credentials as RESTConfig.
func (cp *ControlPlane) KubeconfigPath() string { return cp.kubeconfigPath }

// Kubeconfig returns the content of the file at KubeconfigPath.
func (cp *ControlPlane) Kubeconfig() []byte { return append([]byte(nil), cp.kubeconfig...) }

// KubectlPath is the path of the kubectl built with the plane. Unlike etcd
// and kube-apiserver it is not checked by Start; a test that runs it may
// want to check it exists.
func (cp *ControlPlane) KubectlPath() string { return filepath.Join(cp.binDir, "kubectl") }

// Dir is the plane's temporary directory: certificates, tokens.csv,
// kubeconfig, etcd data, the logs etcd.log and kube-apiserver-N.log (one per
// apiserver start) and kubetest.pid. Stop removes it.
func (cp *ControlPlane) Dir() string { return cp.dir }

// Stop kills kube-apiserver, stops etcd (SIGTERM, then SIGKILL after 10 s)
// and removes the temporary directory. It is idempotent.
func (cp *ControlPlane) Stop() {
	if cp == nil {
		return
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped {
		return
	}
	cp.stopped = true
	cp.api.stop(0) // a graceful apiserver shutdown takes over a second
	cp.etcd.stop(stopGrace)
	_ = os.RemoveAll(cp.dir)
}

// StopAPIServer kills only kube-apiserver (SIGKILL, like a crash: open
// connections and watches break at once); etcd and its data stay. When it
// returns the port is closed and requests fail with "connection refused"
// until StartAPIServer. Idempotent.
func (cp *ControlPlane) StopAPIServer() {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.api.stop(0)
}

// StartAPIServer starts kube-apiserver again on the same port, with the same
// certificates and token, and waits for /readyz. It does nothing if the
// apiserver is running. It calls tb.Fatal on failure or after Stop.
func (cp *ControlPlane) StartAPIServer(tb testing.TB) {
	tb.Helper()
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped {
		tb.Fatal("kubetest: StartAPIServer after Stop")
	}
	if cp.api != nil && !cp.api.exited() {
		return
	}
	if err := cp.startAPIServer(); err != nil {
		tb.Fatal(err)
	}
}

// Namespace creates a namespace with a fresh name derived from tb.Name()
// (lower-cased, runs of other characters turned into "-", cut so that with a
// random 5-character suffix it is a DNS-1123 label of at most 63 characters)
// and returns its name. The full test name is in the annotation
// kubetest.ferry-ci.io/test. On a nil plane it skips like Require.
func (cp *ControlPlane) Namespace(tb testing.TB) string {
	tb.Helper()
	cp.Require(tb)
	cs, err := cp.clientset()
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:        namespaceName(tb.Name()),
			Annotations: map[string]string{"kubetest.ferry-ci.io/test": tb.Name()},
		}}
		_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if err == nil {
			return ns.Name
		}
		if try < 3 && apierrors.IsAlreadyExists(err) {
			continue
		}
		tb.Fatalf("kubetest: create namespace %s: %v", ns.Name, err)
	}
}

func (cp *ControlPlane) clientset() (kubernetes.Interface, error) {
	cp.clientOnce.Do(func() {
		cp.client, cp.clientErr = kubernetes.NewForConfig(cp.RESTConfig())
	})
	return cp.client, cp.clientErr
}

// namespaceName makes a DNS-1123 label of at most 63 characters from a test
// name and a random suffix.
func namespaceName(testName string) string {
	const suffixLen = 5
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	if len(s) > 63-1-suffixLen {
		s = s[:63-1-suffixLen]
	}
	s = strings.Trim(s, "-")
	if s == "" {
		s = "test"
	}
	return s + "-" + randomLabel(suffixLen)
}

func randomLabel(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// missingError reports absent control-plane binaries.
type missingError struct{ msg string }

func (e *missingError) Error() string { return e.msg }

// findBinDir returns $FERRY_TESTBIN, or .cache/testbin in the closest
// directory above the working directory that holds a go.mod.
func findBinDir() (string, error) {
	dir, err := testbin.Dir()
	if err != nil {
		return "", &missingError{fmt.Sprintf("kubetest: %v (or run hack/controlplane.sh)", err)}
	}
	return dir, nil
}

func checkBinaries(dir string) error {
	var missing []string
	for _, name := range []string{"etcd", "kube-apiserver"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return &missingError{fmt.Sprintf("kubetest: %s not found in %s: run hack/controlplane.sh to build the test control plane (or set %s)",
			strings.Join(missing, " and "), dir, EnvTestBin)}
	}
	return nil
}

// Launch starts a plane outside a test (benchmarks, the README's demo):
// the caller must Stop it. Its errors start with "kubetest: ".
func Launch() (*ControlPlane, error) { return start(Options{}) }

// start brings up a plane without a testing.TB. Its errors start with
// "kubetest: ".
func start(opts Options) (*ControlPlane, error) {
	cp, err := startPlane(opts)
	if err != nil && !strings.HasPrefix(err.Error(), "kubetest: ") {
		err = fmt.Errorf("kubetest: %w", err)
	}
	return cp, err
}

func startPlane(opts Options) (_ *ControlPlane, err error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	if err := checkBinaries(bin); err != nil {
		return nil, err
	}
	sweepStale()
	dir, err := os.MkdirTemp("", tempPattern)
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{binDir: bin, dir: dir, token: randomHex(24), etcdName: "kubetest-" + randomHex(8), apiArgs: opts.APIServerArgs}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	if err := writeOwner(dir); err != nil {
		return nil, err
	}
	if cp.pki, err = genPKI(dir); err != nil {
		return nil, err
	}
	tokens := cp.token + ",admin,admin-uid,system:masters\n"
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}

	for try := 1; ; try++ {
		if cp.etcdPort, err = freePort(); err != nil {
			return nil, err
		}
		err = cp.startEtcd()
		if err == nil {
			break
		}
		if try >= startTries || !addrInUse(err) {
			return nil, err
		}
		_ = os.RemoveAll(filepath.Join(dir, "etcd"))
	}
	for try := 1; ; try++ {
		if cp.apiPort, err = freePort(); err != nil {
			return nil, err
		}
		cp.mu.Lock()
		err = cp.startAPIServer()
		cp.mu.Unlock()
		if err == nil {
			break
		}
		if try >= startTries || !addrInUse(err) {
			return nil, err
		}
	}
	if err := cp.writeKubeconfig(); err != nil {
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) startEtcd() error {
	u := "http://127.0.0.1:" + strconv.Itoa(cp.etcdPort)
	args := []string{
		"--data-dir=" + filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls=" + u,
		"--advertise-client-urls=" + u,
		"--listen-peer-urls=http://127.0.0.1:0",
		"--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=" + cp.etcdName + "=http://127.0.0.1:2380",
		"--initial-cluster-token=" + cp.etcdName,
		"--name=" + cp.etcdName,
		"--unsafe-no-fsync",
		"--heartbeat-interval=10",
		"--election-timeout=100",
	}
	p, err := startProc("etcd", filepath.Join(cp.binDir, "etcd"), args, cp.dir, filepath.Join(cp.dir, "etcd.log"))
	if err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	cp.etcd = p
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	// The etcd of another plane (another test binary) that took the port
	// first answers /health too, until ours fails to bind and exits: only
	// a member list naming our member is ours.
	ready := func() bool { return get(client, u+"/health", "", nil) && cp.ownEtcd(client, u) }
	if err := waitReady(p, ready); err != nil {
		p.stop(0)
		return err
	}
	return nil
}

// ownEtcd reports whether the etcd answering at u is this plane's: its
// only member has the plane's member name.
func (cp *ControlPlane) ownEtcd(c *http.Client, u string) bool {
	resp, err := c.Post(u+"/v3/cluster/member/list", "application/json", strings.NewReader("{}"))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var list struct {
		Members []struct {
			Name string `json:"name"`
		} `json:"members"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list) != nil {
		return false
	}
	return len(list.Members) == 1 && list.Members[0].Name == cp.etcdName
}

// startAPIServer starts kube-apiserver on cp.apiPort and waits for /readyz.
// cp.mu must be held.
func (cp *ControlPlane) startAPIServer() error {
	port := strconv.Itoa(cp.apiPort)
	args := []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(cp.etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port=" + port,
		"--cert-dir=" + filepath.Join(cp.dir, "apiserver-certs"),
		"--tls-cert-file=" + cp.pki.certFile,
		"--tls-private-key-file=" + cp.pki.keyFile,
		"--token-auth-file=" + filepath.Join(cp.dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://127.0.0.1:" + port,
		"--service-account-key-file=" + cp.pki.saPub,
		"--service-account-signing-key-file=" + cp.pki.saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
	}
	args = append(args, cp.apiArgs...)
	cp.apiStarts++
	logPath := filepath.Join(cp.dir, fmt.Sprintf("kube-apiserver-%d.log", cp.apiStarts))
	p, err := startProc("kube-apiserver", filepath.Join(cp.binDir, "kube-apiserver"), args, cp.dir, logPath)
	if err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	cp.api = p
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.pki.caPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		Proxy:             nil,
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	ok := []byte("ok")
	if err := waitReady(p, func() bool { return get(client, cp.URL()+"/readyz", cp.token, ok) }); err != nil {
		p.stop(0)
		return err
	}
	return nil
}

// waitReady polls ready until it reports true, the process exits or
// readyTimeout passes.
func waitReady(p *process, ready func() bool) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if ready() {
			return nil
		}
		if p.exited() {
			return p.failure("kubetest: start failed")
		}
		if time.Now().After(deadline) {
			return p.failure(fmt.Sprintf("kubetest: not ready after %v", readyTimeout))
		}
		select {
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
}

// get reports whether GET url answers 200 (and, if want is non-nil, exactly
// want as body).
func get(c *http.Client, url, token string, want []byte) bool {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode == http.StatusOK && (want == nil || string(body) == string(want))
}

func addrInUse(err error) bool {
	return strings.Contains(err.Error(), "address already in use")
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("kubetest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (cp *ControlPlane) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ContextName] = &clientcmdapi.Cluster{
		Server:                   cp.URL(),
		CertificateAuthorityData: cp.pki.caPEM,
	}
	cfg.AuthInfos[ContextName] = &clientcmdapi.AuthInfo{Token: cp.token}
	cfg.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: ContextName}
	cfg.CurrentContext = ContextName
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubetest: kubeconfig: %w", err)
	}
	path := filepath.Join(cp.dir, "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	cp.kubeconfig, cp.kubeconfigPath = b, path
	return nil
}
