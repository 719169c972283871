package registrytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// tokenServer issues the bearer tokens of the Docker Registry v2 token
// specification, as GHCR, Docker Hub and Harbor do: it checks the
// client's basic credentials once (bcrypt, like htpasswd), grants every
// requested pull and push scope, and signs an ES256 JSON Web Token the
// registry verifies with the certificate it was configured with.
type tokenServer struct {
	srv     *http.Server
	realm   string
	key     *ecdsa.PrivateKey
	kid     string
	hash    []byte
	service string
	issued  atomic.Int64
}

// startTokenServer serves tokens on 127.0.0.1 and writes the certificate
// of its signing key to certPath. The realm names localhost: clients
// (go-containerregistry) refuse a realm that is a loopback IP literal on
// another port than the registry's.
func startTokenServer(certPath, service string, hash []byte) (*tokenServer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: service},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ts := &tokenServer{key: key, kid: keyID(pub), hash: hash, service: service, realm: fmt.Sprintf("http://localhost:%d/token", l.Addr().(*net.TCPAddr).Port)}
	ts.srv = &http.Server{Handler: http.HandlerFunc(ts.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = ts.srv.Serve(l) }()
	return ts, nil
}

// keyID is the libtrust fingerprint the registry expects in "kid": the
// SHA-256 of the DER public key, cut to 240 bits, in 12 base32 groups.
func keyID(der []byte) string {
	sum := sha256.Sum256(der)
	s := base32.StdEncoding.EncodeToString(sum[:30])
	groups := make([]string, 0, 12)
	for i := 0; i < len(s); i += 4 {
		groups = append(groups, s[i:i+4])
	}
	return strings.Join(groups, ":")
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || user != Username || bcrypt.CompareHashAndPassword(ts.hash, []byte(pass)) != nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="ferry-registrytest"`)
		http.Error(w, `{"errors": [{"code": "UNAUTHORIZED", "message": "bad credentials"}]}`, http.StatusUnauthorized)
		return
	}
	type access struct {
		Type    string   `json:"type"`
		Name    string   `json:"name"`
		Actions []string `json:"actions"`
	}
	grants := []access{}
	for _, scope := range r.URL.Query()["scope"] {
		// repository:NAME:ACTIONS; NAME may hold a port's colon only for
		// registries, never here.
		parts := strings.Split(scope, ":")
		if len(parts) != 3 || parts[0] != "repository" {
			continue
		}
		var actions []string
		for _, a := range strings.Split(parts[2], ",") {
			if a == "pull" || a == "push" {
				actions = append(actions, a)
			}
		}
		grants = append(grants, access{Type: "repository", Name: parts[1], Actions: actions})
	}
	now := time.Now()
	claims := map[string]any{
		"iss": ts.service, "sub": user, "aud": ts.service,
		"exp": now.Add(10 * time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(),
		"jti":    base64.RawURLEncoding.EncodeToString(randomBytes(12)),
		"access": grants,
	}
	ts.issued.Add(1)
	token, err := ts.sign(claims)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": token, "access_token": token, "expires_in": 600, "issued_at": now.UTC().Format(time.RFC3339)})
}

func (ts *tokenServer) sign(claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"typ": "JWT", "alg": "ES256", "kid": ts.kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(signed))
	rr, ss, err := ecdsa.Sign(rand.Reader, ts.key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	rr.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

func (ts *tokenServer) close() { _ = ts.srv.Close() }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
