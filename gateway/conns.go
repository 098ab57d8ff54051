package gateway

import (
	"bufio"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/s3proto"
)

// The gateway admits client connections itself, before fasthttp sees them:
// at most MaxConns open, at most MaxConnsPerIP from one client address (an
// IPv6 client counts by its /64, which one host may hold whole). A refused
// connection is answered 503 SlowDown in S3 XML with a request id, which
// SDKs back off and retry on, and logged; fasthttp's own limits would
// answer in plain text. fasthttp's Concurrency is set above MaxConns, so
// its limit never fires first.

// refusal says why a connection was refused; it labels the metric.
type refusal uint8

const (
	refusedMaxConns refusal = iota
	refusedPerIP
	refusalEnd
)

var refusalNames = [refusalEnd]string{"max_connections", "per_ip"}

var refusalErrors = [refusalEnd]*s3proto.Error{
	refusedMaxConns: {Code: "SlowDown", Status: 503,
		Message: "The gateway is serving as many connections as it may; reduce your request rate."},
	refusedPerIP: {Code: "SlowDown", Status: 503,
		Message: "Too many connections from your address; reduce your request rate."},
}

// connLimiter counts open connections, in total and by client address.
type connLimiter struct {
	max, perIP int

	mu    sync.Mutex
	open  int
	perIn map[netip.Addr]int
}

func newConnLimiter(max, perIP int) *connLimiter {
	return &connLimiter{max: max, perIP: perIP, perIn: make(map[netip.Addr]int)}
}

// clientKey is the address a connection counts against: the client's IP,
// IPv4-mapped addresses as IPv4, IPv6 by /64. ok is false for connections
// without an IP (they count only towards the total).
func clientKey(a net.Addr) (netip.Addr, bool) {
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

// admit counts a new connection in, or says why it may not open.
func (l *connLimiter) admit(c net.Conn) (refusal, bool) {
	key, keyed := clientKey(c.RemoteAddr())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		return refusedMaxConns, false
	}
	if keyed {
		n := l.perIn[key]
		if n >= l.perIP {
			return refusedPerIP, false
		}
		l.perIn[key] = n + 1
	}
	l.open++
	return 0, true
}

// release counts a connection admit let in out again.
func (l *connLimiter) release(c net.Conn) {
	key, keyed := clientKey(c.RemoteAddr())
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

// limitListener refuses the connections the limiter does not admit; the
// ones it returns are released by the server's ConnState hook when they
// close.
type limitListener struct {
	net.Listener
	s *Server
}

func (l limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		r, ok := l.s.conns.admit(c)
		if ok {
			return c, nil
		}
		l.s.refuseConn(c, r)
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

// refuseConn answers a connection the limiter refused and closes it.
func (s *Server) refuseConn(c net.Conn, r refusal) {
	var id [16]byte
	rid := s.appendRequestID(id[:0])
	e := refusalErrors[r]
	var resp fasthttp.Response
	resp.SetStatusCode(e.Status)
	resp.Header.SetContentType("application/xml")
	resp.Header.SetBytesV("x-amz-request-id", rid)
	resp.Header.Set("Retry-After", "1")
	resp.SetConnectionClose()
	resp.SetBodyRaw(s3proto.AppendXML(nil, e, nil, rid))
	_ = c.SetWriteDeadline(time.Now().Add(refusedWriteTimeout))
	bw := bufio.NewWriterSize(c, 1024)
	err := resp.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	s.metrics.connRefused(r)
	s.logRefusal(c, r, rid)
	if err != nil || s.lingering.Add(1) > maxLingering {
		if err == nil {
			s.lingering.Add(-1)
		}
		_ = c.Close()
		return
	}
	go func() {
		defer s.lingering.Add(-1)
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
}

// logRefusal logs a refused connection: the first of a burst at once, the
// rest at most once a second with the number left out since, so a flood
// of connections is not also a flood of log lines.
func (s *Server) logRefusal(c net.Conn, r refusal, rid []byte) {
	now := time.Now().UnixNano()
	last := s.refusalLogged.Load()
	if now-last < int64(time.Second) || !s.refusalLogged.CompareAndSwap(last, now) {
		s.refusalsUnlogged.Add(1)
		return
	}
	s.log.Warn("connection refused", zap.String("reason", refusalNames[r]), zap.Stringer("remote", c.RemoteAddr()),
		zap.Int("max_connections", s.conns.max), zap.Int("max_connections_per_ip", s.conns.perIP),
		zap.ByteString("rid", rid), zap.Int64("refused_unlogged", s.refusalsUnlogged.Swap(0)))
}
