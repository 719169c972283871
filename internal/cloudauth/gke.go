package cloudauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google/externalaccount"

	"github.com/ferry-ci/ferry/internal/config"
)

const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// gkeCluster exchanges the job's token at Google's STS for the workload
// identity provider (workload identity federation), impersonates the
// service account when one is set, and reads the cluster's endpoint and
// CA from the GKE API unless o gives its server. The access tokens are
// what the GKE API server takes, as gke-gcloud-auth-plugin hands them.
func gkeCluster(ctx context.Context, g *config.GKEAuth, o Options) (Cluster, error) {
	audience := g.Audience
	if audience == "" {
		audience = "https://iam.googleapis.com/" + g.WorkloadIdentityProvider
	}
	ids, err := o.IDTokens(audience)
	if err != nil {
		return Cluster{}, err
	}
	job := &subject{ids: ids}
	principal := "the workload identity provider " + g.WorkloadIdentityProvider
	if g.ServiceAccount != "" {
		principal = "service account " + g.ServiceAccount + " (through " + g.WorkloadIdentityProvider + ")"
	}
	identity := func() string {
		return fmt.Sprintf("%s for GKE cluster %s, with %s", principal, g.Cluster, job)
	}
	conf := externalaccount.Config{
		Audience:             "//iam.googleapis.com/" + g.WorkloadIdentityProvider,
		SubjectTokenType:     "urn:ietf:params:oauth:token-type:jwt",
		TokenURL:             endpointOr(o.Endpoints.GoogleSTS, "https://sts.googleapis.com", "/v1/token"),
		Scopes:               []string{cloudPlatformScope},
		SubjectTokenSupplier: jwtSupplier{job},
	}
	if g.ServiceAccount != "" {
		conf.ServiceAccountImpersonationURL = endpointOr(o.Endpoints.GoogleIAMCredentials, "https://iamcredentials.googleapis.com",
			"/v1/projects/-/serviceAccounts/"+url.PathEscape(g.ServiceAccount)+":generateAccessToken")
	}
	// The token source keeps this context for its requests: the HTTP
	// client, not a deadline (each request has the client's timeout).
	src, err := externalaccount.NewTokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, o.HTTPClient), conf)
	if err != nil {
		return Cluster{}, err
	}
	first, err := src.Token()
	if err != nil {
		return Cluster{}, fmt.Errorf("exchanging %s for %s: %w", job, principal, googleError(err))
	}
	o.Hide(first.AccessToken)
	c := Cluster{Server: o.Server, CAData: o.CAData}
	if c.Server == "" {
		c, err = gkeLookup(ctx, g, o, first.AccessToken)
		if err != nil {
			return Cluster{}, fmt.Errorf("GKE cluster projects/%s/locations/%s/clusters/%s (as %s): %w", g.Project, g.Location, g.Cluster, principal, err)
		}
	}
	c.Tokens = &tokens{hide: o.Hide, identity: identity, fetch: func(context.Context) (*oauth2.Token, error) { return src.Token() }}
	return c, nil
}

// gkeLookup reads a cluster's endpoint and CA from the GKE API
// (projects.locations.clusters.get: endpoint, masterAuth.clusterCaCertificate).
// One GET of two fields: the generated container client is not worth
// its megabyte for it.
func gkeLookup(ctx context.Context, g *config.GKEAuth, o Options, token string) (Cluster, error) {
	u := endpointOr(o.Endpoints.GoogleContainer, "https://container.googleapis.com",
		"/v1/projects/"+url.PathEscape(g.Project)+"/locations/"+url.PathEscape(g.Location)+"/clusters/"+url.PathEscape(g.Cluster))
	var out struct {
		Endpoint   string `json:"endpoint"`
		MasterAuth struct {
			ClusterCACertificate string `json:"clusterCaCertificate"`
		} `json:"masterAuth"`
	}
	if err := getJSON(ctx, o.HTTPClient, http.MethodGet, u, token, &out); err != nil {
		return Cluster{}, err
	}
	if out.Endpoint == "" || out.MasterAuth.ClusterCACertificate == "" {
		return Cluster{}, errNoEndpoint
	}
	ca, err := base64.StdEncoding.DecodeString(out.MasterAuth.ClusterCACertificate)
	if err != nil {
		return Cluster{}, fmt.Errorf("masterAuth.clusterCaCertificate: %w", err)
	}
	server := out.Endpoint
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	return Cluster{Server: server, CAData: ca}, nil
}

// getJSON sends a bodiless request with token as bearer and decodes the
// JSON answer into out; an error status gives the answer's error message
// (Google's and ARM's error objects alike).
func getJSON(ctx context.Context, client *http.Client, method, u, token string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Code    any    `json:"code"`   // ARM: a name; Google: the HTTP status
				Status  string `json:"status"` // Google: the name
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			name := e.Error.Status
			if code, ok := e.Error.Code.(string); ok {
				name = code
			}
			if name != "" {
				return fmt.Errorf("%s: %s: %s", resp.Status, name, e.Error.Message)
			}
			return fmt.Errorf("%s: %s", resp.Status, e.Error.Message)
		}
		return fmt.Errorf("%s", resp.Status)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("the answer: %w", err)
	}
	return nil
}

// jwtSupplier hands the job's token to Google's STS.
type jwtSupplier struct{ job *subject }

func (s jwtSupplier) SubjectToken(ctx context.Context, _ externalaccount.SupplierOptions) (string, error) {
	return s.job.jobToken(ctx)
}

// googleError is the answer in an x/oauth2 exchange error ("status code
// N: BODY") as its status, error and description, without the request.
func googleError(err error) error {
	msg := err.Error()
	i := strings.Index(msg, "status code ")
	if i < 0 {
		return err
	}
	status, body, ok := strings.Cut(msg[i+len("status code "):], ": ")
	var e struct {
		Error       any    `json:"error"`
		Description string `json:"error_description"`
	}
	if !ok || json.Unmarshal([]byte(strings.TrimSpace(body)), &e) != nil {
		return err
	}
	switch v := e.Error.(type) {
	case string:
		return fmt.Errorf("Google: status %s: %s: %s", status, v, e.Description)
	case map[string]any:
		return fmt.Errorf("Google: status %s: %v: %v", status, v["status"], v["message"])
	}
	return err
}
