package images

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// retryTransport repeats requests a registry answered with 429 or a 5xx
// status, or that were cut off mid-way, waiting between attempts: the
// registry's Retry-After when it sends one, else an exponential backoff,
// never longer than maxWait. A registry that cannot be reached at all
// (connection refused, unknown host) is not retried.
type retryTransport struct {
	inner   http.RoundTripper
	retries int
	wait    time.Duration
	maxWait time.Duration
	// sleep waits d or until ctx is done; tests record the waits.
	sleep func(ctx context.Context, d time.Duration) error
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for attempt := 0; ; attempt++ {
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
		resp, err := t.inner.RoundTrip(req)
		if attempt >= t.retries || !replayable || !retryable(resp, err) {
			return resp, err
		}
		d := t.backoff(attempt)
		if resp != nil {
			if ra, ok := RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				d = ra
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		if d > t.maxWait {
			d = t.maxWait
		}
		if err := t.sleep(req.Context(), d); err != nil {
			return nil, err
		}
	}
}

func (t *retryTransport) backoff(attempt int) time.Duration {
	d := t.wait
	for i := 0; i < attempt && d < t.maxWait; i++ {
		d *= 2
	}
	return d
}

// retryable says whether an answer is worth asking again for.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// RetryAfter reads a Retry-After header, seconds or an HTTP date, as a
// wait from now (zero for a date past); false when h is empty or neither.
// Registries and webhooks (package notify) send it alike.
func RetryAfter(h string, now time.Time) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return 0, false
		}
		s = min(s, 1<<20) // no overflow; the caller caps the wait anyway
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
