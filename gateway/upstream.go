package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/defaults"
	"github.com/duckicelake/duckicelake/internal/pct"
	"github.com/duckicelake/duckicelake/internal/s3proto"
	"github.com/duckicelake/duckicelake/sigv4"
)

// UpstreamConfig says where the S3 backend is and how to sign for it.
type UpstreamConfig struct {
	// Endpoint is the backend's base URL, "http://127.0.0.1:7070" or
	// "https://s3.example.com" (no path).
	Endpoint string
	// Region is the backend's signing region ("us-east-1" if empty).
	Region string
	// AccessKeyID and SecretAccessKey are the backend's root credentials:
	// the gateway re-signs every forwarded request with them.
	AccessKeyID, SecretAccessKey string
	// PathStyle sends "/bucket/key" to the endpoint; otherwise the bucket
	// goes into the Host ("bucket.endpoint").
	PathStyle bool
	// MaxConns caps connections to the backend (0: 4096).
	MaxConns int
	// ConnectTimeout bounds a TCP (and TLS) connect (0: 5s).
	ConnectTimeout time.Duration
	// ResponseTimeout bounds each wait for the backend's bytes: the
	// response header after the request was sent, and every read of its
	// body (0: 60s). A large object is never cut off while it moves.
	ResponseTimeout time.Duration
	// ChunkSize is the aws-chunked chunk size of uploads forwarded to the
	// backend (0: 256 KiB); memory per upload is about one chunk.
	ChunkSize int
	// SignAllChunks sends every upload as signed aws-chunked with no
	// checksum of the gateway's own, for backends without trailing
	// checksums. Otherwise a PutObject without a client checksum carries a
	// CRC32C trailer the backend verifies, and over a connection that
	// guarantees integrity by itself (TLS, or a loopback address) uploads
	// with a trailing checksum go unsigned (STREAMING-UNSIGNED-PAYLOAD-
	// TRAILER): the checksum and the aws-chunked framing still keep an
	// unverified or unfinished body from committing, without a SHA-256 of
	// every byte on both sides.
	SignAllChunks bool

	// dial replaces the TCP dialer (in-memory benchmarks).
	dial func(addr string) (net.Conn, error)
}

const (
	defaultUpstreamMaxConns   = 4096
	defaultConnectTimeout     = 5 * time.Second
	defaultResponseTimeout    = 60 * time.Second
	defaultUpstreamChunkSize  = 256 << 10
	minUpstreamChunkSize      = 8 << 10
	upstreamReadBufferSize    = 64 << 10 // response header limit, and body read size
	upstreamWriteBufferSize   = 64 << 10
	upstreamMaxIdleConnPeriod = 30 * time.Second
)

// upstream is the backend: a fasthttp.HostClient streaming both ways, and
// the root credentials requests are re-signed with.
type upstream struct {
	client    *fasthttp.HostClient
	down      *downloader // GetObject over plain TCP; nil with TLS
	tls       bool
	host      []byte // Host of path-style requests: the endpoint's host[:port]
	pathStyle bool
	region    []byte
	signer    sigv4.Signer
	secret    []byte
	chunkSize int

	signAllChunks bool
	// secureTransport: the connection guarantees integrity (TLS, loopback).
	secureTransport bool

	// key is the signing key of the current UTC day; aws-chunked uploads
	// sign every chunk with it.
	key atomic.Pointer[dayKey]
}

type dayKey struct {
	date [8]byte // yyyymmdd
	key  [32]byte
}

func newUpstream(cfg UpstreamConfig) (*upstream, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("gateway: upstream endpoint is empty")
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream endpoint %q: %w", cfg.Endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("gateway: upstream endpoint %q: scheme must be http or https", cfg.Endpoint)
	}
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("gateway: upstream endpoint %q: want scheme://host[:port] and nothing else", cfg.Endpoint)
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("gateway: upstream access key and secret are required")
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	host := strings.ToLower(u.Host)
	addr := host
	if u.Port() == "" {
		if u.Scheme == "https" {
			addr += ":443"
		} else {
			addr += ":80"
		}
	}
	chunk := cfg.ChunkSize
	if chunk == 0 {
		chunk = defaultUpstreamChunkSize
	}
	if chunk < minUpstreamChunkSize {
		return nil, fmt.Errorf("gateway: upstream chunk size %d is below %d", chunk, minUpstreamChunkSize)
	}
	connect := defaults.Positive(cfg.ConnectTimeout, defaultConnectTimeout)
	response := defaults.Positive(cfg.ResponseTimeout, defaultResponseTimeout)
	maxConns := cfg.MaxConns
	if maxConns <= 0 {
		maxConns = defaultUpstreamMaxConns
	}
	up := &upstream{
		tls:       u.Scheme == "https",
		host:      []byte(host),
		pathStyle: cfg.PathStyle,
		region:    []byte(region),
		signer: sigv4.Signer{
			AccessKeyID:     cfg.AccessKeyID,
			SecretAccessKey: cfg.SecretAccessKey,
			Region:          region,
			Service:         "s3",
		},
		secret:    []byte(cfg.SecretAccessKey),
		chunkSize: chunk,

		signAllChunks:   cfg.SignAllChunks,
		secureTransport: u.Scheme == "https" || isLoopback(u.Hostname()),
	}
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	up.client = &fasthttp.HostClient{
		Addr:  addr,
		IsTLS: up.tls,
		DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
			var c net.Conn
			var err error
			if cfg.dial != nil {
				c, err = cfg.dial(addr)
			} else {
				d := *dialer
				if timeout > 0 && timeout < d.Timeout {
					d.Timeout = timeout
				}
				c, err = d.Dial("tcp", addr)
			}
			if err != nil {
				return nil, err
			}
			return &idleTimeoutConn{Conn: c, timeout: response}, nil
		},
		MaxConns:            maxConns,
		MaxIdleConnDuration: upstreamMaxIdleConnPeriod,
		MaxConnWaitTimeout:  connect,
		// fasthttp retries only bodiless or buffered idempotent requests
		// (never a streamed upload), once: a kept-alive connection the
		// backend closed meanwhile.
		MaxIdemponentCallAttempts:     2,
		ReadBufferSize:                upstreamReadBufferSize,
		WriteBufferSize:               upstreamWriteBufferSize,
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		StreamResponseBody:            true,
		Transport:                     transport{},
	}
	if !up.tls {
		up.down = newDownloader(addr, cfg.dial, maxConns, connect, response, upstreamMaxIdleConnPeriod)
	}
	return up, nil
}

// isLoopback reports whether host names this machine's loopback interface:
// traffic to it never leaves the host.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// signingKey returns the upstream signing key for the day of amzDate
// (yyyymmddThhmmssZ), derived once per day.
func (u *upstream) signingKey(amzDate []byte) *[32]byte {
	if k := u.key.Load(); k != nil && string(k.date[:]) == string(amzDate[:8]) {
		return &k.key
	}
	k := new(dayKey)
	copy(k.date[:], amzDate[:8])
	sigv4.DeriveSigningKey(&k.key, u.secret, k.date[:], u.region, []byte("s3"))
	u.key.Store(k)
	return &k.key
}

// classifyUpstreamError sorts a failed upstream exchange for the metrics.
func classifyUpstreamError(err error) upstreamErrKind {
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrNoFreeConns),
		errors.As(err, &ne) && ne.Timeout():
		return upstreamErrTimeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return upstreamErrDial
	}
	return upstreamErrOther
}

// idleTimeoutConn bounds every wait for the backend: each Read or Write
// may block at most timeout. fasthttp's own ReadTimeout would also cover the
// time a large body takes to stream, which a response timeout must not.
// The deadline moves only once an eighth of it has passed, so streaming
// does not pay a timer update per read.
type idleTimeoutConn struct {
	net.Conn
	timeout       time.Duration
	readDeadline  time.Time
	writeDeadline time.Time
}

func (c *idleTimeoutConn) Read(p []byte) (int, error) {
	if err := c.extend(&c.readDeadline, net.Conn.SetReadDeadline); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *idleTimeoutConn) Write(p []byte) (int, error) {
	if err := c.extend(&c.writeDeadline, net.Conn.SetWriteDeadline); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// extend moves deadline (the read or the write one, set with set) a
// timeout from now once an eighth of the timeout has passed since it was
// last moved.
func (c *idleTimeoutConn) extend(deadline *time.Time, set func(net.Conn, time.Time) error) error {
	if now := time.Now(); deadline.Sub(now) < c.timeout-c.timeout/8 {
		*deadline = now.Add(c.timeout)
		return set(c.Conn, *deadline)
	}
	return nil
}

// SetReadDeadline, SetWriteDeadline and SetDeadline keep the cached
// deadlines true when fasthttp sets its own (request timeouts).
func (c *idleTimeoutConn) SetReadDeadline(t time.Time) error {
	c.readDeadline = t
	return c.Conn.SetReadDeadline(t)
}

func (c *idleTimeoutConn) SetWriteDeadline(t time.Time) error {
	c.writeDeadline = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *idleTimeoutConn) SetDeadline(t time.Time) error {
	c.readDeadline, c.writeDeadline = t, t
	return c.Conn.SetDeadline(t)
}

// Literal header names and values of upstream requests.
var (
	hAuthorization        = []byte("authorization")
	hAmzDate              = []byte("x-amz-date")
	hContentSHA256        = []byte("x-amz-content-sha256")
	hDecodedContentLength = []byte("x-amz-decoded-content-length")
	hContentEncoding      = []byte("content-encoding")
	hCopySource           = []byte("x-amz-copy-source")
	emptySHA256Hex        = []byte("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	streamingPayloadLit   = []byte(sigv4.StreamingPayload)
	streamingTrailerLit   = []byte(sigv4.StreamingPayloadTrailer)
	unsignedTrailerLit    = []byte(sigv4.StreamingUnsignedTrailer)
	hChecksumCRC32C       = []byte("x-amz-checksum-crc32c")
	hTrailer              = []byte("x-amz-trailer")
	awsChunked            = []byte("aws-chunked")
)

// headerAction says what happens to a client header on the way upstream.
type headerAction uint8

const (
	headerKeep headerAction = iota
	headerDrop
	headerContentEncoding // drop its aws-chunked coding, keep the others
	headerCopySource      // replaced by the classified copy source
)

// forwardAction classifies a lower-case client header name. Dropped are the
// client's authentication (re-signed with the upstream's root key), the
// framing of its body (re-framed), hop-by-hop and proxy headers.
func forwardAction(name []byte) headerAction {
	switch string(name) {
	case "authorization", "x-amz-security-token", "x-amz-date", "x-amz-content-sha256",
		"x-amz-decoded-content-length", "x-amz-trailer", "date",
		"host", "content-length", "transfer-encoding", "expect", "connection", "keep-alive",
		"proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer",
		"upgrade", "forwarded", "x-real-ip":
		return headerDrop
	case "content-encoding":
		return headerContentEncoding
	case "x-amz-copy-source":
		return headerCopySource
	}
	if len(name) >= len("x-forwarded-") && string(name[:len("x-forwarded-")]) == "x-forwarded-" {
		return headerDrop
	}
	return headerKeep
}

// buildUpstreamRequest sets the upstream request's method, target, host and
// forwarded headers; the body, payload hash and signature come after.
func (s *Server) buildUpstreamRequest(st *reqState) {
	s.setUpstreamTarget(st, st.ctx.Method(), st.query)
	up := &st.upReq
	for i := range st.hdr.fields {
		f := &st.hdr.fields[i]
		switch forwardAction(f.name) {
		case headerDrop:
		case headerContentEncoding:
			st.scratch = appendWithoutCoding(st.scratch[:0], f.value, awsChunked)
			if len(st.scratch) > 0 {
				up.Header.SetBytesKV(hContentEncoding, st.scratch)
			}
		case headerCopySource:
			st.scratch = st.req.AppendCopySource(st.scratch[:0])
			if len(st.scratch) > 0 {
				up.Header.SetBytesKV(hCopySource, st.scratch)
			}
		default:
			up.Header.AddBytesKV(f.name, f.value)
		}
	}
}

// setUpstreamTarget resets the upstream request to method on the
// classified bucket and key, with the forwardable part of the client's
// query, and its host.
func (s *Server) setUpstreamTarget(st *reqState, method, query []byte) {
	up := &st.upReq
	up.Reset()
	up.Header.DisableNormalizing()
	up.Header.SetNoDefaultContentType(true)
	up.UseHostHeader = true
	up.Header.SetMethodBytes(method)

	// The target is built from the classified bucket and key, never from
	// the client's raw path: the upstream acts on exactly what was checked.
	b := st.target[:0]
	host := s.up.host
	if s.up.pathStyle || len(st.req.Bucket) == 0 {
		b = st.req.AppendPath(b)
	} else {
		st.hostBuf = append(append(append(st.hostBuf[:0], st.req.Bucket...), '.'), s.up.host...)
		host = st.hostBuf
		b = append(b, '/')
		b = pct.AppendEncode(b, st.req.Key, true)
	}
	pathEnd := len(b)
	b = append(b, '?')
	b = s3proto.AppendForwardQuery(b, query)
	if len(b) == pathEnd+1 {
		b = b[:pathEnd]
	}
	st.target = b
	if len(b) > pathEnd {
		st.sign.RawQuery = b[pathEnd+1:]
	} else {
		st.sign.RawQuery = nil
	}
	st.sign.RawPath = b[:pathEnd]
	up.SetRequestURIBytes(b)
	up.Header.SetHostBytes(host)
	if s.up.tls {
		up.URI().SetScheme("https")
	}
}

// appendWithoutCoding appends the comma-separated list v without the
// coding drop (case-insensitive), normalised to ", " separators.
func appendWithoutCoding(dst, v, drop []byte) []byte {
	start := len(dst)
	for len(v) > 0 {
		var item []byte
		item, v, _ = bytes.Cut(v, []byte{','})
		item = bytes.TrimSpace(item)
		if len(item) == 0 || bytes.EqualFold(item, drop) {
			continue
		}
		if len(dst) > start {
			dst = append(dst, ", "...)
		}
		dst = append(dst, item...)
	}
	return dst
}

// signUpstream dates and signs the upstream request with the root key:
// host, content-type, content-md5 and every x-amz-* header are signed. It
// returns the signature, the seed of an aws-chunked body.
func (s *Server) signUpstream(st *reqState, payloadHash []byte, t time.Time) [32]byte {
	up := &st.upReq
	st.amzDate = sigv4.AppendAmzDate(st.amzDate[:0], t)
	up.Header.SetBytesKV(hAmzDate, st.amzDate)
	up.Header.SetBytesKV(hContentSHA256, payloadHash)
	st.scope = append(append(st.scope[:0], st.amzDate[:8]...), '/')
	st.scope = append(append(st.scope, s.up.region...), "/s3/aws4_request"...)

	hs := st.signHdrs[:0]
	for k, v := range up.Header.All() {
		if signedUpstream(k) {
			hs = append(hs, sigv4.Header{Name: k, Value: v})
		}
	}
	st.signHdrs = hs
	st.sign.Method = up.Header.Method()
	st.sign.Headers = hs
	st.sign.PayloadHash = payloadHash
	var sig [32]byte
	st.auth, sig = s.up.signer.AppendAuthorization(st.auth[:0], &st.sign, t)
	up.Header.SetBytesKV(hAuthorization, st.auth)
	return sig
}

// signedUpstream reports whether a header of the upstream request is signed.
func signedUpstream(name []byte) bool {
	if len(name) >= 6 && equalFoldASCII(name[:6], "x-amz-") {
		return true
	}
	return equalFoldASCII(name, "host") || equalFoldASCII(name, "content-type") || equalFoldASCII(name, "content-md5")
}

// filterBucketList copies a ListAllMyBucketsResult document to dst without
// the <Bucket> elements whose <Name> no grant of c names. Bucket names
// are plain [a-z0-9.-], so a byte scan reads them exactly.
func filterBucketList(dst, doc []byte, c *creds.Claims) []byte {
	const open, close = "<Bucket>", "</Bucket>"
	for {
		i := bytes.Index(doc, []byte(open))
		if i < 0 {
			return append(dst, doc...)
		}
		j := bytes.Index(doc[i:], []byte(close))
		if j < 0 {
			return append(dst, doc...)
		}
		j += i + len(close)
		dst = append(dst, doc[:i]...)
		elem := doc[i:j]
		if name, ok := elementText(elem, "Name"); ok && governance.GrantsBucket(c, name) {
			dst = append(dst, elem...)
		}
		doc = doc[j:]
	}
}

// elementText returns the text of the first <tag>…</tag> in b.
func elementText(b []byte, tag string) ([]byte, bool) {
	open := "<" + tag + ">"
	i := bytes.Index(b, []byte(open))
	if i < 0 {
		return nil, false
	}
	b = b[i+len(open):]
	j := bytes.IndexByte(b, '<')
	if j < 0 {
		return nil, false
	}
	return b[:j], true
}
