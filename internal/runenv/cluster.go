package runenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/cloudauth"
	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/event"
	"github.com/ferry-ci/ferry/internal/kube"
)

// Cluster says how to reach a target's cluster when its ferry.yaml entry
// does not: the flags the commands that talk to clusters share.
type Cluster struct {
	Kubeconfig    string
	KubeconfigEnv string
	Context       string
}

// ClusterOptions are the client options of t's cluster: its ferry.yaml
// settings first, then c, then $KUBECONFIG, then ~/.kube/config. The
// kubeconfig's tokens, keys and passwords are hidden from then on.
func (e *Env) ClusterOptions(ctx context.Context, t *config.Target, c Cluster) (kube.ClientOptions, error) {
	if t.Access.Keyless() {
		return e.keyless(ctx, t)
	}
	opts := kube.ClientOptions{Context: c.Context}
	if t.Context != "" {
		opts.Context = t.Context
	}
	envName := c.KubeconfigEnv
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
	case c.Kubeconfig != "":
		opts.Kubeconfig = c.Kubeconfig
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

// keyless are the client options of a target whose cluster ferry.yaml
// reaches by the job's identity: its OIDC tokens for the audience, or
// the cloud's credentials they are exchanged for (see cloudauth). Each
// cluster is set up once per run, its tokens hidden as they arrive.
func (e *Env) keyless(ctx context.Context, t *config.Target) (kube.ClientOptions, error) {
	e.keylessMu.Lock()
	defer e.keylessMu.Unlock()
	if c, ok := e.keylessOpts[t.Cluster]; ok {
		return c.opts, c.err
	}
	opts, err := e.connect(ctx, t)
	if e.keylessOpts == nil {
		e.keylessOpts = map[string]keylessCluster{}
	}
	// A refusal is kept too: the cluster's other targets get the same
	// answer without asking the cloud again.
	e.keylessOpts[t.Cluster] = keylessCluster{opts, err}
	return opts, err
}

// keylessCluster is a cluster's set-up: its client options, or why not.
type keylessCluster struct {
	opts kube.ClientOptions
	err  error
}

func (e *Env) connect(ctx context.Context, t *config.Target) (kube.ClientOptions, error) {
	a := t.Access
	opts := kube.ClientOptions{Server: a.Server, CAData: a.CAData}
	if a.CAFile != "" {
		b, err := os.ReadFile(a.CAFile)
		if err != nil {
			return opts, fmt.Errorf("cluster %s: certificateAuthority: %w", t.Cluster, err)
		}
		opts.CAData = b
	}
	idTokens := func(audience string) (cloudauth.IDTokens, error) {
		return actions.NewIDTokens(e.getenv, audience, e.Hide)
	}
	if a.Audience != "" {
		ts, err := idTokens(a.Audience)
		if err != nil {
			return opts, fmt.Errorf("cluster %s: %w", t.Cluster, err)
		}
		opts.Token = ts
		return opts, nil
	}
	c, err := cloudauth.Connect(ctx, t.Cluster, a, cloudauth.Options{
		IDTokens: idTokens, Hide: e.Hide, Endpoints: e.cloudEndpoints(),
		Server: opts.Server, CAData: opts.CAData,
	})
	if err != nil {
		return opts, err
	}
	opts.Server, opts.CAData, opts.Token = c.Server, c.CAData, c.Tokens
	return opts, nil
}

// cloudEndpoints are the clouds' endpoints the step's environment
// replaces, under the names the clouds' own tools read.
func (e *Env) cloudEndpoints() cloudauth.Endpoints {
	return cloudauth.Endpoints{
		AWSSTS:               e.getenv("AWS_ENDPOINT_URL_STS"),
		AWSEKS:               e.getenv("AWS_ENDPOINT_URL_EKS"),
		GoogleSTS:            e.getenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_STS"),
		GoogleIAMCredentials: e.getenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_IAMCREDENTIALS"),
		GoogleContainer:      e.getenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER"),
		AzureAuthority:       e.getenv("AZURE_AUTHORITY_HOST"),
		AzureResourceManager: e.getenv("AZURE_RESOURCE_MANAGER_ENDPOINT"),
	}
}

// ApplyEvents are the events of an apply, by cluster: each target's
// change set's (kube.ChangeSet.Event), about its Flux Kustomization.
func ApplyEvents(targets []*config.Target, sets []*kube.ChangeSet) map[string][]event.Event {
	byName := map[string]*config.Target{}
	for _, t := range targets {
		byName[t.Name] = t
	}
	out := map[string][]event.Event{}
	for _, cs := range sets {
		if t := byName[cs.Target]; t != nil {
			out[t.Cluster] = append(out[t.Cluster], cs.Event(t.EventSource()))
		}
	}
	return out
}
