package config_test

import (
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
)

// A cluster reached by server and the job's identity is checked when
// ferry.yaml is read: an https server, one auth method with its audience,
// no kubeconfig beside it, a CA inside the repository; eks, gke and aks
// with the settings their exchange needs.
func TestClusterAccessIsChecked(t *testing.T) {
	t.Parallel()
	const prod = "clusters:\n  prod:\n"
	for in, want := range map[string]string{
		prod + "    server: https://10.0.0.1:6443\n    auth: {oidc: {audience: prod}}\n":                                                                               "",
		prod + "    server: https://k8s.example.com\n    certificateAuthority: clusters/prod/ca.crt\n    auth: {oidc: {audience: a}}\n":                                "",
		prod + "    server: http://10.0.0.1:6443\n    auth: {oidc: {audience: prod}}\n":                                                                                `cluster "prod": server "http://10.0.0.1:6443" is not an https://host[:port] address`,
		prod + "    server: https://10.0.0.1\n":                                                                                                                        `cluster "prod": server needs auth: oidc`,
		prod + "    server: https://10.0.0.1\n    auth: {oidc: {}}\n":                                                                                                  `cluster "prod": auth.oidc.audience is required`,
		prod + "    auth: {eks: {cluster: prod, region: eu-west-1}}\n":                                                                                                 `cluster "prod": auth.eks needs roleARN`,
		prod + "    auth: {eks: {cluster: prod, region: eu-west-1, roleARN: arn:aws:iam::111122223333:role/deploy}}\n":                                                 "",
		prod + "    auth: {eks: {cluster: prod, region: eu-west-1, roleARN: deploy}}\n":                                                                                `cluster "prod": auth.eks.roleARN "deploy" is not an IAM role ARN`,
		prod + "    auth: {gke: {project: p, location: l, cluster: c, workloadIdentityProvider: projects/1/locations/global/workloadIdentityPools/gh/providers/gh}}\n": "",
		prod + "    auth: {gke: {project: p, location: l, cluster: c, workloadIdentityProvider: gh}}\n":                                                                `auth.gke.workloadIdentityProvider "gh" is not projects/NUMBER`,
		prod + "    auth: {gke: {project: p}}\n":                                                                                                                       `cluster "prod": auth.gke needs location, cluster, workloadIdentityProvider`,
		prod + "    auth: {aks: {tenantID: t, clientID: c, subscriptionID: s, resourceGroup: rg, cluster: prod}}\n":                                                    "",
		prod + "    auth: {aks: {tenantID: t, clientID: c}}\n":                                                                                                         `cluster "prod": auth.aks needs subscriptionID, resourceGroup, cluster (or give server and certificateAuthority)`,
		prod + "    server: https://10.0.0.1\n    auth: {aks: {tenantID: t, clientID: c}}\n":                                                                           "",
		prod + "    certificateAuthorityData: x\n    auth: {aks: {tenantID: t, clientID: c, subscriptionID: s, resourceGroup: rg, cluster: prod}}\n":                   `certificateAuthority needs server`,
		prod + "    auth: {oidc: {audience: a}}\n":                                                                                                                     `cluster "prod": auth.oidc needs server`,
		prod + "    server: https://10.0.0.1\n    auth: {oidc: {audience: a}, gke: {project: p}}\n":                                                                    `cluster "prod": auth: want exactly one of oidc, eks, gke and aks`,
		prod + "    kubeconfigEnv: KC\n    auth: {eks: {cluster: prod, region: eu-west-1, roleARN: arn:aws:iam::111122223333:role/deploy}}\n":                          `server and auth exclude a kubeconfig`,
		prod + "    server: https://10.0.0.1\n    kubeconfigEnv: KC\n    auth: {oidc: {audience: a}}\n":                                                                `cluster "prod": server and auth exclude a kubeconfig`,
		prod + "    server: https://10.0.0.1\n    certificateAuthority: /etc/ca.crt\n    auth: {oidc: {audience: a}}\n":                                                `cluster "prod": certificateAuthority "/etc/ca.crt": a path inside the repository`,
		prod + "    server: https://10.0.0.1\n    certificateAuthority: ../ca.crt\n    auth: {oidc: {audience: a}}\n":                                                  `cluster "prod": certificateAuthority "../ca.crt": a path inside the repository`,
		prod + "    certificateAuthority: ca.crt\n":                                                                                                                    `cluster "prod": certificateAuthority needs server`,
		prod + "    server: https://10.0.0.1\n    auth: {oidc: {audience: a}, token: x}\n":                                                                             `unknown field "token"`,
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
