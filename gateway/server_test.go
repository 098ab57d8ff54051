package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/s3test"
)

// The backend's root credentials and the gateway operator's.
const (
	backendKey    = "BACKENDROOTKEY"
	backendSecret = "backend-root-secret-0123456789abcdef"
	gwRootKey     = "GATEWAYROOTKEY"
	gwRootSecret  = "gateway-root-secret-0123456789abcdef"
)

// backend is the versitygw the tests share, started on first use.
var backend struct {
	once sync.Once
	dir  string
	v    *testsupport.Versitygw
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if backend.v != nil {
		_ = backend.v.Close()
	}
	if backend.dir != "" {
		_ = os.RemoveAll(backend.dir)
	}
	os.Exit(code)
}

// needBackend returns the endpoint of the shared versitygw; without the
// binary the test is testsupport.Missing.
func needBackend(t testing.TB) string {
	t.Helper()
	backend.once.Do(func() {
		if backend.dir, backend.err = os.MkdirTemp("", "gateway-test-s3-"); backend.err == nil {
			backend.v, backend.err = testsupport.StartVersitygw(backend.dir,
				testsupport.VersitygwOptions{AccessKey: backendKey, SecretKey: backendSecret})
		}
	})
	if errors.Is(backend.err, testsupport.ErrNoVersitygw) {
		testsupport.Missing(t, "%v", backend.err)
	}
	if backend.err != nil {
		t.Fatalf("versitygw: %v", backend.err)
	}
	return backend.v.Endpoint
}

// env is a gateway in front of the shared backend.
type env struct {
	t        testing.TB
	upstream string // backend endpoint
	endpoint string // gateway endpoint
	srv      *Server
	keyring  *creds.Keyring
	revoked  *creds.RevocationList
	audit    *testsupport.SyncBuffer
	registry *prometheus.Registry
	direct   *s3.Client // root client straight to the backend
}

type envOption func(*Config, *Deps)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	up := needBackend(t)
	e := &env{t: t, upstream: up, audit: &testsupport.SyncBuffer{}, revoked: &creds.RevocationList{}}
	var err error
	e.keyring, err = creds.NewKeyring(creds.Key{ID: "test1", Secret: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	e.keyring.Revocations = e.revoked
	root, err := creds.NewRoot(gwRootKey, gwRootSecret)
	if err != nil {
		t.Fatal(err)
	}
	e.registry = prometheus.NewRegistry()
	m, err := NewMetrics(e.registry)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Upstream: UpstreamConfig{
			Endpoint: up, AccessKeyID: backendKey, SecretAccessKey: backendSecret, PathStyle: true,
		},
	}
	deps := Deps{
		Logger:  NewLogger(&testWriter{t}, zapcore.WarnLevel),
		Audit:   governance.NewZapSink(NewLogger(e.audit, zapcore.InfoLevel)),
		Metrics: m,
		Keyring: e.keyring,
		Root:    root,
	}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	e.srv, err = New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	e.endpoint = "http://" + testsupport.ServeLocal(t, e.srv.Serve, e.srv.Shutdown)
	e.direct = s3test.Client(up, "", backendKey, backendSecret, "")
	return e
}

// testWriter sends the server's warnings to the test log.
type testWriter struct{ t testing.TB }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("server: %s", bytes.TrimSpace(p))
	return len(p), nil
}

// clientFor returns an S3 client through the gateway signing with m.
func (e *env) clientFor(m creds.Minted, opts ...func(*s3.Options)) *s3.Client {
	return s3test.Client(e.endpoint, "", m.AccessKeyID, m.SecretAccessKey, m.SessionToken, opts...)
}

// client returns an S3 client through the gateway for a credential minted
// with grants (each "bucket:prefix:access").
func (e *env) client(grants ...string) (*s3.Client, creds.Minted) {
	e.t.Helper()
	m := e.mint(time.Hour, grants...)
	return e.clientFor(m), m
}

func (e *env) mint(ttl time.Duration, grants ...string) creds.Minted {
	e.t.Helper()
	now := time.Now()
	if e.keyring.Now != nil {
		now = e.keyring.Now()
	}
	c := creds.Claims{Principal: "alice", Actor: creds.ActorHuman, Channel: creds.ChannelREST,
		Expiry: now.Add(ttl)}
	for _, g := range grants {
		gr, err := creds.ParseGrant(g)
		if err != nil {
			e.t.Fatal(err)
		}
		c.Grants = append(c.Grants, gr)
	}
	m, err := e.keyring.Mint(c)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// rootClient is the gateway operator's client through the gateway.
func (e *env) rootClient() *s3.Client {
	return s3test.Client(e.endpoint, "", gwRootKey, gwRootSecret, "")
}

var bucketSeq atomic.Int64

// bucket creates a fresh bucket directly on the backend.
func (e *env) bucket() string {
	e.t.Helper()
	name := fmt.Sprintf("gw%d-%d", time.Now().UnixNano()%1e9, bucketSeq.Add(1))
	if _, err := e.direct.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		e.t.Fatalf("create bucket: %v", err)
	}
	return name
}

// getBody gets in with c and returns the answer and its whole body; an
// error fails t.
func getBody(t *testing.T, c *s3.Client, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, string) {
	t.Helper()
	out, err := c.GetObject(context.Background(), in, opts...)
	if err != nil {
		t.Fatalf("get %s/%s (range %q): %v", aws.ToString(in.Bucket), aws.ToString(in.Key), aws.ToString(in.Range), err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("get %s/%s: read the body: %v", aws.ToString(in.Bucket), aws.ToString(in.Key), err)
	}
	return out, string(b)
}

// putDirect writes an object straight to the backend.
func (e *env) putDirect(bucket, key, body string) {
	e.t.Helper()
	_, err := e.direct.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: &bucket, Key: &key, Body: strings.NewReader(body)})
	if err != nil {
		e.t.Fatalf("direct put %s/%s: %v", bucket, key, err)
	}
}

// getDirect reads an object straight from the backend; ok is false when it
// does not exist.
func (e *env) getDirect(bucket, key string) (string, bool) {
	e.t.Helper()
	out, err := e.direct.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		var nsk interface{ ErrorCode() string }
		if errors.As(err, &nsk) && nsk.ErrorCode() == "NoSuchKey" {
			return "", false
		}
		e.t.Fatalf("direct get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		e.t.Fatal(err)
	}
	return b.String(), true
}

// errorCode returns the S3 error code of an SDK error, "" for nil.
func errorCode(err error) string {
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return err.Error()
}

// httpStatus returns the HTTP status of an SDK error, 0 if none.
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// auditLog returns the audit log once it holds at least n lines: a line is
// written after its response has gone out, so a client may see the
// response first.
func (e *env) auditLog(n int) string {
	e.t.Helper()
	var s string
	testsupport.Eventually(func() bool { s = e.audit.String(); return strings.Count(s, "\n") >= n })
	return s
}
