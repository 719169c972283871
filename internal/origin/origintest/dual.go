package origintest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// NewDualServer serves h over TLS and plain HTTP on one port until the
// test ends, so that a test can redirect from https://127.0.0.1:PORT to
// http://127.0.0.1:PORT: the same host and port, another scheme. Origin
// is the https one.
func NewDualServer(t testing.TB, h http.Handler) *Server {
	t.Helper()
	cert, pair := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cert: cert}
	s.Server = httptest.NewUnstartedServer(s.record(h))
	s.Listener.Close()
	s.Listener = &dualListener{Listener: ln, tls: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}
	s.Start()
	s.URL = "https://" + ln.Addr().String()
	s.Origin = s.URL
	t.Cleanup(s.Close)
	return s
}

// selfSigned is a certificate for 127.0.0.1 and localhost, and its pair.
func selfSigned(t testing.TB) (*x509.Certificate, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "origintest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
}

// dualListener hands out each connection as TLS when its first byte
// starts a TLS handshake, else as it is.
type dualListener struct {
	net.Listener
	tls *tls.Config
}

func (l *dualListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	first, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	pc := &peekedConn{Conn: c, r: br}
	if err == nil && first[0] == 0x16 { // a TLS handshake record
		return tls.Server(pc, l.tls), nil
	}
	return pc, nil
}

// peekedConn reads what was peeked first.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Transport trusts s when it serves TLS (and reaches plain HTTP as
// http.DefaultTransport does).
func (s *Server) Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c := s.certificate(); c != nil {
		pool := x509.NewCertPool()
		pool.AddCert(c)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return tr
}

// CertPEM is the certificate of a TLS server in PEM, for SSL_CERT_FILE;
// nil for a plain one.
func (s *Server) CertPEM() []byte {
	c := s.certificate()
	if c == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func (s *Server) certificate() *x509.Certificate {
	if s.cert != nil {
		return s.cert
	}
	if s.TLS != nil {
		return s.Certificate()
	}
	return nil
}
