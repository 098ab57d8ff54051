package gateway

import (
	"io"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/s3proto"
)

// A forwarded response carries one request id, the gateway's: the one its
// audit line is keyed by and its own errors carry. The upstream's id is
// dropped from the headers, whatever case the upstream wrote it in (the
// header names pass through as sent), and replaced in the body of an
// upstream error document, so that an SDK reading the header (boto3) and
// one reading the body (aws-sdk-go-v2, minio-go) see the same id. The
// upstream's id stays in the audit line, upstream_rid, which is how an
// operator follows a request to the backend's logs; clients never need it.

// droppedResponseHeader reports whether the gateway drops an upstream
// response header: hop-by-hop fields, and the Date and request id it sets
// itself.
func droppedResponseHeader(name []byte) bool {
	return equalFoldASCII(name, "x-amz-request-id") || equalFoldASCII(name, "date") ||
		equalFoldASCII(name, "connection") || equalFoldASCII(name, "keep-alive")
}

// maxDroppedHeaders bounds the rounds fixResponseHeader deletes in: one
// upstream response carries a handful of the dropped names at most.
const maxDroppedHeaders = 16

// fixResponseHeader makes the upstream response header copied into the
// client's response ours: every dropped header removed in whichever case
// it came, then our request id, and Connection: close when the connection
// ends after this response.
func (st *reqState) fixResponseHeader() {
	h := &st.ctx.Response.Header
	h.ResetConnectionClose()
	for range maxDroppedHeaders {
		var name []byte
		for k := range h.All() {
			if droppedResponseHeader(k) {
				name = k
				break
			}
		}
		if name == nil {
			break
		}
		// DelBytes copies its argument; the name aliases the header.
		st.scratch = append(st.scratch[:0], name...)
		h.DelBytes(st.scratch)
	}
	h.SetBytesV("x-amz-request-id", st.id[:])
	if st.closeAfter {
		h.SetConnectionClose()
	}
}

// peekFold returns the first value of the header called name (lower-case)
// in h, whatever its case.
func peekFold(h *fasthttp.ResponseHeader, name string) []byte {
	for k, v := range h.All() {
		if equalFoldASCII(k, name) {
			return v
		}
	}
	return nil
}

// maxErrorBody is the largest upstream error document the gateway reads to
// put its request id in; S3 error documents are a few hundred bytes.
const maxErrorBody = 64 << 10

// rewriteErrorBody answers an upstream error response whose body is an S3
// error document of known, small length with the document's RequestId
// replaced by ours. It reports whether it set the response body; when it
// did not, the body streams through unchanged (it is not an error document
// this can rewrite), unless reading it failed, which it answers as an
// upstream failure.
func (s *Server) rewriteErrorBody(st *reqState) bool {
	resp := &st.upResp
	n := resp.Header.ContentLength()
	if n <= 0 || n > maxErrorBody || len(resp.Header.ContentEncoding()) > 0 {
		return false
	}
	var err error
	switch {
	case st.down.active():
		st.small, err = readExactly(st.small[:0], &st.down, n)
		st.down.close(err != nil)
	case resp.BodyStream() != nil:
		st.small, err = readExactly(st.small[:0], resp.BodyStream(), n)
		_ = resp.CloseBodyStream()
	default:
		st.small = append(st.small[:0], resp.Body()...)
	}
	if err != nil {
		st.upstreamErr = err
		s.metrics.upstreamError(upstreamErrOther)
		if ce := s.log.Check(zap.WarnLevel, "upstream error body unreadable"); ce != nil {
			ce.Write(zap.ByteString("rid", st.id[:]), zap.Error(err))
		}
		st.fail(s3proto.ServiceUnavailable(""), st.decision, st.reason)
		return true
	}
	body := st.small
	if out, ok := s3proto.ReplaceRequestID(st.out[:0], st.small, st.id[:]); ok {
		st.out, body = out, out
	}
	st.ctx.Response.SetBodyRaw(body)
	st.bytesOut += int64(len(body))
	return true
}

// readExactly appends n bytes from r to dst.
func readExactly(dst []byte, r io.Reader, n int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	_, err := io.ReadFull(r, dst[start:])
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}
