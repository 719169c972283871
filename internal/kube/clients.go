package kube

import (
	"fmt"
	"strings"
	"sync"
)

// Clients holds one client per cluster for a run, so discovery and REST
// mapping are done once per cluster, whatever the number of its targets.
// It is safe for concurrent use; the zero value is ready.
type Clients struct {
	mu sync.Mutex
	m  map[string]*Client
}

// Get returns the client of opts, built the first time (see NewClient).
func (cs *Clients) Get(opts ClientOptions) (*Client, error) {
	// A cluster reached by token is told apart by its CA and its token
	// source too: two identities for one server are two clients.
	key := strings.Join([]string{opts.Kubeconfig, string(opts.KubeconfigData), opts.Context, opts.Server, string(opts.CAData), fmt.Sprintf("%p", opts.Token)}, "\x00")
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.m[key]; ok {
		return c, nil
	}
	c, err := NewClient(opts)
	if err != nil {
		return nil, err
	}
	if cs.m == nil {
		cs.m = map[string]*Client{}
	}
	cs.m[key] = c
	return c, nil
}
