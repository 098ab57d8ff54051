package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/httplimit"
	"github.com/duckicelake/duckicelake/internal/s3proto"
	"github.com/duckicelake/duckicelake/sigv4"
)

// stateKey is the RequestCtx user-value key of a request's state.
type stateKey struct{}

// reqState is everything one request needs, pooled and reused. It is
// attached to the fasthttp.RequestCtx, so the Expect: 100-continue check
// and the handler share it, and it lives until the response body has been
// written: it is released when both holders are done with it, the
// RequestCtx (which closes its user values on reset) and, when the
// response streams, the response body.
type reqState struct {
	srv   *Server
	ctx   *fasthttp.RequestCtx
	start time.Time
	refs  atomic.Int32

	id       [16]byte
	remote   []byte
	method   []byte
	akid     []byte // copy of the access key id, for the audit line
	upRID    []byte // the upstream's x-amz-request-id
	path     []byte // raw path as sent (aliases the request)
	query    []byte // raw query as sent (aliases the request)
	admitted bool
	// closeAfter: the connection closes after this response, which must
	// say so (the rest of the client's body is unread).
	closeAfter bool

	hdr       headerIndex
	req       s3proto.Request
	sreq      sigv4.Request
	res       sigv4.Result
	cred      credential
	principal governance.Principal
	admission governance.S3Buffers
	post      postState // a browser-form upload (postobject.go)

	decision    governance.Outcome
	reason      string
	policyIDs   []string
	err         *s3proto.Error
	status      int
	upstreamErr error // the upstream exchange failed
	clientErr   error // writing the response to the client failed
	bodyErr     error // the client's body failed verification or arrived short
	deleteCount int
	bytesIn     int64
	bytesOut    int64

	upReq    fasthttp.Request
	upResp   fasthttp.Response
	wire     wireReader
	verified verifiedReader
	chunked  *sigv4.ChunkedReader  // reused; dropped after a large body
	enc      *sigv4.ChunkedEncoder // reused: its buffer is one upstream chunk
	// chunkedUsed is the largest body chunked decoded: its buffers grow
	// up to a chunk, which the pool should not keep when large.
	chunkedUsed int64
	body        responseBody
	down        downBody // a download's upstream body (downloader)
	chunk       sigv4.ChunkedConfig
	sign        sigv4.SignRequest
	signHdrs    []sigv4.Header
	target      []byte // upstream path and query
	amzDate     []byte
	scope       []byte
	auth        []byte
	hashHex     [64]byte
	hostBuf     []byte
	numBuf      []byte
	small       []byte // a body read whole
	out         []byte // a response body the gateway writes itself
	keys        [][]byte
	scratch     []byte

	// event is the request's audit event, filled at finish from the
	// fields above (it points into them) and handed to the Sink.
	event governance.Event
}

// Close implements io.Closer: fasthttp calls it when it resets the
// request's user values.
func (st *reqState) Close() error {
	st.unref()
	return nil
}

func (st *reqState) unref() {
	if st.refs.Add(-1) == 0 {
		st.srv.finish(st)
	}
}

// acquire returns the request's state, creating it on first use.
func (s *Server) acquire(ctx *fasthttp.RequestCtx) *reqState {
	if v, ok := ctx.UserValue(stateKey{}).(*reqState); ok {
		return v
	}
	st := s.states.Get().(*reqState)
	st.srv = s
	st.ctx = ctx
	st.start = time.Now()
	st.refs.Store(1)
	s.appendRequestID(st.id[:0])
	st.remote = appendRemote(st.remote[:0], ctx.RemoteAddr())
	st.method = append(st.method[:0], ctx.Method()...)
	ctx.SetUserValue(stateKey{}, st)
	return st
}

// finish records the finished request and returns its state to the pool.
func (s *Server) finish(st *reqState) {
	latency := time.Since(st.start)
	s.metrics.observe(st.req.Op, st.status, st.decision, latency.Seconds(), st.bytesIn, st.bytesOut)
	s.audit(st, latency)

	st.ctx = nil
	st.akid, st.upRID = st.akid[:0], st.upRID[:0]
	st.path, st.query = nil, nil
	st.admitted, st.closeAfter = false, false
	st.hdr.clear()
	st.req.Reset()
	st.sreq = sigv4.Request{}
	st.res.AccessKeyID, st.res.SessionToken = nil, nil
	st.cred.reset(nil, nil, nil, time.Time{})
	st.principal = governance.Principal{}
	st.admission.Reset()
	st.post.reset()
	st.decision, st.reason, st.policyIDs = governance.OutcomeNone, "", nil
	st.err, st.status = nil, 0
	st.upstreamErr, st.clientErr, st.bodyErr = nil, nil, nil
	st.deleteCount, st.bytesIn, st.bytesOut = 0, 0, 0
	st.upReq.Reset()
	st.upResp.Reset()
	st.wire = wireReader{}
	st.verified = verifiedReader{}
	st.down.close(true) // no-op unless a response body was never written
	st.down = downBody{}
	st.body = responseBody{}
	st.chunk = sigv4.ChunkedConfig{}
	if st.enc != nil {
		st.enc.Reset(emptyReader{}, &st.chunk, 0) // drops the body it read
	}
	st.sign = sigv4.SignRequest{}
	clear(st.signHdrs)
	st.signHdrs = st.signHdrs[:0]
	clear(st.keys)
	st.keys = st.keys[:0]
	if st.chunkedUsed > maxPooledBody {
		st.chunked, st.chunkedUsed = nil, 0
	}
	if cap(st.small) > maxPooledBody {
		st.small = nil
	}
	if cap(st.out) > maxPooledBody {
		st.out = nil
	}
	s.states.Put(st)
}

// maxPooledBody keeps a rare large buffered body out of the pool.
const maxPooledBody = 64 << 10

// handle is the S3 listener's request handler.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	st := s.acquire(ctx)
	if !st.admitted && st.err == nil {
		s.admit(st)
	}
	if st.err == nil {
		s.forward(st)
	}
	if st.err != nil {
		s.respondError(st)
	}
}

// expect answers "Expect: 100-continue": the whole check that needs no body
// runs before the client is told to send it, so a refused client uploads
// nothing.
func (s *Server) expect(ctx *fasthttp.RequestCtx) int {
	st := s.acquire(ctx)
	s.admit(st)
	if st.err != nil {
		s.respondError(st)
		return st.err.Status
	}
	return fasthttp.StatusContinue
}

// parseError answers a request fasthttp could not read (headers too large,
// malformed, timed out) with S3 XML. No handler runs for it.
func (s *Server) parseError(ctx *fasthttp.RequestCtx, err error) {
	var e *s3proto.Error
	switch httplimit.ParseFailureOf(err) {
	case httplimit.HeaderTooLarge:
		e = &s3proto.Error{Code: "RequestHeaderSectionTooLarge", Status: http.StatusRequestHeaderFieldsTooLarge,
			Message: "Your request header section exceeds the maximum allowed size."}
	case httplimit.Timeout:
		e = s3proto.RequestTimeout()
	case httplimit.BodyTooLarge:
		e = s3proto.MaxMessageLengthExceeded()
	default:
		e = s3proto.InvalidRequest("The request could not be parsed as HTTP/1.1.")
	}
	if st, ok := ctx.UserValue(stateKey{}).(*reqState); ok {
		// The body of an admitted Expect: 100-continue request failed to
		// arrive: answer and audit it as that request.
		st.fail(e, st.decision, "request unreadable")
		s.respondError(st)
		return
	}
	var id [16]byte
	rid := s.appendRequestID(id[:0])
	ctx.Response.Reset()
	ctx.Response.SetStatusCode(e.Status)
	ctx.Response.Header.SetContentType("application/xml")
	ctx.Response.Header.SetBytesV("x-amz-request-id", rid)
	ctx.Response.SetBody(s3proto.AppendXML(nil, e, nil, rid))
	s.metrics.observe(s3proto.OpUnknown, e.Status, governance.OutcomeNone, 0, 0, 0)
	if ce := s.log.Check(zap.DebugLevel, "unreadable request"); ce != nil {
		ce.Write(zap.ByteString("rid", rid), zap.String("error", e.Code), zap.Error(err))
	}
}

// admit runs every check that needs no request body: framing, classification,
// signature, credential, scope and authorisation (except DeleteObjects'
// keys, which are in the body).
func (s *Server) admit(st *reqState) {
	ctx := st.ctx
	h := &ctx.Request.Header
	st.admitted = true
	st.hdr.reset(h, s.cfg.TrustForwarded)

	uri := h.RequestURI()
	st.path, st.query, _ = bytes.Cut(uri, []byte{'?'})
	if h.ContentLength() == -1 && hasRawHeader(h.RawHeaders(), "content-length") {
		// Request smuggling: the two framings can disagree between us and
		// any other hop.
		st.fail(s3proto.InvalidRequest("Content-Length and Transfer-Encoding must not be sent together."), governance.OutcomeNone, "conflicting framing")
		ctx.SetConnectionClose()
		return
	}
	if st.hdr.count("authorization") > 1 {
		st.fail(s3proto.InvalidRequest("Only one Authorization header is allowed."), governance.OutcomeNone, "duplicate authorization")
		return
	}
	if len(uri) == 0 || uri[0] != '/' {
		st.fail(s3proto.InvalidURI(""), governance.OutcomeNone, "request target is not a path")
		return
	}
	if err := s.classifier.Classify(&st.req, h.Method(), st.hdr.get("host"), st.path, st.query, &st.hdr); err != nil {
		st.fail(s3proto.FromSigV4(err), governance.OutcomeNone, "request not understood")
		return
	}
	if st.req.Op == s3proto.OpPostObject {
		// Authenticated and admitted once its form has arrived.
		s.admitPostForm(st)
		return
	}

	st.sreq = sigv4.Request{Method: h.Method(), RawPath: st.path, RawQuery: st.query, Header: &st.hdr}
	st.cred.reset(s.keyring, s.root, s.tokens, s.now())
	err := s.verifier.Verify(&st.sreq, &st.cred, &st.res)
	st.akid = append(st.akid[:0], st.res.AccessKeyID...)
	if err != nil {
		st.fail(s3proto.FromSigV4(err), governance.OutcomeDeny, "authentication failed")
		return
	}
	if st.cred.isRoot {
		st.decision, st.reason = governance.OutcomeAllow, "operator root credentials"
		return
	}

	st.principal = governance.PrincipalOf(&st.cred.claims)
	if st.req.Op == s3proto.OpDeleteObjects {
		// The keys are in the body; refuse now what no key could change.
		if d := governance.AdmitS3Bucket(&st.cred.claims, st.req.Bucket); !d.Allow {
			st.fail(s3proto.AccessDenied(d.Reason), governance.OutcomeDeny, d.Reason)
		}
		return
	}
	s.authorize(st, nil)
}

// authorize admits the request (governance.AdmitS3): the credential's
// grants over every key it touches, then the Authorizer.
//
// The Authorizer runs under Config.AuthorizeTimeout, not the RequestCtx
// (which is cancelled only on shutdown): a policy store that hangs denies
// the request instead of holding it.
func (s *Server) authorize(st *reqState, deleteKeys [][]byte) {
	actx, cancel := context.WithTimeout(context.Background(), s.cfg.AuthorizeTimeout)
	defer cancel()
	d, err := governance.AdmitS3(actx, s.authz, &st.principal, &st.cred.claims, &st.req, deleteKeys, &st.admission)
	st.policyIDs = d.PolicyIDs
	if err != nil {
		s.log.Error("authorizer failed; request denied", zap.ByteString("rid", st.id[:]), zap.Error(err))
		st.fail(s3proto.AccessDenied(""), governance.OutcomeDeny, "authorizer error")
		return
	}
	if !d.Allow {
		st.fail(s3proto.AccessDenied(d.Reason), governance.OutcomeDeny, d.Reason)
		return
	}
	st.decision, st.reason = governance.OutcomeAllow, d.Reason
}

func (st *reqState) fail(e *s3proto.Error, d governance.Outcome, reason string) {
	st.err, st.decision, st.reason = e, d, reason
}

// respondError writes st.err as S3 XML.
func (s *Server) respondError(st *reqState) {
	e := st.err
	r := &st.ctx.Response
	r.Reset()
	r.SetStatusCode(e.Status)
	r.Header.SetContentType("application/xml")
	r.Header.SetBytesV("x-amz-request-id", st.id[:])
	if st.closeAfter {
		r.SetConnectionClose()
	}
	// No <Resource>: it would echo the key, and a refused key's name must
	// never appear in a response.
	st.out = s3proto.AppendXML(st.out[:0], e, nil, st.id[:])
	r.SetBodyRaw(st.out)
	st.status = e.Status
	if !st.ctx.IsHead() {
		st.bytesOut += int64(len(st.out))
	}
}

// hasRawHeader reports whether the raw header block has a header called
// name (lower-case).
func hasRawHeader(raw []byte, name string) bool {
	for len(raw) > 0 {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte{'\n'})
		if len(line) > len(name) && line[len(name)] == ':' && equalFoldASCII(line[:len(name)], name) {
			return true
		}
	}
	return false
}

func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// wireReader is the client's request body as received: it counts bytes and
// keeps the read deadline moving while bytes flow.
type wireReader struct {
	st       *reqState
	r        io.Reader
	timeout  time.Duration
	deadline time.Time
}

func (w *wireReader) Read(p []byte) (int, error) {
	if w.timeout > 0 {
		// Moving the deadline on every read costs a timer update; doing it
		// when an eighth of the timeout has passed is as safe.
		if now := time.Now(); w.deadline.Sub(now) < w.timeout-w.timeout/8 {
			w.deadline = now.Add(w.timeout)
			_ = w.st.ctx.SetReadDeadline(w.deadline)
		}
	}
	n, err := w.r.Read(p)
	w.st.bytesIn += int64(n)
	return n, err
}

// verifiedReader is the verified body: it remembers why it failed, so the
// gateway can tell a bad client body from an upstream failure.
type verifiedReader struct {
	st *reqState
	r  io.Reader
}

func (v *verifiedReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	if err != nil && err != io.EOF && v.st.bodyErr == nil {
		v.st.bodyErr = err
	}
	return n, err
}

// responseBody streams the upstream's response body to the client.
type responseBody struct {
	st       *reqState
	r        io.Reader
	size     int64 // the body's length; < 0: unknown
	timeout  time.Duration
	deadline time.Time
}

func (b *responseBody) Read(p []byte) (int, error) {
	b.moveDeadline()
	n, err := b.r.Read(p)
	b.st.bytesOut += int64(n)
	return n, err
}

// moveDeadline moves the client's write deadline once an eighth of it has
// passed: moving it on every read would cost a timer update each.
func (b *responseBody) moveDeadline() {
	if b.timeout > 0 {
		if now := time.Now(); b.deadline.Sub(now) < b.timeout-b.timeout/8 {
			b.deadline = now.Add(b.timeout)
			_ = b.st.ctx.SetWriteDeadline(b.deadline)
		}
	}
}

// SupportsBodyWriteTo implements fasthttp.BodyWriterTo: WriteTo does what
// Read does (deadlines, byte counts), so fasthttp may use it for chunked
// responses too.
func (b *responseBody) SupportsBodyWriteTo() bool { return true }

// WriteTo implements io.WriterTo; fasthttp writes the response body with it.
// A download from a TCP upstream into the client's connection is spliced;
// anything else is copied with a large buffer, straight into the
// connection's writer (its own ReadFrom would read in 32 KiB steps).
func (b *responseBody) WriteTo(w io.Writer) (int64, error) {
	rf, isRF := w.(io.ReaderFrom)
	if d := &b.st.down; b.r == d && d.n > 0 && d.cc.tcp != nil && isRF {
		return b.splice(d, w, rf)
	}
	if isRF && b.size >= 0 && b.size <= smallResponseBody {
		// It fits the connection's write buffer: read straight into it.
		return rf.ReadFrom(readOnly{b})
	}
	bufp := b.st.srv.copyBuffer()
	defer b.st.srv.copyBufs.Put(bufp)
	buf := *bufp
	var written int64
	for {
		n, err := b.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			written += int64(m)
			if werr == nil && m < n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return written, werr
			}
		}
		if err == io.EOF {
			return written, nil
		}
		if err != nil {
			return written, err
		}
	}
}

// smallResponseBody is the largest response body read straight into the
// client connection's write buffer (32 KiB, shared with the header).
const smallResponseBody = 16 << 10

// readOnly hides responseBody's WriteTo from a ReadFrom.
type readOnly struct{ b *responseBody }

func (r readOnly) Read(p []byte) (int, error) { return r.b.Read(p) }

// splice moves the download's body from the upstream socket to the client's
// with splice(2): rf is the client connection's response writer, whose
// ReadFrom hands a limited *net.TCPConn to the connection's own ReadFrom.
// The body moves in segments, each under fresh read and write deadlines, so
// a stalled side is cut off as in Read; segments grow while they are quick.
func (b *responseBody) splice(d *downBody, w io.Writer, rf io.ReaderFrom) (int64, error) {
	var written int64
	// Body bytes that came with the header are in the read buffer.
	if k := min(int64(d.cc.br.Buffered()), d.n); k > 0 {
		b.moveDeadline()
		p, _ := d.cc.br.Peek(int(k))
		m, err := w.Write(p)
		_, _ = d.cc.br.Discard(m)
		d.n -= int64(m)
		written += int64(m)
		b.st.bytesOut += int64(m)
		if err != nil {
			d.err = err
			return written, err
		}
	}
	seg := int64(minSpliceSegment)
	for d.n > 0 {
		size := min(seg, d.n)
		start := time.Now()
		if err := d.cc.c.SetReadDeadline(start.Add(d.timeout)); err != nil {
			d.err = err
			return written, err
		}
		if b.timeout > 0 {
			b.deadline = start.Add(b.timeout)
			_ = b.st.ctx.SetWriteDeadline(b.deadline)
		}
		d.lr = io.LimitedReader{R: d.cc.tcp, N: size}
		m, err := rf.ReadFrom(&d.lr)
		d.n -= m
		written += m
		b.st.bytesOut += m
		if err == nil && m < size {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			d.err = err
			return written, err
		}
		switch took := time.Since(start); {
		case took < d.timeout/16 && seg < maxSpliceSegment:
			seg *= 2
		case took > d.timeout/4 && seg > minSpliceSegment:
			seg /= 2
		}
	}
	return written, nil
}

// CloseWithError implements fasthttp.ReadCloserWithError: fasthttp calls it
// once the response is written, with the write error if any.
func (b *responseBody) CloseWithError(err error) error {
	st := b.st
	if err != nil && st.clientErr == nil {
		st.clientErr = err
	}
	if st.down.active() {
		st.down.close(err != nil)
	} else {
		_ = st.upResp.CloseBodyStream()
	}
	st.unref()
	return nil
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, io.EOF }

// readAllLimit appends everything r yields to dst, failing once it passes
// limit bytes.
func readAllLimit(dst []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):min(cap(dst), limit+1)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, errBodyTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

var errBodyTooLarge = errors.New("gateway: body over the limit")

// appendHexSHA256 appends the lower-case hex SHA-256 of b.
func appendHexSHA256(dst *[64]byte, b []byte) []byte {
	sum := sha256.Sum256(b)
	const digits = "0123456789abcdef"
	for i, c := range sum {
		dst[2*i], dst[2*i+1] = digits[c>>4], digits[c&15]
	}
	return dst[:]
}

// streamsBody reports whether op's body is object data, streamed to the
// upstream as signed aws-chunked; other bodies are small documents read
// whole and sent with their SHA-256 (S3 backends accept aws-chunked only on
// PutObject and UploadPart).
func streamsBody(op s3proto.Op) bool { return op == s3proto.OpPutObject || op == s3proto.OpUploadPart }

// maxListBucketsBody bounds the ListBuckets answer the gateway filters.
const maxListBucketsBody = 8 << 20

// forward sends the admitted request upstream and sets up the response.
func (s *Server) forward(st *reqState) {
	if st.post.active {
		s.forwardPostObject(st)
		return
	}
	ctx := st.ctx
	method := ctx.Method()
	up := &st.upReq
	s.buildUpstreamRequest(st)

	hasBody := string(method) == http.MethodPut || string(method) == http.MethodPost
	var payloadHash []byte
	t := s.now()
	switch {
	case !hasBody:
		payloadHash = emptySHA256Hex
	case streamsBody(st.req.Op):
		decoded, ok := s.openBody(st)
		if !ok {
			return
		}
		s.sendObject(st, decoded, t)
		return
	default:
		if _, ok := s.openBody(st); !ok {
			return
		}
		limit := s.cfg.MaxXMLBody
		if st.req.Op == s3proto.OpDeleteObjects {
			limit = s3proto.MaxDeleteObjectsBody
		}
		var err error
		st.small, err = readAllLimit(st.small[:0], &st.verified, limit)
		if err == errBodyTooLarge {
			st.fail(s3proto.MaxMessageLengthExceeded(), st.decision, "body over the limit")
			st.ctx.SetConnectionClose()
			return
		}
		if err != nil {
			st.failBody()
			return
		}
		if st.req.Op == s3proto.OpDeleteObjects && !st.cred.isRoot {
			keys, _, err := s3proto.ParseDeleteObjects(st.small, st.keys)
			st.keys = keys[:0]
			if err != nil {
				st.fail(s3proto.FromSigV4(err), governance.OutcomeDeny, "DeleteObjects body refused")
				return
			}
			st.deleteCount = len(keys)
			s.authorize(st, keys)
			if st.err != nil {
				return
			}
		}
		st.trailerAsHeader()
		payloadHash = appendHexSHA256(&st.hashHex, st.small)
		up.SetBodyRaw(st.small)
	}
	s.signUpstream(st, payloadHash, t)
	s.exchange(st)
}

// sendObject sends the verified object body of decoded bytes (st.verified)
// upstream as the body of the request built in st.upReq, and sets up the
// response.
func (s *Server) sendObject(st *reqState, decoded int64, t time.Time) {
	up := &st.upReq
	var payloadHash []byte
	if decoded <= maxSmallUpload {
		// A small body is read and verified whole, then sent with its
		// length and SHA-256, which the backend checks: a body cut
		// short on the way cannot commit, and neither side pays for
		// aws-chunked framing and per-chunk signatures.
		if !st.readSmallBody(decoded) {
			return
		}
		st.trailerAsHeader()
		payloadHash = appendHexSHA256(&st.hashHex, st.small)
		if decoded == 0 {
			up.Header.SetContentLength(0)
		} else {
			up.SetBodyRaw(st.small)
		}
		s.signUpstream(st, payloadHash, t)
		s.exchange(st)
		return
	}
	chunk := min(int64(s.up.chunkSize), decoded)
	c := &st.chunk
	*c = sigv4.ChunkedConfig{Signed: true, DecodedLength: decoded}
	payloadHash = streamingPayloadLit
	// The client's trailing checksum travels on: the encoder computes
	// it over the verified bytes, the upstream checks and stores it. A
	// PutObject without a checksum of its own gets a CRC32C: the
	// backend verifies that instead of computing its default checksum.
	c.Trailer = st.res.Trailer()
	if len(c.Trailer) == 0 && st.req.Op == s3proto.OpPutObject && !s.up.signAllChunks && !st.hasChecksum() {
		c.Trailer = hChecksumCRC32C
	}
	if len(c.Trailer) > 0 {
		payloadHash = streamingTrailerLit
		if s.up.secureTransport && !s.up.signAllChunks {
			// The connection already guarantees integrity: the
			// trailing checksum, which the backend verifies, replaces
			// chunk signatures (a SHA-256 of every byte on both sides).
			c.Signed = false
			payloadHash = unsignedTrailerLit
		}
		up.Header.SetBytesKV(hTrailer, c.Trailer)
	}
	up.Header.SetBytesKV(hDecodedContentLength, st.numBuf)
	st.scratch = append(st.scratch[:0], awsChunked...)
	if v := up.Header.PeekBytes(hContentEncoding); len(v) > 0 {
		st.scratch = append(append(st.scratch, ", "...), v...)
	}
	up.Header.SetBytesKV(hContentEncoding, st.scratch)
	seed := s.signUpstream(st, payloadHash, t)
	c.SigningKey = *s.up.signingKey(st.amzDate)
	c.AmzDate, c.Scope, c.SeedSignature = st.amzDate, st.scope, seed
	if st.enc == nil {
		st.enc = new(sigv4.ChunkedEncoder)
	}
	st.enc.Reset(&st.verified, c, int(chunk))
	up.SetBodyStream(st.enc, int(sigv4.EncodedLength(decoded, int(chunk), c)))
	s.exchange(st)
}

// maxSmallUpload is the largest object body sent upstream whole, with
// Content-Length and its SHA-256, rather than as aws-chunked.
const maxSmallUpload = 64 << 10

// readSmallBody reads the verified body of n bytes whole into st.small. The
// verifying readers hold back the final byte until the hash, signature or
// checksum has matched, so a body that reads whole has verified.
func (st *reqState) readSmallBody(n int64) bool {
	if int64(cap(st.small)) < n {
		st.small = make([]byte, n)
	}
	st.small = st.small[:n]
	if _, err := io.ReadFull(&st.verified, st.small); err != nil {
		st.failBody()
		return false
	}
	var one [1]byte
	for range maxEmptyReads {
		m, err := st.verified.Read(one[:])
		if m > 0 {
			// The readers stop at the declared length; this is a bug
			// guard, not a client error path.
			st.bodyErr = errBodyTooLarge
			st.failBody()
			return false
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			st.failBody()
			return false
		}
	}
	st.bodyErr = io.ErrNoProgress
	st.failBody()
	return false
}

// maxEmptyReads bounds reads that return neither bytes nor an error.
const maxEmptyReads = 100

// trailerAsHeader forwards the verified trailing checksum of a body sent
// whole as a header: the upstream request has no trailer section, and the
// backend still checks and stores the client's checksum.
func (st *reqState) trailerAsHeader() {
	if len(st.res.Trailer()) == 0 || st.chunked == nil {
		return
	}
	if name, value := st.chunked.Checksum(); len(name) > 0 {
		st.upReq.Header.SetBytesKV(name, value)
	}
}

// openBody wraps the client's body in the verifying reader its payload mode
// needs and returns the decoded length. It fails the request when the
// length is unknown: S3 requires one, and the upstream needs it.
func (s *Server) openBody(st *reqState) (int64, bool) {
	ctx := st.ctx
	wireLen := int64(ctx.Request.Header.ContentLength())
	if wireLen < 0 {
		wireLen = -1
	}
	decoded := wireLen
	if st.res.Mode.Streaming() {
		decoded = st.res.DecodedContentLength
	}
	if decoded < 0 {
		st.fail(&s3proto.Error{Code: "MissingContentLength", Status: http.StatusLengthRequired,
			Message: "You must provide the Content-Length HTTP header."}, st.decision, "no content length")
		return 0, false
	}
	var wire io.Reader = emptyReader{}
	if r := ctx.RequestBodyStream(); r != nil {
		wire = r
	}
	st.wire = wireReader{st: st, r: wire, timeout: s.cfg.BodyReadTimeout}
	var body io.Reader
	if st.res.Mode.Streaming() {
		if wireLen >= 0 && wireLen < decoded {
			st.fail(&s3proto.Error{Code: "IncompleteBody", Status: http.StatusBadRequest,
				Message: "Content-Length is smaller than x-amz-decoded-content-length."}, st.decision, "body shorter than declared")
			return 0, false
		}
		var cfg sigv4.ChunkedConfig
		cfg.MaxChunkSize = s.cfg.MaxChunkSize
		st.res.ChunkedConfig(&cfg)
		if st.chunked == nil {
			st.chunked = sigv4.NewChunkedReader(&st.wire, &cfg)
		} else {
			st.chunked.Reset(&st.wire, &cfg)
		}
		st.chunkedUsed = max(st.chunkedUsed, decoded)
		body = st.chunked
	} else {
		var err error
		if body, err = st.res.Body(&st.wire, wireLen); err != nil {
			st.fail(s3proto.FromSigV4(err), st.decision, "body refused")
			return 0, false
		}
	}
	st.verified = verifiedReader{st: st, r: body}
	st.numBuf = appendInt(st.numBuf[:0], decoded)
	return decoded, true
}

// failBody answers a client body that failed verification or arrived
// short. The connection closes: the rest of the body is in an unknown
// state.
func (st *reqState) failBody() {
	err := st.bodyErr
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	var ve *sigv4.Error
	var se *s3proto.Error
	switch {
	case errors.As(err, &ve):
		st.fail(s3proto.FromSigV4(err), st.decision, "body failed verification")
	case errors.As(err, &se):
		st.fail(se, st.decision, "body refused")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		st.fail(&s3proto.Error{Code: "IncompleteBody", Status: http.StatusBadRequest,
			Message: "You did not provide the number of bytes specified by the Content-Length HTTP header."}, st.decision, "body incomplete")
	default:
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			st.fail(s3proto.RequestTimeout(), st.decision, "body timed out")
		} else {
			st.fail(&s3proto.Error{Code: "IncompleteBody", Status: http.StatusBadRequest,
				Message: "The request body was not received completely."}, st.decision, "body read failed")
		}
	}
	st.ctx.SetConnectionClose()
}

// exchange performs the upstream request and sets the client's response.
func (s *Server) exchange(st *reqState) {
	ctx := st.ctx
	resp := &st.upResp
	resp.Reset()
	resp.Header.DisableNormalizing()
	resp.Header.SetNoDefaultContentType(true)
	var err error
	if st.req.Op == s3proto.OpGetObject && s.up.down != nil {
		err = s.up.down.do(&st.upReq, resp, &st.down)
	} else {
		err = s.up.client.Do(&st.upReq, resp)
	}
	if errors.Is(err, errEarlyAnswer) && st.bodyErr == nil && resp.StatusCode() >= 300 {
		// The upstream refused the upload before reading all of it: its
		// answer is the client's.
		err = nil
		st.lingerAfterAnswer()
	}
	if err != nil {
		if st.bodyErr != nil {
			st.failBody()
			return
		}
		st.upstreamErr = err
		kind := classifyUpstreamError(err)
		s.metrics.upstreamError(kind)
		if ce := s.log.Check(zap.WarnLevel, "upstream request failed"); ce != nil {
			ce.Write(zap.ByteString("rid", st.id[:]), zap.Error(err))
		}
		st.fail(s3proto.ServiceUnavailable(""), st.decision, st.reason)
		return
	}
	if st.bodyErr != nil {
		// The upstream answered although our body failed; it must not
		// have stored anything (the aws-chunked stream never ended), and
		// the client learns why.
		_ = resp.CloseBodyStream()
		st.failBody()
		return
	}
	st.upRID = append(st.upRID[:0], peekFold(&resp.Header, "x-amz-request-id")...)

	if st.req.Op == s3proto.OpListBuckets && !st.cred.isRoot && resp.StatusCode() == http.StatusOK {
		s.filterListBuckets(st)
		return
	}
	out := &ctx.Response
	resp.Header.CopyTo(&out.Header)
	st.fixResponseHeader()
	st.status = resp.StatusCode()
	if st.post.active && st.status == http.StatusOK {
		s.answerPostObject(st)
		return
	}
	if st.status >= 300 && !ctx.IsHead() && s.rewriteErrorBody(st) {
		return
	}
	var body io.Reader
	switch {
	case st.down.active():
		if st.down.empty() {
			st.down.close(false)
			return
		}
		body = &st.down
	case resp.BodyStream() != nil:
		body = resp.BodyStream()
	default:
		// Read whole already (the answer to an upload).
		if b := resp.Body(); len(b) > 0 && !ctx.IsHead() {
			out.SetBodyRaw(b)
			st.bytesOut += int64(len(b))
		}
		return
	}
	st.body = responseBody{st: st, r: body, size: int64(resp.Header.ContentLength()), timeout: s.cfg.WriteTimeout}
	st.refs.Add(1)
	out.SetBodyStream(&st.body, resp.Header.ContentLength())
}

// filterListBuckets answers ListBuckets for a minted credential with only
// the buckets its grants name.
func (s *Server) filterListBuckets(st *reqState) {
	resp := &st.upResp
	var err error
	body := resp.Body()
	if bs := resp.BodyStream(); bs != nil {
		st.small, err = readAllLimit(st.small[:0], bs, maxListBucketsBody)
		_ = resp.CloseBodyStream()
		body = st.small
	}
	if err != nil {
		st.upstreamErr = err
		s.metrics.upstreamError(upstreamErrOther)
		st.fail(s3proto.ServiceUnavailable(""), st.decision, st.reason)
		return
	}
	st.out = filterBucketList(st.out[:0], body, &st.cred.claims)
	out := &st.ctx.Response
	resp.Header.CopyTo(&out.Header)
	st.fixResponseHeader()
	out.SetBodyRaw(st.out)
	st.status = resp.StatusCode()
	st.bytesOut += int64(len(st.out))
}

func appendInt(dst []byte, n int64) []byte {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return append(dst, '0')
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return append(dst, b[i:]...)
}
