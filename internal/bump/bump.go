// Package bump carries out `ferry bump`: it finds a repository's image
// policies and the markers that use them, scans the registries of the
// policies a run selects, and turns the newer tags into commits for pull
// requests (one per policy, or one for all), pushed to their branches and
// kept open on the forge.
package bump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/images"
)

// Options say which policies one run scans and how.
type Options struct {
	// Root is the repository.
	Root string
	// Policies names the policies to scan (--policy); all when empty.
	Policies []string
	// Pushed lists the image repositories a registry push event names;
	// when set, only their policies are scanned. PushedBy says where the
	// event came from ("the webhook").
	Pushed   []string
	PushedBy string
	// Scan are the scan's options; its Credentials are read through
	// Getenv (see images.CredentialsFromEnv).
	Scan   images.ScanOptions
	Getenv func(string) string
	// NoImages scans no image policy (bump --images=false): Run only
	// checks the repository.
	NoImages bool
}

// Scan is a run's scan: the markers of the repository and the latest tag
// of every policy scanned.
type Scan struct {
	Root    string
	Markers []images.Marker
	// Result is nil when no policy was scanned (Notes say why).
	Result *images.ScanResult
	// Notes are what the run skipped and why, to tell the user.
	Notes []string
	// Passwords are the registry passwords read, to mask in logs.
	Passwords []string
	// Warnings are about credential variables of the former spelling
	// (images.EnvRead), to tell the user.
	Warnings []string
	// Charts is what the chart scan found (ScanCharts); nil when charts
	// were not scanned.
	Charts *ChartScan
}

// Run finds the policies and markers of the repository, checks every
// marker names a declared policy, and scans the policies to scan (see
// selectPolicies).
func Run(ctx context.Context, o Options) (*Scan, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("repository %s: not a directory", o.Root)
	}
	if o.NoImages {
		return &Scan{Root: root}, nil
	}
	policies, err := config.ImagePolicies(root)
	if err != nil {
		return nil, err
	}
	s := &Scan{Root: root}
	if s.Markers, err = images.FindMarkers(root); err != nil {
		return nil, err
	}
	if err := images.UnknownPolicies(s.Markers, policies); err != nil {
		return nil, err
	}
	scan, err := s.selectPolicies(o, policies)
	if err != nil || len(scan) == 0 {
		return s, err
	}
	opts := o.Scan
	env, err := images.CredentialsFromEnv(o.Getenv, scan, images.PolicyNames(policies))
	if err != nil {
		return nil, err
	}
	opts.Credentials, s.Passwords, s.Warnings = env.Credentials, env.Passwords, env.Warnings
	s.Result, err = images.Scan(ctx, scan, opts)
	return s, err
}

// selectPolicies are the policies a run scans: those o.Policies selects
// (all by default), narrowed to the images a push event names, each
// validated, and of those the ones some marker uses. What is left out is
// noted.
func (s *Scan) selectPolicies(o Options, policies []*images.Policy) ([]*images.Policy, error) {
	selected, err := images.SelectPolicies(policies, o.Policies)
	if err != nil {
		return nil, err
	}
	if len(o.Pushed) > 0 {
		selected = images.ForImages(selected, o.Pushed)
		if len(selected) == 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s names %s; no image policy scans it", o.PushedBy, strings.Join(o.Pushed, ", ")))
			return nil, nil
		}
	}
	// Every selected policy is validated, marked or not.
	var errs []error
	for _, p := range selected {
		if _, err := p.Compile(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	used := map[string]bool{}
	for _, m := range s.Markers {
		used[m.Policy] = true
	}
	var scan []*images.Policy
	for _, p := range selected {
		if used[p.Ref()] {
			scan = append(scan, p)
		} else {
			s.Notes = append(s.Notes, p.ID()+": no marker uses it; not scanned")
		}
	}
	if len(scan) == 0 {
		s.Notes = append(s.Notes, "no marked image policy to scan")
	}
	return scan, nil
}

// ImageWarnings are the image scan's warnings (a policy no tag
// matched, a listing cut short); none when no policy was scanned.
func (s *Scan) ImageWarnings() []string {
	if s.Result == nil {
		return nil
	}
	return s.Result.Warnings()
}

// DefaultOptions are the options of a scan of every policy of the
// repository at root.
func DefaultOptions(root string) Options {
	return Options{Root: root, Scan: images.DefaultScanOptions()}
}

// Rewrite is the change the scan makes to the work tree: every marked
// image line set to its policy's latest tag (images.Rewrite), not
// written yet.
func (s *Scan) Rewrite() (*images.ChangeSet, error) {
	return images.Rewrite(s.Root, s.Markers, s.Result.ByRef())
}

// Report writes what changed (verb: "changed", "would change") and what
// did not, one line per policy (images.WriteReport).
func (s *Scan) Report(w io.Writer, cs *images.ChangeSet, verb string) {
	images.WriteReport(w, s.Result, cs, verb)
}

// Markdown is the scan and its change as the step summary shows them.
func (s *Scan) Markdown(cs *images.ChangeSet, dryRun bool) string {
	return images.Markdown(s.Result, cs, dryRun)
}
