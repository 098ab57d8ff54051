package gateway

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// An upstream may answer an upload before it has read the body, and close:
// a PutObject with If-None-Match over an existing key, a wrong If-Match,
// a bucket that does not exist. S3 backends do it to large streamed
// uploads (versitygw answers as soon as the headers fail, and closes with
// the body unread). Writing the rest of the body then fails with a broken
// pipe or a reset, and fasthttp's own transport reports that error and
// discards the answer, which is already in the socket. The gateway's
// transport reads it instead, so the client gets the backend's 412 or 404
// rather than a 503 it would retry in vain.
//
// Nothing unverified can commit this way: the answer came before the body
// ended, and a streamed upload is aws-chunked, which the backend completes
// only with its final chunk; the gateway relays such an answer only when
// it is an error (forward).

// errEarlyAnswer is returned, with the response filled in, when the
// upstream answered an upload before reading all of its body.
var errEarlyAnswer = errors.New("gateway: the upstream answered before it read the whole request body")

// maxUploadAnswer bounds the body of an upstream's answer to an upload,
// which is read whole: empty on success, a small XML document on error.
const maxUploadAnswer = 1 << 20

// transport is the upstream HostClient's RoundTripper.
type transport struct{}

// RoundTrip implements fasthttp.RoundTripper. Requests with a body stream
// (uploads) go through roundTripUpload; every other request through
// fasthttp's default transport.
func (transport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	if !req.IsBodyStream() {
		return fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
	}
	return false, roundTripUpload(hc, req, resp)
}

// roundTripUpload writes an upload and reads the answer, also when writing
// failed because the upstream closed the connection after answering early
// (errEarlyAnswer). A streamed body is never retried, so the first result
// is final. The answer's body is read whole (maxUploadAnswer).
func roundTripUpload(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) error {
	cc, err := hc.AcquireConn(0, req.ConnectionClose())
	if err != nil {
		return err
	}
	conn := cc.Conn()
	resp.ParseNetConn(conn)
	bw := hc.AcquireWriter(conn)
	werr := req.Write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	if werr != nil && !peerClosed(werr) {
		hc.CloseConn(cc)
		return werr
	}
	resp.StreamBody = false
	if hc.DisableHeaderNamesNormalizing {
		resp.Header.DisableNormalizing()
	}
	br := hc.AcquireReader(conn)
	rerr := resp.ReadLimitBody(br, maxUploadAnswer)
	hc.ReleaseReader(br)
	if werr != nil || rerr != nil || req.ConnectionClose() || resp.ConnectionClose() {
		hc.CloseConn(cc)
	} else {
		hc.ReleaseConn(cc)
	}
	switch {
	case werr != nil && rerr != nil:
		// No answer came before the connection closed: the write's error
		// says what happened.
		return werr
	case werr != nil:
		return errEarlyAnswer
	}
	return rerr
}

// peerClosed reports whether a failed write to the upstream failed because
// the upstream closed or reset the connection, after which whatever it
// answered before is still readable. Errors reading the request body (the
// client's side) and timeouts are not: the upstream has not answered.
func peerClosed(err error) bool {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" {
		return false
	}
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// After relaying an early answer the client's body is still on its way.
// Closing the connection with it unread would reset the connection, and a
// reset can reach the client before it has read the answer (Go's HTTP
// client then reports the failed write, not the answer). So the gateway
// lingers, as web servers do: the answer is written, then the rest of the
// body is read and discarded while it keeps coming, for lingerTime at most,
// before the connection closes.
const (
	lingerTime = 30 * time.Second
	lingerIdle = 5 * time.Second // longest wait for the next body bytes
)

// lingerAfterAnswer arranges for the response to end the connection after
// the rest of the client's body has been read (lingerTime). The response
// says Connection: close (closeAfter), so the client sends nothing more on
// it. fasthttp closes a Connection: close response's connection as soon as
// it is written, so the gateway writes this one itself, from a hijack
// handler that fasthttp runs instead of writing the response, and closes
// the connection after; the request's state lives until then.
func (st *reqState) lingerAfterAnswer() {
	st.closeAfter = true
	body := st.ctx.RequestBodyStream()
	if body == nil {
		return
	}
	st.ctx.HijackSetNoResponse(true)
	st.ctx.Hijack(func(c net.Conn) { st.srv.answerAndDrain(st, c, body) })
}

// answerAndDrain writes the response on c, then reads and discards body,
// the rest of the client's request body, until it ends, stalls for
// lingerIdle or lingerTime has passed.
func (s *Server) answerAndDrain(st *reqState, c net.Conn, body io.Reader) {
	_ = c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	bw := bufio.NewWriterSize(c, 4<<10)
	err := st.ctx.Response.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		st.clientErr = err
		return
	}
	bufp := s.copyBuffer()
	defer s.copyBufs.Put(bufp)
	end := time.Now().Add(lingerTime)
	for {
		deadline := time.Now().Add(lingerIdle)
		if deadline.After(end) {
			deadline = end
		}
		if !deadline.After(time.Now()) || c.SetReadDeadline(deadline) != nil {
			return
		}
		n, err := body.Read(*bufp)
		st.bytesIn += int64(n)
		if err != nil {
			return
		}
	}
}
