package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/sigv4"
)

// dial opens a raw connection to the gateway.
func (e *env) dial(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c := dialRaw(t, strings.TrimPrefix(e.endpoint, "http://"), 10*time.Second)
	return c, bufio.NewReader(c)
}

// dialRaw opens a raw connection to addr whose reads and writes must all be
// done within d; it is closed when the test ends.
func dialRaw(t testing.TB, addr string, d time.Duration) net.Conn {
	t.Helper()
	c := testsupport.Dial(t, addr, d)
	t.Cleanup(func() { c.Close() })
	return c
}

// exchange writes raw on a fresh connection to the gateway and reads the
// response to a request of method.
func (e *env) exchange(t *testing.T, raw, method string) (*http.Response, string) {
	t.Helper()
	c, br := e.dial(t)
	io.WriteString(c, raw)
	return readResponse(t, br, method)
}

func readResponse(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestExpectContinue: a request refused on its headers is answered before
// the client sends its body; an admitted one gets 100 Continue.
func TestExpectContinue(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	m := e.mint(time.Hour, b+":data/:rw")
	host := strings.TrimPrefix(e.endpoint, "http://")
	body := strings.Repeat("x", 1000)
	// sendHead sends the head of a PUT of body to key with Expect:
	// 100-continue, and nothing of the body.
	sendHead := func(t *testing.T, key string) (net.Conn, *bufio.Reader) {
		t.Helper()
		r := &rawRequest{method: "PUT", path: "/" + b + "/" + key, payload: sigv4.UnsignedPayload,
			contentLength: int64(len(body)), header: []sigv4.Header{{Name: []byte("Expect"), Value: []byte("100-continue")}}}
		head, _ := r.sign(host, m, time.Now())
		c, br := e.dial(t)
		io.WriteString(c, head)
		return c, br
	}

	t.Run("refused", func(t *testing.T) {
		_, br := sendHead(t, "secret/k")
		// No body is sent: the answer must come anyway.
		resp, got := readResponse(t, br, "PUT")
		if resp.StatusCode != 403 || !strings.Contains(got, "<Code>AccessDenied</Code>") {
			t.Fatalf("got %d %s, want 403 AccessDenied", resp.StatusCode, got)
		}
		if resp.Header.Get("x-amz-request-id") == "" || !strings.Contains(got, "<RequestId>"+resp.Header.Get("x-amz-request-id")+"</RequestId>") {
			t.Fatalf("request id missing or inconsistent: %v %s", resp.Header, got)
		}
		if _, ok := e.getDirect(b, "secret/k"); ok {
			t.Fatal("object created")
		}
	})
	t.Run("admitted", func(t *testing.T) {
		c, br := sendHead(t, "data/k")
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
			t.Fatalf("got %q %v, want 100 Continue", line, err)
		}
		if l, _ := br.ReadString('\n'); l != "\r\n" {
			t.Fatalf("100 Continue not followed by an empty line: %q", l)
		}
		io.WriteString(c, body)
		resp, got := readResponse(t, br, "PUT")
		if resp.StatusCode != 200 {
			t.Fatalf("got %d %s", resp.StatusCode, got)
		}
		if v, _ := e.getDirect(b, "data/k"); v != body {
			t.Fatalf("backend has %q", v)
		}
	})
}

// TestMalformedRequests: framing and header abuse is answered with an S3
// error and never reaches the backend.
func TestMalformedRequests(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "data/k", "old")
	m := e.mint(time.Hour, b+":data/:rw")
	host := strings.TrimPrefix(e.endpoint, "http://")

	t.Run("content-length and transfer-encoding", func(t *testing.T) {
		r := &rawRequest{method: "PUT", path: "/" + b + "/data/k", payload: sigv4.UnsignedPayload, contentLength: 3,
			header: []sigv4.Header{{Name: []byte("Transfer-Encoding"), Value: []byte("chunked")}}}
		head, _ := r.sign(host, m, time.Now())
		resp, got := e.exchange(t, head+"3\r\nnew\r\n0\r\n\r\n", "PUT")
		if resp.StatusCode != 400 || !strings.Contains(got, "<Code>InvalidRequest</Code>") {
			t.Fatalf("got %d %s", resp.StatusCode, got)
		}
		if !resp.Close {
			t.Fatal("connection kept open after a smuggling attempt")
		}
	})
	t.Run("duplicate authorization", func(t *testing.T) {
		r := &rawRequest{method: "GET", path: "/" + b + "/data/k", payload: sigv4.UnsignedPayload, contentLength: -1}
		head, _ := r.sign(host, m, time.Now())
		i := strings.Index(head, "Authorization: ")
		j := strings.Index(head[i:], "\r\n") + i + 2
		head = head[:j] + head[i:j] + head[j:]
		resp, got := e.exchange(t, head, "GET")
		if resp.StatusCode != 400 || !strings.Contains(got, "<Code>InvalidRequest</Code>") {
			t.Fatalf("got %d %s", resp.StatusCode, got)
		}
	})
	t.Run("oversized headers", func(t *testing.T) {
		resp, got := e.exchange(t, "GET /"+b+"/data/k HTTP/1.1\r\nHost: "+host+"\r\nX-Big: "+strings.Repeat("a", DefaultMaxHeaderBytes)+"\r\n\r\n", "GET")
		if resp.StatusCode != 431 || !strings.Contains(got, "<Code>RequestHeaderSectionTooLarge</Code>") {
			t.Fatalf("got %d %s", resp.StatusCode, got)
		}
	})
	t.Run("session token not signed", func(t *testing.T) {
		r := &rawRequest{method: "PUT", path: "/" + b + "/data/k", payload: sigv4.UnsignedPayload, contentLength: 3, unsignedToken: true}
		head, _ := r.sign(host, m, time.Now())
		resp, got := e.exchange(t, head+"new", "PUT")
		if resp.StatusCode != 403 || !strings.Contains(got, "<Code>AccessDenied</Code>") || !strings.Contains(got, "not signed") {
			t.Fatalf("got %d %s", resp.StatusCode, got)
		}
	})
	for name, raw := range map[string]string{
		"duplicate content-length": "PUT /" + b + "/data/k HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nnew",
		"duplicate host":           "GET /" + b + "/data/k HTTP/1.1\r\nHost: " + host + "\r\nHost: evil\r\n\r\n",
		"unknown transfer coding":  "PUT /" + b + "/data/k HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: gzip\r\n\r\nnew",
		"garbage request line":     "NOT HTTP\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			resp, got := e.exchange(t, raw, "GET")
			if resp.StatusCode != 400 || !strings.Contains(got, "<Code>InvalidRequest</Code>") {
				t.Fatalf("got %d %s", resp.StatusCode, got)
			}
		})
	}
	t.Run("anonymous", func(t *testing.T) {
		resp, got := e.exchange(t, "GET /"+b+"/data/k HTTP/1.1\r\nHost: "+host+"\r\n\r\n", "GET")
		if resp.StatusCode != 403 || !strings.Contains(got, "<Code>AccessDenied</Code>") {
			t.Fatalf("got %d %s", resp.StatusCode, got)
		}
	})
	t.Run("absolute-form target", func(t *testing.T) {
		resp, got := e.exchange(t, "GET http://"+host+"/"+b+"/data/k HTTP/1.1\r\nHost: "+host+"\r\n\r\n", "GET")
		if resp.StatusCode != 400 && resp.StatusCode != 403 {
			t.Fatalf("got %d %s", resp.StatusCode, got)
		}
	})
	if got, _ := e.getDirect(b, "data/k"); got != "old" {
		t.Fatalf("backend object is %q", got)
	}
}

// TestPresigned: presigned GET and PUT URLs of a minted credential work
// through the gateway, and the presign parameters stay with us.
func TestPresigned(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	c, _ := e.client(b + ":data/:rw")
	ps := s3.NewPresignClient(c)
	ctx := context.Background()

	presigned := func(p *v4.PresignedHTTPRequest, err error) *v4.PresignedHTTPRequest {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// send sends a presigned request with body and reads the answer.
	send := func(p *v4.PresignedHTTPRequest, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(p.Method, p.URL, strings.NewReader(body))
		for k, v := range p.SignedHeader {
			req.Header[k] = v
		}
		return testsupport.Do(t, req)
	}

	if code, got := send(presigned(ps.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data/pre signed")})), "via presigned put"); code != 200 {
		t.Fatalf("presigned put: %d %s", code, got)
	}
	if got, _ := e.getDirect(b, "data/pre signed"); got != "via presigned put" {
		t.Fatalf("backend has %q", got)
	}
	if code, got := send(presigned(ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/pre signed")})), ""); code != 200 || got != "via presigned put" {
		t.Fatalf("presigned get: %d %s", code, got)
	}
	if code, _ := send(presigned(ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("secret/x")})), ""); code != 403 {
		t.Fatalf("presigned get outside the grant: %d", code)
	}
}

// TestUpstreamUnreachable: a dead backend is 503 ServiceUnavailable, counted.
func TestUpstreamUnreachable(t *testing.T) {
	dead := "http://" + testsupport.FreeAddr(t)
	e := newEnv(t, func(c *Config, _ *Deps) {
		c.Upstream.Endpoint = dead
		c.Upstream.ConnectTimeout = time.Second
	})
	c, _ := e.client("lake:data/:rw")
	_, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String("data/x")})
	if code := errorCode(err); code != "ServiceUnavailable" || httpStatus(err) != 503 {
		t.Fatalf("got %q %d (%v)", code, httpStatus(err), err)
	}
	if err := e.srv.Ready(context.Background()); err == nil {
		t.Fatal("ready with a dead upstream")
	}
	if v := counterValue(t, e.registry, "duckicelake_gateway_upstream_errors_total", "kind", "dial"); v < 1 {
		t.Fatalf("upstream dial errors counted %v", v)
	}
}

// TestVirtualHostedAndForwarded: the bucket may come from the Host header,
// and behind a trusted proxy from X-Forwarded-Host; an untrusted
// X-Forwarded-Host changes nothing.
func TestVirtualHostedAndForwarded(t *testing.T) {
	for _, trust := range []bool{false, true} {
		e := newEnv(t, func(c *Config, _ *Deps) {
			c.VirtualHostSuffixes = []string{"s3.test"}
			c.TrustForwarded = trust
		})
		b := e.bucket()
		e.putDirect(b, "data/v", "virtual")
		m := e.mint(time.Hour, b+":data/:r")
		vhost := b + ".s3.test"

		// Signed for the virtual host, sent with it as Host.
		r := &rawRequest{method: "GET", path: "/data/v", payload: sigv4.UnsignedPayload, contentLength: -1}
		head, _ := r.sign(vhost, m, time.Now())
		resp, got := e.exchange(t, strings.Replace(head, "host: ", "Host: ", 1), "GET")
		if resp.StatusCode != 200 || got != "virtual" {
			t.Fatalf("virtual-hosted GET: %d %s", resp.StatusCode, got)
		}

		// Signed for the virtual host, arriving through a proxy that kept
		// it in X-Forwarded-Host.
		head, _ = r.sign(vhost, m, time.Now())
		head = strings.Replace(head, "host: "+vhost, "Host: 127.0.0.1\r\nX-Forwarded-Host: "+vhost, 1)
		resp, got = e.exchange(t, head, "GET")
		if trust && (resp.StatusCode != 200 || got != "virtual") {
			t.Fatalf("trusted X-Forwarded-Host: %d %s", resp.StatusCode, got)
		}
		if !trust && resp.StatusCode == 200 {
			t.Fatalf("untrusted X-Forwarded-Host was honoured: %s", got)
		}
	}
}

// TestTimeouts: a client that stalls in its headers or mid-body is cut off,
// and a stalled upload leaves nothing on the backend.
func TestTimeouts(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *Deps) {
		c.HeaderReadTimeout = 300 * time.Millisecond
		c.BodyReadTimeout = 300 * time.Millisecond
	})
	b := e.bucket()
	m := e.mint(time.Hour, b+":data/:rw")
	host := strings.TrimPrefix(e.endpoint, "http://")

	c, br := e.dial(t)
	io.WriteString(c, "GET /"+b+"/data/x HTTP/1.1\r\nHost: "+host+"\r\n")
	start := time.Now()
	all, err := io.ReadAll(br) // the answer, then the connection closes
	if err != nil || !strings.Contains(string(all), "<Code>RequestTimeout</Code>") {
		t.Fatalf("stalled header: %v %q", err, all)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stalled header cut off after %v", d)
	}

	body := strings.Repeat("b", 256<<10)
	r := &rawRequest{method: "PUT", path: "/" + b + "/data/stalled", payload: sigv4.UnsignedPayload, contentLength: int64(len(body))}
	head, _ := r.sign(host, m, time.Now())
	c, br = e.dial(t)
	io.WriteString(c, head+body[:100<<10])
	start = time.Now()
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("stalled upload answered 200")
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stalled body cut off after %v", d)
	}
	time.Sleep(100 * time.Millisecond)
	if _, ok := e.getDirect(b, "data/stalled"); ok {
		t.Fatal("a stalled upload created the object")
	}
}

// TestConnectionLimit: connections beyond MaxConns are answered 503 (which
// S3 clients retry) instead of queueing without bound.
func TestConnectionLimit(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *Deps) { c.MaxConns = 1 })
	first, _ := e.dial(t)
	io.WriteString(first, "GET / HTTP/1.1\r\n") // holds the only slot, mid-request
	time.Sleep(100 * time.Millisecond)
	_, br := e.dial(t)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("second connection: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("second connection answered %d, want 503", resp.StatusCode)
	}
}
