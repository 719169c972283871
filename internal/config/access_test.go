package config_test

import (
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
)

// A cluster reached by server and the job's identity is checked when
// ferry.yaml is read: an https server, one auth method with its audience,
// no kubeconfig beside it, a CA inside the repository; eks, gke and aks
// are refused by name, not as unknown fields.
func TestClusterAccessIsChecked(t *testing.T) {
	t.Parallel()
	const prod = "clusters:\n  prod:\n"
	for in, want := range map[string]string{
		prod + "    server: https://10.0.0.1:6443\n    auth: {oidc: {audience: prod}}\n":                                                "",
		prod + "    server: https://k8s.example.com\n    certificateAuthority: clusters/prod/ca.crt\n    auth: {oidc: {audience: a}}\n": "",
		prod + "    server: http://10.0.0.1:6443\n    auth: {oidc: {audience: prod}}\n":                                                 `cluster "prod": server "http://10.0.0.1:6443" is not an https://host[:port] address`,
		prod + "    server: https://10.0.0.1\n":                                                                                         `cluster "prod": server needs auth: oidc`,
		prod + "    server: https://10.0.0.1\n    auth: {oidc: {}}\n":                                                                   `cluster "prod": auth.oidc.audience is required`,
		prod + "    server: https://10.0.0.1\n    auth: {eks: {cluster: prod, region: eu-west-1}}\n":                                    `cluster "prod": auth: eks, gke and aks are not supported by this ferry yet`,
		prod + "    server: https://10.0.0.1\n    kubeconfigEnv: KC\n    auth: {oidc: {audience: a}}\n":                                 `cluster "prod": server and a kubeconfig`,
		prod + "    server: https://10.0.0.1\n    certificateAuthority: /etc/ca.crt\n    auth: {oidc: {audience: a}}\n":                 `cluster "prod": certificateAuthority "/etc/ca.crt": a path inside the repository`,
		prod + "    server: https://10.0.0.1\n    certificateAuthority: ../ca.crt\n    auth: {oidc: {audience: a}}\n":                   `cluster "prod": certificateAuthority "../ca.crt": a path inside the repository`,
		prod + "    auth: {oidc: {audience: a}}\n":                                                                                      `cluster "prod": auth and certificateAuthority need server`,
		prod + "    server: https://10.0.0.1\n    auth: {oidc: {audience: a}, token: x}\n":                                              `unknown field "token"`,
	} {
		_, err := config.ParseFile([]byte(in))
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", in, err)
			}
			continue
		}
		wantError(t, err, want)
	}
}
