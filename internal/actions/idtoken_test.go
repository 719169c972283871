package actions

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The runner's ID-token endpoint is asked with the request token and the
// audience; a refusal, an answer without a token and a token that is not
// a JWT with an expiry are errors naming the audience, and every token
// received is hidden before it is used.
func TestIDTokens(t *testing.T) {
	answer := `{"value": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOmFjbWUvZmxlZXQ6cmVmOnJlZnMvaGVhZHMvbWFpbiIsImV4cCI6NDEwMjQ0NDgwMH0.c2ln"}`
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer request-token" || r.URL.Query().Get("audience") != "prod" || r.URL.Query().Get("api-version") != "2.0" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(answer))
	}))
	defer srv.Close()
	vars := map[string]string{IDTokenURLVar: srv.URL + "?api-version=2.0", IDTokenTokenVar: "request-token"}
	var hidden []string
	ts, err := NewIDTokens(func(k string) string { return vars[k] }, "prod", func(v ...string) { hidden = append(hidden, v...) })
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	if len(hidden) != 1 || hidden[0] != tok.AccessToken || tok.Expiry.Unix() != 4102444800 {
		t.Errorf("token %+v, hidden %q", tok, hidden)
	}
	if got := ts.Identity(); got != "the job's OIDC token (audience prod, subject repo:acme/fleet:ref:refs/heads/main)" {
		t.Errorf("identity %q", got)
	}
	for _, c := range []struct {
		status       int
		answer, want string
	}{
		{http.StatusForbidden, `{}`, "audience prod): 403 Forbidden"},
		{http.StatusOK, `{"value": ""}`, "(audience prod) holds no token"},
		{http.StatusOK, `{"value": "opaque"}`, "(audience prod): not a JWT"},
		{http.StatusOK, `{"value": "a.eyJzdWIiOiJ4In0.c"}`, "a JWT without an exp claim"},
	} {
		status, answer = c.status, c.answer
		if _, err := ts.Token(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("answer %d %s: error %v, want %q", c.status, c.answer, err, c.want)
		}
	}
	if _, err := NewIDTokens(func(string) string { return "" }, "prod", nil); err != ErrNoIDToken {
		t.Errorf("no request variables: %v", err)
	}
}
