package gateway

import (
	"net"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/httplimit"
	"github.com/duckicelake/duckicelake/internal/s3proto"
)

// The gateway admits client connections itself (internal/httplimit), before
// fasthttp sees them: at most MaxConns open, at most MaxConnsPerIP from one
// client address (an IPv6 client counts by its /64, which one host may hold
// whole). A refused
// connection is answered 503 SlowDown in S3 XML with a request id, which
// SDKs back off and retry on, and logged; fasthttp's own limits would
// answer in plain text. fasthttp's Concurrency is set above MaxConns, so
// its limit never fires first.

var refusalErrors = [httplimit.RefusalEnd]*s3proto.Error{
	httplimit.RefusedMaxConns: {Code: "SlowDown", Status: 503,
		Message: "The gateway is serving as many connections as it may; reduce your request rate."},
	httplimit.RefusedPerIP: {Code: "SlowDown", Status: 503,
		Message: "Too many connections from your address; reduce your request rate."},
}

// refuseConn answers a connection the limiter refused and closes it.
func (s *Server) refuseConn(c net.Conn, r httplimit.Refusal) {
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
	_ = s.refuser.Answer(c, &resp)
	s.metrics.connRefused(r)
	s.logRefusal(c, r, rid)
}

// logRefusal logs a refused connection: the first of a burst at once, the
// rest at most once a second with the number left out since, so a flood
// of connections is not also a flood of log lines.
func (s *Server) logRefusal(c net.Conn, r httplimit.Refusal, rid []byte) {
	skipped, ok := s.refusalLog.Due()
	if !ok {
		return
	}
	s.log.Warn("connection refused", zap.Stringer("reason", r), zap.Stringer("remote", c.RemoteAddr()),
		zap.Int("max_connections", s.conns.Max()), zap.Int("max_connections_per_ip", s.conns.PerIP()),
		zap.ByteString("rid", rid), zap.Int64("refused_unlogged", skipped))
}
