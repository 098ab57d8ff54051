package rest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/gateway"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/s3proto"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/sigv4"
)

// signFixture is a remote signer for the gateway, the real gateway (in
// process) that verifies what it signs, and a recording upstream behind it.
type signFixture struct {
	rs       *remoteSigner
	gw       string // the gateway's URL
	upstream *recorder
	keyring  *creds.Keyring
}

// recorder is the upstream: it answers every request 200 and remembers
// what the gateway forwarded.
type recorder struct {
	mu   sync.Mutex
	seen []string // "METHOD path?query"
	body [][]byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.URL.RequestURI())
	r.body = append(r.body, b)
	r.mu.Unlock()
	switch {
	case req.Method == http.MethodPost && req.URL.Query().Has("delete"):
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><DeleteResult></DeleteResult>`)
	case req.Method == http.MethodPost && req.URL.Query().Has("uploads"):
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>`)
	case req.Method == http.MethodGet && req.URL.Query().Get("list-type") == "2":
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult></ListBucketResult>`)
	case req.Method == http.MethodGet:
		io.WriteString(w, "hello")
	}
}

func (r *recorder) last() (string, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return "", nil
	}
	return r.seen[len(r.seen)-1], r.body[len(r.body)-1]
}

func newSignFixture(t *testing.T, authz governance.Authorizer, mod func(*Config)) *signFixture {
	t.Helper()
	k, err := creds.NewKeyring(creds.Key{ID: "k1", Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	f := &signFixture{upstream: &recorder{}, keyring: k}
	up := httptest.NewServer(f.upstream)
	t.Cleanup(up.Close)

	srv, err := gateway.New(gateway.Config{
		Upstream:            gateway.UpstreamConfig{Endpoint: up.URL, AccessKeyID: "UPKEY", SecretAccessKey: "upstream-secret-0123456789abcdef", PathStyle: true},
		VirtualHostSuffixes: []string{"s3.test"},
	}, gateway.Deps{Keyring: k})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	testsupport.Serve(t, ln, srv.Serve, srv.Shutdown)
	f.gw = "http://" + ln.Addr().String()

	cfg := Config{Name: "lake", GatewayURL: f.gw, Region: "us-east-1"}
	cfg.Signer.Upstream.Endpoint = "http://127.0.0.1:7070"
	cfg.Signer.VirtualHostSuffixes = []string{"s3.test"}
	if mod != nil {
		mod(&cfg)
	}
	if f.rs, err = newRemoteSigner(&cfg, k, authz, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	if f.rs == nil {
		t.Fatal("no signer")
	}
	return f
}

func principal(t *testing.T, scopes ...string) *Principal {
	t.Helper()
	gov, err := governance.ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	return &Principal{Subject: "tester", Scopes: scopes, gov: gov, Expiry: time.Now().Add(time.Hour)}
}

var ordersScope = tableScope{ns: "sales", table: "orders", bucket: "lake", prefix: "data/sales/orders/"}

func fixed(sc tableScope) resolver {
	return func(*s3proto.Request, [][]byte) (tableScope, error) { return sc, nil }
}

// send makes the request the client would make after signing: its own
// headers plus the signed ones, to the URI the signer returned.
func send(t *testing.T, in *signInput, out *signOutput, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(in.Method, out.URI, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range in.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for k, vs := range out.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return testsupport.Do(t, req)
}

func md5b64(s string) string {
	sum := md5.Sum([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func deleteBody(keys ...string) string {
	var b strings.Builder
	b.WriteString(`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	for _, k := range keys {
		b.WriteString("<Object><Key>" + k + "</Key></Object>")
	}
	b.WriteString("</Delete>")
	return b.String()
}

// TestSignForTheGateway: every request inside the table is signed and the
// real gateway accepts the signature and forwards exactly the checked
// object; every request outside it, or beyond the token's scope, is refused
// before signing.
func TestSignForTheGateway(t *testing.T) {
	f := newSignFixture(t, nil, nil)
	reader := principal(t, "ns:sales:r")
	writer := principal(t, "ns:sales:rw")
	obj := "/lake/data/sales/orders/data/f%201.parquet"
	del := deleteBody("data/sales/orders/data/a.parquet", "data/sales/orders/metadata/b.avro")
	delOutside := deleteBody("data/sales/orders/a.parquet", "data/sales/other/b.parquet")

	tests := []struct {
		name    string
		p       *Principal
		in      signInput
		body    string // sent to the gateway with the signed request
		code    int    // 0: signed; else the ErrorModel code of the refusal
		msg     string // part of the refusal's message
		forward string // what the upstream must receive
	}{
		{name: "GET", p: reader, in: signInput{Method: "GET", URI: f.gw + obj, Headers: map[string][]string{"Range": {"bytes=0-3"}, "User-Agent": {"test"}}},
			forward: "GET /lake/data/sales/orders/data/f%201.parquet"},
		{name: "HEAD", p: reader, in: signInput{Method: "HEAD", URI: f.gw + "/lake/data/sales/orders/metadata/v1.metadata.json"},
			forward: "HEAD /lake/data/sales/orders/metadata/v1.metadata.json"},
		{name: "list the table's metadata", p: reader, in: signInput{Method: "GET", URI: f.gw + "/lake?list-type=2&prefix=data%2Fsales%2Forders%2Fmetadata%2F&delimiter=%2F"},
			forward: "GET /lake?list-type=2&prefix=data%2Fsales%2Forders%2Fmetadata%2F&delimiter=%2F"},
		{name: "PUT", p: writer, in: signInput{Method: "PUT", URI: f.gw + obj, Headers: map[string][]string{"Content-Type": {"application/octet-stream"}, "Content-MD5": {md5b64("hello")}}},
			body: "hello", forward: "PUT /lake/data/sales/orders/data/f%201.parquet"},
		{name: "PUT with the body hash", p: writer, in: signInput{Method: "PUT", URI: f.gw + obj, Headers: map[string][]string{
			"x-amz-content-sha256": {"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}}},
			body: "hello", forward: "PUT /lake/data/sales/orders/data/f%201.parquet"},
		{name: "PUT with a checksum header", p: writer, in: signInput{Method: "PUT", URI: f.gw + obj, Headers: map[string][]string{
			"x-amz-checksum-crc32": {"NhCmhg=="}, "x-amz-sdk-checksum-algorithm": {"CRC32"}}},
			body: "hello", forward: "PUT /lake/data/sales/orders/data/f%201.parquet"},
		{name: "create multipart upload", p: writer, in: signInput{Method: "POST", URI: f.gw + obj + "?uploads"},
			forward: "POST /lake/data/sales/orders/data/f%201.parquet?uploads"},
		{name: "upload part", p: writer, in: signInput{Method: "PUT", URI: f.gw + obj + "?partNumber=1&uploadId=u1"},
			body: "part", forward: "PUT /lake/data/sales/orders/data/f%201.parquet?partNumber=1&uploadId=u1"},
		{name: "complete multipart upload", p: writer, in: signInput{Method: "POST", URI: f.gw + obj + "?uploadId=u1"},
			body:    `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag></Part></CompleteMultipartUpload>`,
			forward: "POST /lake/data/sales/orders/data/f%201.parquet?uploadId=u1"},
		{name: "abort multipart upload", p: writer, in: signInput{Method: "DELETE", URI: f.gw + obj + "?uploadId=u1"},
			forward: "DELETE /lake/data/sales/orders/data/f%201.parquet?uploadId=u1"},
		{name: "DELETE", p: writer, in: signInput{Method: "DELETE", URI: f.gw + obj},
			forward: "DELETE /lake/data/sales/orders/data/f%201.parquet"},
		{name: "DeleteObjects with its body", p: writer, in: signInput{Method: "POST", URI: f.gw + "/lake?delete", Body: &del,
			Headers: map[string][]string{"Content-MD5": {md5b64(del)}, "Content-Type": {"application/xml"}}},
			body: del, forward: "POST /lake?delete"},
		{name: "DeleteObjects without its body (PyIceberg)", p: writer, in: signInput{Method: "POST", URI: f.gw + "/lake?delete",
			Headers: map[string][]string{"Content-MD5": {md5b64(del)}}},
			body: del, forward: "POST /lake?delete"},
		{name: "copy inside the table", p: writer, in: signInput{Method: "PUT", URI: f.gw + obj,
			Headers: map[string][]string{"x-amz-copy-source": {"lake/data/sales/orders/data/old.parquet"}}},
			forward: "PUT /lake/data/sales/orders/data/f%201.parquet"},
		{name: "virtual-hosted uri, re-targeted path-style", p: reader, in: signInput{Method: "GET", URI: "http://lake.s3.test:9000/data/sales/orders/x.parquet"},
			forward: "GET /lake/data/sales/orders/x.parquet"},
		{name: "the upstream's uri, re-targeted at the gateway", p: reader, in: signInput{Method: "GET", URI: "http://127.0.0.1:7070/lake/data/sales/orders/x.parquet?x-id=GetObject"},
			forward: "GET /lake/data/sales/orders/x.parquet?x-id=GetObject"},

		{name: "key outside the table", p: writer, in: signInput{Method: "GET", URI: f.gw + "/lake/data/sales/other/x.parquet"}, code: 403, msg: "outside"},
		{name: "a sibling table sharing the name's prefix", p: writer, in: signInput{Method: "GET", URI: f.gw + "/lake/data/sales/orders2/x.parquet"}, code: 403},
		{name: "another bucket", p: writer, in: signInput{Method: "GET", URI: f.gw + "/other/data/sales/orders/x.parquet"}, code: 403},
		{name: "list wider than the table", p: reader, in: signInput{Method: "GET", URI: f.gw + "/lake?list-type=2&prefix=data%2Fsales%2F"}, code: 403},
		{name: "copy source outside", p: writer, in: signInput{Method: "PUT", URI: f.gw + obj,
			Headers: map[string][]string{"x-amz-copy-source": {"/lake/data/hr/salaries/x.parquet"}}}, code: 403, msg: "copy source"},
		{name: "DeleteObjects reaching outside", p: writer, in: signInput{Method: "POST", URI: f.gw + "/lake?delete", Body: &delOutside}, code: 403},
		{name: "read-only token signing PUT", p: reader, in: signInput{Method: "PUT", URI: f.gw + obj}, code: 403, msg: "only read"},
		{name: "read-only token signing DELETE", p: reader, in: signInput{Method: "DELETE", URI: f.gw + obj}, code: 403},
		{name: "read-only token signing multipart", p: reader, in: signInput{Method: "POST", URI: f.gw + obj + "?uploads"}, code: 403},
		{name: "read-only token signing a bodiless DeleteObjects", p: reader, in: signInput{Method: "POST", URI: f.gw + "/lake?delete"}, code: 403},
		{name: "token for another namespace", p: principal(t, "ns:hr:rw"), in: signInput{Method: "GET", URI: f.gw + obj}, code: 403},
		{name: "unknown sub-resource", p: writer, in: signInput{Method: "GET", URI: f.gw + obj + "?torrent"}, code: 403},
		{name: "bucket admin sub-resource", p: writer, in: signInput{Method: "PUT", URI: f.gw + "/lake?policy"}, code: 403},
		{name: "ListBuckets", p: writer, in: signInput{Method: "GET", URI: f.gw + "/"}, code: 403},
		{name: "PATCH", p: writer, in: signInput{Method: "PATCH", URI: f.gw + obj}, code: 403},
		{name: "dot-dot segment", p: writer, in: signInput{Method: "GET", URI: f.gw + "/lake/data/sales/orders/../../hr/x"}, code: 400},
		{name: "hoisted copy source", p: writer, in: signInput{Method: "PUT", URI: f.gw + obj + "?x-amz-copy-source=lake%2Fdata%2Fhr%2Fx"}, code: 400},
		{name: "foreign host", p: writer, in: signInput{Method: "GET", URI: "https://s3.amazonaws.com/lake/data/sales/orders/x"}, code: 403, msg: "host"},
		{name: "not http", p: writer, in: signInput{Method: "GET", URI: "s3://lake/data/sales/orders/x"}, code: 400},
		{name: "chunk-signed payload", p: writer, in: signInput{Method: "PUT", URI: f.gw + obj,
			Headers: map[string][]string{"x-amz-content-sha256": {sigv4.StreamingPayload}}}, code: 400, msg: "chunk signatures"},
		{name: "body hash mismatch", p: writer, in: signInput{Method: "POST", URI: f.gw + "/lake?delete", Body: &del,
			Headers: map[string][]string{"x-amz-content-sha256": {strings.Repeat("0", 64)}}}, code: 400},
		{name: "malformed DeleteObjects body", p: writer, in: signInput{Method: "POST", URI: f.gw + "/lake?delete", Body: new(string)}, code: 400},
		{name: "header with a newline", p: writer, in: signInput{Method: "GET", URI: f.gw + obj, Headers: map[string][]string{"X-Amz-Meta-A": {"a\r\nb: c"}}}, code: 400},
		{name: "unknown method", p: writer, in: signInput{Method: "BREW", URI: f.gw + obj}, code: 400},
		{name: "other provider", p: writer, in: signInput{Method: "GET", URI: f.gw + obj, Provider: "gcs"}, code: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := f.rs.sign(context.Background(), tt.p, &tt.in, fixed(ordersScope), time.Now())
			if tt.code != 0 {
				var e *Error
				if !errors.As(err, &e) || e.Code != tt.code || !strings.Contains(e.Message, tt.msg) {
					t.Fatalf("sign = %v, %v; want a %d containing %q", out, err, tt.code, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("sign: %v", err)
			}
			if !strings.HasPrefix(out.URI, f.gw+"/") {
				t.Errorf("signed uri %s does not point at the gateway %s", out.URI, f.gw)
			}
			for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
				if len(out.Headers[h]) != 1 {
					t.Errorf("headers = %v, want one %s", out.Headers, h)
				}
			}
			for k := range tt.in.Headers {
				if _, echoed := out.Headers[k]; echoed {
					t.Errorf("the client's header %s is echoed (PyIceberg would send it twice)", k)
				}
			}
			code, body := send(t, &tt.in, out, tt.body)
			if code >= 300 {
				t.Fatalf("gateway answered %d: %s", code, body)
			}
			seen, fwd := f.upstream.last()
			if seen != tt.forward {
				t.Errorf("upstream got %q, want %q", seen, tt.forward)
			}
			if tt.body != "" && string(fwd) != tt.body {
				t.Errorf("upstream got body %q, want %q", fwd, tt.body)
			}
		})
	}
}

// TestSignedRequestIsBound: a signature covers what was authorised; a
// client that changes the object, the method or a signed header after
// signing is refused by the gateway.
func TestSignedRequestIsBound(t *testing.T) {
	f := newSignFixture(t, nil, nil)
	writer := principal(t, "ns:sales:rw")
	in := signInput{Method: "GET", URI: f.gw + "/lake/data/sales/orders/a.parquet", Headers: map[string][]string{"Range": {"bytes=0-1"}}}
	out, err := f.rs.sign(context.Background(), writer, &in, fixed(ordersScope), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if code, body := send(t, &in, out, ""); code != 206 && code != 200 {
		t.Fatalf("as signed: %d %s", code, body)
	}
	tamper := []struct {
		name string
		edit func(in *signInput, out *signOutput)
	}{
		{"other key", func(_ *signInput, out *signOutput) { out.URI = strings.Replace(out.URI, "a.parquet", "b.parquet", 1) }},
		{"other table", func(_ *signInput, out *signOutput) { out.URI = strings.Replace(out.URI, "orders", "salaries", 1) }},
		{"other method", func(in *signInput, _ *signOutput) { in.Method = "DELETE" }},
		{"other range", func(in *signInput, _ *signOutput) { in.Headers = map[string][]string{"Range": {"bytes=0-99"}} }},
	}
	for _, tc := range tamper {
		t.Run(tc.name, func(t *testing.T) {
			in2 := in
			in2.Headers = map[string][]string{"Range": {"bytes=0-1"}}
			out2 := *out
			tc.edit(&in2, &out2)
			if code, body := send(t, &in2, &out2, ""); code != 403 && code != 400 {
				t.Errorf("tampered request answered %d: %s", code, body)
			}
		})
	}

	// A copy source added after signing is not covered by the signature,
	// but the credential is the table's: the gateway's own scope check
	// refuses a source outside it.
	put := signInput{Method: "PUT", URI: f.gw + "/lake/data/sales/orders/c.parquet", Headers: map[string][]string{}}
	out, err = f.rs.sign(context.Background(), writer, &put, fixed(ordersScope), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	put.Headers["X-Amz-Copy-Source"] = []string{"lake/data/hr/salaries/x.parquet"}
	if code, body := send(t, &put, out, ""); code != 403 {
		t.Errorf("copy source added after signing: %d %s", code, body)
	}
}

// denyAuthorizer denies reads of one key; erring fails every call.
type denyAuthorizer struct {
	key string
	err error
}

func (d denyAuthorizer) Authorize(_ context.Context, _ *governance.Principal, _ governance.Action, r *governance.Resource) (governance.Decision, error) {
	if d.err != nil {
		return governance.Decision{}, d.err
	}
	if string(r.Key) == d.key {
		return governance.Decision{Reason: "masked principals may not read base files", PolicyIDs: []string{"p1"}}, nil
	}
	return governance.Decision{Allow: true}, nil
}

func (d denyAuthorizer) AuthorizeBatch(ctx context.Context, p *governance.Principal, a governance.Action, rs []governance.Resource, out []governance.Decision) error {
	return governance.AuthorizeEach(ctx, d, p, a, rs, out)
}

// TestSignAsksTheAuthorizer: the governance hook runs after the scope
// check, for the key and the copy source, and any error denies.
func TestSignAsksTheAuthorizer(t *testing.T) {
	writer := principal(t, "ns:sales:rw")
	f := newSignFixture(t, denyAuthorizer{key: "data/sales/orders/base.parquet"}, nil)
	get := func(key string, hdr map[string][]string) error {
		in := signInput{Method: "GET", URI: f.gw + "/lake/" + key, Headers: hdr}
		_, err := f.rs.sign(context.Background(), writer, &in, fixed(ordersScope), time.Now())
		return err
	}
	if err := get("data/sales/orders/ok.parquet", nil); err != nil {
		t.Errorf("allowed key: %v", err)
	}
	if err := get("data/sales/orders/base.parquet", nil); err == nil || !strings.Contains(err.Error(), "masked") {
		t.Errorf("denied key: %v", err)
	}
	in := signInput{Method: "PUT", URI: f.gw + "/lake/data/sales/orders/copy.parquet",
		Headers: map[string][]string{"x-amz-copy-source": {"lake/data/sales/orders/base.parquet"}}}
	if _, err := f.rs.sign(context.Background(), writer, &in, fixed(ordersScope), time.Now()); err == nil {
		t.Error("a copy of a denied source was signed")
	}

	failing := newSignFixture(t, denyAuthorizer{err: errors.New("policy store down")}, nil)
	in = signInput{Method: "GET", URI: failing.gw + "/lake/data/sales/orders/ok.parquet"}
	_, err := failing.rs.sign(context.Background(), writer, &in, fixed(ordersScope), time.Now())
	var e *Error
	if !errors.As(err, &e) || e.Code != 403 || strings.Contains(e.Message, "policy store") {
		t.Errorf("authorizer error: %v; want a 403 that does not leak the error", err)
	}
}

// TestSignCredentialReuse: one minted credential serves a principal's
// requests for a table until half its lifetime has gone; another table or
// another access gets its own; none outlives the caller's token.
func TestSignCredentialReuse(t *testing.T) {
	f := newSignFixture(t, nil, func(c *Config) { c.Signer.CredentialTTL = 10 * time.Minute })
	p := principal(t, "ns:sales:rw")
	now := time.Now()
	tok := func(p *Principal, sc tableScope, at time.Time) string {
		t.Helper()
		in := signInput{Method: "GET", URI: f.gw + "/lake/" + sc.prefix + "x"}
		out, err := f.rs.sign(context.Background(), p, &in, fixed(sc), at)
		if err != nil {
			t.Fatal(err)
		}
		return out.Headers["X-Amz-Security-Token"][0]
	}
	first := tok(p, ordersScope, now)
	if tok(p, ordersScope, now.Add(4*time.Minute)) != first {
		t.Error("a fresh credential was minted with most of the old one's lifetime left")
	}
	if tok(p, ordersScope, now.Add(6*time.Minute)) == first {
		t.Error("a credential past half its lifetime was reused")
	}
	other := tableScope{ns: "sales", table: "items", bucket: "lake", prefix: "data/sales/items/"}
	if tok(p, other, now) == first {
		t.Error("two tables share a credential")
	}
	c, _, err := f.keyring.Verify(creds.AccessKeyIDFor(first), first, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Grants) != 1 || c.Grants[0] != (creds.Grant{Bucket: "lake", Prefix: "data/sales/orders/", Access: creds.Read | creds.Write | creds.List}) {
		t.Errorf("grants = %v", c.Grants)
	}

	short := principal(t, "ns:sales:r")
	short.Expiry = now.Add(time.Minute)
	c, _, err = f.keyring.Verify(creds.AccessKeyIDFor(tok(short, ordersScope, now)), tok(short, ordersScope, now), now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Expiry.After(short.Expiry) {
		t.Errorf("credential expires %v, after the token (%v)", c.Expiry, short.Expiry)
	}
	if c.Grants[0].Access != creds.Read|creds.List {
		t.Errorf("a reader's credential has %v", c.Grants[0].Access)
	}
}

// TestSignDirect: signed for the upstream with its root key, the request
// goes to the upstream's URL and verifies with the root secret; a
// DeleteObjects is bound to the body whose keys were checked.
func TestSignDirect(t *testing.T) {
	const key, secret = "UPROOT", "upstream-root-secret-0123456789abcdef"
	for _, pathStyle := range []bool{true, false} {
		cfg := Config{Name: "lake", Region: "us-east-1"}
		cfg.Signer = SignerConfig{Direct: true, Upstream: SignerUpstream{Endpoint: "https://objects.example:443", Region: "eu-central-1",
			AccessKeyID: key, SecretAccessKey: secret, PathStyle: pathStyle}}
		rs, err := newRemoteSigner(&cfg, nil, nil, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		writer := principal(t, "ns:sales:rw")
		now := time.Now()
		in := signInput{Method: "PUT", URI: "https://objects.example/lake/data/sales/orders/a%2Bb.parquet",
			Headers: map[string][]string{"Content-Type": {"application/octet-stream"}}}
		out, err := rs.sign(context.Background(), writer, &in, fixed(ordersScope), now)
		if err != nil {
			t.Fatal(err)
		}
		want := "https://objects.example/lake/data/sales/orders/a%2Bb.parquet"
		if !pathStyle {
			want = "https://lake.objects.example/data/sales/orders/a%2Bb.parquet"
		}
		if out.URI != want {
			t.Errorf("uri = %s, want %s", out.URI, want)
		}
		if _, ok := out.Headers["X-Amz-Security-Token"]; ok {
			t.Error("a root-key signature carries a session token")
		}
		if !strings.Contains(out.Headers["Authorization"][0], "Credential="+key+"/") ||
			!strings.Contains(out.Headers["Authorization"][0], "/eu-central-1/s3/aws4_request") {
			t.Errorf("authorization = %s", out.Headers["Authorization"])
		}
		verifyWithRoot(t, &in, out, "eu-central-1", key, secret, now)

		del := deleteBody("data/sales/orders/a.parquet")
		bodiless := signInput{Method: "POST", URI: "https://objects.example/lake?delete"}
		if _, err := rs.sign(context.Background(), writer, &bodiless, fixed(ordersScope), now); err == nil {
			t.Error("a DeleteObjects without its body was signed for the upstream")
		}
		unsigned := signInput{Method: "POST", URI: "https://objects.example/lake?delete", Body: &del,
			Headers: map[string][]string{"x-amz-content-sha256": {sigv4.UnsignedPayload}}}
		if _, err := rs.sign(context.Background(), writer, &unsigned, fixed(ordersScope), now); err == nil {
			t.Error("a DeleteObjects with an unsigned payload was signed for the upstream")
		}
		bound := signInput{Method: "POST", URI: "https://objects.example/lake?delete", Body: &del}
		out, err = rs.sign(context.Background(), writer, &bound, fixed(ordersScope), now)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Headers["x-amz-content-sha256"]; len(got) != 1 || len(got[0]) != 64 {
			t.Errorf("DeleteObjects payload hash = %v, want the body's SHA-256", got)
		}
	}
}

// verifyWithRoot checks a signed request with sigv4.Verifier as the
// upstream would.
func verifyWithRoot(t *testing.T, in *signInput, out *signOutput, region, key, secret string, now time.Time) {
	t.Helper()
	req, err := http.NewRequest(in.Method, out.URI, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range in.Headers {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	for k, vs := range out.Headers {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	req.RequestURI = req.URL.RequestURI()
	v := sigv4.NewVerifier(region, "s3")
	v.Now = func() time.Time { return now }
	var res sigv4.Result
	if err := v.Verify(sigv4.FromHTTP(req), rootStore{key, secret}, &res); err != nil {
		t.Errorf("the upstream would refuse the signature: %v", err)
	}
}

type rootStore struct{ key, secret string }

func (r rootStore) Secret(id, token []byte) ([]byte, error) {
	if string(id) != r.key || len(token) > 0 {
		return nil, &sigv4.Error{Code: sigv4.ErrInvalidAccessKeyID}
	}
	return []byte(r.secret), nil
}

// TestSignHandlerRefusesMalformedBodies: the sign routes answer 400 before
// looking anything up.
func TestSignHandlerRefusesMalformedBodies(t *testing.T) {
	f := newSignFixture(t, nil, nil)
	s := &Server{cfg: Config{Name: "lake", MaxBodyBytes: DefaultMaxBodyBytes}, signer: f.rs, log: zap.NewNop(), now: time.Now}
	for _, body := range []string{"", "{", `{"uri": 5}`, `{"method":"GET"}`, `{"uri":"http://x/","method":"get"}`, `{"uri":"x","method":"GET"} {}`} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetBodyString(body)
		r := &request{ctx: context.Background(), rc: &ctx, p: principal(t, "*"), ns: "sales", table: "orders"}
		for name, h := range map[string]func(*request) error{"table": s.signTable, "legacy": s.signLegacy} {
			err := h(r)
			var e *Error
			if !errors.As(err, &e) || e.Code != 400 {
				t.Errorf("%s route, body %q: %v; want 400", name, body, err)
			}
		}
	}
	none := &Server{cfg: Config{Name: "lake", MaxBodyBytes: DefaultMaxBodyBytes}, log: zap.NewNop(), now: time.Now}
	var ctx fasthttp.RequestCtx
	if err := none.signTable(&request{ctx: context.Background(), rc: &ctx, p: principal(t, "*"), ns: "s", table: "t"}); err == nil || err.(*Error).Code != 406 {
		t.Errorf("without a signer: %v", err)
	}
}

// TestRemoteSigningConfig: LoadTable's config for remote signing names the
// table's sign endpoint and carries no credential.
func TestRemoteSigningConfig(t *testing.T) {
	f := newSignFixture(t, nil, nil)
	s := &Server{cfg: Config{Name: "lake"}, signer: f.rs}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetHost("catalog.test:8181")
	ctx.Request.Header.Set("X-Iceberg-Access-Delegation", "vended-credentials, remote-signing")
	if !wantsRemoteSigning(&ctx) || !wantsVending(&ctx) {
		t.Fatal("delegation header not parsed")
	}
	cfg := s.remoteSigningConfig(&ctx, "sales q", "orders")
	want := map[string]string{
		"s3.remote-signing-enabled": "true",
		"s3.signer.uri":             "http://catalog.test:8181",
		"s3.signer.endpoint":        "v1/lake/namespaces/sales%20q/tables/orders/sign",
		"s3.signer":                 "S3V4RestSigner",
		"py-io-impl":                "pyiceberg.io.fsspec.FsspecFileIO",
		"s3.endpoint":               f.gw,
		"s3.path-style-access":      "true",
	}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("%s = %q, want %q", k, cfg[k], v)
		}
	}
	for k := range cfg {
		if strings.Contains(k, "key") || strings.Contains(k, "token") {
			t.Errorf("config carries %s", k)
		}
	}
	f.rs.catalogURL = "https://cat.example"
	if got := s.remoteSigningConfig(&ctx, "s", "t")["s3.signer.uri"]; got != "https://cat.example" {
		t.Errorf("configured catalog URL: %s", got)
	}
	e := &loadEntry{location: "s3://lake/m.json", metadata: []byte(`{}`)}
	body, err := s.remoteSigningBody(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Config             map[string]string `json:"config"`
		StorageCredentials []any             `json:"storage-credentials"`
	}
	if err := json.Unmarshal(body, &res); err != nil || res.Config["s3.signer"] != "S3V4RestSigner" || res.StorageCredentials != nil {
		t.Errorf("body %s: %v", body, err)
	}
}

func TestTableIndexFindsTheInnermostTable(t *testing.T) {
	idx := &tableIdx{tables: []tableScope{
		{ns: "a", table: "inner", bucket: "lake", prefix: "data/a/t/inner/"},
		{ns: "a", table: "t", bucket: "lake", prefix: "data/a/t/"},
		{ns: "a", table: "t2", bucket: "lake", prefix: "data/a/t2/"},
	}}
	for key, want := range map[string]string{
		"data/a/t/x.parquet":       "t",
		"data/a/t/inner/x.parquet": "inner",
		"data/a/t2/x":              "t2",
		"data/a/t":                 "",
		"data/b/x":                 "",
	} {
		sc, ok := idx.find([]byte("lake"), []byte(key))
		if ok != (want != "") || sc.table != want {
			t.Errorf("find(%s) = %v %v, want %q", key, sc.table, ok, want)
		}
	}
	if _, ok := idx.find([]byte("other"), []byte("data/a/t/x")); ok {
		t.Error("found a table in another bucket")
	}
}

func TestTableLocation(t *testing.T) {
	for path, want := range map[string][2]string{
		"s3://lake/data/s/t/": {"lake", "data/s/t/"},
		"s3://lake/data/s/t":  {"lake", "data/s/t/"},
		"s3://lake/":          {"lake", ""},
	} {
		b, p, ok := tableLocation(path)
		if !ok || b != want[0] || p != want[1] {
			t.Errorf("tableLocation(%s) = %s %s %v", path, b, p, ok)
		}
	}
	if _, _, ok := tableLocation("/local/dir/"); ok {
		t.Error("a local path has a location")
	}
	if _, err := scopeOf("s", ducklake.Table{Name: "t", Path: "file:///x/"}); err == nil {
		t.Error("a table off S3 has a scope")
	}
}

func TestNewRemoteSignerConfig(t *testing.T) {
	k, err := creds.NewKeyring(creds.Key{ID: "k1", Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		keys   *creds.Keyring
		none   bool
		errMsg string
	}{
		{name: "gateway", cfg: Config{GatewayURL: "http://gw:80"}, keys: k},
		{name: "no keyring", cfg: Config{GatewayURL: "http://gw:9000"}, none: true},
		{name: "no gateway", cfg: Config{}, keys: k, none: true},
		{name: "catalog URL with a path", cfg: Config{GatewayURL: "http://gw", Signer: SignerConfig{CatalogURL: "https://cat.example/iceberg/"}}, keys: k},
		{name: "catalog URL not http", cfg: Config{GatewayURL: "http://gw", Signer: SignerConfig{CatalogURL: "cat.example"}}, keys: k, errMsg: "catalog URL"},
		{name: "direct", cfg: Config{Signer: SignerConfig{Direct: true, Upstream: SignerUpstream{Endpoint: "https://s3.example", AccessKeyID: "a", SecretAccessKey: "b"}}}},
		{name: "direct without keys", cfg: Config{Signer: SignerConfig{Direct: true, Upstream: SignerUpstream{Endpoint: "https://s3.example"}}}, errMsg: "direct signing"},
		{name: "upstream with a path", cfg: Config{GatewayURL: "http://gw", Signer: SignerConfig{Upstream: SignerUpstream{Endpoint: "https://s3.example/x"}}}, keys: k, errMsg: "upstream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := newRemoteSigner(&tc.cfg, tc.keys, nil, zap.NewNop())
			switch {
			case tc.errMsg != "":
				if err == nil || !strings.Contains(err.Error(), tc.errMsg) {
					t.Errorf("err = %v, want %q", err, tc.errMsg)
				}
			case err != nil:
				t.Fatal(err)
			case tc.none != (rs == nil):
				t.Errorf("signer = %v, want none: %v", rs, tc.none)
			}
		})
	}
	rs, err := newRemoteSigner(&Config{GatewayURL: "http://GW.example:80"}, k, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if rs.endpoint != "http://GW.example" || !rs.knownHost("gw.example") || !rs.knownHost("lake.gw.example") || rs.knownHost("evilgw.example") {
		t.Errorf("endpoint %s, hosts %v", rs.endpoint, rs.hosts)
	}
}

// BenchmarkSign: one sign request for the gateway with a cached credential
// (classify, scope check, authorizer, SigV4).
func BenchmarkSign(b *testing.B) {
	k, err := creds.NewKeyring(creds.Key{ID: "k1", Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		b.Fatal(err)
	}
	rs, err := newRemoteSigner(&Config{Name: "lake", GatewayURL: "http://127.0.0.1:9000", Region: "us-east-1"}, k, nil, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	gov, _ := governance.ParseScopes([]string{"ns:sales:rw"})
	p := &Principal{Subject: "bench", gov: gov, Expiry: time.Now().Add(time.Hour)}
	in := signInput{Method: "GET", URI: "http://127.0.0.1:9000/lake/data/sales/orders/data/00001.parquet",
		Headers: map[string][]string{"User-Agent": {"bench"}, "Range": {"bytes=0-1023"}}}
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rs.sign(ctx, p, &in, fixed(ordersScope), now); err != nil {
			b.Fatal(err)
		}
	}
}
