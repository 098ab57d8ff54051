package httplimit

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Refusal says why a connection was refused.
type Refusal uint8

// The refusals.
const (
	RefusedMaxConns Refusal = iota
	RefusedPerIP
	RefusalEnd
)

var refusalNames = [RefusalEnd]string{"max_connections", "per_ip"}

// String is the refusal's name, safe as a metrics label: "max_connections"
// or "per_ip".
func (r Refusal) String() string {
	if r >= RefusalEnd {
		return "unknown"
	}
	return refusalNames[r]
}

// Limiter counts open connections, in total and by client address (an
// IPv6 client counts by its /64, which one host may hold whole).
type Limiter struct {
	max, perIP int

	mu    sync.Mutex
	open  int
	perIn map[netip.Addr]int
}

// NewLimiter admits at most max connections, at most perIP of them from
// one client address.
func NewLimiter(max, perIP int) *Limiter {
	return &Limiter{max: max, perIP: perIP, perIn: make(map[netip.Addr]int)}
}

// Max and PerIP are the limits.
func (l *Limiter) Max() int   { return l.max }
func (l *Limiter) PerIP() int { return l.perIP }

// ClientKey is the address a connection counts against: the client's IP,
// IPv4-mapped addresses as IPv4, IPv6 by /64. ok is false for connections
// without an IP (they count only towards the total).
func ClientKey(a net.Addr) (netip.Addr, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is6() {
		p, err := ip.Prefix(64)
		if err != nil {
			return netip.Addr{}, false
		}
		ip = p.Addr()
	}
	return ip, ip.IsValid()
}

// Admit counts a new connection in, or says why it may not open.
func (l *Limiter) Admit(c net.Conn) (Refusal, bool) {
	key, keyed := ClientKey(c.RemoteAddr())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		return RefusedMaxConns, false
	}
	if keyed {
		n := l.perIn[key]
		if n >= l.perIP {
			return RefusedPerIP, false
		}
		l.perIn[key] = n + 1
	}
	l.open++
	return 0, true
}

// Release counts a connection Admit let in out again: call it once per
// admitted connection, when it closes (fasthttp's ConnState StateClosed
// or StateHijacked).
func (l *Limiter) Release(c net.Conn) {
	key, keyed := ClientKey(c.RemoteAddr())
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if !keyed {
		return
	}
	if n := l.perIn[key]; n > 1 {
		l.perIn[key] = n - 1
	} else {
		delete(l.perIn, key)
	}
}

// Listener hands out the connections its Limiter admits and gives the
// others to Refuse, which answers and closes them.
type Listener struct {
	net.Listener
	Limiter *Limiter
	Refuse  func(net.Conn, Refusal)
}

// Accept returns the next admitted connection.
func (l Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		r, ok := l.Limiter.Admit(c)
		if ok {
			return c, nil
		}
		l.Refuse(c, r)
	}
}

// A refused connection is answered at once, before its request arrives.
// Closing it with that request unread would reset it, and the reset can
// destroy the answer before the client reads it; so the connection's
// writing side is shut and what the client sends is read and discarded
// for refusedLinger (at most refusedLingerBytes) before it closes. At most
// maxLingering connections linger at once; beyond that they close at once.
const (
	refusedWriteTimeout = time.Second
	refusedLinger       = 2 * time.Second
	refusedLingerBytes  = 64 << 10
	maxLingering        = 256
)

// Refuser answers refused connections; one per listener bounds the
// connections lingering at once.
type Refuser struct {
	lingering atomic.Int32
}

// Answer writes resp (which should ask for the connection to close) on c
// and closes c, lingering as described above. It returns the write's
// error.
func (r *Refuser) Answer(c net.Conn, resp *fasthttp.Response) error {
	_ = c.SetWriteDeadline(time.Now().Add(refusedWriteTimeout))
	bw := bufio.NewWriterSize(c, 1024)
	err := resp.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil || r.lingering.Add(1) > maxLingering {
		if err == nil {
			r.lingering.Add(-1)
		}
		_ = c.Close()
		return err
	}
	go func() {
		defer r.lingering.Add(-1)
		defer c.Close()
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(refusedLinger))
		var buf [4096]byte
		for n := 0; n < refusedLingerBytes; {
			m, err := c.Read(buf[:])
			n += m
			if err != nil {
				return
			}
		}
	}()
	return nil
}

// ParseFailure is why fasthttp could not read a request (its
// ErrorHandler's error).
type ParseFailure uint8

// The parse failures.
const (
	Malformed      ParseFailure = iota // not HTTP/1.1 we can read
	HeaderTooLarge                     // the header section exceeds the read buffer: 431
	Timeout                            // the request did not arrive in time: 408
	BodyTooLarge                       // the body exceeds the server's MaxRequestBodySize
)

// ParseFailureOf classifies an error fasthttp hands its ErrorHandler.
func ParseFailureOf(err error) ParseFailure {
	var small *fasthttp.ErrSmallBuffer
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &small):
		return HeaderTooLarge
	case errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return BodyTooLarge
	}
	return Malformed
}
