package actions

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Event is what ferry reads of the event that started the run: its name
// (GITHUB_EVENT_NAME) and, from the payload GITHUB_EVENT_PATH names, the
// parts of the events ferry's workflows run on.
type Event struct {
	Name string
	// Repository is the payload's repository.full_name.
	Repository string
	// Exactly one of these is set for the events ferry's workflows use.
	PullRequest *PullRequest // pull_request, pull_request_target, pull_request_review*
	Push        *Push        // push
	Schedule    string       // schedule: the cron expression (empty on Gitea before 1.22)
	Dispatch    *Dispatch    // repository_dispatch, workflow_dispatch
	// Payload is the payload as the runner wrote it, for what is not above.
	Payload json.RawMessage
}

// PullRequest is the pull request of a pull_request event.
type PullRequest struct {
	Number  int
	BaseRef string // target branch
	BaseSHA string
	HeadRef string // source branch
	HeadSHA string
	// HeadRepo is the full name of the repository the head branch lives
	// in; Fork is true when that is not the base repository (secrets are
	// not given to such runs).
	HeadRepo string
	Fork     bool
	Draft    bool
	// MergeBase is the merge base of head and base, where the payload
	// carries it (Gitea's does).
	MergeBase string
	// Body is the pull request's description as the event carries it
	// (as of the event: an edit is an "edited" event).
	Body string
}

// Push is the push of a push event.
type Push struct {
	Ref    string
	Before string // all zeros when the ref was created
	After  string // all zeros when the ref was deleted
}

// Base returns the commit before the push, or "" when the push created the
// ref (there is nothing to compare with).
func (p *Push) Base() string {
	if p == nil || zeroSHA(p.Before) {
		return ""
	}
	return p.Before
}

// Head returns the commit after the push, or "" when the push deleted the
// ref.
func (p *Push) Head() string {
	if p == nil || zeroSHA(p.After) {
		return ""
	}
	return p.After
}

func zeroSHA(s string) bool { return strings.Trim(s, "0") == "" }

// Dispatch is an event someone sent through the API: a repository_dispatch
// (its type and free-form client_payload) or a workflow_dispatch (its
// inputs as the payload; Gitea, which has no repository_dispatch, is sent
// this one).
type Dispatch struct {
	Type          string
	ClientPayload map[string]any
}

// String returns the string field name of the client payload, or "".
func (d *Dispatch) String(name string) string {
	if d == nil {
		return ""
	}
	s, _ := d.ClientPayload[name].(string)
	return s
}

type payload struct {
	Action      string `json:"action"`
	Number      int    `json:"number"`
	Ref         string `json:"ref"`
	Before      string `json:"before"`
	After       string `json:"after"`
	Schedule    string `json:"schedule"`
	PullRequest *struct {
		Number int  `json:"number"`
		Draft  bool `json:"draft"`
		Base   struct {
			Ref  string `json:"ref"`
			SHA  string `json:"sha"`
			Repo *struct {
				FullName string `json:"full_name"`
			} `json:"repo"`
		} `json:"base"`
		Head struct {
			Ref  string `json:"ref"`
			SHA  string `json:"sha"`
			Repo *struct {
				FullName string `json:"full_name"`
				Fork     bool   `json:"fork"`
			} `json:"repo"`
		} `json:"head"`
		MergeBase string `json:"merge_base"`
		Body      string `json:"body"`
	} `json:"pull_request"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	ClientPayload map[string]any `json:"client_payload"`
	Inputs        map[string]any `json:"inputs"`
}

// Event reads the event that started the run. Without GITHUB_EVENT_PATH
// (a run outside a runner) only the name is known.
func (r *Runtime) Event() (*Event, error) {
	ev := &Event{Name: r.getenv("GITHUB_EVENT_NAME")}
	path := r.getenv("GITHUB_EVENT_PATH")
	if path == "" {
		return ev, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the event payload (GITHUB_EVENT_PATH): %w", err)
	}
	var p payload
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("event payload %s: not JSON: %w", path, err)
	}
	ev.Payload = b
	if p.Repository != nil {
		ev.Repository = p.Repository.FullName
	}
	switch {
	case strings.HasPrefix(ev.Name, "pull_request") && p.PullRequest != nil:
		pr := p.PullRequest
		ev.PullRequest = &PullRequest{
			Number:  pr.Number,
			BaseRef: pr.Base.Ref, BaseSHA: pr.Base.SHA,
			HeadRef: pr.Head.Ref, HeadSHA: pr.Head.SHA,
			Draft: pr.Draft, MergeBase: pr.MergeBase, Body: pr.Body,
		}
		if ev.PullRequest.Number == 0 {
			ev.PullRequest.Number = p.Number
		}
		if pr.Head.Repo != nil {
			ev.PullRequest.HeadRepo = pr.Head.Repo.FullName
			base := ev.Repository
			if pr.Base.Repo != nil && pr.Base.Repo.FullName != "" {
				base = pr.Base.Repo.FullName
			}
			ev.PullRequest.Fork = pr.Head.Repo.Fork || (base != "" && pr.Head.Repo.FullName != "" && pr.Head.Repo.FullName != base)
		}
	case ev.Name == "push":
		ev.Push = &Push{Ref: p.Ref, Before: p.Before, After: p.After}
	case ev.Name == "schedule":
		ev.Schedule = p.Schedule
	case ev.Name == "repository_dispatch":
		ev.Dispatch = &Dispatch{Type: p.Action, ClientPayload: p.ClientPayload}
	case ev.Name == "workflow_dispatch":
		ev.Dispatch = &Dispatch{Type: ev.Name, ClientPayload: p.Inputs}
	}
	return ev, nil
}

// Revisions returns what the event compares: a pull request's base and
// head commits and its number, or a push's commits before and after it
// ("" for a side the push created or deleted).
func (e *Event) Revisions() (base, head string, pr int) {
	switch {
	case e.PullRequest != nil:
		return e.PullRequest.BaseSHA, e.PullRequest.HeadSHA, e.PullRequest.Number
	case e.Push != nil:
		return e.Push.Base(), e.Push.Head(), 0
	}
	return "", "", 0
}

// FillRevisions sets base, head and pr (when pr is not nil) from the
// event's Revisions where they are unset: a nil event sets nothing.
func (e *Event) FillRevisions(base, head *string, pr *int) {
	if e == nil {
		return
	}
	b, h, n := e.Revisions()
	if *base == "" {
		*base = b
	}
	if *head == "" {
		*head = h
	}
	if pr != nil && *pr == 0 {
		*pr = n
	}
}

// NoBase says why a run on this event has no base revision to compare
// with, so every target is planned.
func (e *Event) NoBase() string {
	if e.Push != nil && e.Push.Base() == "" {
		return "no base revision: the push created " + e.Push.Ref
	}
	return "no base revision (" + e.Name + " event): every target"
}
