package helm

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-ci/ferry/internal/budget"
)

// SandboxArg is the one argument that makes ferry a Sandbox's child
// process: cmd/ferry's main hands such a process to ServeSandbox before
// anything else.
const SandboxArg = "__ferry-helm-sandbox"

// Exit statuses of a Sandbox's child process.
const (
	// SandboxDone: its input ended.
	SandboxDone = 0
	// SandboxBroken: its input was not a request.
	SandboxBroken = 1
	// SandboxStopped: a budget stopped a render, which may still be
	// running; the process must exit for it to stop.
	SandboxStopped = 3
)

// dataSlack is what the child maps beside the heap a render may take:
// the runtime's own data and the loaded packages' (about 90 MiB idle).
const dataSlack = 128 << 20

// memoryPoll is how often the child compares its memory with
// limits.RenderMemory: at a few GB/s of allocation, a few tens of MiB
// past it at most.
const memoryPoll = 5 * time.Millisecond

// ServeSandbox is the child process of a Sandbox: it reads render
// requests from in and writes each one's stages and result to out until
// in ends. It enforces the render budgets that only a process of its own
// can: the time (the render goroutine cannot be stopped, the process
// can), the memory (sampled every few milliseconds) and the stack
// (runtime/debug.SetMaxStack: a deeper recursion crashes the process,
// which the parent reports), and the kernel caps what it maps for data
// at renderMemory and some slack (capData), for an allocation too large
// and too fast for the sampling. It returns the process's exit status.
func ServeSandbox(in io.Reader, out io.Writer) int {
	// Go's defaults, not ferry's: no soft memory limit (near one, the
	// collector runs all the time and a render that goes over crawls
	// instead of failing; watchMemory collects before it decides).
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	dec := gob.NewDecoder(bufio.NewReader(in))
	w := &sandboxWriter{buf: bufio.NewWriter(out)}
	w.enc = gob.NewEncoder(w.buf)
	s := &sandboxServer{charts: NewLoadedCharts(), archives: map[string][]byte{}, out: w}
	go s.watchMemory()
	for {
		var req sandboxRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return SandboxDone
			}
			return SandboxBroken
		}
		if !s.serve(&req) {
			return SandboxStopped
		}
	}
}

// sandboxWriter writes replies; the render goroutine (its stages) and the
// serving one (the result) share it.
type sandboxWriter struct {
	mu  sync.Mutex
	buf *bufio.Writer
	enc *gob.Encoder
}

func (w *sandboxWriter) send(r sandboxReply) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.enc.Encode(r) == nil {
		_ = w.buf.Flush()
	}
}

// sandboxServer is the state a child keeps across requests: the charts
// it loaded and the archives it was sent (the parent sends each once).
type sandboxServer struct {
	charts   *LoadedCharts
	archives map[string][]byte
	out      *sandboxWriter

	// watch is the memory budget of the render running, nil between
	// renders.
	watch atomic.Pointer[memoryWatch]
}

// memoryWatch closes over when the process's memory passes limit.
type memoryWatch struct {
	limit uint64
	over  chan struct{}
	once  sync.Once
}

// serve answers one request. It returns false when a budget stopped the
// render: the process must exit.
func (s *sandboxServer) serve(req *sandboxRequest) bool {
	limits := req.Limits.Fill()
	debug.SetMaxStack(int(limits.TemplateStack))
	capData(limits.RenderMemory + dataSlack)
	f := req.Chart
	if len(f.Archive) > 0 && f.Digest != "" {
		s.archives[f.Digest] = f.Archive
	} else if f.Dir == "" {
		f.Archive = s.archives[f.Digest]
	}
	values, _ := decodeValue(req.Values).(map[string]any)
	opts := RenderOptions{KubeVersion: req.Options.KubeVersion, APIVersions: req.Options.APIVersions,
		ValuesRoot: req.Options.ValuesRoot, Charts: s.charts, Limits: limits}

	var at atomic.Value
	at.Store(stageLoad)
	moved := make(chan struct{}, 1)
	report := func(stage string) {
		at.Store(stage)
		s.out.send(sandboxReply{Stage: stage})
		select {
		case moved <- struct{}{}:
		default:
		}
	}
	done := make(chan sandboxReply, 1)
	go func() { done <- s.render(req, &f, values, opts, limits, report) }()

	watch := &memoryWatch{limit: uint64(limits.RenderMemory), over: make(chan struct{})}
	s.watch.Store(watch)
	defer s.watch.Store(nil)
	timer := time.NewTimer(limits.RenderTime)
	defer timer.Stop()
	for {
		select {
		case reply := <-done:
			s.out.send(reply)
			return true
		case <-moved:
			if req.Attribute { // each template has the whole budget
				timer.Reset(limits.RenderTime)
			}
		case <-timer.C:
			s.out.send(sandboxReply{Done: true, Exits: true, Over: tooSlow(at.Load().(string), limits)})
			return false
		case <-watch.over:
			s.out.send(sandboxReply{Done: true, Exits: true, Over: tooLarge(at.Load().(string), limits)})
			return false
		}
	}
}

// render runs one request in this goroutine and words its result.
func (s *sandboxServer) render(req *sandboxRequest, f *Fetched, values map[string]any, opts RenderOptions, limits budget.Limits, at stage) sandboxReply {
	var err error
	if req.Attribute {
		err = attribute(context.Background(), &req.Release, f, values, opts, limits, at)
		if err == nil {
			return sandboxReply{Done: true}
		}
	} else {
		var out *Rendered
		if out, err = renderChart(context.Background(), &req.Release, f, values, opts, limits, at); err == nil {
			w, err := toWire(out)
			if err != nil {
				return sandboxReply{Done: true, Err: err.Error()}
			}
			return sandboxReply{Done: true, Rendered: w}
		}
	}
	var over *budget.Exceeded
	if errors.As(err, &over) {
		return sandboxReply{Done: true, Over: over, Err: err.Error()}
	}
	return sandboxReply{Done: true, Err: err.Error()}
}

// watchMemory closes the over channel of the render running when the
// heap and the stacks of the process pass its limit, garbage collected
// first.
func (s *sandboxServer) watchMemory() {
	tick := time.NewTicker(memoryPoll)
	defer tick.Stop()
	for range tick.C {
		w := s.watch.Load()
		if w == nil || memoryUsed() <= w.limit {
			continue
		}
		runtime.GC()
		if memoryUsed() > w.limit {
			w.once.Do(func() { close(w.over) })
		}
	}
}

// memoryUsed is what the heap's objects (garbage not yet collected
// included) and the goroutines' stacks take.
func memoryUsed() uint64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(samples)
	var used uint64
	for _, m := range samples {
		if m.Value.Kind() == metrics.KindUint64 {
			used += m.Value.Uint64()
		}
	}
	return used
}
