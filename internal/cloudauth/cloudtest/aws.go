package cloudtest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const stsNS = "https://sts.amazonaws.com/doc/2011-06-15/"

// awsCloud is STS and EKS. Session credentials are issued by
// AssumeRoleWithWebIdentity and checked by SigV4 on every signed request.
type awsCloud struct {
	c        *Clouds
	sts, eks *httptest.Server

	mu       sync.Mutex
	sessions map[string]session // by access key ID
}

type session struct {
	secret, token, arn string
	expires            time.Time
}

func newAWS(t *testing.T, c *Clouds) *awsCloud {
	a := &awsCloud{c: c, sessions: map[string]session{}}
	a.sts = httptest.NewTLSServer(http.HandlerFunc(a.serveSTS))
	t.Cleanup(a.sts.Close)
	a.eks = httptest.NewTLSServer(http.HandlerFunc(a.serveEKS))
	t.Cleanup(a.eks.Close)
	return a
}

func (a *awsCloud) serveSTS(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		stsError(w, http.StatusBadRequest, "InvalidParameterValue", err.Error())
		return
	}
	switch r.Form.Get("Action") {
	case "AssumeRoleWithWebIdentity":
		a.c.count("AssumeRoleWithWebIdentity")
		a.assume(w, r)
	case "GetCallerIdentity":
		a.c.count("GetCallerIdentity")
		s, err := a.verify(r, "sts")
		if err != nil {
			stsError(w, http.StatusForbidden, "SignatureDoesNotMatch", err.Error())
			return
		}
		writeXML(w, `<GetCallerIdentityResponse xmlns="`+stsNS+`"><GetCallerIdentityResult><Arn>`+s.arn+`</Arn><UserId>AROADEPLOY:ferry</UserId><Account>`+AWSAccount+`</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`)
	default:
		stsError(w, http.StatusBadRequest, "InvalidAction", "unknown action")
	}
}

// assume is AssumeRoleWithWebIdentity with a trust policy on RoleARN:
// the job's token for audience sts.amazonaws.com, of Repository.
func (a *awsCloud) assume(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Form.Get("RoleArn") != RoleARN {
		stsError(w, http.StatusForbidden, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
		return
	}
	claims, err := a.c.trusted(r.Form.Get("WebIdentityToken"), "sts.amazonaws.com")
	if err != nil {
		stsError(w, http.StatusForbidden, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity: "+err.Error())
		return
	}
	name := r.Form.Get("RoleSessionName")
	s := session{secret: secret("secret-"), token: secret("session-"), arn: "arn:aws:sts::" + AWSAccount + ":assumed-role/deploy/" + name, expires: a.c.expiry()}
	key := strings.ToUpper(secret("ASIA"))[:20]
	a.mu.Lock()
	a.sessions[key] = s
	a.mu.Unlock()
	writeXML(w, `<AssumeRoleWithWebIdentityResponse xmlns="`+stsNS+`"><AssumeRoleWithWebIdentityResult>`+
		`<SubjectFromWebIdentityToken>`+fmt.Sprint(claims["sub"])+`</SubjectFromWebIdentityToken><Audience>sts.amazonaws.com</Audience>`+
		`<AssumedRoleUser><Arn>`+s.arn+`</Arn><AssumedRoleId>AROADEPLOY:`+name+`</AssumedRoleId></AssumedRoleUser>`+
		`<Credentials><AccessKeyId>`+key+`</AccessKeyId><SecretAccessKey>`+s.secret+`</SecretAccessKey><SessionToken>`+s.token+`</SessionToken>`+
		`<Expiration>`+s.expires.UTC().Format(time.RFC3339)+`</Expiration></Credentials>`+
		`<Provider>`+a.c.issuer.URL+`</Provider></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`)
}

// serveEKS is DescribeCluster (GET /clusters/NAME), signed by a session.
func (a *awsCloud) serveEKS(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/clusters/")
	if r.Method != http.MethodGet || !ok {
		http.NotFound(w, r)
		return
	}
	a.c.count("DescribeCluster")
	if _, err := a.verify(r, "eks"); err != nil {
		eksError(w, http.StatusForbidden, "AccessDeniedException", err.Error())
		return
	}
	if name != EKSCluster {
		eksError(w, http.StatusNotFound, "ResourceNotFoundException", "No cluster found for name: "+name+".")
		return
	}
	server, ca := a.c.cluster()
	writeJSON(w, http.StatusOK, map[string]any{"cluster": map[string]any{
		"name": name, "arn": "arn:aws:eks:" + Region + ":" + AWSAccount + ":cluster/" + name, "status": "ACTIVE",
		"endpoint": server, "certificateAuthority": map[string]string{"data": base64.StdEncoding.EncodeToString(ca)},
	}})
}

// identify checks an EKS token as aws-iam-authenticator does: a
// presigned GetCallerIdentity of this STS, x-k8s-aws-id among its signed
// headers, sent to STS with the header set to this cluster's name; the
// caller's role is mapped to EKSUser.
func (a *awsCloud) identify(ctx context.Context, encoded string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		return "", errors.New("not base64url")
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return "", err
	}
	q := u.Query()
	if "https://"+u.Host != a.sts.URL || u.Path != "/" || q.Get("Action") != "GetCallerIdentity" || q.Get("Version") != "2011-06-15" {
		return "", fmt.Errorf("not a GetCallerIdentity URL of this STS: %s%s", u.Host, u.Path)
	}
	if !contains(strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), "x-k8s-aws-id") {
		return "", errors.New("x-k8s-aws-id is not signed")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("x-k8s-aws-id", EKSCluster)
	resp, err := a.sts.Client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("STS: %s: %s", resp.Status, body)
	}
	var out struct {
		Arn string `xml:"GetCallerIdentityResult>Arn"`
	}
	if err := xml.Unmarshal(body, &out); err != nil {
		return "", err
	}
	if out.Arn != "arn:aws:sts::"+AWSAccount+":assumed-role/deploy/ferry" {
		return "", fmt.Errorf("%s is not mapped", out.Arn)
	}
	return EKSUser, nil
}

// verify checks r's SigV4 signature for service, in the Authorization
// header or presigned in the query, against the sessions issued.
func (a *awsCloud) verify(r *http.Request, service string) (session, error) {
	q := r.URL.Query()
	var credential, signedHeaders, signature, date, token, payload string
	presigned := q.Get("X-Amz-Signature") != ""
	if presigned {
		credential, signedHeaders, signature = q.Get("X-Amz-Credential"), q.Get("X-Amz-SignedHeaders"), q.Get("X-Amz-Signature")
		date, token, payload = q.Get("X-Amz-Date"), q.Get("X-Amz-Security-Token"), emptySHA256
		if t, err := time.Parse("20060102T150405Z", date); err != nil || time.Since(t) > 15*time.Minute {
			return session{}, errors.New("the request has expired")
		}
	} else {
		auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
		if !ok {
			return session{}, errors.New("missing authentication token")
		}
		for _, part := range strings.Split(auth, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch k {
			case "Credential":
				credential = v
			case "SignedHeaders":
				signedHeaders = v
			case "Signature":
				signature = v
			}
		}
		date, token, payload = r.Header.Get("X-Amz-Date"), r.Header.Get("X-Amz-Security-Token"), r.Header.Get("X-Amz-Content-Sha256")
		if payload == "" {
			payload = emptySHA256
		}
	}
	scope := strings.SplitN(credential, "/", 2)
	if len(scope) != 2 || !strings.HasSuffix(scope[1], "/"+Region+"/"+service+"/aws4_request") {
		return session{}, fmt.Errorf("credential scope %q is not %s/%s", credential, Region, service)
	}
	a.mu.Lock()
	s, ok := a.sessions[scope[0]]
	a.mu.Unlock()
	if !ok || s.token != token || time.Now().After(s.expires) {
		return session{}, errors.New("the security token included in the request is invalid")
	}
	canonical := canonicalRequest(r, signedHeaders, payload, presigned)
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + date + "\n" + scope[1] + "\n" + hex.EncodeToString(sum[:])
	day := strings.SplitN(scope[1], "/", 2)[0]
	key := hmacSHA256([]byte("AWS4"+s.secret), day)
	for _, p := range []string{Region, service, "aws4_request"} {
		key = hmacSHA256(key, p)
	}
	if hex.EncodeToString(hmacSHA256(key, toSign)) != signature {
		return session{}, errors.New("the request signature we calculated does not match the signature you provided")
	}
	return s, nil
}

const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// canonicalRequest is SigV4's canonical form of r.
func canonicalRequest(r *http.Request, signedHeaders, payload string, presigned bool) string {
	q := r.URL.Query()
	if presigned {
		q.Del("X-Amz-Signature")
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var query []string
	for _, k := range keys {
		vs := q[k]
		sort.Strings(vs)
		for _, v := range vs {
			query = append(query, awsEscape(k)+"="+awsEscape(v))
		}
	}
	var headers strings.Builder
	for _, h := range strings.Split(signedHeaders, ";") {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		headers.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	return strings.Join([]string{r.Method, path, strings.Join(query, "&"), headers.String(), signedHeaders, payload}, "\n")
}

// awsEscape is SigV4's URI encoding: RFC 3986 unreserved characters kept.
func awsEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func writeXML(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, body)
}

func stsError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `<ErrorResponse xmlns="`+stsNS+`"><Error><Type>Sender</Type><Code>`+code+`</Code><Message>`+xmlEscape(message)+`</Message></Error><RequestId>1</RequestId></ErrorResponse>`)
}

func eksError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	writeJSON(w, status, map[string]string{"message": message})
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
