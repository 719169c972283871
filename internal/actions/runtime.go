package actions

import (
	"io"
	"net/url"
	"strings"
	"sync"

	githubactions "github.com/sethvargo/go-githubactions"
)

// Enabled reports whether the process runs as an Actions step: both GitHub's
// and Gitea's runners set GITHUB_ACTIONS=true.
func Enabled(getenv func(string) string) bool {
	return getenv("GITHUB_ACTIONS") == "true"
}

// Runtime talks to the runner of the current step. Workflow commands
// (masks, groups, annotations) go to the writer it was made with, which must
// be the step's standard output; outputs and the summary go to the files the
// runner names in the environment.
type Runtime struct {
	getenv func(string) string
	out    io.Writer
	gha    *githubactions.Action

	mu     sync.Mutex
	masked map[string]struct{}
	// summaryBytes counts what this process appended to the step summary.
	summaryBytes int

	// outMu serialises writes to out, so that a fenced write (see Stdout)
	// and its stop and resume commands are not split by another command.
	// It is taken after mu, never before.
	outMu sync.Mutex
	// midLine is whether the last byte written to out did not end a line:
	// a command written then must start a line of its own first.
	midLine bool

	// redact masks the text of what the runtime writes (see WithMask).
	redact func(string) string
}

// Option configures a Runtime.
type Option func(*Runtime)

// WithMask has the runtime pass every text it writes through mask first:
// step outputs, the step summary, annotations and group titles (not the
// values it registers with Mask, which the runner must see as they are).
// A caller that must not show secrets sets it once, and every write is
// masked.
func WithMask(mask func(string) string) Option {
	return func(r *Runtime) { r.redact = mask }
}

// New returns the runtime of a step whose environment getenv reads and
// whose standard output is commands.
func New(getenv func(string) string, commands io.Writer, opts ...Option) *Runtime {
	r := &Runtime{out: commands, masked: map[string]struct{}{}, redact: func(s string) string { return s }}
	r.getenv = func(k string) string { return lookup(getenv, k) }
	r.gha = githubactions.New(githubactions.WithGetenv(r.getenv), githubactions.WithWriter(commands))
	for _, o := range opts {
		o(r)
	}
	return r
}

// lookup reads a runner variable. Gitea's runner names its file-command
// variables GITEA_* as well as GITHUB_*; either is accepted.
func lookup(getenv func(string) string, k string) string {
	v := getenv(k)
	if v == "" && strings.HasPrefix(k, "GITHUB_") {
		v = getenv("GITEA_" + strings.TrimPrefix(k, "GITHUB_"))
	}
	return v
}

// Getenv returns a runner variable, GITHUB_X falling back to GITEA_X.
func (r *Runtime) Getenv(k string) string { return r.getenv(k) }

// The forges a run can belong to, named as forge.Kind names them.
const (
	GitHub = "github"
	Gitea  = "gitea"
)

// ForgeKind returns the forge the run belongs to: Gitea when its runner says
// so (GITEA_ACTIONS=true, or Forgejo's FORGEJO_ACTIONS=true, whose API is
// Gitea's), GitHub otherwise.
func (r *Runtime) ForgeKind() string {
	if r.getenv("GITEA_ACTIONS") == "true" || r.getenv("FORGEJO_ACTIONS") == "true" {
		return Gitea
	}
	return GitHub
}

// Repository returns the owner and name of the repository the run belongs
// to (GITHUB_REPOSITORY).
func (r *Runtime) Repository() (owner, name string) {
	owner, name, _ = strings.Cut(r.getenv("GITHUB_REPOSITORY"), "/")
	return owner, name
}

// ServerURL is the web address of the forge (GITHUB_SERVER_URL).
func (r *Runtime) ServerURL() string {
	if v := r.getenv("GITHUB_SERVER_URL"); v != "" {
		return strings.TrimSuffix(v, "/")
	}
	if r.ForgeKind() == GitHub {
		return "https://github.com"
	}
	return ""
}

// Forge is the forge and repository of the run, in the terms the forge
// client's configuration uses.
type Forge struct {
	Kind string // GitHub or Gitea
	// APIURL is GitHub's REST base (GITHUB_API_URL, with a trailing slash)
	// or, for Gitea, the server URL: its SDK appends /api/v1 itself.
	APIURL      string
	ServerURL   string
	Owner, Repo string
}

// Forge returns the forge and repository of the run.
func (r *Runtime) Forge() Forge {
	f := Forge{Kind: r.ForgeKind(), ServerURL: r.ServerURL()}
	f.Owner, f.Repo = r.Repository()
	api := strings.TrimSuffix(r.getenv("GITHUB_API_URL"), "/")
	switch f.Kind {
	case Gitea:
		f.APIURL = f.ServerURL
		if f.APIURL == "" && api != "" {
			f.APIURL = strings.TrimSuffix(api, "/api/v1")
		}
	default:
		if api == "" {
			api = "https://api.github.com"
		}
		f.APIURL = api + "/"
	}
	return f
}

// RunURL is the web page of the current run, or "" when the runner did not
// say enough to build it.
func (r *Runtime) RunURL() string {
	server, repo, id := r.ServerURL(), r.getenv("GITHUB_REPOSITORY"), r.getenv("GITHUB_RUN_ID")
	if server == "" || repo == "" || id == "" {
		return ""
	}
	return server + "/" + repo + "/actions/runs/" + url.PathEscape(id)
}
