// Package alertmanagertest runs a real Alertmanager for tests: the binary
// hack/tools.sh builds, one per test, on 127.0.0.1 and a free port, with
// clustering off, its data in the test's temporary folder and a route to a
// receiver that sends nothing, so the alerts it is given stay readable
// through its API v2.
package alertmanagertest

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-ci/ferry/internal/testbin"
)

// Alertmanager is a running Alertmanager.
type Alertmanager struct {
	// URL is http://127.0.0.1:PORT, without a trailing slash: alerts are
	// posted to URL + "/api/v2/alerts".
	URL string
	// Receiver is the name of the receiver every alert is routed to.
	Receiver string

	cmd  *exec.Cmd
	done chan struct{} // closed when the process exited
	log  *bytes.Buffer
}

// Alert is an alert as Alertmanager holds it (API v2 gettableAlert).
type Alert struct {
	Labels       map[string]string
	Annotations  map[string]string
	StartsAt     time.Time
	EndsAt       time.Time
	UpdatedAt    time.Time
	GeneratorURL string
	Fingerprint  string
	// State is active, suppressed or unprocessed.
	State     string
	Receivers []string
}

// tries is how many free ports Start tries: another process may take the
// port between finding it free and Alertmanager binding it.
const tries = 3

// Start starts an Alertmanager, stopped when the test ends. Without the
// binary the test is skipped, or fails in CI.
func Start(t testing.TB) *Alertmanager {
	t.Helper()
	bin := testbin.Tool(t, "alertmanager", "tools")
	var err error
	for range tries {
		var am *Alertmanager
		am, err = start(bin, t.TempDir())
		if err == nil {
			t.Cleanup(am.stop)
			return am
		}
	}
	t.Fatalf("alertmanagertest: %v", err)
	return nil
}

func start(bin, dir string) (*Alertmanager, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// The receiver's name is the server's identity: another Alertmanager
	// answering on the port would not have it in its configuration.
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	receiver := "ferry-null-" + hex.EncodeToString(id)
	config := fmt.Sprintf(`route:
  receiver: %[1]s
  group_wait: 1h
  group_interval: 1h
  repeat_interval: 24h
receivers:
  - name: %[1]s
`, receiver)
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, err
	}
	am := &Alertmanager{
		URL:      fmt.Sprintf("http://127.0.0.1:%d", port),
		Receiver: receiver,
		done:     make(chan struct{}),
		log:      &bytes.Buffer{},
	}
	am.cmd = exec.Command(bin,
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--cluster.listen-address=",
		"--log.level=warn",
	)
	am.cmd.Dir = dir
	am.cmd.Stdout, am.cmd.Stderr = am.log, am.log
	am.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := am.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting alertmanager: %w", err)
	}
	go func() { _ = am.cmd.Wait(); close(am.done) }()
	if err := am.waitReady(); err != nil {
		am.stop()
		return nil, fmt.Errorf("%w\nalertmanager log:\n%s", err, lastLines(am.log.String(), 20))
	}
	return am, nil
}

// waitReady polls /-/ready, then checks /api/v2/status holds this
// server's configuration, until the process exits or a minute passed.
func (am *Alertmanager) waitReady() error {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		if ready(client, am.URL+"/-/ready") {
			var status struct {
				Config struct {
					Original string `json:"original"`
				} `json:"config"`
			}
			if err := getJSON(client, am.URL+"/api/v2/status", &status); err != nil {
				return err
			}
			if !strings.Contains(status.Config.Original, am.Receiver) {
				return fmt.Errorf("another Alertmanager answers on %s", am.URL)
			}
			return nil
		}
		select {
		case <-am.done:
			return fmt.Errorf("alertmanager exited before answering on %s", am.URL)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("alertmanager was not ready on %s within a minute", am.URL)
		}
	}
}

func ready(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func getJSON(client *http.Client, url string, v any) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w in %s", url, err, body)
	}
	return nil
}

// Alerts returns the alerts Alertmanager holds (GET /api/v2/alerts), by
// alertname, then fingerprint.
func (am *Alertmanager) Alerts(t testing.TB) []Alert {
	t.Helper()
	var raw []struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		EndsAt       time.Time         `json:"endsAt"`
		UpdatedAt    time.Time         `json:"updatedAt"`
		GeneratorURL string            `json:"generatorURL"`
		Fingerprint  string            `json:"fingerprint"`
		Status       struct {
			State string `json:"state"`
		} `json:"status"`
		Receivers []struct {
			Name string `json:"name"`
		} `json:"receivers"`
	}
	if err := getJSON(&http.Client{Timeout: 10 * time.Second}, am.URL+"/api/v2/alerts", &raw); err != nil {
		t.Fatalf("alertmanagertest: reading the alerts: %v", err)
	}
	out := make([]Alert, 0, len(raw))
	for _, a := range raw {
		al := Alert{
			Labels:       a.Labels,
			Annotations:  a.Annotations,
			StartsAt:     a.StartsAt,
			EndsAt:       a.EndsAt,
			UpdatedAt:    a.UpdatedAt,
			GeneratorURL: a.GeneratorURL,
			Fingerprint:  a.Fingerprint,
			State:        a.Status.State,
		}
		for _, r := range a.Receivers {
			al.Receivers = append(al.Receivers, r.Name)
		}
		out = append(out, al)
	}
	slices.SortFunc(out, func(a, b Alert) int {
		return cmp.Or(cmp.Compare(a.Labels["alertname"], b.Labels["alertname"]), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	return out
}

// stop stops the server: SIGTERM, then SIGKILL after ten seconds.
func (am *Alertmanager) stop() {
	if am.cmd == nil || am.cmd.Process == nil {
		return
	}
	pgid := am.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-am.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-am.done
	}
	am.cmd = nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("alertmanagertest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
