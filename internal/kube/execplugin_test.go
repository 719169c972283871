package kube

import (
	"strings"
	"testing"
)

// A kubeconfig whose user runs an exec plugin the runner lacks is refused
// naming the plugin and ferry.yaml's auth; one the runner has passes.
func TestExecPluginMissing(t *testing.T) {
	kubeconfig := func(command string) []byte {
		return []byte(`apiVersion: v1
kind: Config
clusters: [{name: eks, cluster: {server: "https://127.0.0.1:1"}}]
users:
  - name: deployer
    user:
      exec:
        apiVersion: client.authentication.k8s.io/v1beta1
        command: ` + command + `
        args: [eks, get-token, --cluster-name, prod]
        interactiveMode: Never
contexts: [{name: eks, context: {cluster: eks, user: deployer}}]
current-context: eks
`)
	}
	_, err := NewClient(ClientOptions{KubeconfigData: kubeconfig("aws-cli-not-on-this-runner")})
	if err == nil || !strings.Contains(err.Error(), `exec plugin aws-cli-not-on-this-runner`) || !strings.Contains(err.Error(), "auth (oidc)") {
		t.Errorf("error %v, want the plugin and ferry.yaml's auth named", err)
	}
	if _, err := NewClient(ClientOptions{KubeconfigData: kubeconfig("\"true\"")}); err != nil {
		t.Errorf("a plugin on PATH: %v", err)
	}
}
