package notify

// The golden payloads under testdata/ were reviewed against
// notification-controller v1.9.3 (fluxcd/notification-controller at
// 2e46958), internal/notifier: slack.go (SlackPayload with one attachment:
// fallback "title: first line", color good/danger, author_name
// kind/name.namespace, mrkdwn_in text, metadata as fields), discord.go (the
// same payload without channel and fallback, POSTed to <address>/slack),
// teams.go (Adaptive Card 1.4 in a "message" with one attachment: a
// Container of the title TextBlock, the message TextBlock and a FactSet with
// summary first), google_chat.go (cards v1: header title/subtitle, a
// textParagraph section then a keyValue section), forwarder.go (the event's
// JSON, header gotk-component, X-Signature sha256=<hex HMAC> for
// generic-hmac) and alertmanager.go (a list of one firing alert: metadata as
// labels but summary, alertname Flux<Kind><Reason title-cased>, severity,
// reason, kind, name, namespace, reportingcontroller; annotations message
// and summary; startsAt; endsAt the zero time), and against the services'
// documented webhook JSON: each test server below decodes the body and
// checks the fields its service requires. Where Flux ranges over the
// metadata map, ferry sorts by key.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/goldenfile"
	"github.com/ferry-ci/ferry/internal/secrets"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var fixedTime = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

const sha = "5394cb7f48332b2de7c17dd8b8384bbc84b7e738"

// appliedEvent is the fixed event of the golden files.
func appliedEvent() Event {
	return Event{
		InvolvedObject: ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "apps",
			APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
		Severity:            SeverityInfo,
		Timestamp:           fixedTime,
		Message:             "Applied revision main@sha1:" + sha + "\n3 created, 1 configured",
		Reason:              "ReconciliationSucceeded",
		Metadata:            map[string]string{"revision": "main@sha1:" + sha},
		ReportingController: Controller,
	}
}

// hook is a received request.
type hook struct {
	path   string
	header http.Header
	body   []byte
}

// services is a test server speaking the webhook JSON of each service
// (the path says which), recording what it receives; a body missing what
// its service requires is answered 400 and fails the test.
type services struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	got []hook
	// answer, when set, answers instead (after the checks).
	answer func(w http.ResponseWriter, n int) bool
}

func newServices(t *testing.T) *services {
	s := &services{t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *services) url(path string) string { return s.srv.URL + path }

func (s *services) hooks() []hook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hook(nil), s.got...)
}

func (s *services) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.got = append(s.got, hook{path: r.URL.Path, header: r.Header.Clone(), body: body})
	n := len(s.got)
	s.mu.Unlock()
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		s.t.Errorf("%s %s with Content-Type %q, want POST of application/json", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	if err := check(r.URL.Path, body); err != nil {
		s.t.Errorf("%s: %v\n%s", r.URL.Path, err, body)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if s.answer != nil && s.answer(w, n) {
		return
	}
	w.WriteHeader(http.StatusOK)
}

// check validates a body against the schema of the service its path
// names: /slack/... (Slack incoming webhook), /discord/.../slack (Discord's
// Slack-compatible endpoint), /teams (Teams Workflows: a message with an
// Adaptive Card), /chat (Google Chat cards), /api/v2/alerts
// (Alertmanager), anything else a Flux event.
func check(path string, body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	switch {
	case strings.HasPrefix(path, "/discord/"):
		if !strings.HasSuffix(path, "/slack") {
			return errors.New("discord takes Slack payloads at the /slack path")
		}
		fallthrough
	case strings.HasPrefix(path, "/slack/"):
		var m struct {
			Text        string `json:"text"`
			Username    string `json:"username"`
			Attachments []struct {
				Color      string `json:"color"`
				Text       string `json:"text"`
				AuthorName string `json:"author_name"`
				Fields     []struct{ Title, Value string }
			} `json:"attachments"`
		}
		if err := dec.Decode(&m); err != nil {
			return err
		}
		if m.Text == "" && len(m.Attachments) == 0 {
			return errors.New("neither text nor attachments")
		}
		for _, a := range m.Attachments {
			if a.Text == "" || a.Color == "" {
				return errors.New("an attachment without text or color")
			}
		}
	case path == "/teams":
		var m struct {
			Type        string `json:"type"`
			Attachments []struct {
				ContentType string `json:"contentType"`
				Content     struct {
					Type    string            `json:"type"`
					Version string            `json:"version"`
					Body    []json.RawMessage `json:"body"`
				} `json:"content"`
			} `json:"attachments"`
		}
		if err := dec.Decode(&m); err != nil {
			return err
		}
		if m.Type != "message" || len(m.Attachments) != 1 {
			return errors.New(`want type "message" with one attachment`)
		}
		c := m.Attachments[0]
		if c.ContentType != "application/vnd.microsoft.card.adaptive" || c.Content.Type != "AdaptiveCard" || c.Content.Version == "" || len(c.Content.Body) == 0 {
			return errors.New("the attachment is not an Adaptive Card with a body")
		}
	case path == "/chat":
		var m struct {
			Text  string `json:"text"`
			Cards []struct {
				Header   struct{ Title string }
				Sections []struct {
					Widgets []map[string]any
				}
			} `json:"cards"`
		}
		if err := dec.Decode(&m); err != nil {
			return err
		}
		if m.Text == "" && len(m.Cards) == 0 {
			return errors.New("neither text nor cards")
		}
		for _, c := range m.Cards {
			if len(c.Sections) == 0 || len(c.Sections[0].Widgets) == 0 {
				return errors.New("a card without a section of widgets")
			}
		}
	case path == "/api/v2/alerts":
		var m []struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
			StartsAt    string            `json:"startsAt"`
			EndsAt      string            `json:"endsAt"`
		}
		if err := dec.Decode(&m); err != nil {
			return err
		}
		if len(m) == 0 {
			return errors.New("no alerts")
		}
		for _, a := range m {
			if a.Labels["alertname"] == "" {
				return errors.New("an alert without the alertname label")
			}
			for _, ts := range []string{a.StartsAt, a.EndsAt} {
				if _, err := time.Parse(time.RFC3339, ts); err != nil {
					return err
				}
			}
		}
	default:
		var e struct {
			InvolvedObject struct{ Kind, Name, Namespace string } `json:"involvedObject"`
			Severity       string                                 `json:"severity"`
			Timestamp      time.Time                              `json:"timestamp"`
			Message        string                                 `json:"message"`
			Reason         string                                 `json:"reason"`
			Controller     string                                 `json:"reportingController"`
		}
		if err := dec.Decode(&e); err != nil {
			return err
		}
		if e.InvolvedObject.Kind == "" || e.InvolvedObject.Name == "" || e.Severity == "" || e.Timestamp.IsZero() ||
			e.Message == "" || e.Reason == "" || e.Controller == "" {
			return errors.New("an event without a required field")
		}
	}
	return nil
}

// setup is one Alert for every Kustomization through one Provider.
func setup(p Provider) Config {
	p.Name, p.Namespace = "p", "flux-system"
	return Config{
		Providers: []Provider{p},
		Alerts: []Alert{{Name: "a", Namespace: "flux-system", ProviderRef: "p", EventSeverity: SeverityInfo,
			EventSources:  []EventSource{{Kind: "Kustomization", Name: "*"}},
			EventMetadata: map[string]string{"env": "prod"}, Summary: "Production cluster"}},
	}
}

func fastOptions() Options {
	return Options{Now: func() time.Time { return fixedTime }, RetryWait: time.Millisecond, MaxRetryWait: 5 * time.Millisecond,
		Total: 20 * time.Second}
}

func TestPayloads(t *testing.T) {
	s := newServices(t)
	for _, tc := range []struct {
		typ, path, wantPath string
	}{
		{TypeSlack, "/slack/T000/B000/XXXX", "/slack/T000/B000/XXXX"},
		{TypeDiscord, "/discord/api/webhooks/1/tok", "/discord/api/webhooks/1/tok/slack"},
		{TypeMSTeams, "/teams", "/teams"},
		{TypeGoogleChat, "/chat", "/chat"},
		{TypeGeneric, "/generic", "/generic"},
		{TypeAlertmanager, "/api/v2/alerts", "/api/v2/alerts"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			before := len(s.hooks())
			cfg := setup(Provider{Type: tc.typ, Address: s.url(tc.path), Channel: "general"})
			ds := Send(context.Background(), cfg, []Event{appliedEvent()}, fastOptions())
			if len(ds) != 1 || ds[0].Err != nil || ds[0].Attempts != 1 {
				t.Fatalf("deliveries %+v", ds)
			}
			got := s.hooks()[before:]
			if len(got) != 1 || got[0].path != tc.wantPath {
				t.Fatalf("received %d requests (%v), want one at %s", len(got), got, tc.wantPath)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got[0].body, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			goldenfile.Check(t, filepath.Join("testdata", tc.typ+".golden.json"), pretty.Bytes(), *update)
			if tc.typ == TypeGeneric && got[0].header.Get("gotk-component") != Controller {
				t.Errorf("gotk-component header %q", got[0].header.Get("gotk-component"))
			}
		})
	}
}

// TestTeamsConnector: an Office 365 connector address gets the MessageCard.
func TestTeamsConnector(t *testing.T) {
	e := appliedEvent()
	e.Severity = SeverityError
	r, err := webhook(&Provider{Type: TypeMSTeams}, &credentials{address: "https://x.webhook.office.com/webhookb2/1"}, &e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	if m["@type"] != "MessageCard" || m["themeColor"] != "FF0000" {
		t.Errorf("payload %s", r.body)
	}
}

func TestGenericHMAC(t *testing.T) {
	s := newServices(t)
	cfg := setup(Provider{Type: TypeGenericHMAC, Address: s.url("/hmac"), SecretRef: "hmac"})
	opts := fastOptions()
	opts.Secret = func(ns, name string) (map[string]string, bool) {
		if ns == "flux-system" && name == "hmac" {
			return map[string]string{"token": "s3cret-key", "headers": "X-Team: platform\nAuthorization: Bearer hdr-value\n"}, true
		}
		return nil, false
	}
	ds := Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
	if len(ds) != 1 || ds[0].Err != nil {
		t.Fatalf("deliveries %+v", ds)
	}
	h := s.hooks()[0]
	mac := hmac.New(sha256.New, []byte("s3cret-key"))
	mac.Write(h.body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); h.header.Get("X-Signature") != want {
		t.Errorf("X-Signature %q, want %q", h.header.Get("X-Signature"), want)
	}
	if h.header.Get("X-Team") != "platform" || h.header.Get("Authorization") != "Bearer hdr-value" {
		t.Errorf("headers of the secret not sent: %v", h.header)
	}
}

func TestFilteringThroughSend(t *testing.T) {
	s := newServices(t)
	cfg := setup(Provider{Type: TypeGeneric, Address: s.url("/generic")})
	cfg.Alerts[0].EventSeverity = SeverityError
	ok := appliedEvent()
	failed := appliedEvent()
	failed.Severity, failed.Reason, failed.Message = SeverityError, "ReconciliationFailed", "apply failed"
	if ds := Send(context.Background(), cfg, []Event{ok}, fastOptions()); len(ds) != 0 {
		t.Errorf("an info event reached an error Alert: %+v", ds)
	}
	ds := Send(context.Background(), cfg, []Event{ok, failed}, fastOptions())
	if len(ds) != 1 || ds[0].Err != nil || ds[0].Event.Reason != "ReconciliationFailed" {
		t.Errorf("deliveries %+v", ds)
	}
	if n := len(s.hooks()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}

	cfg.Providers[0].Suspend = true
	if ds := Send(context.Background(), cfg, []Event{failed}, fastOptions()); len(ds) != 0 {
		t.Errorf("a suspended provider got %+v", ds)
	}
	if n := len(s.hooks()); n != 1 {
		t.Errorf("%d requests, want still 1", n)
	}
}

func TestMissingProvider(t *testing.T) {
	cfg := setup(Provider{Type: TypeGeneric, Address: "http://127.0.0.1:1/"})
	cfg.Alerts[0].ProviderRef = "nope"
	ds := Send(context.Background(), cfg, []Event{appliedEvent()}, fastOptions())
	if len(ds) != 1 || ds[0].Err == nil || !strings.Contains(ds[0].Err.Error(), "Alert/flux-system/a") ||
		!strings.Contains(ds[0].Err.Error(), "Provider/flux-system/nope") {
		t.Errorf("deliveries %+v", ds)
	}
}

func TestRetries(t *testing.T) {
	t.Run("500 then 200", func(t *testing.T) {
		s := newServices(t)
		s.answer = func(w http.ResponseWriter, n int) bool {
			if n == 1 {
				http.Error(w, "busy", http.StatusInternalServerError)
				return true
			}
			return false
		}
		ds := Send(context.Background(), setup(Provider{Type: TypeGeneric, Address: s.url("/g")}), []Event{appliedEvent()}, fastOptions())
		if len(ds) != 1 || ds[0].Err != nil || ds[0].Attempts != 2 {
			t.Errorf("deliveries %+v", ds)
		}
		if n := len(s.hooks()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("429 Retry-After", func(t *testing.T) {
		s := newServices(t)
		s.answer = func(w http.ResponseWriter, n int) bool {
			switch n {
			case 1:
				w.Header().Set("Retry-After", "7")
			case 2:
				w.Header().Set("Retry-After", fixedTime.Add(3*time.Second).Format(http.TimeFormat))
			default:
				return false
			}
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		opts := fastOptions()
		opts.RetryWait, opts.MaxRetryWait = time.Second, 30*time.Second
		var waits []time.Duration
		opts.sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
		ds := Send(context.Background(), setup(Provider{Type: TypeGeneric, Address: s.url("/g")}), []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err != nil || ds[0].Attempts != 3 {
			t.Errorf("deliveries %+v", ds)
		}
		if want := []time.Duration{7 * time.Second, 3 * time.Second}; fmt.Sprint(waits) != fmt.Sprint(want) {
			t.Errorf("waited %v, want %v (the Retry-After of each answer)", waits, want)
		}
	})
	t.Run("backoff capped", func(t *testing.T) {
		s := newServices(t)
		s.answer = func(w http.ResponseWriter, n int) bool {
			w.WriteHeader(http.StatusBadGateway)
			return true
		}
		opts := fastOptions()
		opts.Retries, opts.RetryWait, opts.MaxRetryWait = 4, time.Second, 3*time.Second
		var waits []time.Duration
		opts.sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
		ds := Send(context.Background(), setup(Provider{Type: TypeGeneric, Address: s.url("/g")}), []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err == nil || ds[0].Attempts != 5 || !strings.Contains(ds[0].Err.Error(), "502") {
			t.Errorf("deliveries %+v", ds)
		}
		if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}; fmt.Sprint(waits) != fmt.Sprint(want) {
			t.Errorf("waited %v, want %v", waits, want)
		}
	})
	t.Run("400 not retried", func(t *testing.T) {
		s := newServices(t)
		s.answer = func(w http.ResponseWriter, n int) bool {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return true
		}
		ds := Send(context.Background(), setup(Provider{Type: TypeGeneric, Address: s.url("/g")}), []Event{appliedEvent()}, fastOptions())
		if len(ds) != 1 || ds[0].Err == nil || ds[0].Attempts != 1 || !strings.Contains(ds[0].Err.Error(), "invalid_payload") {
			t.Errorf("deliveries %+v", ds)
		}
		if n := len(s.hooks()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := "http://" + l.Addr().String() + "/hooks/secret-path"
		l.Close()
		opts := fastOptions()
		opts.Total = 2 * time.Second
		ds := Send(context.Background(), setup(Provider{Type: TypeGeneric, Address: addr}), []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err == nil {
			t.Fatalf("deliveries %+v", ds)
		}
		msg := ds[0].Err.Error()
		if strings.Contains(msg, "secret-path") || strings.Contains(msg, l.Addr().String()) || !strings.Contains(msg, "connection refused") ||
			!strings.Contains(msg, "Provider/flux-system/p") {
			t.Errorf("error %q: want connection refused, naming the provider, without the address", msg)
		}
	})
	t.Run("bound of all sends", func(t *testing.T) {
		s := newServices(t)
		release := make(chan struct{})
		s.answer = func(w http.ResponseWriter, n int) bool { <-release; return false }
		defer close(release)
		opts := fastOptions()
		opts.Total = 200 * time.Millisecond
		ds := Send(context.Background(), setup(Provider{Type: TypeGeneric, Address: s.url("/g")}), []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err == nil || !strings.Contains(ds[0].Err.Error(), "not delivered within 200ms") {
			t.Errorf("deliveries %+v", ds)
		}
	})
}

func TestSecrets(t *testing.T) {
	s := newServices(t)
	webhookURL := s.url("/slack/T1/B1/hook-secret")
	cfg := setup(Provider{Type: TypeSlack, SecretRef: "slack-url"})
	t.Run("from the renders", func(t *testing.T) {
		masker := secrets.NewMasker()
		opts := fastOptions()
		opts.Hide = masker.Add
		opts.Secret = func(ns, name string) (map[string]string, bool) {
			return map[string]string{"address": webhookURL + "\n", "token": "xoxb-token"}, ns == "flux-system" && name == "slack-url"
		}
		var out bytes.Buffer
		opts.DryRun = &out
		ds := Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err != nil || ds[0].Skipped != "dry run" {
			t.Fatalf("deliveries %+v", ds)
		}
		masked := masker.Mask(out.String())
		if !strings.HasPrefix(masked, "--- Alert/flux-system/a -> Provider/flux-system/p (slack)\n{") {
			t.Errorf("dry run output:\n%s", masked)
		}
		for _, v := range []string{webhookURL, "xoxb-token"} {
			if !contains(masker.Values(), v) {
				t.Errorf("%q was not given to Hide", v)
			}
		}
		if n := len(s.hooks()); n != 0 {
			t.Errorf("a dry run sent %d requests", n)
		}
		opts.DryRun = nil
		ds = Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err != nil {
			t.Fatalf("deliveries %+v", ds)
		}
		if h := s.hooks(); len(h) != 1 || h[0].header.Get("Authorization") != "Bearer xoxb-token" {
			t.Errorf("requests %v", h)
		}
	})
	t.Run("from the environment", func(t *testing.T) {
		before := len(s.hooks())
		opts := fastOptions()
		opts.Getenv = func(k string) string {
			if k == "FERRY_SECRET_SLACK__URL_ADDRESS" {
				return webhookURL
			}
			return ""
		}
		ds := Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err != nil || len(s.hooks()) != before+1 {
			t.Errorf("deliveries %+v", ds)
		}
	})
	// The former spelling of the name (every other character than a
	// letter or digit "_") is read while no other Provider's Secret
	// spells the same way, with a warning; otherwise it is not read.
	t.Run("from the environment, former spelling", func(t *testing.T) {
		getenv := func(k string) string {
			if k == "FERRY_SECRET_SLACK_URL_ADDRESS" {
				return webhookURL
			}
			return ""
		}
		for _, tc := range []struct {
			name      string
			other     string // the secretRef of another Provider
			delivered bool
			warning   string
		}{
			{"unambiguous", "", true, "FERRY_SECRET_SLACK_URL_<KEY> are the former spelling for Secret slack-url, read while no other Secret spells the same way; rename them FERRY_SECRET_SLACK__URL_<KEY>"},
			{"another Secret spells the same way", "slack.url", false, "FERRY_SECRET_SLACK_URL_* is not read for Secret slack-url: that former spelling also stands for Secret slack.url; name the variables FERRY_SECRET_SLACK__URL_<KEY>"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := len(s.hooks())
				cfg := cfg
				if tc.other != "" {
					cfg.Providers = append(slices.Clone(cfg.Providers), Provider{Name: "other", Namespace: "flux-system", Type: TypeSlack, SecretRef: tc.other})
				}
				opts := fastOptions()
				opts.Getenv = getenv
				ds := Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
				if len(ds) != 1 || (ds[0].Err == nil) != tc.delivered || (len(s.hooks()) == before+1) != tc.delivered {
					t.Errorf("deliveries %+v, want delivered: %v", ds, tc.delivered)
				}
				if d := cmp.Diff([]string{tc.warning}, ds[0].Warnings); d != "" {
					t.Errorf("warnings (-want +got):\n%s", d)
				}
			})
		}
	})
	t.Run("missing", func(t *testing.T) {
		opts := fastOptions()
		opts.Getenv = func(string) string { return "" }
		ds := Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err == nil {
			t.Fatalf("deliveries %+v", ds)
		}
		for _, want := range []string{"Provider/flux-system/p", "Secret/flux-system/slack-url", "FERRY_SECRET_SLACK__URL_"} {
			if !strings.Contains(ds[0].Err.Error(), want) {
				t.Errorf("error %q does not name %s", ds[0].Err, want)
			}
		}
	})
	t.Run("never in errors", func(t *testing.T) {
		masker := secrets.NewMasker()
		s.answer = func(w http.ResponseWriter, n int) bool { http.Error(w, "no", http.StatusForbidden); return true }
		defer func() { s.answer = nil }()
		opts := fastOptions()
		opts.Hide = masker.Add
		opts.Secret = func(ns, name string) (map[string]string, bool) {
			return map[string]string{"address": webhookURL, "token": "xoxb-token"}, true
		}
		ds := Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
		if len(ds) != 1 || ds[0].Err == nil {
			t.Fatalf("deliveries %+v", ds)
		}
		for _, v := range []string{"hook-secret", "xoxb-token", s.srv.URL} {
			if strings.Contains(ds[0].Err.Error(), v) {
				t.Errorf("error %q holds %q", ds[0].Err, v)
			}
		}
	})
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// fakeStatuses is a forge's commit statuses, newest first.
type fakeStatuses struct {
	mu  sync.Mutex
	by  map[string][]CommitStatus
	set int
}

func (f *fakeStatuses) CommitStatuses(_ context.Context, sha string) ([]CommitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]CommitStatus(nil), f.by[sha]...), nil
}

func (f *fakeStatuses) SetCommitStatus(_ context.Context, sha string, s CommitStatus) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.by[sha] = append([]CommitStatus{s}, f.by[sha]...)
	f.set++
	return nil
}

func TestCommitStatuses(t *testing.T) {
	for _, typ := range []string{TypeGitHub, TypeGitea} {
		t.Run(typ, func(t *testing.T) {
			fake := &fakeStatuses{by: map[string][]CommitStatus{}}
			cfg := setup(Provider{Type: typ, Address: "https://forge.example/o/r", SecretRef: "forge"})
			opts := fastOptions()
			opts.Secret = func(ns, name string) (map[string]string, bool) { return map[string]string{"token": "tok"}, true }
			opts.OpenStatuses = func(kind, address, token string) (Statuses, error) {
				if kind != typ || address != "https://forge.example/o/r" || token != "tok" {
					return nil, fmt.Errorf("OpenStatuses(%s, %s, %s)", kind, address, token)
				}
				return fake, nil
			}
			ctxName := StatusContext(&cfg.Providers[0], &Event{InvolvedObject: ObjectReference{Kind: "Kustomization", Name: "apps"}})
			if !strings.HasPrefix(ctxName, "kustomization/apps/") || len(ctxName) != len("kustomization/apps/")+8 {
				t.Errorf("context %q", ctxName)
			}

			ds := Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
			if len(ds) != 1 || ds[0].Err != nil || ds[0].Unchanged {
				t.Fatalf("deliveries %+v", ds)
			}
			want := CommitStatus{State: "success", Context: ctxName, Description: "reconciliation succeeded"}
			if got := fake.by[sha]; len(got) != 1 || got[0] != want {
				t.Errorf("statuses %+v, want %+v", got, want)
			}

			ds = Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
			if len(ds) != 1 || ds[0].Err != nil || !ds[0].Unchanged || fake.set != 1 {
				t.Errorf("the same status again: deliveries %+v, %d set", ds, fake.set)
			}

			failed := appliedEvent()
			failed.Severity, failed.Reason = SeverityError, "ReconciliationFailed"
			ds = Send(context.Background(), cfg, []Event{failed}, opts)
			if len(ds) != 1 || ds[0].Err != nil || fake.by[sha][0].State != "failure" || fake.by[sha][0].Description != "reconciliation failed" {
				t.Errorf("failure: deliveries %+v, statuses %+v", ds, fake.by[sha])
			}

			progressing := appliedEvent()
			progressing.Reason = ReasonProgressing
			ds = Send(context.Background(), cfg, []Event{progressing}, opts)
			switch typ {
			case TypeGitea:
				if len(ds) != 1 || ds[0].Err != nil || fake.by[sha][0].State != "pending" {
					t.Errorf("progressing: deliveries %+v, statuses %+v", ds, fake.by[sha])
				}
			case TypeGitHub:
				if len(ds) != 1 || ds[0].Skipped == "" || fake.set != 2 {
					t.Errorf("progressing: deliveries %+v, %d set", ds, fake.set)
				}
			}

			norev := failed
			norev.Metadata = nil
			ds = Send(context.Background(), cfg, []Event{norev}, opts)
			if len(ds) != 1 || ds[0].Err == nil || !strings.Contains(ds[0].Err.Error(), "no revision") {
				t.Errorf("no revision: deliveries %+v", ds)
			}
		})
	}
}

func TestCommitOf(t *testing.T) {
	for rev, want := range map[string]string{
		"main@sha1:" + sha:              sha,
		"env/dev@sha1:" + sha:           sha,
		"sha1:" + sha:                   sha,
		"main/" + sha:                   sha,
		sha:                             sha,
		"main@sha256:" + sha + sha[:24]: sha + sha[:24],
		"main":                          "",
	} {
		got, err := commitOf(rev)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("commitOf(%q) = %q, %v; want %q", rev, got, err, want)
		}
	}
}

func TestCertSecretRef(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	cfg := setup(Provider{Type: TypeGeneric, Address: srv.URL + "/g", CertSecretRef: "ca"})
	opts := fastOptions()
	ds := Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
	if len(ds) != 1 || ds[0].Err == nil || !strings.Contains(ds[0].Err.Error(), "Secret/flux-system/ca") {
		t.Errorf("without the Secret: deliveries %+v", ds)
	}
	opts.Secret = func(ns, name string) (map[string]string, bool) { return map[string]string{"ca.crt": ca}, name == "ca" }
	ds = Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
	if len(ds) != 1 || ds[0].Err != nil {
		t.Errorf("with the CA: deliveries %+v", ds)
	}
	cfg.Providers[0].CertSecretRef = ""
	ds = Send(context.Background(), cfg, []Event{appliedEvent()}, opts)
	if len(ds) != 1 || ds[0].Err == nil || ds[0].Attempts != 1 || !strings.Contains(ds[0].Err.Error(), "certificate") {
		t.Errorf("without the CA: deliveries %+v (want a certificate error, not retried)", ds)
	}
}

// TestOrder: deliveries come by event, then Alert by namespace and name,
// whatever order the sends finish in.
func TestOrder(t *testing.T) {
	s := newServices(t)
	cfg := setup(Provider{Type: TypeGeneric, Address: s.url("/g")})
	b := cfg.Alerts[0]
	b.Name = "b"
	cfg.Alerts = append([]Alert{b}, cfg.Alerts...)
	var events []Event
	for i := range 10 {
		e := appliedEvent()
		e.InvolvedObject.Name = fmt.Sprintf("app%d", i)
		events = append(events, e)
	}
	ds := Send(context.Background(), cfg, events, fastOptions())
	if len(ds) != 20 {
		t.Fatalf("%d deliveries, want 20", len(ds))
	}
	for i, d := range ds {
		want := fmt.Sprintf("app%d Alert/flux-system/%s", i/2, []string{"a", "b"}[i%2])
		if got := d.Event.InvolvedObject.Name + " " + d.Alert; got != want || d.Err != nil {
			t.Errorf("delivery %d: %s (%v), want %s", i, got, d.Err, want)
		}
	}
}
