package gateway

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/defaults"
	"github.com/duckicelake/duckicelake/internal/httplimit"
	"github.com/duckicelake/duckicelake/internal/s3proto"
	"github.com/duckicelake/duckicelake/sigv4"
)

// Config is the gateway's configuration. Zero durations and limits select
// the defaults named on each field.
type Config struct {
	// Region is the region clients sign for ("us-east-1" if empty).
	Region string
	// VirtualHostSuffixes are the hosts under which a leading label names
	// the bucket ("s3.localhost": "lake.s3.localhost" is bucket lake).
	// Empty: path-style only.
	VirtualHostSuffixes []string
	// TrustForwarded takes the host clients signed from X-Forwarded-Host,
	// which a proxy in front of the gateway sets. Only behind such a proxy:
	// otherwise a client could pick the host it is checked against.
	TrustForwarded bool
	// Upstream is the S3 backend.
	Upstream UpstreamConfig

	// HeaderReadTimeout bounds reading a request's line and headers, from
	// its first byte (30s).
	HeaderReadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no new request
	// (120s).
	IdleTimeout time.Duration
	// BodyReadTimeout bounds each wait for request body bytes (60s): a
	// client that stops sending mid-upload is cut off, a slow one is not.
	BodyReadTimeout time.Duration
	// WriteTimeout bounds each wait for the client to take response bytes
	// (60s).
	WriteTimeout time.Duration

	// MaxHeaderBytes bounds the request line plus headers (32 KiB; a
	// session token alone may take 8 KiB). Larger requests get 431.
	MaxHeaderBytes int
	// MaxConns bounds concurrent client connections (10000); the excess is
	// answered 503 SlowDown.
	MaxConns int
	// MaxConnsPerIP bounds the concurrent connections from one client
	// address, an IPv6 one by its /64 (1024); the excess is answered 503
	// SlowDown. Behind a proxy every connection comes from the proxy.
	MaxConnsPerIP int
	// MaxChunkSize bounds one aws-chunked chunk of a client upload
	// (16 MiB): the gateway holds a chunk until its signature verifies.
	MaxChunkSize int
	// MaxXMLBody bounds the small request bodies the gateway reads whole
	// before forwarding: CompleteMultipartUpload, tagging, bucket
	// configuration (4 MiB). DeleteObjects has S3's own cap, 2 MiB.
	MaxXMLBody int

	// AuthorizeTimeout bounds one request's Authorizer call (5s); past it
	// the request is denied.
	AuthorizeTimeout time.Duration

	// ReadyTimeout bounds the upstream probe behind /readyz (2s), whose
	// answer is cached for ReadyCacheTTL (1s).
	ReadyTimeout, ReadyCacheTTL time.Duration
}

// Defaults of Config.
const (
	DefaultHeaderReadTimeout = 30 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultBodyReadTimeout   = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultMaxHeaderBytes    = 32 << 10
	DefaultMaxConns          = 10000
	DefaultMaxConnsPerIP     = 1024
	DefaultMaxChunkSize      = 16 << 20
	DefaultMaxXMLBody        = 4 << 20
	DefaultReadyTimeout      = 2 * time.Second
	DefaultAuthorizeTimeout  = 5 * time.Second
	DefaultReadyCacheTTL     = time.Second
)

func (c *Config) applyDefaults() {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	c.HeaderReadTimeout = defaults.Positive(c.HeaderReadTimeout, DefaultHeaderReadTimeout)
	c.IdleTimeout = defaults.Positive(c.IdleTimeout, DefaultIdleTimeout)
	c.BodyReadTimeout = defaults.Positive(c.BodyReadTimeout, DefaultBodyReadTimeout)
	c.WriteTimeout = defaults.Positive(c.WriteTimeout, DefaultWriteTimeout)
	c.ReadyTimeout = defaults.Positive(c.ReadyTimeout, DefaultReadyTimeout)
	c.AuthorizeTimeout = defaults.Positive(c.AuthorizeTimeout, DefaultAuthorizeTimeout)
	c.ReadyCacheTTL = defaults.Positive(c.ReadyCacheTTL, DefaultReadyCacheTTL)
	c.MaxHeaderBytes = defaults.Positive(c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	c.MaxConns = defaults.Positive(c.MaxConns, DefaultMaxConns)
	c.MaxConnsPerIP = defaults.Positive(c.MaxConnsPerIP, DefaultMaxConnsPerIP)
	c.MaxChunkSize = defaults.Positive(c.MaxChunkSize, DefaultMaxChunkSize)
	c.MaxXMLBody = defaults.Positive(c.MaxXMLBody, DefaultMaxXMLBody)
}

// Deps are the shared parts a Server works with.
type Deps struct {
	// Logger receives errors and lifecycle events; nil discards them.
	Logger *zap.Logger
	// Audit receives one event per request; nil writes them as JSON lines
	// through Logger (governance.NewZapSink).
	Audit governance.Sink
	// Metrics records requests; nil creates collectors in a private
	// registry.
	Metrics *Metrics
	// Authorizer decides after the scope check; nil is
	// governance.ScopeOnly. serve hands the catalog the same one.
	Authorizer governance.Authorizer
	// Keyring verifies minted credentials (its Revocations included); nil
	// accepts only Root.
	Keyring *creds.Keyring
	// Root is the operator's credential; nil: none.
	Root *creds.Root
	// Now is the clock for token validity; nil is time.Now. Signature
	// freshness uses the sigv4 Verifier's own clock.
	Now func() time.Time
}

// tokenCacheSize bounds the verified session tokens kept (a few hundred
// bytes each).
const tokenCacheSize = 4096

// Server is the S3 gateway: it serves S3 requests on a listener, verifies
// and authorises each one and streams it to the upstream, re-signed.
type Server struct {
	cfg        Config
	log        *zap.Logger
	auditSink  governance.Sink
	metrics    *Metrics
	authz      governance.Authorizer
	keyring    *creds.Keyring
	root       *creds.Root
	now        func() time.Time
	classifier s3proto.Classifier
	verifier   *sigv4.Verifier
	up         *upstream
	srv        *fasthttp.Server
	tokens     *tokenCache

	states   sync.Pool // *reqState
	copyBufs sync.Pool // *[]byte of copyBufferSize: response bodies that are not spliced

	ridBase uint64
	ridSeq  atomic.Uint64

	conns      *httplimit.Limiter
	refuser    httplimit.Refuser
	refusalLog httplimit.LogRate

	ready readiness

	// The listeners Serve was given, and whether Shutdown was called:
	// fasthttp's Shutdown closes only the listeners its Serve has already
	// registered, so a Serve that starts (or has not got that far) when
	// Shutdown runs would accept forever.
	lnMu     sync.Mutex
	lns      []net.Listener
	shutdown bool
}

// New builds a Server. It does not listen: call Serve.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg.applyDefaults()
	up, err := newUpstream(cfg.Upstream)
	if err != nil {
		return nil, err
	}
	if cfg.MaxHeaderBytes < 4<<10 {
		return nil, fmt.Errorf("gateway: max header bytes %d is below 4096", cfg.MaxHeaderBytes)
	}
	s := &Server{
		cfg:       cfg,
		log:       deps.Logger,
		auditSink: deps.Audit,
		metrics:   deps.Metrics,
		authz:     deps.Authorizer,
		keyring:   deps.Keyring,
		root:      deps.Root,
		now:       deps.Now,
		verifier:  sigv4.NewVerifier(cfg.Region, "s3"),
		up:        up,
		tokens:    newTokenCache(tokenCacheSize),
		conns:     httplimit.NewLimiter(cfg.MaxConns, cfg.MaxConnsPerIP),
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.auditSink == nil {
		s.auditSink = governance.NewZapSink(s.log)
	}
	if s.metrics == nil {
		if s.metrics, err = NewMetrics(nil); err != nil {
			return nil, err
		}
	}
	if s.authz == nil {
		s.authz = governance.ScopeOnly{}
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.keyring == nil && s.root == nil {
		return nil, errors.New("gateway: neither a keyring nor root credentials: no request could authenticate")
	}
	for _, v := range cfg.VirtualHostSuffixes {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "" {
			continue
		}
		s.classifier.VirtualHostSuffixes = append(s.classifier.VirtualHostSuffixes, []byte(v))
	}
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("gateway: request id seed: %w", err)
	}
	s.ridBase = binary.LittleEndian.Uint64(seed[:])
	s.states.New = func() any { return new(reqState) }

	s.srv = &fasthttp.Server{
		Handler:       s.handle,
		ExpectHandler: s.expect,
		ErrorHandler:  s.parseError,
		ConnState:     s.connState,
		Name:          "",
		// The limiter admits connections (httplimit.Listener); fasthttp's own
		// limit, which answers in plain text, stays out of its way while
		// a closed connection's worker winds down.
		Concurrency: 2 * cfg.MaxConns,
		// The read buffer holds the request line and headers, so it is
		// the header size limit; body bytes stream through it.
		ReadBufferSize:               cfg.MaxHeaderBytes,
		WriteBufferSize:              32 << 10,
		ReadTimeout:                  cfg.HeaderReadTimeout,
		IdleTimeout:                  cfg.IdleTimeout,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		// Idle keep-alive connections hand their buffers back: measured
		// 68 → 36 KiB of heap per idle connection (1000 connections), at
		// the cost of a pool round trip per request.
		ReduceMemoryUsage:     true,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		// Header names reach sigv4 as sent (it compares them
		// case-insensitively) and are forwarded as sent.
		DisableHeaderNamesNormalizing: true,
		CloseOnShutdown:               true,
		SecureErrorLogMessage:         true,
		Logger:                        fasthttpLogger{s.log},
	}
	return s, nil
}

// Serve accepts connections on ln until Shutdown. It returns nil after a
// graceful shutdown, also when Shutdown came first.
func (s *Server) Serve(ln net.Listener) error {
	s.lnMu.Lock()
	if s.shutdown {
		s.lnMu.Unlock()
		ln.Close()
		return nil
	}
	s.lns = append(s.lns, ln)
	s.lnMu.Unlock()
	err := s.srv.Serve(httplimit.Listener{Listener: ln, Limiter: s.conns, Refuse: s.refuseConn})
	if err != nil && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, closes idle ones and waits until
// the requests in flight have finished (their bodies streamed), or ctx
// ends. Serve returns once the listener is closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.lnMu.Lock()
	s.shutdown = true
	lns := s.lns
	s.lnMu.Unlock()
	err := s.srv.ShutdownWithContext(ctx)
	for _, ln := range lns {
		ln.Close() // already closed unless its Serve had not reached fasthttp's yet
	}
	s.up.client.CloseIdleConnections()
	if s.up.down != nil {
		s.up.down.closeIdle()
	}
	return err
}

// copyBufferSize is the buffer of response bodies copied rather than
// spliced: large enough that each read and write moves a lot per system
// call (64 MiB GETs through a loopback proxy: 32 KiB copies 0.45× of
// direct, 256 KiB 0.58×).
const copyBufferSize = 256 << 10

func (s *Server) copyBuffer() *[]byte {
	if b, ok := s.copyBufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, copyBufferSize)
	return &b
}

// Metrics returns the server's collectors.
func (s *Server) Metrics() *Metrics { return s.metrics }

func (s *Server) connState(c net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateNew:
		s.metrics.openConns.Inc()
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		// A hijacked connection only lingers (lingerAfterAnswer).
		s.metrics.openConns.Dec()
		s.conns.Release(c)
	}
}

// appendRequestID appends a fresh request id: 16 lower-case hex digits, a
// bijective mix of a per-process random base plus a counter, so ids never
// repeat within a process and look unrelated across processes.
func (s *Server) appendRequestID(dst []byte) []byte {
	x := s.ridBase + s.ridSeq.Add(1)
	// splitmix64 finaliser: a bijection on uint64.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	const digits = "0123456789abcdef"
	for i := 60; i >= 0; i -= 4 {
		dst = append(dst, digits[(x>>uint(i))&15])
	}
	return dst
}

// fasthttpLogger sends fasthttp's own messages (connection-level errors)
// to the zap logger at debug level: they are about clients, not us.
type fasthttpLogger struct{ l *zap.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	if ce := f.l.Check(zap.DebugLevel, "fasthttp"); ce != nil {
		ce.Write(zap.String("detail", fmt.Sprintf(format, args...)))
	}
}
