package runenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/config"
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
func (e *Env) ClusterOptions(t *config.Target, c Cluster) (kube.ClientOptions, error) {
	if t.Access.Keyless() {
		return e.keyless(t)
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
// reaches by server and auth: the job's OIDC tokens for the audience,
// each hidden as it is received.
func (e *Env) keyless(t *config.Target) (kube.ClientOptions, error) {
	a := t.Access
	opts := kube.ClientOptions{Server: a.Server, CAData: a.CAData}
	if a.CAFile != "" {
		b, err := os.ReadFile(a.CAFile)
		if err != nil {
			return opts, fmt.Errorf("cluster %s: certificateAuthority: %w", t.Cluster, err)
		}
		opts.CAData = b
	}
	ts, err := actions.NewIDTokens(e.getenv, a.Audience, e.Hide)
	if err != nil {
		return opts, fmt.Errorf("cluster %s: %w", t.Cluster, err)
	}
	opts.Token = ts
	return opts, nil
}
