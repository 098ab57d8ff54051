package rest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// TestRequestContextClientGone serves a handler over real TCP whose work
// waits on the request context: the client hanging up must cancel it with
// errClientGone, and a request that finishes must leave the kept-alive
// connection usable for the next one (the watcher's deadline cleared,
// nothing of the next request consumed).
func TestRequestContextClientGone(t *testing.T) {
	s := &Server{cfg: Config{RequestTimeout: time.Hour}}
	causes := make(chan error, 1)
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) {
		ctx, done := s.requestContext(rc)
		defer done()
		if string(rc.Path()) == "/quick" {
			rc.SetBodyString("ok")
			return
		}
		select {
		case <-ctx.Done():
			causes <- ctx.(*reqContext).Cause()
		case <-time.After(testsupport.WaitTimeout):
			causes <- errors.New("the context was not cancelled")
		}
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	testsupport.Serve(t, ln, srv.Serve, srv.ShutdownWithContext)

	// Two pipelined quick requests on one connection, then a third later:
	// all three answered.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	req := "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n"
	if _, err := io.WriteString(c, req+req); err != nil {
		t.Fatal(err)
	}
	readAnswers(t, c, br, 2)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	readAnswers(t, c, br, 1)

	// A slow request whose client goes away.
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c2, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if got := <-causes; !errors.Is(got, errClientGone) {
		t.Fatalf("cause = %v, want errClientGone", got)
	}
}

// TestRequestContextDeadline: the request timeout cancels the context with
// DeadlineExceeded while the client waits.
func TestRequestContextDeadline(t *testing.T) {
	s := &Server{cfg: Config{RequestTimeout: time.Millisecond}}
	var rc fasthttp.RequestCtx
	ctx, done := s.requestContext(&rc)
	defer done()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", ctx.Err())
	}
}

func readAnswers(t *testing.T, c net.Conn, br *bufio.Reader, n int) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(testsupport.WaitTimeout)); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		var resp fasthttp.Response
		if err := resp.Read(br); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if resp.StatusCode() != 200 || string(resp.Body()) != "ok" {
			t.Fatalf("answer %d: %d %q", i, resp.StatusCode(), resp.Body())
		}
	}
}

// TestRequestContextLazy: a request that never waits arms nothing, yet its
// context reports the deadline from the clock; one released before Done
// is asked for is done at once; Err never reports before Done is closed.
func TestRequestContextLazy(t *testing.T) {
	s := &Server{cfg: Config{RequestTimeout: time.Millisecond}}
	var rc fasthttp.RequestCtx
	ctx, done := s.requestContext(&rc)
	c := ctx.(*reqContext)
	if c.timer != nil || c.stop != nil || c.done != nil {
		t.Fatal("armed before Done was asked for")
	}
	if d, ok := ctx.Deadline(); !ok || d.IsZero() {
		t.Fatalf("Deadline = %v, %v", d, ok)
	}
	time.Sleep(2 * time.Millisecond)
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err past the deadline = %v", ctx.Err())
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Err reported DeadlineExceeded but Done is open")
	}
	done()

	s.cfg.RequestTimeout = time.Hour
	ctx, done = s.requestContext(&rc)
	if ctx.Err() != nil {
		t.Fatalf("Err = %v before the deadline", ctx.Err())
	}
	done()
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done open after release")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err after release = %v", ctx.Err())
	}
	// A context derived from it is cancelled with it.
	ctx, done = s.requestContext(&rc)
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	done()
	select {
	case <-child.Done():
	case <-time.After(testsupport.WaitTimeout):
		t.Fatal("a derived context outlived the request")
	}
}

func TestAppendAddr(t *testing.T) {
	for _, tt := range []struct {
		a    net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5432}, "10.1.2.3:5432"}, // 16-byte form, IPv4-mapped
		{&net.TCPAddr{IP: net.IP{127, 0, 0, 1}, Port: 80}, "127.0.0.1:80"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 443}, "[2001:db8::1]:443"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "/run/x.sock"},
		{nil, ""},
	} {
		if got := string(appendAddr(nil, tt.a)); got != tt.want {
			t.Errorf("appendAddr(%v) = %q, want %q", tt.a, got, tt.want)
		}
		if tt.a != nil {
			if s := tt.a.String(); s != tt.want {
				t.Errorf("%v: String() = %q, appendAddr differs", tt.a, s)
			}
		}
	}
}
