package rest

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// errClientGone is the cause of a request context cancelled because the
// client closed its connection.
var errClientGone = errors.New("the client closed the connection")

// requestContext is the context a request's work runs under: the server's
// Config.RequestTimeout, and the client's connection (fasthttp's Shutdown
// waits for handlers, so the deadline also bounds a shutdown). fasthttp's
// RequestCtx is never used as a context.Context: it is cancelled only on
// server shutdown, never on a deadline or a client that went away.
//
// fasthttp gives no disconnect signal, and it does not read the connection
// while a handler runs (the catalog reads bodies whole, before the
// handler). So a watcher waits in the runtime's poller for the socket to
// become readable and peeks at it (MSG_PEEK, so nothing fasthttp will read
// is consumed): end of stream or a reset cancels the context; bytes (a
// pipelined next request) end the watch, as nothing more can be learnt
// without reading them. When the handler returns, stop wakes the watcher
// with a read deadline in the past and clears it; fasthttp sets its own
// deadline before it reads the next request. A connection that is not a
// plain socket (TLS, a wrapper) gets the deadline only.
func (s *Server) requestContext(rc *fasthttp.RequestCtx) (context.Context, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	ctx, cancelCause := context.WithCancelCause(ctx)
	stopWatch := watchDisconnect(rc.Conn(), func() { cancelCause(errClientGone) })
	return ctx, func() {
		stopWatch()
		cancelCause(context.Canceled)
		cancel()
	}
}

// watchDisconnect calls gone when the peer of c closes the connection, until
// the returned stop is called; stop returns once the watcher has let go of c.
func watchDisconnect(c net.Conn, gone func()) (stop func()) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return func() {}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf [1]byte
		_ = raw.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case err == syscall.EAGAIN || err == syscall.EINTR:
				return false // wait until readable
			case err != nil || n == 0:
				gone() // reset, or end of stream
			}
			return true // n > 0: a pipelined request; stop watching
		})
	}()
	return func() {
		// Wake the watcher if it is parked in the poller, then leave the
		// connection without a deadline for fasthttp to set its own.
		_ = c.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = c.SetReadDeadline(time.Time{})
	}
}
