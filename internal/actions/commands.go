package actions

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	githubactions "github.com/sethvargo/go-githubactions"
)

// issue writes one workflow command to the step's standard output, on a
// line of its own. The command's message and properties are escaped as the
// toolkit does (%, CR and LF; and : and , in properties), so they cannot
// end the line or the command early.
func (r *Runtime) issue(c *githubactions.Command) error {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	return r.issueLocked(c.String())
}

// issueLocked writes command, starting a line first when the output is in
// the middle of one (the runner only reads a command at the start of a
// line). r.outMu must be held.
func (r *Runtime) issueLocked(command string) error {
	if r.midLine {
		command = "\n" + command
	}
	return r.writeLocked([]byte(command + "\n"))
}

// writeLocked writes p to the step's standard output and remembers
// whether it ended a line. r.outMu must be held.
func (r *Runtime) writeLocked(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	_, err := r.out.Write(p)
	r.midLine = p[len(p)-1] != '\n'
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
	return r.issue(&githubactions.Command{Name: "group", Message: r.redact(title)})
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

func (a Annotation) properties(redact func(string) string) githubactions.CommandProperties {
	p := githubactions.CommandProperties{}
	if a.Title != "" {
		p["title"] = redact(a.Title)
	}
	if a.File != "" {
		p["file"] = redact(a.File)
		if a.Line > 0 {
			p["line"] = strconv.Itoa(a.Line)
		}
	}
	return p
}

// Error writes an error annotation (::error file=...,line=...::message).
func (r *Runtime) Error(msg string, a Annotation) error {
	return r.issue(&githubactions.Command{Name: "error", Message: r.redact(msg), Properties: a.properties(r.redact)})
}

// Warning writes a warning annotation.
func (r *Runtime) Warning(msg string, a Annotation) error {
	return r.issue(&githubactions.Command{Name: "warning", Message: r.redact(msg), Properties: a.properties(r.redact)})
}

// The runner reads workflow commands on both of a step's streams: a line
// that starts with "::" after white space (::error::, ::add-mask::,
// ::stop-commands::) and, in the older form, one that holds "##[" anywhere
// (##[set-output name=x;]v). Text that ferry prints but did not write (names,
// paths and messages from the repository, the cluster or the forge) must
// never read as one of them: a forged ::stop-commands:: would make the
// runner ignore the masks ferry registers next.

// Stdout returns the writer for the step's standard output, the stream the
// runtime was made with. Before each write it registers, as masks,
// whatever pending returns (values that became secret since the last
// write: decrypted values, say), so the runner knows them before it sees
// them. A write that could hold a workflow command (or complete one the
// next write finishes) is fenced with ::stop-commands:: and a random
// token, so the runner does not act on it and the text, rendered YAML
// say, is shown as it is.
func (r *Runtime) Stdout(pending func() []string) io.Writer {
	return &stdoutWriter{r: r, pending: pending}
}

type stdoutWriter struct {
	r       *Runtime
	pending func() []string
}

func (g *stdoutWriter) Write(p []byte) (int, error) {
	if g.pending != nil {
		if err := g.r.Mask(g.pending()...); err != nil {
			return 0, err
		}
	}
	g.r.outMu.Lock()
	defer g.r.outMu.Unlock()
	if !mayHoldCommand(p) {
		if err := g.r.writeLocked(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	token, err := stopToken()
	if err != nil {
		return 0, err
	}
	if err := g.r.issueLocked((&githubactions.Command{Name: "stop-commands", Message: token}).String()); err != nil {
		return 0, err
	}
	if err := g.r.writeLocked(p); err != nil {
		return 0, err
	}
	// The resume command starts a line of its own, after the text.
	if err := g.r.issueLocked("::" + token + "::"); err != nil {
		return 0, err
	}
	return len(p), nil
}

// mayHoldCommand reports whether p holds "::" or "##[", or ends in ":" or
// "#" and so could start one that the next write completes.
func mayHoldCommand(p []byte) bool {
	return bytes.Contains(p, []byte("::")) || bytes.Contains(p, []byte("##[")) ||
		bytes.HasSuffix(p, []byte(":")) || bytes.HasSuffix(p, []byte("#"))
}

func stopToken() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "ferry-" + hex.EncodeToString(b), nil
}

// Stderr returns the writer for the step's standard error, w. ferry issues
// no command there, so every line is escaped instead of fenced (a fence
// opened on one stream would also silence the masks ferry issues on the
// other, and the runner reads the two in no set order): a line that
// would start a command gets a backslash before its "::", and "##["
// becomes "##\[" (after the masks registered so far are applied to it, as
// the runner would). Lines end at LF or CR, as the runner reads them.
// Like Stdout, it registers the pending masks before each write. It holds
// back the last line until its end, or until Flush.
func (r *Runtime) Stderr(w io.Writer, pending func() []string) *Escaper {
	return &Escaper{r: r, w: w, pending: pending}
}

// Escaper is the step's standard error (see Runtime.Stderr).
type Escaper struct {
	r       *Runtime
	w       io.Writer
	pending func() []string

	mu   sync.Mutex
	line []byte // the start of a line not ended yet
}

// Write writes the lines p ends, escaped, and holds back the rest.
func (e *Escaper) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.line = append(e.line, p...)
	end := bytes.LastIndexAny(e.line, "\r\n")
	if end < 0 {
		return len(p), nil
	}
	if err := e.emit(e.line[:end+1]); err != nil {
		return 0, err
	}
	e.line = append(e.line[:0], e.line[end+1:]...)
	return len(p), nil
}

// Flush writes the line held back, escaped.
func (e *Escaper) Flush() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.line) == 0 {
		return nil
	}
	err := e.emit(e.line)
	e.line = e.line[:0]
	return err
}

func (e *Escaper) emit(text []byte) error {
	if e.pending != nil {
		if err := e.r.Mask(e.pending()...); err != nil {
			return err
		}
	}
	var out []byte
	for {
		k := bytes.IndexAny(text, "\r\n")
		if k < 0 {
			out = append(out, e.r.escape(string(text))...)
			break
		}
		out = append(append(out, e.r.escape(string(text[:k]))...), text[k])
		text = text[k+1:]
	}
	_, err := e.w.Write(out)
	return err
}

// escape is escapeLine, with the masks registered so far applied first
// when the line changes: the runner would not find a value that the
// escape splits.
func (r *Runtime) escape(line string) string {
	if escapeLine(line) == line {
		return line
	}
	r.mu.Lock()
	masks := make([]string, 0, len(r.masked))
	for m := range r.masked {
		masks = append(masks, m)
	}
	r.mu.Unlock()
	// Longest first, so a mask that holds another is replaced whole.
	sort.Slice(masks, func(i, j int) bool {
		if len(masks[i]) != len(masks[j]) {
			return len(masks[i]) > len(masks[j])
		}
		return masks[i] < masks[j]
	})
	for _, m := range masks {
		line = strings.ReplaceAll(line, m, "***")
	}
	return escapeLine(line)
}

// escapeLine returns one line of text (no CR or LF in it) so that the
// runner cannot read it as a workflow command: a backslash goes before a
// "::" that starts it after white space (the runner trims Unicode white
// space), and every "##[" becomes "##\[". Other lines are returned as
// they are.
func escapeLine(line string) string {
	line = strings.ReplaceAll(line, "##[", `##\[`)
	rest := strings.TrimLeftFunc(line, unicode.IsSpace)
	if strings.HasPrefix(rest, "::") {
		i := len(line) - len(rest)
		line = line[:i] + `\` + rest
	}
	return line
}
