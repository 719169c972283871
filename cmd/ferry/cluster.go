package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/kube"
	"github.com/ferry-ci/ferry/internal/runenv"
)

// clusterFlags say how to reach a target's cluster when its ferry.yaml
// entry does not: the commands that talk to clusters share them.
type clusterFlags struct {
	runenv.Cluster
	clients kube.Clients
}

func (c *clusterFlags) register(f *pflag.FlagSet) {
	f.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG)")
	f.StringVar(&c.KubeconfigEnv, "kubeconfig-env", "", "name of an environment variable holding kubeconfig content")
	f.StringVar(&c.Context, "context", "", "kubeconfig context")
}

// client returns the cluster client of a target (runenv.Env.ClusterOptions),
// built once per cluster and shared by the run's targets of that cluster.
func (c *clusterFlags) client(ctx context.Context, e *env, t *config.Target) (*kube.Client, error) {
	opts, err := e.ClusterOptions(ctx, t, c.Cluster)
	if err != nil {
		return nil, err
	}
	client, err := c.clients.Get(opts)
	if err != nil && t.Access.Keyless() {
		return nil, fmt.Errorf("cluster %s: %w", t.Cluster, err)
	}
	return client, err
}

// readFromClusters has repo read the substituteFrom sources no render
// holds from each target's cluster (see config.Repo.ReadFromClusters):
// the commands that reach clusters render with what the cluster holds.
func (c *clusterFlags) readFromClusters(e *env, repo *config.Repo) {
	repo.ReadFromClusters(c.clusterReader(e))
}

// clusterReader reads a ConfigMap or Secret from a target's cluster.
func (c *clusterFlags) clusterReader(e *env) config.ClusterReader {
	return func(ctx context.Context, t *config.Target, kind, namespace, name string) (*unstructured.Unstructured, error) {
		cl, err := c.client(ctx, e, t)
		if err != nil {
			return nil, err
		}
		return cl.GetCore(ctx, kind, namespace, name)
	}
}
