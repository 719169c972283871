// Package registrytest runs a real OCI registry for tests and benchmarks:
// Debian's docker-registry (distribution 2.8) with its own configuration,
// htpasswd authentication, filesystem storage in a temporary folder, on
// 127.0.0.1 and a free port. hack/registry.sh installs it.
package registrytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"
)

// Binary is where Debian's docker-registry package installs the registry.
const Binary = "/usr/bin/docker-registry"

// The credentials the registry accepts.
const (
	Username = "ferry"
	Password = "registry-test-password"
)

// Auth is how the registry authenticates clients.
type Auth int

const (
	// Htpasswd checks basic credentials on every request (bcrypt), as a
	// self-hosted registry with an htpasswd file does.
	Htpasswd Auth = iota
	// Token sends clients to a token server that checks their basic
	// credentials once and issues a bearer token for the scopes they ask,
	// as GHCR, Docker Hub, Harbor and Quay do.
	Token
)

// Options configure a registry.
type Options struct {
	Auth Auth
}

// Registry is a running docker-registry.
type Registry struct {
	// Host is 127.0.0.1:PORT.
	Host string
	// Username and Password are the only credentials it accepts.
	Username, Password string

	cmd    *exec.Cmd
	done   chan struct{}
	stderr *bytes.Buffer
	once   sync.Once
	token  *tokenServer
}

// Start starts a registry for the test and stops it when the test ends.
// Without the binary the test is skipped, naming hack/registry.sh; in CI
// (CI=true) it fails instead.
func Start(t testing.TB) *Registry {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Registry {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		msg := fmt.Sprintf("%s is not installed: run hack/registry.sh (it installs Debian's docker-registry)", Binary)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	r, err := RunWith(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// Run starts a registry with htpasswd authentication that keeps its
// configuration and storage under dir, and waits until it answers. Stop it
// with Stop.
func Run(dir string) (*Registry, error) { return RunWith(dir, Options{}) }

// RunWith is Run with options. Registries run on the same dir one after
// the other share their storage.
func RunWith(dir string, opts Options) (*Registry, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(Password), 5) // htpasswd -B's cost
	if err != nil {
		return nil, err
	}
	var auth, realm string
	var ts *tokenServer
	switch opts.Auth {
	case Htpasswd:
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(Username+":"+string(hash)+"\n"), 0o600); err != nil {
			return nil, err
		}
		// The realm is this registry's own, so that the readiness check
		// can tell it from another test binary's registry on the port.
		realm = fmt.Sprintf("ferry-registrytest-%d-%d", os.Getpid(), time.Now().UnixNano())
		auth = fmt.Sprintf("  htpasswd:\n    realm: %s\n    path: %s\n", realm, htpasswd)
	case Token:
		cert := filepath.Join(dir, "token.pem")
		if ts, err = startTokenServer(cert, "ferry-registrytest", hash); err != nil {
			return nil, err
		}
		realm = ts.realm
		auth = fmt.Sprintf("  token:\n    realm: %s\n    service: ferry-registrytest\n    issuer: ferry-registrytest\n    rootcertbundle: %s\n", ts.realm, cert)
	default:
		return nil, fmt.Errorf("unknown auth %d", opts.Auth)
	}
	// Another process may take the port between Listen and the registry
	// binding it: try a few ports.
	var lastErr error
	for range 3 {
		host, err := freePort()
		if err != nil {
			return nil, err
		}
		r, err := run(dir, host, auth, realm)
		if err == nil {
			r.token = ts
			return r, nil
		}
		lastErr = err
	}
	if ts != nil {
		ts.close()
	}
	return nil, lastErr
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// run starts the registry on host and waits until it answers with its own
// realm: a registry of another test binary that took the port first
// answers too, with another realm, until ours fails to bind and exits.
func run(dir, host, auth, realm string) (*Registry, error) {
	config := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: ferry-registrytest
auth:
%s`, filepath.Join(dir, "data"), host, auth)
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, err
	}
	r := &Registry{Host: host, Username: Username, Password: Password, done: make(chan struct{}), stderr: &bytes.Buffer{}}
	r.cmd = exec.Command(Binary, "serve", cfg)
	r.cmd.Stdout = r.stderr
	r.cmd.Stderr = r.stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The registry reads REGISTRY_* variables over its configuration.
	for _, kv := range os.Environ() {
		if len(kv) < 9 || kv[:9] != "REGISTRY_" {
			r.cmd.Env = append(r.cmd.Env, kv)
		}
	}
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.done)
	}()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized && strings.Contains(resp.Header.Get("WWW-Authenticate"), `realm="`+realm+`"`) {
				return r, nil
			}
		}
		select {
		case <-r.done:
			return nil, fmt.Errorf("docker-registry exited before answering on %s: %s", host, r.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = r.Stop()
			return nil, fmt.Errorf("docker-registry did not answer on %s within 20s: %s", host, r.stderr.String())
		}
	}
}

// Stop stops the registry and every process it started.
func (r *Registry) Stop() error {
	r.once.Do(func() {
		pid := r.cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-r.done
		}
		if r.token != nil {
			r.token.close()
		}
	})
	return nil
}

// TokensIssued is how many bearer tokens the token server issued (0 for
// an htpasswd registry).
func (r *Registry) TokensIssued() int {
	if r.token == nil {
		return 0
	}
	return int(r.token.issued.Load())
}

// Auth is the registry's credentials for go-containerregistry.
func (r *Registry) Auth() authn.Authenticator {
	return &authn.Basic{Username: r.Username, Password: r.Password}
}

// Image names a repository of the registry: 127.0.0.1:PORT/repo.
func (r *Registry) Image(repo string) string { return r.Host + "/" + repo }

// Push pushes a small random image under each tag of repo (a different
// image per tag) and returns each tag's manifest digest.
func (r *Registry) Push(ctx context.Context, repo string, tags ...string) (map[string]string, error) {
	digests := map[string]string{}
	for _, tag := range tags {
		img, err := random.Image(64, 1)
		if err != nil {
			return nil, err
		}
		d, err := r.write(ctx, repo, tag, img)
		if err != nil {
			return nil, err
		}
		digests[tag] = d
	}
	return digests, nil
}

// PushShared pushes one random image and tags it with every tag, one
// manifest upload per tag over one connection and login: the fast way to
// make many tags.
func (r *Registry) PushShared(ctx context.Context, repo string, tags ...string) (string, error) {
	if len(tags) == 0 {
		return "", errors.New("no tags")
	}
	img, err := random.Image(64, 1)
	if err != nil {
		return "", err
	}
	d, err := r.write(ctx, repo, tags[0], img)
	if err != nil {
		return "", err
	}
	pusher, err := remote.NewPusher(remote.WithAuth(r.Auth()))
	if err != nil {
		return "", err
	}
	for _, tag := range tags[1:] {
		ref, err := name.NewTag(r.Image(repo) + ":" + tag)
		if err != nil {
			return "", err
		}
		if err := pusher.Put(ctx, ref, img); err != nil {
			return "", fmt.Errorf("tagging %s: %w", ref, err)
		}
	}
	return d, nil
}

func (r *Registry) write(ctx context.Context, repo, tag string, img v1.Image) (string, error) {
	ref, err := name.NewTag(r.Image(repo) + ":" + tag)
	if err != nil {
		return "", err
	}
	if err := remote.Write(ref, img, remote.WithAuth(r.Auth()), remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// MustPush is Push for tests: it fails the test on error.
func (r *Registry) MustPush(t testing.TB, repo string, tags ...string) map[string]string {
	t.Helper()
	d, err := r.Push(context.Background(), repo, tags...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
