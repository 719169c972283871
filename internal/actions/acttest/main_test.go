package acttest

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

// cp is the control plane the deploy and drift workflows apply to.
var cp *kubetest.ControlPlane

// started records what the tests started, for the check that nothing of
// it is left running or listening once TestMain has stopped it all.
type startedSet struct {
	mu            sync.Mutex
	runner        *Runner
	gitea         *giteatest.Gitea
	registryPorts []int
}

var started startedSet

// add records something started, under the lock (the scenarios run in
// parallel).
func (s *startedSet) add(record func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	record()
}

// TestMain runs the scenarios with one control plane, one Gitea and one
// runner, stops them, and then fails the run if any process they started
// is still there or any port or socket they had is still listening.
func TestMain(m *testing.M) {
	code := kubetest.Run(m, &cp)
	if ferryBinDir != "" {
		os.RemoveAll(ferryBinDir)
	}
	giteatest.Stop()
	started.runner = current()
	if err := Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if problems := leftovers(); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "acttest: left behind:", p)
		}
		code = 1
	}
	os.Exit(code)
}

// leftovers lists what the run started and did not stop: processes using
// the runner's folders, the image store (containers), the control plane's
// or Gitea's folders, and listeners on their ports.
func leftovers() []string {
	var paths []string
	var ports []int
	if r := started.runner; r != nil {
		paths = append(paths, r.State(), r.Graph())
		if UnixListening(r.State() + "/podman.sock") {
			return []string{"podman's socket " + r.State() + "/podman.sock still listening"}
		}
	}
	if cp != nil {
		paths = append(paths, cp.Dir())
		ports = append(ports, port(cp.URL()))
	}
	if g := started.gitea; g != nil {
		ports = append(ports, port(g.URL))
	}
	ports = append(ports, started.registryPorts...)
	var out []string
	for _, p := range ProcessesUsing(paths...) {
		out = append(out, "process "+p.String())
	}
	listeners, err := Listening()
	if err != nil {
		return append(out, "reading listeners: "+err.Error())
	}
	for _, l := range listeners {
		for _, p := range ports {
			if l.Port == p {
				out = append(out, "listener "+l.String())
			}
		}
	}
	return out
}

func port(raw string) int {
	u, err := url.Parse(raw)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(u.Port())
	return n
}
