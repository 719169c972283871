// Package kschema guards kustomize's OpenAPI schema, which is process
// state (kyaml's openapi package), so that kustomize builds can run at
// once. A build that leaves the schema alone shares it (Share): the
// built-in schema is parsed before the first of them starts, so they
// only read it. A build that may set its own (a kustomization's
// openapi: field) holds it alone (Own), and the next shared build starts
// from the built-in schema again.
package kschema

import (
	"sync"

	"sigs.k8s.io/kustomize/kyaml/openapi"
)

var (
	mu sync.RWMutex
	// ready: the built-in schema is parsed and nothing changed it since.
	ready bool
)

// Share waits until kustomize's schema is its built-in one, parsed, and
// holds it for a build that does not change it. Call the returned
// function when the build is done. Any number of builds share it.
func Share() (done func()) {
	for {
		mu.RLock()
		if ready {
			return mu.RUnlock
		}
		mu.RUnlock()
		mu.Lock()
		if !ready {
			openapi.ResetOpenAPI()
			// Parses the built-in schema now, under the exclusive lock:
			// parsed lazily, it would be written while other builds
			// read it.
			openapi.Schema()
			ready = true
		}
		mu.Unlock()
	}
}

// Own holds kustomize's schema alone, reset to the built-in one, for a
// build that may set its own. Call the returned function when the build
// is done.
func Own() (done func()) {
	mu.Lock()
	if !ready {
		openapi.ResetOpenAPI()
	}
	ready = false
	return mu.Unlock
}

// Prepare parses the built-in schema in the background, once, so that
// the first build or scope check that needs it (tens of milliseconds of
// parsing) finds it ready. Share waits for it.
func Prepare() {
	prepare.Do(func() { go Share()() })
}

var prepare sync.Once
