package notify

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Group is the API group of Flux's notification objects.
const Group = "notification.toolkit.fluxcd.io"

// Types ferry sends to, as Flux names them.
const (
	TypeSlack        = "slack"
	TypeMSTeams      = "msteams"
	TypeDiscord      = "discord"
	TypeGoogleChat   = "googlechat"
	TypeGeneric      = "generic"
	TypeGenericHMAC  = "generic-hmac"
	TypeAlertmanager = "alertmanager"
	TypeGitHub       = "github"
	TypeGitea        = "gitea"
)

// supported are the provider types ferry sends to.
var supported = []string{TypeSlack, TypeMSTeams, TypeDiscord, TypeGoogleChat, TypeGeneric,
	TypeGenericHMAC, TypeAlertmanager, TypeGitHub, TypeGitea}

// fluxOnly are the provider types Flux's Provider accepts that ferry does
// not send to: a Provider of one of them is valid (Flux would take it) and
// each send through it is a Delivery saying so.
var fluxOnly = []string{"rocket", "githubdispatch", "githubpullrequestcomment", "gitlab",
	"gitlabmergerequestcomment", "giteapullrequestcomment", "bitbucketserver", "bitbucket",
	"azuredevops", "googlepubsub", "webex", "sentry", "azureeventhub", "telegram", "lark",
	"matrix", "opsgenie", "grafana", "pagerduty", "datadog", "nats", "zulip", "otel", "zoom",
	"incident.io"}

// timeoutPattern is the pattern Flux's CRD sets on spec.timeout.
var timeoutPattern = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ms|s|m))+$`)

// IsObject says whether u is one of Flux's notification objects
// (Provider, Alert, Receiver) that ferry reads or knowingly ignores.
func IsObject(u *unstructured.Unstructured) bool {
	gv := u.GetAPIVersion()
	if !strings.HasPrefix(gv, Group+"/") {
		return false
	}
	switch u.GetKind() {
	case "Provider", "Alert", "Receiver":
		return true
	}
	return false
}

// FromObjects reads the Provider and Alert objects among objs (v1beta3 or
// v1beta2, whose fields are the same) with Flux's defaults. Receiver
// objects and everything that is not a notification object are ignored.
// Every bad object is reported, each error naming it.
func FromObjects(objs []*unstructured.Unstructured) (Config, error) {
	var cfg Config
	var errs []error
	for _, u := range objs {
		if u == nil || !strings.HasPrefix(u.GetAPIVersion(), Group+"/") {
			continue
		}
		switch u.GetKind() {
		case "Provider":
			p, err := providerFrom(u)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			cfg.Providers = append(cfg.Providers, p)
		case "Alert":
			a, err := alertFrom(u)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			cfg.Alerts = append(cfg.Alerts, a)
		}
	}
	cfg.sort()
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// sort orders providers and alerts by namespace and name, so what is sent
// does not depend on the order the renders listed them in.
func (c *Config) sort() {
	slices.SortStableFunc(c.Providers, func(a, b Provider) int { return strings.Compare(a.ID(), b.ID()) })
	slices.SortStableFunc(c.Alerts, func(a, b Alert) int { return strings.Compare(a.ID(), b.ID()) })
}

// Validate checks what Flux's CRDs and notification-controller would
// refuse: a provider type Flux does not know, a negative timeout, an
// Alert without providerRef or event sources, a bad severity, a regular
// expression that does not compile, matchLabels on a named source. Each
// error names its object.
func (c *Config) Validate() error {
	var errs []error
	for i := range c.Providers {
		p := &c.Providers[i]
		if !slices.Contains(supported, p.Type) && !slices.Contains(fluxOnly, p.Type) {
			errs = append(errs, fmt.Errorf("%s: unknown provider type %q (ferry sends to %s)", p.ID(), p.Type, strings.Join(supported, ", ")))
		}
		if p.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s: negative timeout %s", p.ID(), p.Timeout))
		}
	}
	for i := range c.Alerts {
		a := &c.Alerts[i]
		if a.ProviderRef == "" {
			errs = append(errs, fmt.Errorf("%s: spec.providerRef.name is required", a.ID()))
		}
		switch a.EventSeverity {
		case "", SeverityInfo, SeverityError:
		default:
			errs = append(errs, fmt.Errorf("%s: eventSeverity %q is neither info nor error", a.ID(), a.EventSeverity))
		}
		if len(a.EventSources) == 0 {
			errs = append(errs, fmt.Errorf("%s: spec.eventSources is required", a.ID()))
		}
		for j, s := range a.EventSources {
			if s.Kind == "" || s.Name == "" {
				errs = append(errs, fmt.Errorf("%s: eventSources[%d] needs kind and name", a.ID(), j))
			}
			if len(s.MatchLabels) > 0 && s.Name != "*" {
				errs = append(errs, fmt.Errorf("%s: eventSources[%d] has matchLabels, which requires name \"*\" (it is %q)", a.ID(), j, s.Name))
			}
		}
		for _, list := range []struct {
			name  string
			exprs []string
		}{{"inclusionList", a.InclusionList}, {"exclusionList", a.ExclusionList}} {
			for j, e := range list.exprs {
				if _, err := regexp.Compile(e); err != nil {
					errs = append(errs, fmt.Errorf("%s: %s[%d]: %w", a.ID(), list.name, j, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// namespaceOf is an object's namespace, "default" when the render left it
// unset, as the API server would.
func namespaceOf(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns
	}
	return "default"
}

func objectID(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + namespaceOf(u) + "/" + u.GetName()
}

// fields reads the fields of a notification object, keeping the error
// of each field that holds another type.
type fields struct {
	u    *unstructured.Unstructured
	errs []error
}

func (f *fields) str(field ...string) string {
	v, _, err := unstructured.NestedString(f.u.Object, field...)
	if err != nil {
		f.errs = append(f.errs, err)
	}
	return v
}

func (f *fields) strs(field ...string) []string {
	v, _, err := unstructured.NestedStringSlice(f.u.Object, field...)
	if err != nil {
		f.errs = append(f.errs, err)
	}
	return v
}

func providerFrom(u *unstructured.Unstructured) (Provider, error) {
	p := Provider{Name: u.GetName(), Namespace: namespaceOf(u)}
	f := &fields{u: u}
	str := f.str
	p.Type = str("spec", "type")
	p.Address = strings.TrimSpace(str("spec", "address"))
	p.Channel = str("spec", "channel")
	p.Username = str("spec", "username")
	p.SecretRef = str("spec", "secretRef", "name")
	p.CertSecretRef = str("spec", "certSecretRef", "name")
	p.Proxy = strings.TrimSpace(str("spec", "proxy"))
	p.ProxySecretRef = str("spec", "proxySecretRef", "name")
	if t := str("spec", "timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || !timeoutPattern.MatchString(t) {
			f.errs = append(f.errs, fmt.Errorf("spec.timeout %q is not a duration such as 30s or 1m", t))
		}
		p.Timeout = d
	}
	suspend, _, err := unstructured.NestedBool(u.Object, "spec", "suspend")
	if err != nil {
		f.errs = append(f.errs, err)
	}
	p.Suspend = suspend
	if p.Type == "" {
		f.errs = append(f.errs, errors.New("spec.type is required"))
	}
	if err := errors.Join(f.errs...); err != nil {
		return p, fmt.Errorf("%s: %w", objectID(u), err)
	}
	return p, nil
}

func alertFrom(u *unstructured.Unstructured) (Alert, error) {
	a := Alert{Name: u.GetName(), Namespace: namespaceOf(u)}
	f := &fields{u: u}
	str, strs := f.str, f.strs
	a.ProviderRef = str("spec", "providerRef", "name")
	a.EventSeverity = str("spec", "eventSeverity")
	if a.EventSeverity == "" {
		a.EventSeverity = SeverityInfo
	}
	a.InclusionList = strs("spec", "inclusionList")
	a.ExclusionList = strs("spec", "exclusionList")
	a.Summary = str("spec", "summary")
	md, _, err := unstructured.NestedStringMap(u.Object, "spec", "eventMetadata")
	if err != nil {
		f.errs = append(f.errs, err)
	}
	a.EventMetadata = md
	suspend, _, err := unstructured.NestedBool(u.Object, "spec", "suspend")
	if err != nil {
		f.errs = append(f.errs, err)
	}
	a.Suspend = suspend
	sources, _, err := unstructured.NestedSlice(u.Object, "spec", "eventSources")
	if err != nil {
		f.errs = append(f.errs, err)
	}
	for i, s := range sources {
		m, ok := s.(map[string]any)
		if !ok {
			f.errs = append(f.errs, fmt.Errorf("spec.eventSources[%d] is not an object", i))
			continue
		}
		src := EventSource{}
		src.Kind, _, _ = unstructured.NestedString(m, "kind")
		src.Name, _, _ = unstructured.NestedString(m, "name")
		src.Namespace, _, _ = unstructured.NestedString(m, "namespace")
		labels, _, err := unstructured.NestedStringMap(m, "matchLabels")
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("spec.eventSources[%d].matchLabels: %w", i, err))
		}
		src.MatchLabels = labels
		if src.Namespace == "" {
			src.Namespace = a.Namespace
		}
		a.EventSources = append(a.EventSources, src)
	}
	if err := errors.Join(f.errs...); err != nil {
		return a, fmt.Errorf("%s: %w", objectID(u), err)
	}
	return a, nil
}
