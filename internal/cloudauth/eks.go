package cloudauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/oauth2"

	"github.com/ferry-ci/ferry/internal/config"
)

// eksTokenPrefix starts an EKS bearer token: the presigned STS
// GetCallerIdentity URL follows, base64url without padding.
const eksTokenPrefix = "k8s-aws-v1."

// eksClusterHeader is the signed header that binds an EKS token to one
// cluster.
const eksClusterHeader = "x-k8s-aws-id"

// eksTokenLife is how long ferry uses an EKS token: EKS accepts one for
// 15 minutes after it was signed.
const eksTokenLife = 14 * time.Minute

// eksCluster assumes a.RoleARN with the job's token, looks the cluster up
// (DescribeCluster) unless o gives its server, and presigns GetCallerIdentity
// for it, as aws eks get-token does.
func eksCluster(ctx context.Context, a *config.EKSAuth, o Options) (Cluster, error) {
	audience := a.Audience
	if audience == "" {
		audience = "sts.amazonaws.com"
	}
	ids, err := o.IDTokens(audience)
	if err != nil {
		return Cluster{}, err
	}
	job := &subject{ids: ids}
	identity := func() string {
		return fmt.Sprintf("role %s (EKS cluster %s in %s) assumed with %s", a.RoleARN, a.Cluster, a.Region, job)
	}
	stsOpts := sts.Options{Region: a.Region, HTTPClient: o.HTTPClient}
	if o.Endpoints.AWSSTS != "" {
		stsOpts.BaseEndpoint = aws.String(o.Endpoints.AWSSTS)
	}
	role := stscreds.NewWebIdentityRoleProvider(sts.New(stsOpts), a.RoleARN, webIdentity{job}, func(w *stscreds.WebIdentityRoleOptions) {
		w.RoleSessionName = "ferry"
	})
	creds := aws.NewCredentialsCache(hidden{role, o.Hide})
	// Assume the role now, so a refusal fails before any lookup.
	if _, err := creds.Retrieve(ctx); err != nil {
		return Cluster{}, fmt.Errorf("%s: %w", identity(), awsError(err))
	}
	c := Cluster{Server: o.Server, CAData: o.CAData}
	if c.Server == "" {
		eksOpts := eks.Options{Region: a.Region, HTTPClient: o.HTTPClient, Credentials: creds}
		if o.Endpoints.AWSEKS != "" {
			eksOpts.BaseEndpoint = aws.String(o.Endpoints.AWSEKS)
		}
		out, err := eks.New(eksOpts).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(a.Cluster)})
		if err != nil {
			return Cluster{}, fmt.Errorf("EKS cluster %s in %s (DescribeCluster as %s): %w", a.Cluster, a.Region, a.RoleARN, awsError(err))
		}
		if c, err = describedCluster(out); err != nil {
			return Cluster{}, fmt.Errorf("EKS cluster %s in %s: %w", a.Cluster, a.Region, err)
		}
	}
	stsOpts.Credentials = creds
	presign := sts.NewPresignClient(sts.New(stsOpts))
	c.Tokens = &tokens{hide: o.Hide, identity: identity, fetch: func(ctx context.Context) (*oauth2.Token, error) {
		cr, err := creds.Retrieve(ctx)
		if err != nil {
			return nil, awsError(err)
		}
		signed := time.Now()
		req, err := presign.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(p *sts.PresignOptions) {
			p.ClientOptions = append(p.ClientOptions, sts.WithAPIOptions(
				smithyhttp.AddHeaderValue(eksClusterHeader, a.Cluster),
				smithyhttp.AddHeaderValue("X-Amz-Expires", "60")))
		})
		if err != nil {
			return nil, fmt.Errorf("presigning GetCallerIdentity: %w", err)
		}
		expiry := signed.Add(eksTokenLife)
		if cr.CanExpire && cr.Expires.Before(expiry) {
			expiry = cr.Expires
		}
		return &oauth2.Token{AccessToken: eksTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL)), TokenType: "Bearer", Expiry: expiry}, nil
	}}
	return c, nil
}

// describedCluster is the endpoint and CA of a DescribeCluster answer.
func describedCluster(out *eks.DescribeClusterOutput) (Cluster, error) {
	cl := out.Cluster
	if cl == nil || cl.Endpoint == nil || cl.CertificateAuthority == nil || cl.CertificateAuthority.Data == nil {
		return Cluster{}, errNoEndpoint
	}
	ca, err := base64.StdEncoding.DecodeString(*cl.CertificateAuthority.Data)
	if err != nil {
		return Cluster{}, fmt.Errorf("certificateAuthority.data: %w", err)
	}
	return Cluster{Server: *cl.Endpoint, CAData: ca}, nil
}

// awsError is an AWS API error as its code and message, without the SDK's
// operation and request-ID wrapping.
func awsError(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		return fmt.Errorf("%s: %s", api.ErrorCode(), api.ErrorMessage())
	}
	return err
}

// webIdentity hands the job's token to AssumeRoleWithWebIdentity.
type webIdentity struct{ job *subject }

func (w webIdentity) GetIdentityToken() ([]byte, error) {
	tok, err := w.job.jobToken(context.Background())
	return []byte(tok), err
}

// hidden hides the role's session credentials as they arrive.
type hidden struct {
	aws.CredentialsProvider
	hide func(...string)
}

func (h hidden) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := h.CredentialsProvider.Retrieve(ctx)
	if err == nil {
		h.hide(c.SecretAccessKey, c.SessionToken)
	}
	return c, err
}
