package render

import (
	"crypto/sha256"
	"fmt"
	"sync"

	"sigs.k8s.io/kustomize/api/resource"
)

// Ahead runs the kustomize builds of targets before they are rendered,
// a few at a time, while the caller renders others one by one: Build then
// takes a target's kustomize build done (or waits for the one under way)
// instead of running it. Only the kustomize build runs ahead; what reads
// other targets (postBuild substitution) runs in Build, in the caller's
// order. Safe for concurrent use.
type Ahead struct {
	mu    sync.Mutex
	runs  map[string]*aheadRun
	slots chan struct{}
}

type aheadRun struct {
	done      chan struct{}
	fs        *repoFS
	resources []*resource.Resource
	err       error
}

// NewAhead returns an Ahead running at most n builds at once.
func NewAhead(n int) *Ahead {
	return &Ahead{runs: map[string]*aheadRun{}, slots: make(chan struct{}, max(n, 1))}
}

// Start begins the kustomize build of spec with opts, unless one of the
// same input is started already. A spec Build could not prepare, or one
// that renders an artifact, is left to Build.
func (a *Ahead) Start(spec Spec, opts Options) {
	if a == nil || spec.Artifact != nil {
		return
	}
	in, err := prepareKustomize(spec)
	if err != nil {
		return
	}
	key := in.key(opts)
	a.mu.Lock()
	if _, ok := a.runs[key]; ok {
		a.mu.Unlock()
		return
	}
	run := &aheadRun{done: make(chan struct{})}
	a.runs[key] = run
	a.mu.Unlock()
	go func() {
		defer close(run.done)
		a.slots <- struct{}{}
		defer func() { <-a.slots }()
		run.fs, run.resources, run.err = in.kustomize(opts)
	}()
}

// take returns the build of in started ahead, waiting for it, and
// forgets it (its resources are the caller's to change); a nil repoFS
// when none was started.
func (a *Ahead) take(in *kustomizeInput, opts Options) (*repoFS, []*resource.Resource, error) {
	if a == nil {
		return nil, nil, nil
	}
	key := in.key(opts)
	a.mu.Lock()
	run := a.runs[key]
	delete(a.runs, key)
	a.mu.Unlock()
	if run == nil {
		return nil, nil, nil
	}
	<-run.done
	if run.fs == nil { // the build could not start: Build runs it
		return nil, nil, nil
	}
	return run.fs, run.resources, run.err
}

// key identifies a kustomize build: the folder, the kustomization made
// of it, and the options the build reads.
func (in *kustomizeInput) key(opts Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %t %t %p %d\n", in.root, in.dir, in.kfile, opts.NoDecrypt, opts.AllowRemoteBases, opts.Decryptor, opts.limits().PatchCopySize)
	h.Write(in.kdata)
	return string(h.Sum(nil))
}
