package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/gateway"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/httplimit"
)

const serveUsage = `usage: duckicelake serve [-config file] [flags]

Runs the S3 gateway on gateway.listen and, on catalog.listen, the Iceberg
REST catalog (/v1/…, when catalog.dsn names the DuckLake catalog's Postgres
database) and the admin endpoints (/metrics, /healthz, /readyz), until
SIGINT or SIGTERM; then stops accepting, lets in-flight requests finish
(gateway.shutdown_timeout) and exits. Without catalog.dsn only the gateway
runs. Configuration: flags > DUCKICELAKE_* environment > config file >
defaults (see duckicelake.example.toml).

flags:
`

func runServe(args []string, stdout, stderr io.Writer) int {
	return withSignals(func(ctx context.Context) int {
		return serve(ctx, args, stdout, stderr, os.LookupEnv, nil)
	}, os.Interrupt, syscall.SIGTERM)
}

// serve runs until ctx ends. ready, if not nil, receives the bound S3 and
// admin addresses once both listen (tests use port 0).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer,
	lookupEnv func(string) (string, bool), ready func(s3, admin net.Addr)) int {
	fs := commandFlags("serve", serveUsage, stderr)
	flags := config.AddFlags(fs)
	if code, done := parseCommand(fs, args); done {
		return code
	}
	if strayArgument(fs, stderr) {
		return 2
	}
	cfg, ok := commandConfig(fs, flags, lookupEnv, stderr, "upstream.endpoint", "upstream.access_key", "upstream.secret_key")
	if !ok {
		return 2
	}
	var keyring *creds.Keyring
	if len(cfg.Mint.Keys) > 0 {
		var err error
		if keyring, err = cfg.Keyring(); err != nil {
			fmt.Fprintf(stderr, "duckicelake serve: %v\n", err)
			return 2
		}
		// In memory unless the catalog brings Postgres and NOTIFY (below).
		keyring.Revocations = &creds.RevocationList{}
	}
	root, err := cfg.RootCredential()
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake serve: %v\n", err)
		return 2
	}
	if keyring == nil && root == nil {
		fmt.Fprintln(stderr, "duckicelake serve: no credential could authenticate: configure mint.keys (DUCKICELAKE_MINT_KEYS) or a root credential")
		return 2
	}

	logger, err := newServeLogger(stdout, cfg.Log)
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake serve: %v\n", err)
		return 2
	}
	defer logger.Sync()
	// Audit lines are batched: one write per request would cost a syscall
	// each. They are flushed every second and on shutdown.
	auditSink := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(stdout), Size: 256 << 10, FlushInterval: time.Second}
	defer auditSink.Stop()
	audit := governance.NewZapSink(zap.New(zapcore.NewCore(serveEncoder(cfg.Log.Format), auditSink, zapcore.InfoLevel)))

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := gateway.NewMetrics(reg)
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake serve: metrics: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Gateway.Listen)
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake serve: gateway.listen: %v\n", err)
		return 1
	}
	aln, err := net.Listen("tcp", cfg.Catalog.Listen)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "duckicelake serve: catalog.listen: %v\n", err)
		return 1
	}
	// The listeners are bound (so a port 0 is known for the URLs vended
	// credentials name) but serve nothing until the catalog is up: a database
	// that is not there or not initialised stops serve with a message saying
	// what to run.
	gatewayURL := boundGatewayURL(cfg, ln.Addr())
	var cat *catalogService
	if cfg.Catalog.DSN != "" {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cat, err = openCatalog(octx, cfg, gatewayURL, keyring, reg, audit, logger)
		cancel()
		if err != nil {
			ln.Close()
			aln.Close()
			fmt.Fprintf(stderr, "duckicelake serve: %v\n", err)
			if errors.As(err, new(configError)) {
				return 2
			}
			return 1
		}
		defer cat.Close()
		if cfg.Catalog.Eager {
			cat.StartEager()
		}
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "duckicelake", Subsystem: "catalog", Name: "materializations_total",
			Help: "Iceberg metadata builds: LoadTable and eager misses of the materialiser's cache (a table is built once per change).",
		}, func() float64 { return float64(cat.mat.Builds()) }))
		if cat.trail != nil {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "duckicelake", Subsystem: "audit", Name: "trail_written_total",
				Help: "Audit events written to the Postgres audit trail (duckicelake_audit).",
			}, func() float64 { return float64(cat.auditWritten.Load()) }), prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "duckicelake", Subsystem: "audit", Name: "trail_dropped_total",
				Help: "Audit events that did not reach the Postgres trail (buffer full, or a failed write); they are in the JSON audit log.",
			}, func() float64 { return float64(cat.auditDropped.Load()) }), prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: "duckicelake", Subsystem: "audit", Name: "trail_refused_total",
				Help: "Requests refused (503) because the audit trail's buffer could not take their event: metadata-only LoadTables are never answered unrecorded.",
			}, func() float64 { return float64(cat.auditRefused.Load()) }))
		}
	} else {
		logger.Info("catalog off: no catalog.dsn (DUCKICELAKE_CATALOG_DSN or DUCKICELAKE_PG_DSN); serving the gateway only")
	}
	// One Authorizer decides for the gateway and for every catalog route,
	// remote signing included, so that a principal gets the same answer on
	// every path: governance's, with a catalog; the credential's scope
	// alone without one. Gateway decisions go to the JSON audit log and,
	// with a catalog, to the Postgres audit trail.
	var authz governance.Authorizer = governance.ScopeOnly{}
	var sink governance.Sink = audit
	if cat != nil {
		authz, sink = cat.authz, governance.Tee(audit, cat.trail)
	}
	srv, err := gateway.New(gatewayConfig(cfg), gateway.Deps{
		Logger: logger, Audit: sink, Metrics: metrics, Authorizer: authz, Keyring: keyring, Root: root,
	})
	if err != nil {
		ln.Close()
		aln.Close()
		fmt.Fprintf(stderr, "duckicelake serve: %v\n", err)
		return 2
	}
	adminHandler := srv.AdminHandler(reg, nil)
	if cat != nil {
		adminHandler = catalogReady(srv.AdminHandler(reg, cat.Handler), cat.Ready, logger)
		ms, err := newMCPServer(cfg, cat, "http://"+aln.Addr().String(), sink, logger)
		if err != nil {
			ln.Close()
			aln.Close()
			fmt.Fprintf(stderr, "duckicelake serve: mcp: %v\n", err)
			return 1
		}
		defer ms.Close()
		adminHandler = withMCP(adminHandler, ms, cat)
	}
	// The catalog listener admits connections itself, like the gateway's
	// (internal/httplimit), and answers what fasthttp refuses before a
	// handler runs in the Iceberg ErrorModel instead of plain text.
	// fasthttp's own connection limit stays above the limiter's.
	climit := &rest.Listener{Log: logger, Limiter: httplimit.NewLimiter(catalogMaxConns, cfg.Catalog.MaxConnectionsPerIP)}
	admin := &fasthttp.Server{
		Handler:               adminHandler,
		ErrorHandler:          climit.ErrorHandler,
		ConnState:             climit.ConnState,
		Concurrency:           2 * catalogMaxConns,
		Logger:                climit,
		SecureErrorLogMessage: true,
		NoDefaultServerHeader: true,
		ReadTimeout:           10 * time.Second,
		IdleTimeout:           60 * time.Second,
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() {
		errc <- admin.Serve(httplimit.Listener{Listener: aln, Limiter: climit.Limiter, Refuse: climit.Refuse})
	}()
	logger.Info("duckicelake serving",
		zap.String("version", version),
		zap.String("gateway", ln.Addr().String()),
		zap.String("gateway_url", gatewayURL),
		zap.String("admin", aln.Addr().String()),
		zap.String("upstream", cfg.Upstream.Endpoint),
		zap.Bool("minting", keyring != nil),
		zap.Bool("root", root != nil),
		zap.Bool("catalog", cat != nil))
	if cat != nil {
		logger.Info("catalog serving",
			zap.String("url", "http://"+aln.Addr().String()+"/v1/"+cfg.Catalog.Name),
			zap.String("schema", cfg.Catalog.Schema),
			zap.String("data_path", cat.dataPath),
			zap.Bool("eager", cfg.Catalog.Eager),
			zap.Bool("dev", cfg.Dev),
			zap.Bool("revocations_in_postgres", cat.revocations != nil))
	}
	if ready != nil {
		ready(ln.Addr(), aln.Addr())
	}

	code := 0
	select {
	case <-ctx.Done():
		logger.Info("shutting down; letting in-flight requests finish", zap.Duration("timeout", cfg.Gateway.ShutdownTimeout))
	case err := <-errc:
		logger.Error("listener failed", zap.Error(err))
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Gateway.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("gateway shutdown did not complete", zap.Error(err))
		code = 1
	}
	if err := admin.ShutdownWithContext(sctx); err != nil {
		logger.Warn("admin shutdown did not complete", zap.Error(err))
	}
	// fasthttp's Shutdown closes only the listeners its Serve has
	// registered: one whose goroutine had not got that far would stay open
	// (and the admin one accept forever).
	ln.Close()
	aln.Close()
	if cat != nil {
		// No request runs any more: stop the watchers and the revocation
		// list, then close the pool.
		cat.Close()
	}
	logger.Info("stopped")
	return code
}

// catalogMaxConns bounds the catalog listener's connections in total
// (catalog.max_connections_per_ip bounds them per client address).
const catalogMaxConns = 16384

// catalogReady makes /readyz also check the catalog database: a process
// whose Postgres is gone cannot serve the catalog, nor see revocations.
// The answer says only that the database is unreachable: the error names
// its user, database and address, which are for the log, not for whoever
// can reach /readyz.
func catalogReady(next fasthttp.RequestHandler, check func(context.Context) error, log *zap.Logger) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/readyz" {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := check(cctx)
			cancel()
			if err != nil {
				const msg = "not ready: catalog database unreachable"
				log.Warn(msg, zap.Error(err))
				ctx.SetContentType("text/plain; charset=utf-8")
				ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
				ctx.SetBodyString(msg + "\n")
				return
			}
		}
		next(ctx)
	}
}

// boundGatewayURL is the gateway's URL for clients: gateway.public_url, or
// the address the gateway listener is bound to (gateway.listen may say port
// 0).
func boundGatewayURL(cfg *config.Config, addr net.Addr) string {
	if cfg.Gateway.PublicURL != "" {
		return cfg.GatewayURL()
	}
	c := *cfg
	c.Gateway.Listen = addr.String()
	return c.GatewayURL()
}

// gatewayConfig maps the configuration file's settings onto the gateway's.
func gatewayConfig(c *config.Config) gateway.Config {
	return gateway.Config{
		Region:              c.Gateway.Region,
		VirtualHostSuffixes: c.Gateway.VirtualHostDomains,
		TrustForwarded:      c.Gateway.TrustForwarded,
		Upstream: gateway.UpstreamConfig{
			Endpoint:        c.Upstream.Endpoint,
			Region:          c.Upstream.Region,
			AccessKeyID:     c.Upstream.AccessKey,
			SecretAccessKey: string(c.Upstream.SecretKey),
			PathStyle:       c.Upstream.PathStyle,
			ConnectTimeout:  c.Upstream.ConnectTimeout,
			ResponseTimeout: c.Upstream.ResponseTimeout,
		},
		HeaderReadTimeout: c.Gateway.HeaderReadTimeout,
		IdleTimeout:       c.Gateway.IdleTimeout,
		AuthorizeTimeout:  c.Gateway.AuthorizeTimeout,
		MaxHeaderBytes:    int(c.Gateway.MaxHeaderBytes),
		MaxConns:          c.Gateway.MaxConnections,
		MaxConnsPerIP:     c.Gateway.MaxConnectionsPerIP,
		MaxChunkSize:      int(c.Gateway.MaxChunkSize),
	}
}

func serveEncoder(format string) zapcore.Encoder {
	ec := zapcore.EncoderConfig{
		TimeKey: "ts", LevelKey: "level", MessageKey: "msg", NameKey: "logger",
		EncodeTime: zapcore.RFC3339NanoTimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder,
		EncodeDuration: zapcore.StringDurationEncoder, LineEnding: zapcore.DefaultLineEnding,
	}
	if format == "console" {
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		return zapcore.NewConsoleEncoder(ec)
	}
	return zapcore.NewJSONEncoder(ec)
}

func newServeLogger(w io.Writer, lc config.Log) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(lc.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	return zap.New(zapcore.NewCore(serveEncoder(lc.Format), zapcore.Lock(zapcore.AddSync(w)), level)), nil
}
