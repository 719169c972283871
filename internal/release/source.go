// Package release builds ferry's releases: binaries and their archives for
// every platform, checksums, SBOMs, the multi-arch container images pushed
// to a registry, their signatures and provenance, and the action files of
// the release commit, pinned to the image's digest. cmd/ferry-release
// wires it; `make release-local` and the release workflows run that.
package release

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Source is the commit a release is built from.
type Source struct {
	// Commit is the full hash of HEAD.
	Commit string
	// Time is the commit's time: the build date stamped into the binary
	// and every file's time in archives and image layers, so that two
	// builds of one commit are byte-identical.
	Time time.Time
	// Version is the release's version: the tag at HEAD, or a snapshot.
	Version string
	// Tagged is true when Version is a tag at HEAD.
	Tagged bool
}

// semverTag is a release tag: vMAJOR.MINOR.PATCH with an optional
// pre-release.
var semverTag = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// DirtyError is a release refused because the work tree has changes
// that are not committed: the binaries would not be the commit's.
type DirtyError struct{ Files []string }

func (e *DirtyError) Error() string {
	shown := e.Files
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(e.Files)-5))
	}
	return "the work tree has uncommitted changes (" + strings.Join(shown, ", ") + "): commit or stash them; a release is built from a commit"
}

// ResolveSource reads HEAD of the checkout at root and decides the
// version. want, when set, must be a tag at HEAD: a release is never
// called vX.Y.Z unless it is that tag. Without want, a release tag at
// HEAD is the version, else a snapshot in the form of a Go
// pseudo-version (v0.0.0-YYYYMMDDhhmmss-<12 hex>), which can never be
// mistaken for a release.
func ResolveSource(ctx context.Context, root, want string) (Source, error) {
	if status, err := git(ctx, root, "status", "--porcelain", "--untracked-files=normal"); err != nil {
		return Source{}, err
	} else if status != "" {
		var files []string
		for _, line := range strings.Split(status, "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				files = append(files, f[len(f)-1])
			}
		}
		return Source{}, &DirtyError{Files: files}
	}
	var s Source
	var err error
	if s.Commit, err = git(ctx, root, "rev-parse", "HEAD"); err != nil {
		return Source{}, err
	}
	when, err := git(ctx, root, "show", "-s", "--format=%cI", "HEAD")
	if err != nil {
		return Source{}, err
	}
	if s.Time, err = time.Parse(time.RFC3339, when); err != nil {
		return Source{}, fmt.Errorf("commit time of %s: %w", short(s.Commit), err)
	}
	s.Time = s.Time.UTC()
	out, err := git(ctx, root, "tag", "--points-at", "HEAD")
	if err != nil {
		return Source{}, err
	}
	var tags []string
	for _, t := range strings.Fields(out) {
		if semverTag.MatchString(t) {
			tags = append(tags, t)
		}
	}
	switch {
	case want != "":
		if !semverTag.MatchString(want) {
			return Source{}, fmt.Errorf("version %q is not a release tag (vMAJOR.MINOR.PATCH[-PRERELEASE])", want)
		}
		if !slices.Contains(tags, want) {
			at := "no release tag"
			if len(tags) > 0 {
				at = "the tags " + strings.Join(tags, ", ")
			}
			return Source{}, fmt.Errorf("version %s is not a tag of HEAD (%s has %s): tag the commit first (git tag %s), or leave VERSION unset for a snapshot", want, short(s.Commit), at, want)
		}
		s.Version, s.Tagged = want, true
	case len(tags) == 1:
		s.Version, s.Tagged = tags[0], true
	case len(tags) > 1:
		return Source{}, fmt.Errorf("HEAD (%s) has several release tags (%s): say which with VERSION", short(s.Commit), strings.Join(tags, ", "))
	default:
		s.Version = "v0.0.0-" + s.Time.Format("20060102150405") + "-" + s.Commit[:12]
	}
	return s, nil
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// git runs git in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}
