package kube

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ferry-ci/ferry/internal/manifest"
)

// ClientOptions say how to reach a cluster. Kubeconfig content wins over a
// path; neither means the caller's default kubeconfig path must be given.
type ClientOptions struct {
	// Kubeconfig is the path of a kubeconfig file.
	Kubeconfig string
	// KubeconfigData is kubeconfig content (CI secrets hold content, not
	// paths); it is never written to disk.
	KubeconfigData []byte
	// Context is the kubeconfig context to use; "" means its current one.
	Context string
	// Server, CAData and Token reach a cluster without a kubeconfig: its
	// API server, the PEM of the CAs its certificate chains to, and the
	// bearer tokens to present, asked for again before each expires.
	Server string
	CAData []byte
	Token  TokenSource
	// QPS and Burst bound the client's request rate. 0 (the default)
	// means no client-side throttling: every operation bounds its requests
	// in flight (Concurrency), and the API server's Priority and Fairness
	// queues what it cannot take. A negative QPS means the same.
	QPS   float32
	Burst int
}

// Client reaches one cluster.
type Client struct {
	Host      string
	config    *rest.Config
	dynamic   dynamic.Interface
	metadata  metadata.Interface // lists of members' metadata (protobuf)
	clientset kubernetes.Interface
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.ResettableRESTMapper
	// namespace is the kubeconfig context's namespace, used for namespaced
	// objects that name none.
	namespace string
	// reached is set once the API server has answered: the targets of a
	// run share the client and need not ask again.
	reached atomic.Bool
	// namespaces are the namespaces this client has seen exist or made
	// (the inventory's, the Leases'), so the targets of a run ask once.
	namespaces sync.Map

	mu sync.Mutex
	// listedParents are the listings of inventory namespaces' parents and
	// Leases that Warm started, until a preflight takes them.
	listedParents map[string]*parents
}

// NewClient builds a client from kubeconfig content or a kubeconfig path.
// Nothing is contacted yet.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.Server != "" {
		return newTokenClient(opts)
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.Context}
	var cc clientcmd.ClientConfig
	switch {
	case len(opts.KubeconfigData) > 0:
		raw, err := clientcmd.Load(opts.KubeconfigData)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig content: %w", err)
		}
		cc = clientcmd.NewNonInteractiveClientConfig(*raw, opts.Context, overrides, nil)
	case opts.Kubeconfig != "":
		cc = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: opts.Kubeconfig}, overrides)
	default:
		return nil, errors.New("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or give kubeconfig content")
	}
	if err := checkExecPlugin(cc, opts.Context); err != nil {
		return nil, fmt.Errorf("kubeconfig%s: %w", where(opts), err)
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig%s: %w", where(opts), err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return NewClientFromConfig(cfg, ns, opts.QPS, opts.Burst)
}

func where(opts ClientOptions) string {
	if len(opts.KubeconfigData) == 0 && opts.Kubeconfig != "" {
		return " " + opts.Kubeconfig
	}
	return ""
}

// NewClientFromConfig builds a client from a REST config.
func NewClientFromConfig(cfg *rest.Config, namespace string, qps float32, burst int) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	if qps == 0 {
		qps = -1 // client-go: no token bucket
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = "ferry"
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc := memory.NewMemCacheClient(cs.Discovery())
	return &Client{
		Host:      cfg.Host,
		config:    cfg,
		dynamic:   dyn,
		metadata:  md,
		clientset: cs,
		discovery: disc,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(disc),
		namespace: namespace,
	}, nil
}

// ServerVersion is the Kubernetes version the cluster's API server
// reports (v1.33.1).
func (c *Client) ServerVersion() (string, error) {
	v, err := c.clientset.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("cluster %s: %w", c.Host, err)
	}
	return v.GitVersion, nil
}

// SameMinor reports whether two Kubernetes versions ("v1.33.1", "1.33",
// "v1.33+k3s1") have the same major and minor version; a text that is no
// such version is compared whole.
func SameMinor(a, b string) bool { return majorMinor(a) == majorMinor(b) }

// majorMinor is "1.33" of "v1.33.1" (or of "1.33"); the text itself when
// it is not such a version.
func majorMinor(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
}

// GetCore reads one object of Kubernetes' core group (v1), a ConfigMap,
// Secret, ServiceAccount or PersistentVolumeClaim: nil, nil when the
// cluster has none. It needs get rights only.
func (c *Client) GetCore(ctx context.Context, kind, namespace, name string) (*unstructured.Unstructured, error) {
	var resource string
	switch kind {
	case "ConfigMap":
		resource = "configmaps"
	case "Secret":
		resource = "secrets"
	case "ServiceAccount":
		resource = "serviceaccounts"
	case "PersistentVolumeClaim":
		resource = "persistentvolumeclaims"
	default:
		return nil, fmt.Errorf("%s/%s/%s: reading a %s is not supported", kind, namespace, name, kind)
	}
	u, err := c.dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: resource}).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s/%s/%s: %w", kind, namespace, name, err)
	}
	return u, nil
}

// checkExecPlugin refuses a kubeconfig whose user gets credentials from an
// exec plugin that is not on PATH (aws, gke-gcloud-auth-plugin, kubelogin:
// ferry's image has none), naming the plugin and what to use instead.
func checkExecPlugin(cc clientcmd.ClientConfig, context string) error {
	raw, err := cc.RawConfig()
	if err != nil {
		return nil // ClientConfig reports it
	}
	if context == "" {
		context = raw.CurrentContext
	}
	c, ok := raw.Contexts[context]
	if !ok {
		return nil
	}
	user, ok := raw.AuthInfos[c.AuthInfo]
	if !ok || user.Exec == nil {
		return nil
	}
	if _, err := exec.LookPath(user.Exec.Command); err != nil {
		return fmt.Errorf("user %q gets its credentials from the exec plugin %s, which this runner does not have (ferry's image runs no plugins): reach the cluster as the job's own identity with clusters.<name>.server and auth (oidc) in ferry.yaml instead", c.AuthInfo, user.Exec.Command)
	}
	return nil
}

// SecretData is the decoded data of a Secret read with GetCore.
func SecretData(s *unstructured.Unstructured) (map[string][]byte, error) {
	raw, _, _ := unstructured.NestedStringMap(s.Object, "data")
	out := make(map[string][]byte, len(raw))
	for k, v := range raw {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("Secret/%s/%s key %s: %w", s.GetNamespace(), s.GetName(), k, err)
		}
		out[k] = b
	}
	return out, nil
}

// CountCustomResources counts the objects of a CRD's kind the cluster
// holds, in every namespace (list, 500 a page, metadata only).
func (c *Client) CountCustomResources(ctx context.Context, crd *unstructured.Unstructured) (int, error) {
	d, ok := manifest.CRDOf(crd)
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	if !ok || len(d.Versions) == 0 || plural == "" {
		return 0, fmt.Errorf("CustomResourceDefinition/%s names no version or plural", crd.GetName())
	}
	group, version := d.Group, d.Versions[0]
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	n, next := 0, ""
	for {
		list, err := c.metadata.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 500, Continue: next})
		if apierrors.IsNotFound(err) {
			return 0, nil // the CRD is not in the cluster (yet)
		}
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		n += len(list.Items)
		if next = list.GetContinue(); next == "" {
			return n, nil
		}
	}
}
