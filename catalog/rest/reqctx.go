package rest

import (
	"context"
	"errors"
	"net"
	"sync"
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
//
// The timer and the watcher are armed by the first call to Done, not
// before: only work that can wait (a query, a backend request, a flight)
// asks for Done, and a request answered from memory — a LoadTable cache
// hit, the catalog's hottest path — never does, so it pays for neither (a
// goroutine, a peek, two deadline changes and a timer each). Until then
// Err still reports the deadline, from the clock.
func (s *Server) requestContext(rc *fasthttp.RequestCtx) (context.Context, func()) {
	c := &reqContext{deadline: time.Now().Add(s.cfg.RequestTimeout), conn: rc.Conn()}
	return c, c.release
}

// reqContext is requestContext's context.Context.
type reqContext struct {
	deadline time.Time
	conn     net.Conn // nil: no watcher (a test's RequestCtx, audit's own bound)

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	err   error         // Canceled or DeadlineExceeded once the context is done
	cause error         // errClientGone, DeadlineExceeded or Canceled
	timer *time.Timer
	stop  func() // stops the watcher
}

func (c *reqContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *reqContext) Value(any) any { return nil }

func (c *reqContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.expireLocked()
	c.done = make(chan struct{})
	if c.err != nil { // released, or past the deadline
		close(c.done)
		return c.done
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded, context.DeadlineExceeded) })
	if c.conn != nil {
		c.stop = watchDisconnect(c.conn, func() { c.cancel(context.Canceled, errClientGone) })
	}
	return c.done
}

func (c *reqContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return c.err
}

// Cause is why the context is done: errClientGone when the client closed
// the connection, else Err. (context.Cause sees only the standard
// library's own contexts.)
func (c *reqContext) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return c.cause
}

func (c *reqContext) cancel(err, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(err, cause)
}

// expireLocked ends the context when its deadline has passed and no timer
// has said so yet (none is armed before Done): Err may report only a
// context that is done.
func (c *reqContext) expireLocked() {
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.closeLocked(context.DeadlineExceeded, context.DeadlineExceeded)
	}
}

// closeLocked ends the context (once): done closed, if made, with err.
func (c *reqContext) closeLocked(err, cause error) {
	if c.err != nil {
		return
	}
	c.err, c.cause = err, cause
	if c.done != nil {
		close(c.done)
	}
}

// release ends the request: the timer and the watcher, if armed, are
// stopped (the watcher has let go of the connection when it returns), and
// work still holding the context sees it cancelled.
func (c *reqContext) release() {
	c.mu.Lock()
	timer, stop := c.timer, c.stop
	c.timer, c.stop = nil, nil
	c.closeLocked(context.Canceled, context.Canceled)
	c.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if stop != nil {
		stop() // outside the lock: the watcher's gone() takes it
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
