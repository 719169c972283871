package giteatest

import (
	"context"
	"fmt"
	"strings"

	"code.gitea.io/sdk/gitea"
	"testing"
)

// TestStartOnTakenPort starts a second server whose first port is the
// shared server's, as when another test binary's Gitea takes the free port
// first: the shared server answers there, and the second server must not
// take it for its own but start on another port with its own token.
func TestStartOnTakenPort(t *testing.T) {
	first := Require(t)
	taken := first.port(t)
	picks := 0
	pick := func() (int, error) {
		picks++
		if picks == 1 {
			return taken, nil
		}
		return freePort()
	}
	second, err := start(context.Background(), pick)
	if err != nil {
		t.Fatal(err)
	}
	defer second.stop()
	if picks != 2 || second.port(t) == taken {
		t.Fatalf("second server on %s after %d picks; want a port other than %d after 2", second.URL, picks, taken)
	}
	me, _, err := second.Client(t, second.AdminToken).GetMyUserInfo()
	if err != nil || me.UserName != AdminUser {
		t.Fatalf("second server's admin token on its own server: %v, %v", me, err)
	}
	// The SDK's client asks the server's version with the token: a token
	// the first server does not know fails there.
	if c, err := gitea.NewClient(strings.TrimSuffix(first.URL, "/"), gitea.SetToken(second.AdminToken)); err == nil {
		me, _, err := c.GetMyUserInfo()
		t.Fatalf("the second server's admin token works on the first server (%v, %v): the two are one server", me, err)
	}
}

func (g *Gitea) port(t *testing.T) int {
	t.Helper()
	var port int
	if _, err := fmt.Sscanf(g.URL, "http://127.0.0.1:%d/", &port); err != nil {
		t.Fatalf("URL %s: %v", g.URL, err)
	}
	return port
}
