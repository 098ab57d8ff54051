package sigv4interop

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/sigv4"
)

// The credentials every client signs with. The session token has '/', '+'
// and '=' so presigned URLs must percent-encode it.
const (
	region       = "us-east-1"
	bucket       = "interop-bucket"
	plainKeyID   = "AKIAINTEROPPLAIN0001"
	plainSecret  = "interop/plain+Secret0123456789abcdefEXAMPLE"
	tokenKeyID   = "ASIAINTEROPTOKEN0002"
	tokenSecret  = "interop/token+Secret0123456789abcdefEXAMPLE"
	sessionToken = "IQoJb3JpZ2luX2VjEInteropSessionToken/with+plus/and=equals=="
)

// creds is what a client signs with.
type creds struct{ KeyID, Secret, Token string }

var (
	withToken = creds{tokenKeyID, tokenSecret, sessionToken}
	noToken   = creds{plainKeyID, plainSecret, ""}
)

// requireCreds fails t for every verified exchange not signed with c.
func requireCreds(t testing.TB, exs []*exchange, c creds) {
	t.Helper()
	for _, e := range exs {
		if e.Err == nil && (e.KeyID != c.KeyID || e.Token != (c.Token != "")) {
			t.Errorf("%s %s: verified as key %s (token %v), want %s (token %v)",
				e.Method, e.Target, e.KeyID, e.Token, c.KeyID, c.Token != "")
		}
	}
}

// staticStore is a CredentialStore over fixed credentials: a key without a
// session token and a key that requires one.
type staticStore map[string]struct{ secret, token string }

func testStore() staticStore {
	return staticStore{
		plainKeyID: {plainSecret, ""},
		tokenKeyID: {tokenSecret, sessionToken},
	}
}

func (s staticStore) Secret(accessKeyID, token []byte) ([]byte, error) {
	c, ok := s[string(accessKeyID)]
	if !ok {
		return nil, &sigv4.Error{Code: sigv4.ErrInvalidAccessKeyID, Message: "unknown access key"}
	}
	if c.token != string(token) {
		return nil, &sigv4.Error{Code: sigv4.ErrInvalidToken, Message: "session token does not match"}
	}
	return []byte(c.secret), nil
}

// exchange is one request as the capture server saw it.
type exchange struct {
	Op        string // S3 operation, as the fake S3 routed it
	Method    string
	Target    string // request-target as sent
	Raw       []byte // request bytes as read from the connection (TLS: after decryption)
	Presigned bool
	Mode      sigv4.PayloadMode
	KeyID     string
	Token     bool      // a session token came with the request
	Time      time.Time // the signed request time
	Decoded   []byte    // verified payload
	// Checksum is the header checksum verified on the body ("x-amz-checksum-crc32",
	// "content-md5") or the verified aws-chunked trailer, if any.
	Checksum string
	Err      error // verification or body error; nil when everything verified
}

// Result returns a short description for logs and the interop table.
func (e *exchange) Result() string {
	if e.Err != nil {
		return "FAIL " + sigv4.CodeOf(e.Err).String() + ": " + e.Err.Error()
	}
	return "ok"
}

// captureServer is a minimal S3 over a plain and a TLS listener that
// verifies every request with sigv4 before it answers.
type captureServer struct {
	t        testing.TB
	verifier *sigv4.Verifier
	store    sigv4.CredentialStore

	HTTPURL, HTTPSURL string
	CertPool          *x509.CertPool
	CAFile            string // PEM of the TLS certificate, for Python

	mu        sync.Mutex
	idle      *sync.Cond          // signalled when inflight drops to 0
	inflight  int                 // handlers running
	conns     map[string]*recConn // by remote address
	exchanges []*exchange
	taken     int
	s3        fakeS3
}

func newCaptureServer(t testing.TB) *captureServer {
	t.Helper()
	s := &captureServer{
		t:        t,
		verifier: sigv4.NewVerifier(region, "s3"),
		store:    testStore(),
		conns:    map[string]*recConn{},
		s3:       newFakeS3(),
	}
	s.idle = sync.NewCond(&s.mu)
	cert, pemBytes := selfSignedCert(t)
	s.CertPool = x509.NewCertPool()
	s.CertPool.AppendCertsFromPEM(pemBytes)
	s.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(s.CAFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	s.HTTPURL = "http://" + s.listen(t, nil)
	s.HTTPSURL = "https://" + s.listen(t, tlsConfig)
	return s
}

func (s *captureServer) listen(t testing.TB, tlsConfig *tls.Config) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	// One request per connection, so a connection's bytes are one request's.
	srv.SetKeepAlivesEnabled(false)
	go srv.Serve(&recListener{Listener: ln, tls: tlsConfig, s: s})
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// take returns the exchanges recorded since the previous call. It waits for
// running handlers: a client can have its response before the handler
// has recorded the exchange.
func (s *captureServer) take() []*exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inflight > 0 {
		s.idle.Wait()
	}
	ex := s.exchanges[s.taken:]
	s.taken = len(s.exchanges)
	return ex
}

// all returns every exchange recorded so far.
func (s *captureServer) all() []*exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*exchange(nil), s.exchanges...)
}

func (s *captureServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
	ex := &exchange{Method: r.Method, Target: r.RequestURI}
	ex.Err = verifyHTTP(s.verifier, s.store, r, ex)
	// Leave nothing unread, so the recorded bytes are the whole request.
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	if c := s.conns[r.RemoteAddr]; c != nil {
		ex.Raw = c.bytes()
		delete(s.conns, r.RemoteAddr)
	}
	s.mu.Unlock()

	if ex.Err != nil {
		ex.Op = "(rejected)"
		writeError(w, sigv4.CodeOf(ex.Err), ex.Err.Error())
	} else {
		ex.Op = s.s3.serve(w, r, ex.Decoded)
	}
	s.mu.Lock()
	s.exchanges = append(s.exchanges, ex)
	if s.inflight--; s.inflight == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// verifyHTTP verifies r with sigv4 and reads its body through the verified
// reader, filling ex. It is what the gateway will do for every request.
func verifyHTTP(v *sigv4.Verifier, store sigv4.CredentialStore, r *http.Request, ex *exchange) error {
	var res sigv4.Result
	if err := v.Verify(sigv4.FromHTTP(r), store, &res); err != nil {
		return err
	}
	ex.Presigned, ex.Mode, ex.Time = res.Presigned, res.Mode, res.Time
	ex.KeyID, ex.Token = string(res.AccessKeyID), len(res.SessionToken) > 0
	body, err := res.Body(r.Body, r.ContentLength)
	if err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if !res.Mode.Streaming() {
		// A checksum header on a plain body is the only integrity an
		// UNSIGNED-PAYLOAD body has; S3 checks it, and so does the gateway.
		for _, name := range []string{"content-md5", "x-amz-checksum-crc32", "x-amz-checksum-crc32c",
			"x-amz-checksum-crc64nvme", "x-amz-checksum-sha1", "x-amz-checksum-sha256"} {
			if v := r.Header.Get(name); v != "" {
				alg, ok := sigv4.ParseChecksumAlgorithm([]byte(name))
				if !ok {
					return fmt.Errorf("checksum %s not recognised by sigv4", name)
				}
				body = sigv4.NewChecksumReader(body, alg, []byte(v))
				ex.Checksum = name
			}
		}
	}
	ex.Decoded, err = io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("reading body: %w", err)
	}
	if c, ok := body.(interface{ Checksum() (name, value []byte) }); ok {
		if name, _ := c.Checksum(); len(name) > 0 {
			ex.Checksum = "trailer " + string(name)
		}
	}
	return nil
}

func writeError(w http.ResponseWriter, code sigv4.ErrorCode, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(code.HTTPStatus())
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>%s</Message><RequestId>interop</RequestId></Error>`,
		code, xmlEscape(msg))
}

// recListener wraps accepted connections (in TLS when configured) so the
// server can look up the plaintext bytes each request arrived as.
type recListener struct {
	net.Listener
	tls *tls.Config
	s   *captureServer
}

func (l *recListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc := &recConn{Conn: c}
	if l.tls != nil {
		// net/http sees a plain net.Conn and so speaks HTTP/1.1 over it.
		rc.Conn = tls.Server(c, l.tls)
	}
	l.s.mu.Lock()
	l.s.conns[c.RemoteAddr().String()] = rc
	l.s.mu.Unlock()
	return rc, nil
}

type recConn struct {
	net.Conn
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *recConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.buf.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func (c *recConn) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

func selfSignedCert(t testing.TB) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sigv4interop"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pemBytes
}

// modeName spells a payload mode as its x-amz-content-sha256 value.
func modeName(m sigv4.PayloadMode) string {
	switch m {
	case sigv4.PayloadUnsigned:
		return "UNSIGNED-PAYLOAD"
	case sigv4.PayloadSHA256:
		return "SHA256"
	case sigv4.PayloadStreamingSigned:
		return sigv4.StreamingPayload
	case sigv4.PayloadStreamingSignedTrailer:
		return sigv4.StreamingPayloadTrailer
	case sigv4.PayloadStreamingUnsignedTrailer:
		return sigv4.StreamingUnsignedTrailer
	}
	return fmt.Sprintf("PayloadMode(%d)", m)
}

// describe is the mode column of the interop table: presigned or the mode,
// with the checksum that protected the body.
func (e *exchange) describe() string {
	var b strings.Builder
	if e.Presigned {
		b.WriteString("presigned ")
	}
	b.WriteString(modeName(e.Mode))
	if e.Checksum != "" {
		b.WriteString(" + " + e.Checksum)
	}
	return b.String()
}

// requireVerified fails t for every exchange that did not verify.
func requireVerified(t testing.TB, exs []*exchange) {
	t.Helper()
	for _, e := range exs {
		if e.Err != nil {
			t.Errorf("%s %s: %v\nrequest:\n%s", e.Method, e.Target, e.Err, clip(e.Raw, 4096))
		}
	}
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + fmt.Sprintf("\n… (%d more bytes)", len(b)-n)
	}
	return string(b)
}
