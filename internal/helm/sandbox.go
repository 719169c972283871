package helm

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ferry-ci/ferry/internal/budget"
)

// Sandbox renders charts in a child process of its own: ferry itself,
// started with SandboxArg (cmd/ferry's main serves it with ServeSandbox).
// A chart's templates are a program from the repository, and Go's
// text/template cannot be interrupted or bounded from outside: a
// template that loops, recurses or amplifies runs until it ends or the
// process dies. In the child, the render budgets hold (time, memory,
// stack: see ServeSandbox); the child exits when one stops a render,
// and the Sandbox kills it when the caller's context ends, so nothing of
// a stopped render goes on. The child's environment is empty, and it
// gets its work (the chart, composed values) on a pipe, never a file.
//
// One child serves the renders of a Sandbox one at a time, started on
// the first and again after one stopped it. Close ends it. A Sandbox is
// safe for concurrent use.
type Sandbox struct {
	command []string

	mu sync.Mutex
	w  *sandboxChild
}

// NewSandbox returns a Sandbox whose child is command (the ferry binary,
// SandboxArg). Nothing starts until the first render.
func NewSandbox(command ...string) *Sandbox {
	return &Sandbox{command: command}
}

// Close ends the child process, if one runs.
func (s *Sandbox) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		s.w.stop()
		s.w = nil
	}
	return nil
}

// killGrace is how long after its own time budget a child may take to
// say it stopped, before it is killed.
const killGrace = 2 * time.Second

// render renders in the child, and when a budget stopped the templates
// without saying which one, renders them again one at a time to name it
// (attribute).
func (s *Sandbox) render(ctx context.Context, r *Release, f *Fetched, values map[string]any, opts RenderOptions, limits budget.Limits) (*Rendered, error) {
	wv, err := encodeValue(values)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: values: %w", f.Name, f.Version, err)
	}
	rel := *r
	rel.Values = nil
	req := &sandboxRequest{Release: rel, Chart: *f, Values: wv, Limits: limits,
		Options: wireOptions{KubeVersion: opts.KubeVersion, APIVersions: opts.APIVersions, ValuesRoot: opts.ValuesRoot}}
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.exchange(ctx, req)
	var over *budget.Exceeded
	if errors.As(err, &over) && over.What == stageTemplates && ctx.Err() == nil {
		req.Attribute = true
		_, aerr := s.exchange(ctx, req)
		var found *budget.Exceeded
		switch {
		case ctx.Err() != nil:
			err = context.Cause(ctx)
		case errors.As(aerr, &found) && found.What != stageTemplates && found.What != stageLoad:
			err = found
		case aerr == nil:
			over.What = "the templates together (each renders within the budget alone)"
		}
	}
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &over):
		return nil, fmt.Errorf("chart %s %s: %w", f.Name, f.Version, over)
	case errors.As(err, new(*childError)):
		return nil, fmt.Errorf("chart %s %s: %w", f.Name, f.Version, err)
	}
	return nil, err
}

// exchange sends req to the child (starting one when none runs) and
// reads its answer: the render, its error, or a budget's. The child is
// killed when ctx ends, when it outlives its time budget, or when its
// answer is larger than renderedBytes allows.
func (s *Sandbox) exchange(ctx context.Context, req *sandboxRequest) (*Rendered, error) {
	if s.w == nil {
		w, err := startChild(s.command)
		if err != nil {
			return nil, fmt.Errorf("starting the chart render process: %w", err)
		}
		s.w = w
	}
	w := s.w
	sent := *req
	if sent.Chart.Digest != "" && w.archives[sent.Chart.Digest] {
		sent.Chart.Archive = nil
	}
	w.replies.remaining = 2*req.Limits.RenderedBytes + 1<<20

	replies := make(chan sandboxReply)
	failed := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		if err := w.enc.Encode(&sent); err != nil {
			failed <- err
			return
		}
		if err := w.in.Flush(); err != nil {
			failed <- err
			return
		}
		for {
			var r sandboxReply
			if err := w.dec.Decode(&r); err != nil {
				failed <- err
				return
			}
			select {
			case replies <- r:
			case <-quit:
				return
			}
			if r.Done {
				return
			}
		}
	}()
	if len(sent.Chart.Archive) > 0 {
		w.archives[sent.Chart.Digest] = true
	}

	stage := stageLoad
	timer := time.NewTimer(req.Limits.RenderTime + killGrace)
	defer timer.Stop()
	for {
		select {
		case r := <-replies:
			if !r.Done {
				stage = r.Stage
				if req.Attribute {
					timer.Reset(req.Limits.RenderTime + killGrace)
				}
				continue
			}
			return s.finish(w, r)
		case err := <-failed:
			return nil, s.crashed(w, stage, req.Limits, err)
		case <-ctx.Done():
			s.discard(w)
			return nil, context.Cause(ctx)
		case <-timer.C:
			s.discard(w)
			return nil, tooSlow(stage, req.Limits)
		}
	}
}

// finish reads the child's last reply to a request.
func (s *Sandbox) finish(w *sandboxChild, r sandboxReply) (*Rendered, error) {
	if r.Exits {
		s.discard(w)
	}
	switch {
	case r.Over != nil:
		return nil, r.Over
	case r.Err != "":
		return nil, errors.New(r.Err)
	case r.Rendered == nil:
		return nil, nil
	}
	return fromWire(r.Rendered)
}

// crashed words why the child stopped answering at stage: an answer
// larger than renderedBytes, the stack or the memory it ran out of, or
// its last words.
func (s *Sandbox) crashed(w *sandboxChild, stage string, limits budget.Limits, err error) error {
	s.discard(w)
	if errors.Is(err, errReplyTooLarge) {
		return &budget.Exceeded{What: stage, Doing: "the release renders more than", Limit: "renderedBytes", Value: budget.Size(limits.RenderedBytes)}
	}
	last := w.stderr.String()
	if over := crashBudget(stage, limits, last); over != nil {
		return over
	}
	return &childError{stage: stage, state: fmt.Sprint(w.cmd.ProcessState), last: firstFatal(last)}
}

// crashBudget is the budget a child's crash at stage says it ran past,
// from its stderr, or nil: the stack, or the data cap (an allocation of
// the heap, or the stack of a new thread, which cgo's pthread_create
// fails with EAGAIN and the runtime's own clone with ENOMEM).
func crashBudget(stage string, limits budget.Limits, stderr string) *budget.Exceeded {
	switch {
	case strings.Contains(stderr, "stack exceeds") || strings.Contains(stderr, "stack overflow"):
		return tooDeep(stage, limits)
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") ||
		strings.Contains(stderr, "pthread_create failed") ||
		strings.Contains(stderr, "failed to create new OS thread") && strings.Contains(stderr, "errno=12"):
		return tooLarge(stage, limits)
	}
	return nil
}

// childError is a child that stopped answering for no budget's reason.
type childError struct{ stage, state, last string }

func (e *childError) Error() string {
	return e.stage + ": the chart render process ended (" + e.state + "): " + e.last
}

// firstFatal is the line of a crashed child that says why.
func firstFatal(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime/cgo:") {
			if len(l) > 200 {
				l = l[:200] + "..."
			}
			return l
		}
	}
	return "no message"
}

// discard kills w and forgets it: the next render starts a new child.
func (s *Sandbox) discard(w *sandboxChild) {
	w.stop()
	if s.w == w {
		s.w = nil
	}
}

// sandboxChild is one child process and its pipes.
type sandboxChild struct {
	cmd      *exec.Cmd
	in       *bufio.Writer
	inFile   *os.File
	outFile  *os.File
	enc      *gob.Encoder
	dec      *gob.Decoder
	replies  *replyReader
	stderr   *tailWriter
	exited   chan struct{}
	archives map[string]bool // digests of the archives it holds
}

// startChild starts command with an empty environment, its stdin and
// stdout pipes of ours (so that a reply written just before the child
// exits is still read), and its stderr's end kept.
func startChild(command []string) (*sandboxChild, error) {
	if len(command) == 0 {
		return nil, errors.New("no command")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	w := &sandboxChild{inFile: inW, outFile: outR, stderr: &tailWriter{max: 16 << 10},
		exited: make(chan struct{}), archives: map[string]bool{}}
	w.cmd = exec.Command(command[0], command[1:]...)
	w.cmd.Env = []string{}
	w.cmd.Stdin, w.cmd.Stdout, w.cmd.Stderr = inR, outW, w.stderr
	w.cmd.SysProcAttr = childAttr()
	err = w.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.exited)
	}()
	w.in = bufio.NewWriter(inW)
	w.enc = gob.NewEncoder(w.in)
	w.replies = &replyReader{r: bufio.NewReader(outR)}
	w.dec = gob.NewDecoder(w.replies)
	return w, nil
}

// stop ends the child: it is killed (a child asked to stop may be in a
// template that never ends), waited for, and its pipes closed.
func (w *sandboxChild) stop() {
	select {
	case <-w.exited:
	default:
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
	w.inFile.Close()
	w.outFile.Close()
}

// errReplyTooLarge is a child's answer past what renderedBytes allows.
var errReplyTooLarge = errors.New("the render's answer is larger than renderedBytes allows")

// replyReader reads a child's replies, at most remaining bytes for the
// request being answered.
type replyReader struct {
	r         io.Reader
	remaining int64
}

func (r *replyReader) Read(p []byte) (int, error) {
	if r.remaining <= 0 {
		return 0, errReplyTooLarge
	}
	if int64(len(p)) > r.remaining {
		p = p[:r.remaining]
	}
	n, err := r.r.Read(p)
	r.remaining -= int64(n)
	return n, err
}

// tailWriter keeps the first and the last max bytes written to it (a
// child's stderr: a crash says why first, then dumps its goroutines).
type tailWriter struct {
	mu         sync.Mutex
	max        int
	head, tail []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	written := len(p)
	if room := t.max - len(t.head); room > 0 {
		n := min(room, len(p))
		t.head = append(t.head, p[:n]...)
		p = p[n:]
	}
	t.tail = append(t.tail, p...)
	if len(t.tail) > t.max {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-t.max:]...)
	}
	return written, nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + "\n" + string(t.tail)
}
