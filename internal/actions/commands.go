package actions

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	githubactions "github.com/sethvargo/go-githubactions"
)

// issue writes one workflow command to the step's standard output.
func (r *Runtime) issue(c *githubactions.Command) error {
	_, err := io.WriteString(r.out, c.String()+"\n")
	return err
}

// Mask registers values with the runner (::add-mask::) so that it replaces
// them with *** in the log from now on. The log is masked line by line, so
// a multi-line value is registered one line at a time; surrounding white
// space is dropped and lines already registered are skipped.
func (r *Runtime) Mask(values ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		for _, line := range strings.Split(v, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if _, ok := r.masked[line]; ok {
				continue
			}
			if err := r.issue(&githubactions.Command{Name: "add-mask", Message: line}); err != nil {
				return err
			}
			r.masked[line] = struct{}{}
		}
	}
	return nil
}

// Group starts a collapsed section of the log, up to EndGroup.
func (r *Runtime) Group(title string) error {
	return r.issue(&githubactions.Command{Name: "group", Message: title})
}

// EndGroup ends the section Group started.
func (r *Runtime) EndGroup() error {
	return r.issue(&githubactions.Command{Name: "endgroup"})
}

// Annotation places a message on a file of the repository: the pull
// request's "Files changed" view and the run's summary show it there.
type Annotation struct {
	Title string
	File  string // relative to the workspace
	Line  int    // 0: the whole file
}

func (a Annotation) properties() githubactions.CommandProperties {
	p := githubactions.CommandProperties{}
	if a.Title != "" {
		p["title"] = a.Title
	}
	if a.File != "" {
		p["file"] = a.File
		if a.Line > 0 {
			p["line"] = strconv.Itoa(a.Line)
		}
	}
	return p
}

// Error writes an error annotation (::error file=...,line=...::message).
func (r *Runtime) Error(msg string, a Annotation) error {
	return r.issue(&githubactions.Command{Name: "error", Message: msg, Properties: a.properties()})
}

// Warning writes a warning annotation.
func (r *Runtime) Warning(msg string, a Annotation) error {
	return r.issue(&githubactions.Command{Name: "warning", Message: msg, Properties: a.properties()})
}

// Guard returns a writer for one of the step's streams. Before each write it
// registers, as masks, whatever pending returns (values that became secret
// since the last write: decrypted values, say), so the runner knows them
// before it sees them. When guarding the step's standard output (the stream
// the runner reads commands from), a write that could hold a workflow
// command (text from a manifest such as "::add-mask::" or "::error::") is
// wrapped in ::stop-commands:: so the runner does not act on it.
func (r *Runtime) Guard(w io.Writer, pending func() []string, stdout bool) io.Writer {
	return &guard{r: r, w: w, pending: pending, stdout: stdout}
}

type guard struct {
	r       *Runtime
	w       io.Writer
	pending func() []string
	stdout  bool
}

func (g *guard) Write(p []byte) (int, error) {
	if g.pending != nil {
		if err := g.r.Mask(g.pending()...); err != nil {
			return 0, err
		}
	}
	if !g.stdout || !mayHoldCommand(p) {
		return g.w.Write(p)
	}
	token, err := stopToken()
	if err != nil {
		return 0, err
	}
	if err := g.r.issue(&githubactions.Command{Name: "stop-commands", Message: token}); err != nil {
		return 0, err
	}
	body := p
	if len(body) > 0 && body[len(body)-1] != '\n' {
		// The resume command must start a line of its own.
		body = append(append([]byte{}, p...), '\n')
	}
	if _, err := g.w.Write(body); err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintf(g.r.out, "::%s::\n", token); err != nil {
		return 0, err
	}
	return len(p), nil
}

// mayHoldCommand reports whether p contains "::", or ends in ":" and so could
// start one that the next write completes.
func mayHoldCommand(p []byte) bool {
	return bytes.Contains(p, []byte("::")) || bytes.HasSuffix(p, []byte(":"))
}

func stopToken() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "ferry-" + hex.EncodeToString(b), nil
}
