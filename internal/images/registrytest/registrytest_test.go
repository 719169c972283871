package registrytest

import (
	"strings"
	"testing"
)

// TestRunOnTakenPort starts a registry on the port another registry
// holds, as when another test binary takes the free port first: the other
// registry answers /v2/ there, and run must not take it for its own but
// fail, so that RunWith tries another port.
func TestRunOnTakenPort(t *testing.T) {
	first := Start(t)
	realm := "ferry-registrytest-second"
	auth := "  htpasswd:\n    realm: " + realm + "\n    path: " + t.TempDir() + "/htpasswd\n"
	r, err := run(t.TempDir(), first.Host, auth, realm)
	if err == nil {
		_ = r.Stop()
		t.Fatalf("a second registry on %s, where the first answers, started", first.Host)
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second registry on %s: %v; want an address-in-use failure", first.Host, err)
	}
}
