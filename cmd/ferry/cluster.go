package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/gitrepo"
	"github.com/ferry-ci/ferry/internal/kube"
)

// clusterFlags say how to reach a target's cluster when its ferry.yaml
// entry does not: the commands that talk to clusters share them.
type clusterFlags struct {
	kubeconfig    string
	kubeconfigEnv string
	context       string

	clients kube.Clients
}

func (c *clusterFlags) register(f *pflag.FlagSet) {
	f.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG)")
	f.StringVar(&c.kubeconfigEnv, "kubeconfig-env", "", "name of an environment variable holding kubeconfig content")
	f.StringVar(&c.context, "context", "", "kubeconfig context")
}

// client returns the cluster client of a target (its ferry.yaml settings
// first, then the flags, then $KUBECONFIG), built once per cluster and
// shared by the run's targets of that cluster.
func (c *clusterFlags) client(e *env, t *config.Target) (*kube.Client, error) {
	opts, err := c.clientOptions(e, t)
	if err != nil {
		return nil, err
	}
	return c.clients.Get(opts)
}

func (c *clusterFlags) clientOptions(e *env, t *config.Target) (kube.ClientOptions, error) {
	opts := kube.ClientOptions{Context: c.context}
	if t.Context != "" {
		opts.Context = t.Context
	}
	envName := c.kubeconfigEnv
	if t.KubeconfigEnv != "" {
		envName = t.KubeconfigEnv
	}
	switch {
	case t.Kubeconfig != "":
		opts.Kubeconfig = t.Kubeconfig
		if !filepath.IsAbs(opts.Kubeconfig) {
			opts.Kubeconfig = filepath.Join(t.Root, opts.Kubeconfig)
		}
	case envName != "":
		data := e.getenv(envName)
		if data == "" {
			return opts, fmt.Errorf("environment variable %s (kubeconfig content) is empty", envName)
		}
		opts.KubeconfigData = []byte(data)
	case c.kubeconfig != "":
		opts.Kubeconfig = c.kubeconfig
	case e.getenv("KUBECONFIG") != "":
		opts.Kubeconfig = strings.Split(e.getenv("KUBECONFIG"), string(os.PathListSeparator))[0]
	default:
		if home := e.getenv("HOME"); home != "" {
			opts.Kubeconfig = filepath.Join(home, ".kube", "config")
		}
	}
	e.hideKubeconfig(opts.KubeconfigData, opts.Kubeconfig)
	return opts, nil
}

// checkedOut returns the revision being applied or compared: the flag,
// else $GITHUB_SHA, else the repository's HEAD (see gitrepo.CheckedOut).
func checkedOut(e *env, root, flag string) (revision string, isAncestor func(a, b string) (bool, error)) {
	if flag == "" {
		flag = e.getenv("GITHUB_SHA")
	}
	return gitrepo.CheckedOut(root, flag)
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
		cl, err := c.client(e, t)
		if err != nil {
			return nil, err
		}
		return cl.GetCore(ctx, kind, namespace, name)
	}
}
