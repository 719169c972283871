package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Basic is a username and password, with where they came from (an
// environment variable's name, say) for messages. The password is never
// printed.
type Basic struct {
	Username string
	Password string
	Source   string
}

// Credentials are what ferry logs in to registries with. cmd/ fills them
// from the environment (see RegistryEnv and SecretEnv) and DOCKER_CONFIG;
// this package never reads either.
//
// For a policy, the first that applies is used: its ImageRepository's
// secretRef in Secrets, the registry's entry in Registries, the
// registry's entry in DockerConfig, anonymous access.
type Credentials struct {
	// DockerConfig is the content of a Docker config.json; its "auths"
	// entries are used (credential helpers are not run).
	DockerConfig []byte
	// Registries maps a registry host (ghcr.io, 127.0.0.1:5000) to
	// credentials.
	Registries map[string]Basic
	// Secrets maps an ImageRepository.spec.secretRef name to credentials.
	Secrets map[string]Basic
}

// ScanOptions tune a scan.
type ScanOptions struct {
	Credentials Credentials
	// InsecureRegistries are hosts reached over plain HTTP.
	InsecureRegistries []string
	// Concurrency is how many repositories of one registry are read at a
	// time.
	Concurrency int
	// MaxTags caps the tags read per repository; the rest are not listed
	// and the result says so.
	MaxTags int
	// Timeout bounds the reading of one repository (tags and digest).
	Timeout time.Duration
	// Retries is how many times a request answered 429 or 5xx (or cut
	// off) is repeated, waiting RetryWait, then twice as long each time,
	// or what the registry's Retry-After says, at most MaxRetryWait.
	Retries      int
	RetryWait    time.Duration
	MaxRetryWait time.Duration
	// Transport is the HTTP transport (remote.DefaultTransport when nil).
	Transport http.RoundTripper
}

// DefaultScanOptions returns the defaults ferry bump uses.
func DefaultScanOptions() ScanOptions {
	return ScanOptions{
		Concurrency:  8,
		MaxTags:      10000,
		Timeout:      2 * time.Minute,
		Retries:      4,
		RetryWait:    time.Second,
		MaxRetryWait: 30 * time.Second,
	}
}

// PolicyResult is what a scan found for one policy.
type PolicyResult struct {
	Policy *Policy
	// Tag is the tag the policy selects; empty when none matched.
	Tag string
	// Digest is the manifest digest of Tag.
	Digest string
	// Tags is how many tags the repository listing returned.
	Tags int
	// Truncated says the listing stopped at MaxTags.
	Truncated bool
	// Warning explains an empty Tag (no tag matched) or a truncation.
	Warning string
}

// ScanResult holds a result per scanned policy, in the order given.
type ScanResult struct {
	Policies []*PolicyResult
}

// ByRef maps each policy reference (NAMESPACE:NAME) to its result.
func (r *ScanResult) ByRef() map[string]*PolicyResult {
	out := make(map[string]*PolicyResult, len(r.Policies))
	for _, p := range r.Policies {
		out[p.Policy.Ref()] = p
	}
	return out
}

// Warnings lists the results' warnings, each prefixed with its policy.
func (r *ScanResult) Warnings() []string {
	var out []string
	for _, p := range r.Policies {
		if p.Warning != "" {
			out = append(out, p.Policy.ID()+": "+p.Warning)
		}
	}
	return out
}

// RegistryError is a failure to read a repository: bad credentials, an
// unreachable registry, a repository that does not exist. It names the
// registry, the image and the policies that read it, never a password.
type RegistryError struct {
	Registry string
	Image    string
	Policies []string
	// StatusCode is the HTTP status the registry answered, 0 when it did
	// not answer.
	StatusCode int
	// Credentials says which credentials were used ("anonymous" or their
	// source).
	Credentials string
	Err         error
}

func (e *RegistryError) Error() string {
	who := strings.Join(e.Policies, ", ")
	switch e.StatusCode {
	case http.StatusUnauthorized:
		if e.Credentials == "anonymous" {
			return fmt.Sprintf("%s: registry %s requires credentials to list the tags of %s (401 Unauthorized; no credentials are configured for it)", who, e.Registry, e.Image)
		}
		return fmt.Sprintf("%s: registry %s rejected the credentials from %s for %s (401 Unauthorized)", who, e.Registry, e.Credentials, e.Image)
	case http.StatusForbidden:
		return fmt.Sprintf("%s: registry %s denied access to %s with credentials from %s (403 Forbidden)", who, e.Registry, e.Image, e.Credentials)
	case http.StatusNotFound:
		return fmt.Sprintf("%s: registry %s has no repository %s (404 Not Found)", who, e.Registry, e.Image)
	case 0:
		if errors.Is(e.Err, context.DeadlineExceeded) {
			return fmt.Sprintf("%s: registry %s did not answer in time for %s: %v", who, e.Registry, e.Image, e.Err)
		}
		detail := e.Err.Error()
		var op *net.OpError
		if errors.As(e.Err, &op) {
			detail = op.Error() // without the URL, which may be one of two schemes tried
		}
		return fmt.Sprintf("%s: registry %s is unreachable (reading %s): %s", who, e.Registry, e.Image, detail)
	}
	return fmt.Sprintf("%s: registry %s, listing %s: %v", who, e.Registry, e.Image, e.Err)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// job is one repository to list, and the policies reading it.
type job struct {
	repo     name.Repository
	source   string
	session  *session
	selected []*Selector
	results  []*PolicyResult
}

// maxScopes is how many repositories one session's bearer token covers.
const maxScopes = 50

// session is the authenticated transport shared by the repositories of
// one registry read with the same credentials: one ping and one bearer
// token (with every repository's pull scope) instead of one per
// repository.
type session struct {
	reg    name.Registry
	auth   authn.Authenticator
	scopes []string

	once   sync.Once
	puller *remote.Puller
	err    error
}

// open pings the registry and logs in, once.
func (s *session) open(ctx context.Context, rt http.RoundTripper) (*remote.Puller, error) {
	s.once.Do(func() {
		var tr http.RoundTripper
		tr, s.err = transport.NewWithContext(ctx, s.reg, s.auth, transport.NewUserAgent(rt, "ferry"), s.scopes)
		if s.err != nil {
			return
		}
		// A transport.Wrapper tells go-containerregistry the login is
		// done: it neither pings again nor adds its own retries.
		s.puller, s.err = remote.NewPuller(remote.WithTransport(tr))
	})
	return s.puller, s.err
}

// Scan lists the tags of every policy's repository (each repository once,
// however many policies read it), selects each policy's latest tag and
// records its digest. Repositories of one registry are read
// opts.Concurrency at a time. A policy no tag matches gets a warning, not
// an error. Errors (invalid policies, registries that refuse or do not
// answer) are collected and returned together; then the result is nil.
func Scan(ctx context.Context, policies []*Policy, opts ScanOptions) (*ScanResult, error) {
	opts = opts.withDefaults()
	plan, err := planScan(policies, opts)
	if err != nil {
		return nil, err
	}
	if err := plan.run(ctx, opts); err != nil {
		return nil, err
	}
	return plan.result, nil
}

// withDefaults fills in, from DefaultScanOptions, the options a caller
// left zero, and the transport with remote.DefaultTransport. Retries is
// left as given: zero asks for none.
func (opts ScanOptions) withDefaults() ScanOptions {
	def := DefaultScanOptions()
	if opts.Concurrency <= 0 {
		opts.Concurrency = def.Concurrency
	}
	if opts.MaxTags <= 0 {
		opts.MaxTags = def.MaxTags
	}
	if opts.Timeout <= 0 {
		opts.Timeout = def.Timeout
	}
	if opts.RetryWait <= 0 {
		opts.RetryWait = def.RetryWait
	}
	if opts.MaxRetryWait <= 0 {
		opts.MaxRetryWait = def.MaxRetryWait
	}
	if opts.Transport == nil {
		opts.Transport = remote.DefaultTransport
	}
	return opts
}

// scanPlan is a scan's jobs, in the order of their first policy, and the
// result they fill in, a PolicyResult per policy in the order given.
type scanPlan struct {
	jobs   []*job
	result *ScanResult
}

// planner groups policies into jobs, one per repository and credentials;
// the jobs of one registry and credentials share a session, up to
// maxScopes repositories each.
type planner struct {
	creds    Credentials
	docker   map[string]authn.AuthConfig // parseDockerConfig
	insecure map[string]bool             // ScanOptions.InsecureRegistries
	jobs     map[string]*job             // by scheme, repository, credentials' source
	sessions map[string]*session         // by scheme, registry, credentials' source
	order    []*job
}

// planScan compiles every policy and gives it to the job of its
// repository. The errors of all invalid policies are returned together.
func planScan(policies []*Policy, opts ScanOptions) (*scanPlan, error) {
	docker, err := parseDockerConfig(opts.Credentials.DockerConfig)
	if err != nil {
		return nil, err
	}
	p := &planner{
		creds:    opts.Credentials,
		docker:   docker,
		insecure: map[string]bool{},
		jobs:     map[string]*job{},
		sessions: map[string]*session{},
	}
	for _, h := range opts.InsecureRegistries {
		p.insecure[h] = true
	}
	var errs []error
	result := &ScanResult{}
	for _, pol := range policies {
		r, err := p.add(pol)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		result.Policies = append(result.Policies, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &scanPlan{jobs: p.order, result: result}, nil
}

// add compiles the policy and adds it, with its result, to the job of
// its repository.
func (p *planner) add(pol *Policy) (*PolicyResult, error) {
	sel, err := pol.Compile()
	if err != nil {
		return nil, err
	}
	repo, err := p.repository(pol)
	if err != nil {
		return nil, err
	}
	j := p.jobFor(pol, repo)
	r := &PolicyResult{Policy: pol}
	j.selected = append(j.selected, sel)
	j.results = append(j.results, r)
	return r, nil
}

// repository is the policy's image repository, read over plain HTTP when
// the policy or ScanOptions.InsecureRegistries say so.
func (p *planner) repository(pol *Policy) (name.Repository, error) {
	var nopts []name.Option
	if pol.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(pol.Image, nopts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("%s: image %q: %v", pol.where(), pol.Image, err)
	}
	if !pol.Insecure && p.insecure[repo.RegistryStr()] {
		repo, _ = name.NewRepository(pol.Image, name.Insecure)
	}
	return repo, nil
}

// jobFor is the job reading repo with the policy's credentials, made (and
// given a session) the first time it is asked for.
func (p *planner) jobFor(pol *Policy, repo name.Repository) *job {
	auth, source := credentialsFor(pol, repo.RegistryStr(), p.creds, p.docker)
	key := repo.Scheme() + "://" + repo.Name() + "\x00" + source
	if j, ok := p.jobs[key]; ok {
		return j
	}
	skey := repo.Scheme() + "://" + repo.RegistryStr() + "\x00" + source
	s := p.sessions[skey]
	if s == nil || len(s.scopes) == maxScopes {
		s = &session{reg: repo.Registry, auth: auth}
		p.sessions[skey] = s
	}
	s.scopes = append(s.scopes, repo.Scope(transport.PullScope))
	j := &job{repo: repo, source: source, session: s}
	p.jobs[key] = j
	p.order = append(p.order, j)
	return j
}

// run runs every job at once, those of one registry opts.Concurrency at a
// time, through one retrying transport. The jobs' errors are returned
// together, sorted.
func (plan *scanPlan) run(ctx context.Context, opts ScanOptions) error {
	slots := map[string]chan struct{}{}
	for _, j := range plan.jobs {
		reg := j.repo.RegistryStr()
		if slots[reg] == nil {
			slots[reg] = make(chan struct{}, opts.Concurrency)
		}
	}
	rt := &retryTransport{
		inner:   opts.Transport,
		retries: opts.Retries,
		wait:    opts.RetryWait,
		maxWait: opts.MaxRetryWait,
		sleep:   sleepContext,
	}
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, j := range plan.jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := j.runIn(ctx, slots[j.repo.RegistryStr()], rt, opts); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(errs, func(a, b int) bool { return errs[a].Error() < errs[b].Error() })
	return errors.Join(errs...)
}

// runIn runs the job once it holds one of its registry's slots; a ctx
// done before then fails it.
func (j *job) runIn(ctx context.Context, slot chan struct{}, rt http.RoundTripper, opts ScanOptions) error {
	select {
	case slot <- struct{}{}:
	case <-ctx.Done():
		return j.fail(ctx.Err())
	}
	defer func() { <-slot }()
	return j.run(ctx, rt, opts)
}

// run lists the repository's tags, selects each policy's tag and reads
// the digests.
func (j *job) run(ctx context.Context, rt http.RoundTripper, opts ScanOptions) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	puller, err := j.session.open(ctx, rt)
	if err != nil {
		return j.fail(err)
	}
	tags, truncated, err := j.listTags(ctx, puller, opts.MaxTags)
	if err != nil {
		return j.fail(err)
	}
	digests := map[string]string{}
	for i, sel := range j.selected {
		r := j.results[i]
		r.Tags, r.Truncated = len(tags), truncated
		tag, err := sel.Latest(tags)
		if errors.Is(err, ErrNoMatch) {
			r.Warning = fmt.Sprintf("no tag of %s matches the policy (%d tags listed); nothing to bump", j.repo.Name(), len(tags))
			continue
		}
		if err != nil {
			return err
		}
		if truncated {
			r.Warning = fmt.Sprintf("%s has more than %d tags; only the first %d were considered", j.repo.Name(), opts.MaxTags, opts.MaxTags)
		}
		r.Tag = tag
		if d, ok := digests[tag]; ok {
			r.Digest = d
			continue
		}
		desc, err := puller.Head(ctx, j.repo.Tag(tag))
		if err != nil {
			return j.fail(err)
		}
		r.Digest = desc.Digest.String()
		digests[tag] = r.Digest
	}
	return nil
}

// listTags lists the repository's tags, at most maxTags of them, and says
// whether there were more.
func (j *job) listTags(ctx context.Context, puller *remote.Puller, maxTags int) ([]string, bool, error) {
	lister, err := puller.Lister(ctx, j.repo)
	if err != nil {
		return nil, false, err
	}
	var tags []string
	for lister.HasNext() {
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, false, err
		}
		tags = append(tags, page.Tags...)
		if len(tags) >= maxTags {
			truncated := lister.HasNext() || len(tags) > maxTags
			if len(tags) > maxTags {
				tags = tags[:maxTags]
			}
			return tags, truncated, nil
		}
	}
	return tags, false, nil
}

// fail wraps err as a RegistryError naming the job's policies.
func (j *job) fail(err error) error {
	e := &RegistryError{Registry: j.repo.RegistryStr(), Image: j.repo.Name(), Credentials: j.source, Err: err}
	for _, r := range j.results {
		e.Policies = append(e.Policies, r.Policy.ID())
	}
	var te *transport.Error
	if errors.As(err, &te) {
		e.StatusCode = te.StatusCode
	}
	return e
}

// credentialsFor picks the policy's credentials and says where they came
// from.
func credentialsFor(p *Policy, host string, c Credentials, docker map[string]authn.AuthConfig) (authn.Authenticator, string) {
	if p.SecretRef != "" {
		if b, ok := c.Secrets[p.SecretRef]; ok && b.Username != "" {
			return &authn.Basic{Username: b.Username, Password: b.Password}, sourceName(b, "secretRef "+p.SecretRef)
		}
	}
	if b, ok := c.Registries[host]; ok && b.Username != "" {
		return &authn.Basic{Username: b.Username, Password: b.Password}, sourceName(b, "the credentials for "+host)
	}
	if a, ok := docker[canonicalHost(host)]; ok {
		return authn.FromConfig(a), "the Docker config.json entry for " + host
	}
	return authn.Anonymous, "anonymous"
}

func sourceName(b Basic, fallback string) string {
	if b.Source != "" {
		return b.Source
	}
	return fallback
}

// parseDockerConfig reads the "auths" of a Docker config.json, keyed by
// canonical host.
func parseDockerConfig(data []byte) (map[string]authn.AuthConfig, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil
	}
	var cfg struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		// The message of a base64 or JSON error carries no secret.
		return nil, fmt.Errorf("docker config.json: %v", err)
	}
	out := make(map[string]authn.AuthConfig, len(cfg.Auths))
	for k, v := range cfg.Auths {
		out[canonicalHost(k)] = v
	}
	return out, nil
}

// canonicalHost turns a config.json key (https://index.docker.io/v1/,
// ghcr.io, http://host:5000) into the host go-containerregistry names.
func canonicalHost(key string) string {
	h := key
	if i := strings.Index(h, "://"); i >= 0 {
		h = h[i+3:]
	}
	if i := strings.IndexByte(h, '/'); i >= 0 {
		h = h[:i]
	}
	switch h {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return name.DefaultRegistry
	}
	return h
}
