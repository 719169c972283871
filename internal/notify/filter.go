package notify

import (
	"maps"
	"regexp"
	"strings"
)

// eventGroup is the API group of Flux's Event API; metadata keys an event
// carries under it are the lowest in precedence (Flux RFC 0008).
const eventGroup = "event.toolkit.fluxcd.io"

// Matches says whether the Alert lets e through, as notification-controller
// filters: not suspended, one of its event sources selects e's involved
// object (kind, namespace — the Alert's when unset —, name or "*", and
// matchLabels against e.Labels) with a severity the Alert wants (info:
// every event; error: error events only), the message matches the
// inclusion list (an empty list matches all) and no expression of the
// exclusion list. An expression that does not compile matches nothing,
// as in Flux; Validate reports it.
func (a *Alert) Matches(e *Event) bool {
	if a.Suspend {
		return false
	}
	if !a.selects(e) {
		return false
	}
	if len(a.InclusionList) > 0 && !anyMatch(a.InclusionList, e.Message) {
		return false
	}
	return !anyMatch(a.ExclusionList, e.Message)
}

func (a *Alert) selects(e *Event) bool {
	for _, s := range a.EventSources {
		ns := s.Namespace
		if ns == "" {
			ns = a.Namespace
		}
		if e.InvolvedObject.Namespace != ns || e.InvolvedObject.Kind != s.Kind {
			continue
		}
		severity := a.EventSeverity
		if severity == "" {
			severity = SeverityInfo
		}
		if e.Severity != severity && severity != SeverityInfo {
			continue
		}
		if s.Name != "*" && s.Name != e.InvolvedObject.Name {
			continue
		}
		if !labelsMatch(s.MatchLabels, e.Labels) {
			continue
		}
		return true
	}
	return false
}

func labelsMatch(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func anyMatch(exprs []string, msg string) bool {
	for _, e := range exprs {
		if r, err := regexp.Compile(e); err == nil && r.MatchString(msg) {
			return true
		}
	}
	return false
}

// For returns the event as the Alert sends it: its metadata combined as
// notification-controller combines it (Flux RFC 0008), from lowest to
// highest precedence: the event's keys under event.toolkit.fluxcd.io/
// (prefix stripped), the Alert's eventMetadata, the Alert's deprecated
// summary as "summary", then the involved object's own keys — those under
// its API group (prefix stripped) and, since ferry's events carry them
// bare, keys without any prefix. So an Alert never overrides what the
// event says; keys under another group are dropped, as Flux drops them.
// When nothing results, the metadata is left as it was.
func (a *Alert) For(e Event) Event {
	md := map[string]string{}
	for k, v := range e.Metadata {
		if key, ok := strings.CutPrefix(k, eventGroup+"/"); ok {
			md[key] = v
		}
	}
	maps.Copy(md, a.EventMetadata)
	if a.Summary != "" {
		md["summary"] = a.Summary
	}
	group := apiGroup(e.InvolvedObject.APIVersion)
	for k, v := range e.Metadata {
		if key, ok := strings.CutPrefix(k, group+"/"); ok && group != "" {
			md[key] = v
		} else if !strings.Contains(k, "/") {
			md[k] = v
		}
	}
	if len(md) > 0 {
		e.Metadata = md
	} else {
		e.Metadata = maps.Clone(e.Metadata)
	}
	e.Labels = maps.Clone(e.Labels)
	return e
}

// apiGroup is the group of an apiVersion ("" for the core group).
func apiGroup(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// isCommitStatusUpdate says whether the event only updates a commit
// status (metadata commit_status: update, under the involved object's
// group or bare): Flux sends it to git and generic providers only.
func isCommitStatusUpdate(e *Event) bool {
	if g := apiGroup(e.InvolvedObject.APIVersion); g != "" && e.Metadata[g+"/commit_status"] == "update" {
		return true
	}
	return e.Metadata["commit_status"] == "update"
}
