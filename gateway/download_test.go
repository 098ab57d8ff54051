package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/sigv4"
)

// rawUpstream is a TCP server that answers each request on a connection
// with whatever respond writes: tests control the framing byte by byte.
type rawUpstream struct {
	ln       net.Listener
	accepted atomic.Int32
	requests atomic.Int32
}

func newRawUpstream(t *testing.T, respond func(n int, req *http.Request, w *bufio.Writer) (keepOpen bool)) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.accepted.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br, bw := bufio.NewReader(c), bufio.NewWriter(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					n := int(u.requests.Add(1))
					keep := respond(n, req, bw)
					if bw.Flush() != nil || !keep {
						return
					}
				}
			}()
		}
	}()
	return u
}

func (u *rawUpstream) addr() string { return u.ln.Addr().String() }

// testDownloader returns a downloader whose idle connections close before
// the upstream's cleanup waits for them.
func testDownloader(t *testing.T, addr string, maxConns int, timeout time.Duration) *downloader {
	d := newDownloader(addr, nil, maxConns, time.Second, timeout, 30*time.Second)
	t.Cleanup(d.closeIdle)
	return d
}

func getRequest(addr, path string) *fasthttp.Request {
	req := new(fasthttp.Request)
	req.Header.SetMethod("GET")
	req.SetRequestURI(path)
	req.Header.SetHost(addr)
	req.UseHostHeader = true
	return req
}

// download runs one GET through d and reads the whole body.
func download(t *testing.T, d *downloader, path string) (int, string, error) {
	t.Helper()
	var resp fasthttp.Response
	var body downBody
	if err := d.do(getRequest(d.addr, path), &resp, &body); err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(&body)
	body.close(err != nil)
	return resp.StatusCode(), string(b), err
}

func TestDownloaderFraming(t *testing.T) {
	u := newRawUpstream(t, func(_ int, req *http.Request, w *bufio.Writer) bool {
		switch req.URL.Path {
		case "/length":
			w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
		case "/chunked":
			w.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
		case "/close":
			w.WriteString("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")
			return false
		case "/continue":
			w.WriteString("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope")
		case "/not-modified":
			w.WriteString("HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n")
		case "/empty":
			w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		}
		return true
	})
	for _, tc := range []struct {
		path, body string
		status     int
		reused     bool // the connection is kept for the next request
	}{
		{"/length", "hello", 200, true},
		{"/chunked", "hello world", 200, false},
		{"/close", "until the end", 200, false},
		{"/continue", "nope", 404, true},
		{"/not-modified", "", 304, true},
		{"/empty", "", 200, true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			d := testDownloader(t, u.addr(), 4, 5*time.Second)
			before := u.accepted.Load()
			status, body, err := download(t, d, tc.path)
			if err != nil || status != tc.status || body != tc.body {
				t.Fatalf("got %d %q %v, want %d %q", status, body, err, tc.status, tc.body)
			}
			if _, body, err := download(t, d, "/length"); err != nil || body != "hello" {
				t.Fatalf("next request: %q %v", body, err)
			}
			want := int32(2)
			if tc.reused {
				want = 1
			}
			if opened := u.accepted.Load() - before; opened != want {
				t.Fatalf("%d connections opened for two requests, want %d", opened, want)
			}
			d.closeIdle()
		})
	}
}

// TestDownloaderStaleConnection: a kept-alive connection the upstream closed
// while idle is retried once on a new connection.
func TestDownloaderStaleConnection(t *testing.T) {
	u := newRawUpstream(t, func(_ int, _ *http.Request, w *bufio.Writer) bool {
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return false // closes without saying so
	})
	d := testDownloader(t, u.addr(), 4, 5*time.Second)
	for i := range 3 {
		if status, body, err := download(t, d, "/x"); err != nil || status != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q %v", i, status, body, err)
		}
	}
	if u.accepted.Load() != 3 {
		t.Fatalf("%d connections for 3 requests on closed-after-use connections", u.accepted.Load())
	}
}

// TestDownloaderShortBody: an upstream that closes mid-body is an error, and
// its connection is not reused.
func TestDownloaderShortBody(t *testing.T) {
	u := newRawUpstream(t, func(n int, _ *http.Request, w *bufio.Writer) bool {
		if n == 1 {
			w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
			return false
		}
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return true
	})
	d := testDownloader(t, u.addr(), 4, 5*time.Second)
	if _, _, err := download(t, d, "/x"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short body: %v, want ErrUnexpectedEOF", err)
	}
	if _, body, err := download(t, d, "/x"); err != nil || body != "ok" {
		t.Fatalf("after a short body: %q %v", body, err)
	}
}

// TestDownloaderTimeout: an upstream that never answers fails the request
// after the response timeout.
func TestDownloaderTimeout(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	u := newRawUpstream(t, func(int, *http.Request, *bufio.Writer) bool { <-block; return false })
	d := testDownloader(t, u.addr(), 4, 200*time.Millisecond)
	start := time.Now()
	_, _, err := download(t, d, "/x")
	if err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
	if classifyUpstreamError(err) != upstreamErrTimeout {
		t.Fatalf("%v is not classified as a timeout", err)
	}
}

// TestDownloaderMaxConns: with every connection busy, a request waits for
// one to come back, and gives up after the connect timeout.
// answerOK is a rawUpstream handler answering 200 "ok", keeping the
// connection.
func answerOK(_ int, _ *http.Request, w *bufio.Writer) bool {
	w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	return true
}

func TestDownloaderMaxConns(t *testing.T) {
	u := newRawUpstream(t, answerOK)
	d := testDownloader(t, u.addr(), 1, 5*time.Second)
	d.connectTimeout = 300 * time.Millisecond
	var resp fasthttp.Response
	var held downBody
	if err := d.do(getRequest(d.addr, "/held"), &resp, &held); err != nil {
		t.Fatal(err)
	}
	if _, _, err := download(t, d, "/x"); !errors.Is(err, fasthttp.ErrNoFreeConns) {
		t.Fatalf("with the only connection busy: %v, want ErrNoFreeConns", err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		io.ReadAll(&held)
		held.close(false)
	}()
	if _, body, err := download(t, d, "/x"); err != nil || body != "ok" {
		t.Fatalf("after the connection came back: %q %v", body, err)
	}
	if u.accepted.Load() != 1 {
		t.Fatalf("%d connections with MaxConns 1", u.accepted.Load())
	}
	d.closeIdle()
	if len(d.slots) != 0 {
		t.Fatalf("%d slots held after closeIdle", len(d.slots))
	}
}

// gatewayOver runs a gateway in front of upstream addr and returns its
// address and a credential that may read and write bucket lake.
func gatewayOver(t *testing.T, addr string) (string, creds.Minted) {
	t.Helper()
	keyring, err := creds.NewKeyring(creds.Key{ID: "t", Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := keyring.Mint(creds.Claims{Principal: "t", Grants: []creds.Grant{{Bucket: "lake", Access: creds.Read | creds.Write}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Upstream: UpstreamConfig{Endpoint: "http://" + addr, AccessKeyID: "k", SecretAccessKey: "s",
		PathStyle: true, ResponseTimeout: 2 * time.Second}}, Deps{Logger: zap.NewNop(), Keyring: keyring})
	if err != nil {
		t.Fatal(err)
	}
	return testsupport.ServeLocal(t, s.Serve, s.Shutdown), m
}

// TestDownloadUpstreamCutOff: when the upstream stops mid-object, the client
// sees its response cut short (the connection closes), never a whole-looking
// body; the gateway's next download works.
func TestDownloadUpstreamCutOff(t *testing.T) {
	const size = 8 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	u := newRawUpstream(t, func(_ int, req *http.Request, w *bufio.Writer) bool {
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(size) + "\r\n\r\n")
		n := size
		if strings.HasSuffix(req.URL.Path, "/cut") {
			n = size / 2
		}
		for n > 0 {
			k := min(n, len(chunk))
			w.Write(chunk[:k])
			n -= k
		}
		return !strings.HasSuffix(req.URL.Path, "/cut")
	})
	gw, m := gatewayOver(t, u.addr())
	get := func(key string) (int64, error) {
		r := &rawRequest{method: "GET", path: "/lake/" + key, payload: sigv4.UnsignedPayload, contentLength: -1}
		head, _ := r.sign(gw, m, time.Now())
		c := testsupport.Dial(t, gw, 10*time.Second)
		defer c.Close()
		io.WriteString(c, head)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.ContentLength != size {
			t.Fatalf("status %d, length %d", resp.StatusCode, resp.ContentLength)
		}
		return io.Copy(io.Discard, resp.Body)
	}
	if n, err := get("cut"); err == nil || n >= size {
		t.Fatalf("cut-off download: %d bytes, %v", n, err)
	}
	for range 2 {
		if n, err := get("whole"); err != nil || n != size {
			t.Fatalf("whole download: %d bytes, %v", n, err)
		}
	}
}

// TestDownloaderIdleExpiry: idle connections close once unused for the idle
// period, without further traffic.
func TestDownloaderIdleExpiry(t *testing.T) {
	u := newRawUpstream(t, answerOK)
	d := testDownloader(t, u.addr(), 4, 5*time.Second)
	d.maxIdle = 50 * time.Millisecond
	if _, body, err := download(t, d, "/x"); err != nil || body != "ok" {
		t.Fatalf("%q %v", body, err)
	}
	var idle int
	if !testsupport.Eventually(func() bool {
		d.mu.Lock()
		idle = len(d.idle)
		d.mu.Unlock()
		return idle == 0 && len(d.slots) == 0
	}) {
		t.Fatalf("%d idle connections, %d slots held after the idle period", idle, len(d.slots))
	}
	// A new request after expiry dials again and works.
	if _, body, err := download(t, d, "/x"); err != nil || body != "ok" || u.accepted.Load() != 2 {
		t.Fatalf("%q %v, %d connections", body, err, u.accepted.Load())
	}
}
