package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferry-ci/ferry/internal/images"
)

// Concurrency is how many sends of one Send run at a time.
const Concurrency = 8

// slackAPI is Slack's chat.postMessage, which answers 200 with ok: false.
const slackAPI = "https://slack.com/api/chat.postMessage"

// job is one send: a delivery and what to send for it.
type job struct {
	d        *Delivery
	p        *Provider
	creds    *credentials
	client   *http.Client
	req      *request
	status   *statusUpdate
	statuses Statuses
}

// provider is a provider's resolved credentials (or why not) and, for
// commit status types, its forge client.
type provider struct {
	creds    *credentials
	client   *http.Client
	statuses Statuses
	err      error
	warnings []string
}

// Send sends each event through each Alert that lets it through to the
// Alert's provider, and returns one Delivery per event and Alert, in the
// order of events then Alerts (by namespace and name). Sends run
// concurrently, each attempt bounded by its provider's timeout, repeated
// on 429, 5xx and connection errors, all of them within opts.Total; what
// is not delivered by then is a Delivery error. Every secret a provider
// reads is given to opts.Hide before anything is sent or written, and no
// error holds a webhook's address. Send never fails: every outcome is a
// Delivery.
func Send(ctx context.Context, cfg Config, events []Event, opts Options) []Delivery {
	o := opts.withDefaults()
	for _, p := range cfg.Providers {
		o.secretNames = append(o.secretNames, p.SecretRef, p.CertSecretRef)
	}
	alerts := slices.Clone(cfg.Alerts)
	slices.SortStableFunc(alerts, func(a, b Alert) int { return strings.Compare(a.ID(), b.ID()) })
	byName := map[string]*Provider{}
	for i := range cfg.Providers {
		p := &cfg.Providers[i]
		byName[p.Namespace+"/"+p.Name] = p
	}
	resolved := map[string]*provider{}

	var deliveries []*Delivery
	var jobs []*job
	for i := range events {
		e := events[i]
		if e.Timestamp.IsZero() {
			e.Timestamp = o.Now()
		}
		if e.ReportingController == "" {
			e.ReportingController = Controller
		}
		for j := range alerts {
			a := &alerts[j]
			if !a.Matches(&e) {
				continue
			}
			d := &Delivery{Alert: a.ID(), Provider: "Provider/" + a.Namespace + "/" + a.ProviderRef}
			p, ok := byName[a.Namespace+"/"+a.ProviderRef]
			if !ok {
				d.Event = &e
				d.Err = fmt.Errorf("%s: its providerRef %s is not found in the cluster's renders", a.ID(), d.Provider)
				deliveries = append(deliveries, d)
				continue
			}
			if p.Suspend {
				continue
			}
			if !isCommitStatusProvider(p.Type) && !isGenericProvider(p.Type) && isCommitStatusUpdate(&e) {
				continue
			}
			ev := a.For(e)
			d.Event = &ev
			deliveries = append(deliveries, d)
			if !slices.Contains(supported, p.Type) {
				d.Err = fmt.Errorf("%s: ferry does not send to providers of type %q", p.ID(), p.Type)
				continue
			}
			rp, ok := resolved[p.ID()]
			if !ok {
				n := len(o.warnings)
				rp = open(&o, p)
				rp.warnings = o.warnings[n:]
				resolved[p.ID()] = rp
			}
			d.Warnings = rp.warnings
			if rp.err != nil {
				d.Err = rp.err
				continue
			}
			jb := &job{d: d, p: p, creds: rp.creds, client: rp.client, statuses: rp.statuses}
			if isCommitStatusProvider(p.Type) {
				if !hasRevision(&ev) && !isCommitStatusUpdate(&ev) && ev.Severity != SeverityError {
					d.Skipped = "the event has no revision, and " + p.Type + " providers only post those (as Flux)"
					continue
				}
				st, skip, err := commitStatus(p, &ev)
				if err != nil {
					d.Err = fmt.Errorf("%s: %w", p.ID(), err)
					continue
				}
				if skip != "" {
					d.Skipped = skip
					continue
				}
				jb.status = st
			} else {
				req, err := webhook(p, rp.creds, &ev)
				if err != nil {
					d.Err = err
					continue
				}
				jb.req = req
			}
			jobs = append(jobs, jb)
		}
	}

	if o.DryRun != nil {
		dryRun(o.DryRun, jobs)
	} else {
		run(ctx, &o, jobs)
	}
	out := make([]Delivery, len(deliveries))
	for i, d := range deliveries {
		out[i] = *d
	}
	return out
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if o.RetryWait <= 0 {
		o.RetryWait = DefaultRetryWait
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = DefaultMaxRetryWait
	}
	if o.Total <= 0 {
		o.Total = DefaultTotal
	}
	if o.sleep == nil {
		o.sleep = sleep
	}
	return o
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func hasRevision(e *Event) bool {
	return e.Metadata["revision"] != "" || e.Metadata["originRevision"] != ""
}

// open resolves a provider's credentials and makes its client.
func open(o *Options, p *Provider) *provider {
	c, err := resolve(o, p)
	if err != nil {
		return &provider{err: err}
	}
	rp := &provider{creds: c, client: c.client(o)}
	if isCommitStatusProvider(p.Type) {
		if c.proxy != nil {
			return &provider{err: fmt.Errorf("%s: ferry sets %s commit statuses through its forge client, which does not go through a Provider's proxy: not sent", p.ID(), p.Type)}
		}
		if o.OpenStatuses == nil {
			return &provider{err: fmt.Errorf("%s: no forge client to set %s commit statuses with", p.ID(), p.Type)}
		}
		token := c.token
		if token == "" {
			token = c.password
		}
		if token == "" {
			return &provider{err: fmt.Errorf("%s: a %s provider needs the token (or password) key of its secretRef", p.ID(), p.Type)}
		}
		st, err := o.OpenStatuses(p.Type, c.address, token)
		if err != nil {
			return &provider{err: fmt.Errorf("%s: %w", p.ID(), stripURL(err))}
		}
		rp.statuses = st
	}
	return rp
}

// dryRun writes what each job would send, in order.
func dryRun(w io.Writer, jobs []*job) {
	for _, j := range jobs {
		var body bytes.Buffer
		if j.req != nil {
			if err := json.Indent(&body, j.req.body, "", "  "); err != nil {
				body.Write(j.req.body)
			}
		} else {
			b, _ := json.MarshalIndent(j.status, "", "  ")
			body.Write(b)
		}
		fmt.Fprintf(w, "--- %s -> %s (%s)\n%s\n", j.d.Alert, j.p.ID(), j.p.Type, body.Bytes())
		j.d.Skipped = "dry run"
	}
}

// run sends the jobs, Concurrency at a time, within o.Total.
func run(ctx context.Context, o *Options, jobs []*job) {
	ctx, cancel := context.WithTimeout(ctx, o.Total)
	defer cancel()
	sem := make(chan struct{}, Concurrency)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					j.d.Err = fmt.Errorf("sending to %s: internal error: %v", j.p.ID(), r)
				}
			}()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				j.d.Err = late(o, nil)
				return
			}
			if ctx.Err() != nil {
				j.d.Err = late(o, nil)
				return
			}
			if j.status != nil {
				setStatus(ctx, o, j)
			} else {
				post(ctx, o, j)
			}
		})
	}
	wg.Wait()
}

// late is the error of a send cut off by the bound of all sends.
func late(o *Options, last error) error {
	if last == nil {
		return fmt.Errorf("not delivered within %s, the bound of all notifications", o.Total)
	}
	return fmt.Errorf("not delivered within %s, the bound of all notifications: %w", o.Total, last)
}

// timeout is one attempt's bound.
func timeout(p *Provider) time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultTimeout
}

// post sends a webhook, again after 429, 5xx and connection errors.
func post(ctx context.Context, o *Options, j *job) {
	for attempt := 1; ; attempt++ {
		j.d.Attempts = attempt
		retry, wait, err := postOnce(ctx, o, j)
		j.d.Err = err
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			j.d.Err = late(o, err)
			return
		}
		if !retry || attempt > o.Retries {
			return
		}
		d := o.RetryWait << (attempt - 1)
		if d <= 0 || d > o.MaxRetryWait {
			d = o.MaxRetryWait
		}
		if wait > 0 {
			d = min(wait, o.MaxRetryWait)
		}
		if err := o.sleep(ctx, d); err != nil {
			j.d.Err = late(o, j.d.Err)
			return
		}
	}
}

// postOnce makes one attempt: whether to try again, after how long the
// server asked (Retry-After), and the error.
func postOnce(ctx context.Context, o *Options, j *job) (retry bool, wait time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, timeout(j.p))
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, j.req.url, bytes.NewReader(j.req.body))
	if err != nil {
		return false, 0, fmt.Errorf("POST to %s: the address is not a URL", j.p.ID())
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range j.req.headers {
		req.Header.Set(k, v)
	}
	resp, err := j.client.Do(req)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			return true, 0, fmt.Errorf("POST to %s: no answer within %s", j.p.ID(), timeout(j.p))
		}
		return retryableTransport(err), 0, fmt.Errorf("POST to %s: %w", j.p.ID(), stripURL(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("POST to %s: %s%s", j.p.ID(), resp.Status, snippet(body))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			wait, _ := images.RetryAfter(resp.Header.Get("Retry-After"), o.Now())
			return true, wait, err
		}
		return false, 0, err
	}
	if j.req.url == slackAPI {
		var r struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &r); err != nil || !r.OK {
			return false, 0, fmt.Errorf("POST to %s: Slack answered ok: false (%s)", j.p.ID(), r.Error)
		}
	}
	return false, 0, nil
}

// snippet is the start of an error answer's body, on one line.
func snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return ": " + s
}

// retryableTransport says whether a request that got no answer is worth
// sending again: not when the server's certificate is refused.
func retryableTransport(err error) bool {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return !errors.As(err, &unknown) && !errors.As(err, &hostname) && !errors.As(err, &invalid) && !errors.As(err, &verify)
}

// stripURL takes the URL out of an error of net/http (a webhook's
// address is a secret): what is left is the operation and its cause,
// "dial: connect: connection refused".
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) {
		var se *os.SyscallError
		if errors.As(op.Err, &se) {
			return fmt.Errorf("%s: %s: %w", op.Op, se.Syscall, se.Err)
		}
		var dns *net.DNSError
		if errors.As(op.Err, &dns) {
			return fmt.Errorf("%s: lookup: %s", op.Op, dns.Err)
		}
		return fmt.Errorf("%s: %w", op.Op, op.Err)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return fmt.Errorf("lookup: %s", dns.Err)
	}
	return err
}

// setStatus sets a commit status unless the newest one of its context
// already says the same (Unchanged).
func setStatus(ctx context.Context, o *Options, j *job) {
	actx, cancel := context.WithTimeout(ctx, timeout(j.p))
	defer cancel()
	j.d.Attempts = 1
	have, err := j.statuses.CommitStatuses(actx, j.status.SHA)
	if err != nil {
		j.d.Err = deadline(ctx, o, fmt.Errorf("%s: listing the statuses of commit %s: %w", j.p.ID(), j.status.SHA, stripURL(err)))
		return
	}
	if duplicate(have, j.status.Status) {
		j.d.Unchanged = true
		return
	}
	if err := j.statuses.SetCommitStatus(actx, j.status.SHA, j.status.Status); err != nil {
		j.d.Err = deadline(ctx, o, fmt.Errorf("%s: setting status %s on commit %s: %w", j.p.ID(), j.status.Status.Context, j.status.SHA, stripURL(err)))
	}
}

func deadline(ctx context.Context, o *Options, err error) error {
	if ctx.Err() != nil {
		return late(o, err)
	}
	return err
}
