// Package notify sends what ferry did to the places a repository's Flux
// notification objects name: Provider and Alert objects
// (notification.toolkit.fluxcd.io/v1beta3, and v1beta2) found in a
// cluster's renders, or declared in ferry.yaml with the same fields. It
// builds each provider type's payload as Flux's notification-controller
// does, filters events as a Flux Alert does, and delivers them with
// retries, a timeout per send and a bound on the whole. A send that
// fails is a Delivery with an error, never an error of the command: a
// notification is never in the way of a deploy.
package notify

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/ferry-ci/ferry/internal/event"
)

// The events notify sends are package event's.
type (
	Event           = event.Event
	ObjectReference = event.ObjectReference
)

// Severities of an Event, and the reportingController of every event.
const (
	SeverityInfo  = event.SeverityInfo
	SeverityError = event.SeverityError
	Controller    = event.Controller
)

// Provider is a Flux Provider: where and how events are sent.
type Provider struct {
	Name, Namespace string
	// Type is one of slack, msteams, discord, googlechat, generic,
	// generic-hmac, alertmanager, github, gitea.
	Type string
	// Address is the webhook URL, the Alertmanager API URL, or for github
	// and gitea the repository's web URL (https://host/owner/repo).
	Address  string
	Channel  string
	Username string
	// Timeout bounds one send; zero is DefaultTimeout.
	Timeout time.Duration
	// SecretRef names a Secret (in Namespace) with keys address, token,
	// username, password, headers; CertSecretRef one with ca.crt.
	SecretRef     string
	CertSecretRef string
	// Proxy is spec.proxy, the HTTP(S) proxy to send through;
	// ProxySecretRef names a Secret whose address key (with username and
	// password) is the proxy, and wins over Proxy.
	Proxy          string
	ProxySecretRef string
	Suspend        bool
	// Origin says where it was declared (file:line, or ferry.yaml).
	Origin string
}

// ID is Provider/namespace/name.
func (p *Provider) ID() string { return "Provider/" + p.Namespace + "/" + p.Name }

// Alert is a Flux Alert: which events go to which provider.
type Alert struct {
	Name, Namespace string
	// ProviderRef names a Provider in the Alert's namespace.
	ProviderRef string
	// EventSeverity is "info" (every event, the default) or "error".
	EventSeverity string
	EventSources  []EventSource
	// InclusionList and ExclusionList are regular expressions matched
	// against the event's message; exclusion wins.
	InclusionList, ExclusionList []string
	// EventMetadata is added to each event's metadata (not overriding
	// it); Summary is the deprecated summary, sent as metadata "summary".
	EventMetadata map[string]string
	Summary       string
	Suspend       bool
	Origin        string
}

// ID is Alert/namespace/name.
func (a *Alert) ID() string { return "Alert/" + a.Namespace + "/" + a.Name }

// EventSource selects events by their involved object: Kind, and Name
// (or "*"), Namespace (default the Alert's), and MatchLabels (with Name
// "*").
type EventSource struct {
	Kind        string
	Name        string
	Namespace   string
	MatchLabels map[string]string
}

// Config is the Providers and Alerts of one cluster.
type Config struct {
	Providers []Provider
	Alerts    []Alert
}

// CommitStatus is the status the github and gitea providers set on a
// commit: State is pending, success, failure or error; Context names
// it (as notification-controller: kind/name, plus a short hash of the
// provider's identity when several could collide — see the provider).
type CommitStatus struct {
	State, Context, Description, TargetURL string
}

// Statuses reads and sets commit statuses of one repository; ferry's
// forge clients provide it. An identical status (same state, context and
// description) already on the commit is not posted again.
type Statuses interface {
	CommitStatuses(ctx context.Context, sha string) ([]CommitStatus, error)
	SetCommitStatus(ctx context.Context, sha string, s CommitStatus) error
}

// Defaults of Options.
const (
	DefaultTimeout      = 15 * time.Second
	DefaultTotal        = 2 * time.Minute
	DefaultRetries      = 3
	DefaultRetryWait    = time.Second
	DefaultMaxRetryWait = 30 * time.Second
)

// Options tune a Send.
type Options struct {
	// Secret finds a Secret a provider's secretRef names among the
	// cluster's renders (decrypted): its string values by key; false when
	// the renders hold none. Getenv reads FERRY_SECRET_<NAME>_<KEY>, the
	// fallback. A secretRef found in neither is a Delivery error naming
	// both.
	Secret func(namespace, name string) (map[string]string, bool)
	Getenv func(string) string
	// Hide is told every secret value a provider reads (address, token,
	// password, header values), before anything is sent or printed, so
	// the caller masks them.
	Hide func(values ...string)
	// OpenStatuses connects to the repository a github or gitea
	// provider's address names, with its token.
	OpenStatuses func(kind, address, token string) (Statuses, error)
	// HTTPClient sends webhooks; nil is a client per provider honouring
	// its Timeout and certSecretRef.
	HTTPClient *http.Client
	// Retries, RetryWait and MaxRetryWait: a send answered 429 or 5xx, or
	// cut off, is repeated up to Retries times, waiting RetryWait, then
	// twice as long each time, or what Retry-After says, at most
	// MaxRetryWait. Total bounds all sends of a Send together.
	Retries                 int
	RetryWait, MaxRetryWait time.Duration
	Total                   time.Duration
	// DryRun, when set, receives each payload that would be sent (secrets
	// masked through Hide's caller) instead of sending it.
	DryRun io.Writer
	// Now is the clock of event timestamps and retries; nil is time.Now.
	Now func() time.Time

	// sleep waits between attempts (tests record the waits instead).
	sleep func(ctx context.Context, d time.Duration) error
	// secretNames are the Secrets the Providers of a Send name, and
	// warnings what resolving them found to tell (secretFromEnv).
	secretNames []string
	warnings    []string
}

// warn notes a warning of a Send.
func (o *Options) warn(msg string) { o.warnings = append(o.warnings, msg) }

// Delivery is the outcome of one event sent through one Alert's
// provider.
type Delivery struct {
	Alert    string // Alert/namespace/name
	Provider string // Provider/namespace/name
	Event    *Event
	// Attempts is how many times it was sent; Err is nil once delivered
	// (or skipped as already there: Unchanged, for commit statuses).
	Attempts  int
	Unchanged bool
	// Skipped says why nothing was sent though nothing failed: a dry
	// run, an event a commit status provider does not post (as Flux).
	Skipped string
	Err     error
	// Warnings are about the provider's credentials (variables of a
	// former spelling, see images.SecretEnv), the same for every Delivery
	// through it.
	Warnings []string
}
