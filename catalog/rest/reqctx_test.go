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
			causes <- context.Cause(ctx)
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
