package kube_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/ferry-ci/ferry/internal/kube"
)

// requestLog records the requests a client sends, by method and path.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		req := r.Method + " " + r.URL.Path
		if r.URL.Query().Has("dryRun") {
			req = "DRYRUN " + req // the server writes nothing
		}
		l.reqs = append(l.reqs, req)
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// take returns the requests since the last take: writes (anything but GET
// or a dry run) listed, reads counted.
func (l *requestLog) take() (writes []string, reads int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.reqs {
		if strings.HasPrefix(r, "GET ") || strings.HasPrefix(r, "DRYRUN ") {
			reads++
			continue
		}
		writes = append(writes, r)
	}
	l.reqs = nil
	sort.Strings(writes)
	return writes, reads
}

// loggedClient is a client of the test control plane whose requests log
// records.
func loggedClient(t *testing.T) (*kube.Client, *requestLog) {
	t.Helper()
	log := &requestLog{}
	cfg := rest.CopyConfig(cp.Require(t).RESTConfig())
	cfg.WrapTransport = log.wrap
	c, err := kube.NewClientFromConfig(cfg, "default", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, log
}

// Re-applying the revision a target is at, with nothing changed, writes
// nothing: no Lease, no inventory. A new revision with the same objects
// writes the Lease (take, release) and the inventory once. Requests are
// counted through a transport that wraps the client's.
func TestNoOpApplyWritesNothing(t *testing.T) {
	f := newFixture(t)
	c, log := loggedClient(t)
	objs := f.objects(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: NS}\ndata: {k: v}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: NS}\ndata: {k: v}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: NS}\ndata: {k: dg==}\n",
	)
	opts := f.opts()
	opts.Revision = "1111111111111111111111111111111111111111"
	apply := func() *kube.ChangeSet {
		t.Helper()
		cs, err := c.Apply(context.Background(), objs, opts)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	first := apply()
	if first.Count(kube.Created) != 3 {
		t.Fatalf("first apply: %+v", first.Changes)
	}
	if writes, _ := log.take(); len(writes) == 0 {
		t.Fatal("the first apply wrote nothing")
	}

	again := apply()
	writes, reads := log.take()
	if again.Count(kube.Unchanged) != 3 || len(again.Changes) != 3 {
		t.Errorf("re-apply: %+v, want 3 unchanged", again.Changes)
	}
	if len(writes) != 0 {
		t.Errorf("re-apply of the same revision wrote %d times, want none: %v", len(writes), writes)
	}
	t.Logf("re-apply of the same revision: %d reads, no writes", reads)

	opts.Revision = "2222222222222222222222222222222222222222"
	next := apply()
	writes, reads = log.take()
	if next.Count(kube.Unchanged) != 3 {
		t.Errorf("new revision, same objects: %+v, want 3 unchanged", next.Changes)
	}
	// The Lease is taken and released, the inventory (a Secret) written
	// once, and nothing else.
	var lease, inventory int
	var other []string
	for _, w := range writes {
		switch {
		case strings.Contains(w, "/leases"):
			lease++
		case strings.Contains(w, "/secrets"):
			inventory++
		default:
			other = append(other, w)
		}
	}
	if lease > 2 || inventory != 1 || len(other) > 0 {
		t.Errorf("new revision, same objects: writes %v, want at most 2 to the Lease and 1 to the inventory", writes)
	}
	t.Logf("new revision with unchanged objects: %d reads, writes %v", reads, writes)
	inv, err := c.ReadInventory(context.Background(), "test", f.invNS)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(opts.Revision, inv.Revision); diff != "" {
		t.Errorf("recorded revision (-want +got):\n%s", diff)
	}
}
