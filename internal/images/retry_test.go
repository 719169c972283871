package images

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scripted answers requests from a list, and counts them.
type scripted struct {
	answers []func() (*http.Response, error)
	calls   int
}

func (s *scripted) RoundTrip(*http.Request) (*http.Response, error) {
	a := s.answers[min(s.calls, len(s.answers)-1)]
	s.calls++
	return a()
}

func status(code int, retryAfter string) func() (*http.Response, error) {
	return func() (*http.Response, error) {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}
}

func failWith(err error) func() (*http.Response, error) {
	return func() (*http.Response, error) { return nil, err }
}

func TestRetryTransport(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		answers    []func() (*http.Response, error)
		wantStatus int // 0: an error
		wantCalls  int
		wantWaits  []time.Duration
	}{
		{"429 with Retry-After seconds", []func() (*http.Response, error){status(429, "7"), status(200, "")},
			200, 2, []time.Duration{7 * time.Second}},
		{"503 with an HTTP date, capped at the longest wait", []func() (*http.Response, error){status(503, date), status(200, "")},
			200, 2, []time.Duration{30 * time.Second}},
		{"5xx without Retry-After: exponential backoff", []func() (*http.Response, error){status(500, ""), status(502, ""), status(504, ""), status(200, "")},
			200, 4, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{"an unreadable Retry-After falls back to the backoff", []func() (*http.Response, error){status(429, "soon"), status(200, "")},
			200, 2, []time.Duration{time.Second}},
		{"out of retries: the last answer", []func() (*http.Response, error){status(503, "1")},
			503, 5, []time.Duration{time.Second, time.Second, time.Second, time.Second}},
		{"404 is an answer, not retried", []func() (*http.Response, error){status(404, "")},
			404, 1, nil},
		{"401 is not retried", []func() (*http.Response, error){status(401, "1")},
			401, 1, nil},
		{"connection reset is retried", []func() (*http.Response, error){failWith(syscall.ECONNRESET), status(200, "")},
			200, 2, []time.Duration{time.Second}},
		{"connection refused is not", []func() (*http.Response, error){failWith(syscall.ECONNREFUSED)},
			0, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inner := &scripted{answers: tc.answers}
			var waits []time.Duration
			rt := &retryTransport{inner: inner, retries: 4, wait: time.Second, maxWait: 30 * time.Second,
				sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
			req, _ := http.NewRequest(http.MethodGet, "https://registry.example/v2/", nil)
			resp, err := rt.RoundTrip(req)
			got := 0
			if err == nil {
				got = resp.StatusCode
			}
			if got != tc.wantStatus || inner.calls != tc.wantCalls {
				t.Errorf("status %d (err %v) after %d calls, want %d after %d", got, err, inner.calls, tc.wantStatus, tc.wantCalls)
			}
			if diff := cmp.Diff(tc.wantWaits, waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryTransportStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rt := &retryTransport{inner: &scripted{answers: []func() (*http.Response, error){status(429, "3600")}},
		retries: 4, wait: time.Second, maxWait: time.Hour, sleep: sleepContext}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://registry.example/v2/", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("RoundTrip = %v, want context.Canceled", err)
	}
}
