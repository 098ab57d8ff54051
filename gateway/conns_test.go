package gateway

import (
	"bufio"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
)

// clientConn is a raw client connection from a chosen loopback address.
type clientConn struct {
	net.Conn
	br *bufio.Reader
}

func dialFrom(t *testing.T, from, addr string) *clientConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &clientConn{Conn: c, br: bufio.NewReader(c)}
}

// roundTrip sends an unsigned GET (the gateway answers AccessDenied itself)
// and reads the answer, keeping the connection open.
func (c *clientConn) roundTrip(t *testing.T) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c, "GET /lake/x HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestConnectionLimits: past max_connections_per_ip from one address, or
// max_connections in all, a connection is answered 503 SlowDown in S3 XML
// with a request id, counted and logged; other addresses are not held back
// by one address's limit; a closed connection frees its place.
func TestConnectionLimits(t *testing.T) {
	logs := &testsupport.SyncBuffer{}
	e := newEnv(t, func(c *Config, d *Deps) {
		c.MaxConns, c.MaxConnsPerIP = 4, 2
		d.Logger = NewLogger(logs, zapcore.WarnLevel)
	})
	addr := strings.TrimPrefix(e.endpoint, "http://")
	admitted := func(c *clientConn) {
		t.Helper()
		if resp, body := c.roundTrip(t); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("admitted connection answered %d %s", resp.StatusCode, body)
		}
	}
	refused := func(c *clientConn, reason string) {
		t.Helper()
		// Answered before any request is sent.
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("refused connection (%s): %v", reason, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "<Code>SlowDown</Code>") ||
			!strings.Contains(string(body), reason) {
			t.Fatalf("refused connection (%s): %d %s", reason, resp.StatusCode, body)
		}
		checkOneRequestID(t, "refused", resp, string(body))
	}

	a1, a2 := dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)
	admitted(a1)
	admitted(a2)
	refused(dialFrom(t, "127.0.0.1", addr), "from your address")
	b1, b2 := dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.3", addr)
	admitted(b1)
	admitted(b2)
	refused(dialFrom(t, "127.0.0.4", addr), "as many connections")

	// A closed connection frees its place once the gateway has seen it go.
	a1.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dialFrom(t, "127.0.0.1", addr)
		io.WriteString(c, "GET /lake/x HTTP/1.1\r\nHost: gw\r\n\r\n")
		resp, err := http.ReadResponse(c.br, nil)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the closed connection's place was never freed")
		}
		time.Sleep(10 * time.Millisecond)
	}

	if n := counterValue(t, e.registry, "duckicelake_gateway_refused_connections_total", "reason", "per_ip"); n < 1 {
		t.Errorf("per_ip refusals counted %v", n)
	}
	if n := counterValue(t, e.registry, "duckicelake_gateway_refused_connections_total", "reason", "max_connections"); n < 1 {
		t.Errorf("max_connections refusals counted %v", n)
	}
	if l := logs.String(); !strings.Contains(l, `"msg":"connection refused"`) || !strings.Contains(l, `"reason":"per_ip"`) {
		t.Errorf("refusals not logged: %s", l)
	}
}

// TestServerErrorsAreS3XML: what fasthttp rejects before any handler runs
// (headers too large, a request it cannot parse, headers that do not
// arrive in time) is answered in S3 XML with one request id, the body's.
func TestServerErrorsAreS3XML(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *Deps) { c.HeaderReadTimeout = 200 * time.Millisecond })
	addr := strings.TrimPrefix(e.endpoint, "http://")
	cases := []struct {
		name, req string
		status    int
		code      string
	}{
		{"headers too large", "GET /lake/x HTTP/1.1\r\nHost: gw\r\nX-Big: " + strings.Repeat("a", 40<<10) + "\r\n\r\n", 431, "RequestHeaderSectionTooLarge"},
		{"request target too large", "GET /lake/" + strings.Repeat("a", 40<<10) + " HTTP/1.1\r\nHost: gw\r\n\r\n", 431, "RequestHeaderSectionTooLarge"},
		{"many headers", "GET /lake/x HTTP/1.1\r\nHost: gw\r\n" + strings.Repeat("X-A: b\r\n", 5000) + "\r\n", 431, "RequestHeaderSectionTooLarge"},
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "InvalidRequest"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "InvalidRequest"},
		{"header without colon", "GET /lake/x HTTP/1.1\r\nHost: gw\r\nNoColon\r\n\r\n", 400, "InvalidRequest"},
		{"NUL in target", "GET /lake/x\x00y HTTP/1.1\r\nHost: gw\r\n\r\n", 400, "InvalidRequest"},
		{"bad Content-Length", "PUT /lake/x HTTP/1.1\r\nHost: gw\r\nContent-Length: abc\r\n\r\nhello", 400, "InvalidRequest"},
		{"two Content-Lengths", "PUT /lake/x HTTP/1.1\r\nHost: gw\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400, "InvalidRequest"},
		{"unknown Transfer-Encoding", "PUT /lake/x HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "InvalidRequest"},
		{"HTTP/1.0 chunked", "PUT /lake/x HTTP/1.0\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400, "InvalidRequest"},
		{"HTTP/1.0 without Host", "GET /lake/x HTTP/1.0\r\n\r\n", 403, "AccessDenied"},
		{"HTTP/1.0 Expect", "PUT /lake/x HTTP/1.0\r\nHost: gw\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello", 403, "AccessDenied"},
		{"headers time out", "GET /lake/x HTTP/1.1\r\nHost: gw\r\n", 400, "RequestTimeout"},
	}
	for _, tc := range cases {
		c := dialFrom(t, "127.0.0.1", addr)
		// A refused request may be answered before all of it is written.
		go io.WriteString(c, tc.req)
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/xml" ||
			!strings.Contains(string(body), "<Code>"+tc.code+"</Code>") {
			t.Errorf("%s: %d %q %s, want %d %s", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.code)
		}
		checkOneRequestID(t, tc.name, resp, string(body))
		c.Close()
	}
}
