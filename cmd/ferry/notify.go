package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/forge"
	"github.com/ferry-ci/ferry/internal/markdown"
	"github.com/ferry-ci/ferry/internal/notify"
)

// notifyFlags turn the notifications of a command off, or into a print
// of their payloads; apply, drift, bump and diff share them.
type notifyFlags struct {
	off    bool
	dryRun bool
	// total bounds all sends of a run (notify.Options.Total).
	total time.Duration
}

func (n *notifyFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&n.off, "no-notify", false, "send no notifications to the Providers of the repository's Flux Alerts")
	f.BoolVar(&n.dryRun, "notify-dry-run", false, "print the notifications' payloads (secrets masked) instead of sending them")
	f.DurationVar(&n.total, "notify-timeout", notify.DefaultTotal, "how long all notifications of the run may take together")
}

// notifyOutcome is what a run's notifications came to: which clusters
// have Alerts, and which involved objects had a delivery fail.
type notifyOutcome struct {
	alerts map[string]bool // by cluster
	failed map[string]bool // by notifyKey
}

// notifyKey names an event's involved object in a cluster.
func notifyKey(cluster string, ref notify.ObjectReference) string {
	return cluster + "\x00" + ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// notify sends each cluster's events through the Alerts and Providers
// of that cluster (Repo.Notifications). A notification that cannot be
// delivered is a warning (stderr, an Actions annotation, the step
// summary), never an error: it changes neither what was applied nor the
// exit status.
func (e *env) notify(ctx context.Context, n notifyFlags, repo *config.Repo, events map[string][]notify.Event) notifyOutcome {
	res := notifyOutcome{alerts: map[string]bool{}, failed: map[string]bool{}}
	if n.off || repo == nil {
		return res
	}
	var failures []string
	sent := 0
	for _, cluster := range slices.Sorted(maps.Keys(events)) {
		evs := events[cluster]
		if len(evs) == 0 {
			continue
		}
		cfg, err := repo.Notifications(ctx, cluster)
		if err != nil {
			failures = append(failures, e.notifyWarning(fmt.Sprintf("notifications of cluster %q: %v", cluster, err)))
			for _, ev := range evs {
				res.failed[notifyKey(cluster, ev.InvolvedObject)] = true
			}
			continue
		}
		if len(cfg.Alerts) == 0 {
			continue
		}
		res.alerts[cluster] = true
		for i := range evs {
			evs[i].Message = e.masker.Mask(evs[i].Message)
		}
		var dry bytes.Buffer
		opts := notify.Options{
			Secret: func(namespace, name string) (map[string]string, bool) {
				return repo.ClusterSecret(ctx, cluster, namespace, name)
			},
			Getenv:       e.getenv,
			Hide:         e.hide,
			OpenStatuses: e.openStatuses,
			Total:        n.total,
		}
		if n.dryRun {
			opts.DryRun = &dry
		}
		warned := map[string]bool{}
		for _, d := range notify.Send(ctx, cfg, evs, opts) {
			for _, w := range d.Warnings {
				if !warned[w] {
					warned[w] = true
					fmt.Fprintln(e.stderr, "ferry: warning: "+e.masker.Mask(w))
				}
			}
			if d.Err != nil {
				if d.Event != nil {
					res.failed[notifyKey(cluster, d.Event.InvolvedObject)] = true
				}
				failures = append(failures, e.notifyWarning(fmt.Sprintf("notification %s -> %s: %v", d.Alert, d.Provider, d.Err)))
			} else if !d.Unchanged && d.Skipped == "" {
				sent++
			}
		}
		if dry.Len() > 0 {
			_, _ = io.WriteString(e.stdout, e.masker.Mask(dry.String()))
		}
	}
	if e.gha != nil && len(failures) > 0 {
		var b strings.Builder
		b.WriteString("### Notifications\n\n")
		fmt.Fprintf(&b, "%d delivered, %d not delivered (the deploy is not affected):\n\n", sent, len(failures))
		for _, f := range failures {
			fmt.Fprintf(&b, "- %s\n", markdown.Text(f))
		}
		// Straight to the summary: a failure to write it must not fail the
		// run either.
		_ = e.gha.AddSummary(e.masker.Mask(b.String()))
	}
	return res
}

// notifyWarning prints msg, masked, as a warning on stderr and as an
// Actions warning annotation, and returns the masked text.
func (e *env) notifyWarning(msg string) string {
	msg = e.masker.Mask(msg)
	fmt.Fprintln(e.stderr, "ferry: warning: "+msg)
	if e.gha != nil {
		_ = e.gha.Warning(msg, actions.Annotation{Title: "Notification not delivered"})
	}
	return msg
}

// openStatuses connects to the repository a github or gitea Provider's
// address names (https://host/owner/repo) with its token; what it sends
// is masked.
func (e *env) openStatuses(kind, address, token string) (notify.Statuses, error) {
	cfg, err := statusForge(kind, address, token)
	if err != nil {
		return nil, err
	}
	f, err := forge.New(cfg)
	if err != nil {
		return nil, err
	}
	return forgeStatuses{maskedForge{f: f, mask: e.masker.Mask}}, nil
}

// forgeStatuses are the commit statuses of a forge, as notify reads and
// sets them.
type forgeStatuses struct{ f forge.Forge }

var _ notify.Statuses = forgeStatuses{}

func (s forgeStatuses) CommitStatuses(ctx context.Context, sha string) ([]notify.CommitStatus, error) {
	list, err := s.f.CommitStatuses(ctx, sha)
	if err != nil {
		return nil, err
	}
	out := make([]notify.CommitStatus, len(list))
	for i, c := range list {
		out[i] = notify.CommitStatus{State: c.State, Context: c.Context, Description: c.Description, TargetURL: c.TargetURL}
	}
	return out, nil
}

func (s forgeStatuses) SetCommitStatus(ctx context.Context, sha string, c notify.CommitStatus) error {
	return s.f.SetCommitStatus(ctx, sha, forge.CommitStatus{State: c.State, Context: c.Context, Description: c.Description, TargetURL: c.TargetURL})
}

// statusForge is the forge configuration of a commit-status Provider:
// its address is the repository's web URL, https://host[/prefix]/owner/repo;
// GitHub's API is api.github.com for github.com and /api/v3/ of any other
// host, Gitea's is the server's root.
func statusForge(kind, address, token string) (forge.Config, error) {
	u, err := url.Parse(strings.TrimSpace(address))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		// The address may be a secret: never quote it.
		return forge.Config{}, fmt.Errorf("the %s address is not a repository URL (https://host/owner/repo)", kind)
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(strings.TrimRight(u.Path, "/"), ".git"), "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] == "" || parts[len(parts)-1] == "" {
		return forge.Config{}, fmt.Errorf("the %s address names no repository (want https://host/owner/repo)", kind)
	}
	cfg := forge.Config{Token: token, Owner: parts[len(parts)-2], Repo: parts[len(parts)-1]}
	root := u.Scheme + "://" + u.Host + "/"
	if prefix := strings.Join(parts[:len(parts)-2], "/"); prefix != "" {
		root += prefix + "/"
	}
	switch kind {
	case "github":
		cfg.Kind = forge.KindGitHub
		if strings.EqualFold(u.Host, "github.com") {
			cfg.APIURL = forge.DefaultGitHubAPIURL
		} else {
			cfg.APIURL = root + "api/v3/"
		}
	case "gitea":
		cfg.Kind, cfg.APIURL = forge.KindGitea, root
	default:
		return forge.Config{}, fmt.Errorf("provider type %q sets no commit statuses", kind)
	}
	return cfg, nil
}

// kustomizationRef is the involved object of a target's events: its Flux
// Kustomization, as an Alert's eventSources written for Flux select it,
// and that object's labels for their matchLabels.
func kustomizationRef(t *config.Target) (notify.ObjectReference, map[string]string) {
	ref := notify.ObjectReference{Kind: "Kustomization", APIVersion: config.KustomizeGroup + "/v1", Namespace: t.Namespace, Name: t.Name}
	var labels map[string]string
	if ks := t.Kustomization; ks != nil {
		ref.Namespace, ref.Name = ks.GetNamespace(), ks.GetName()
		labels = ks.GetLabels()
	}
	if ref.Namespace == "" {
		ref.Namespace = config.DefaultNamespace
	}
	return ref, labels
}

// targetEvent is an event about target t.
func targetEvent(t *config.Target, severity, reason, revision, message string) notify.Event {
	ref, labels := kustomizationRef(t)
	ev := notify.Event{
		InvolvedObject:      ref,
		Severity:            severity,
		Timestamp:           time.Now().UTC(),
		Reason:              reason,
		Message:             message,
		ReportingController: notify.Controller,
		Labels:              labels,
	}
	if revision != "" {
		ev.Metadata = map[string]string{"revision": revision}
	}
	return ev
}
