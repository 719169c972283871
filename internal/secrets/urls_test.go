package secrets

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/secrets/secretstest"
)

// The webhook addresses of the tests: a Slack-like path of IDs and a
// token, a Google-Chat-like query, and basic credentials in userinfo.
const (
	slackHook = "https://hooks.example.com/services/T0A1B2C3D/B0E1F2G3H/xoxbsecrettokenvaluezzzz"
	chatHook  = "https://chat.example.com/v1/spaces/AAAAbcdEFG/messages?key=AIzaSyD-k3y&token=tok_ABC%3D"
	basicURL  = "https://ci-bot:p%40ss-w0rd@charts.example.com/index.yaml"
)

func TestURLParts(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"path, its IDs and token", slackHook, []string{
			"/services/T0A1B2C3D/B0E1F2G3H/xoxbsecrettokenvaluezzzz", "T0A1B2C3D", "B0E1F2G3H", "xoxbsecrettokenvaluezzzz"}},
		{"query and its values", chatHook, []string{
			"/v1/spaces/AAAAbcdEFG/messages", "AAAAbcdEFG",
			"key=AIzaSyD-k3y&token=tok_ABC%3D", "key=AIzaSyD-k3y&token=tok_ABC=", "AIzaSyD-k3y", "tok_ABC="}},
		{"userinfo, password decoded", basicURL, []string{"ci-bot:p%40ss-w0rd", "p@ss-w0rd", "/index.yaml"}},
		{"token as the user", "https://ghp_0123456789@git.example.com/", []string{"ghp_0123456789"}},
		{"escaped segment", "https://h.example.com/hook/a%2Fb-C0DE-1234", []string{"/hook/a%2Fb-C0DE-1234", "/hook/a/b-C0DE-1234", "a%2Fb-C0DE-1234", "a/b-C0DE-1234"}},
		{"words are left alone", "https://h.example.com/api/webhooks/incoming-webhook", []string{"/api/webhooks/incoming-webhook"}},
		{"a short path is no part", "http://am.example.com:9093/alerts", nil},
		{"not a URL", "xoxb-not-a-url", nil},
		{"no scheme", "hooks.example.com/services/T0A1B2C3D", nil},
		{"no host", "file:///etc/passwd-T0A1B2C3D", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := URLParts(tc.url)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("URLParts(%q) (-want +got):\n%s", tc.url, diff)
			}
		})
	}
}

// TestMaskURLParts: a webhook address, given to Add or decrypted, is
// masked whole, and so are its path, query, userinfo and the segments
// that read as credentials, in what a server echoes of them, in every
// encoding.
func TestMaskURLParts(t *testing.T) {
	added := NewMasker()
	added.Add(slackHook, chatHook, basicURL)
	for name, m := range map[string]*Masker{"added": added, "decrypted": maskerOf(slackHook, chatHook, basicURL)} {
		t.Run(name, func(t *testing.T) { checkURLMasking(t, m) })
	}
}

func checkURLMasking(t *testing.T, m *Masker) {
	for _, tc := range []struct{ name, in, want string }{
		{"whole address", "POST " + slackHook + " failed", "POST *** failed"},
		{"path echoed", "404 Not Found: Cannot POST /services/T0A1B2C3D/B0E1F2G3H/xoxbsecrettokenvaluezzzz", "404 Not Found: Cannot POST ***"},
		{"token segment echoed", `{"error":"invalid_token","token":"xoxbsecrettokenvaluezzzz"}`, `{"error":"invalid_token","token":"***"}`},
		{"ID segment echoed", "no such team T0A1B2C3D", "no such team ***"},
		{"path escaped", "GET %2Fservices%2FT0A1B2C3D%2FB0E1F2G3H%2Fxoxbsecrettokenvaluezzzz", "GET ***"},
		{"query echoed", "bad request: key=AIzaSyD-k3y&token=tok_ABC%3D", "bad request: ***"},
		{"query value echoed", "API key AIzaSyD-k3y not valid", "API key *** not valid"},
		{"query value decoded", `token "tok_ABC=" expired`, `token "***" expired`},
		{"password echoed", "user ci-bot, password p@ss-w0rd refused", "user ci-bot, password *** refused"},
		{"userinfo echoed", "https://ci-bot:p%40ss-w0rd@charts.example.com", "https://***@charts.example.com"},
		{"host and words left", "hooks.example.com: the services webhooks are down", "hooks.example.com: the services webhooks are down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Mask(tc.in); got != tc.want {
				t.Errorf("Mask(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	// Every encoding of each part: the checker's forms come from the
	// encoders, not from the masker.
	for _, part := range append(URLParts(slackHook), URLParts(chatHook)...) {
		for name, enc := range encodings {
			t.Run("encoded/"+name+"/"+part, func(t *testing.T) {
				out := m.Mask(enc(t, part))
				if leaks := secretstest.Leaks(out, part); len(leaks) > 0 {
					t.Errorf("%s of %q leaks %v:\n%s", name, part, leaks, out)
				}
			})
		}
	}
}

// TestValuesHoldURLParts: Values lists the parts of a URL too, so that
// the runner is told them (::add-mask::) as well as the whole.
func TestValuesHoldURLParts(t *testing.T) {
	m := NewMasker()
	m.Add(slackHook)
	got := m.Values()
	for _, want := range []string{slackHook, "/services/T0A1B2C3D/B0E1F2G3H/xoxbsecrettokenvaluezzzz", "xoxbsecrettokenvaluezzzz"} {
		if !slices.Contains(got, want) {
			t.Errorf("Values() = %q, want %q among them", got, want)
		}
	}
}
