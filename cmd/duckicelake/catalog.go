package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/eager"
	"github.com/duckicelake/duckicelake/catalog/maskview"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/catalog/revoke"
	"github.com/duckicelake/duckicelake/export"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/admin"
	"github.com/duckicelake/duckicelake/governance/engine"
	"github.com/duckicelake/duckicelake/governance/pgaccess"
	"github.com/duckicelake/duckicelake/governance/sqlcheck"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/tableindex"
)

// errNoCatalog reports a database without a usable DuckLake catalog.
var errNoCatalog = errors.New("no DuckLake catalog")

// catalogService is the Iceberg REST catalog on the DuckLake metastore and
// what it runs on: the Postgres pool, the materialiser, the revocation list
// and the eager path's watchers.
type catalogService struct {
	pool *pgxpool.Pool
	// direct vends DuckLake-direct reader roles (governance/pgaccess).
	direct *pgaccess.Access
	// masks writes and sweeps the masking views (catalog/maskview).
	masks *maskview.Manager
	// authz is governance's Authorizer, which the gateway asks too.
	authz *engine.Engine
	// index maps S3 keys to tables, for the authorizer.
	index *tableindex.Live
	// trail writes audit events to Postgres in batches.
	trail *store.TrailWriter
	// auditWritten, auditDropped and auditRefused count the trail's
	// events (/metrics).
	auditWritten, auditDropped, auditRefused atomic.Int64
	gov                                      *store.Store
	check                                    *sqlcheck.Checker
	// exports makes masked copies (nil: none); duck is its DuckDB.
	exports     *export.Manager
	duck        *sql.DB
	rest        *rest.Server
	mat         *materialize.Materializer
	reader      *ducklake.Reader
	revocations *revoke.Store // nil without minting keys
	schema      string
	dataPath    string
	log         *zap.Logger

	cancel    context.CancelFunc // stops the watchers
	govCancel context.CancelFunc // stops the governance watcher and sweeps
	// cleanCancel stops the cleanup of files scheduled for deletion.
	cleanCancel context.CancelFunc
	wg          sync.WaitGroup
}

// configError is a setting serve cannot use; serve exits 2 for it, 1 for
// every other startup failure.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// openCatalog connects to the catalog database, checks that it holds a
// DuckLake catalog this build serves with current sidecar tables, and builds
// the REST catalog, which vends credentials for the gateway at gatewayURL.
// With a keyring, it opens the Postgres revocation list and makes it the
// keyring's. It builds governance's Authorizer (c.authz), which the gateway
// asks too, and starts watching governance changes. Close releases
// everything.
func openCatalog(ctx context.Context, cfg *config.Config, gatewayURL string, keyring *creds.Keyring, reg prometheus.Registerer, audit governance.Sink, log *zap.Logger) (_ *catalogService, err error) {
	cc := &cfg.Catalog
	tokenKey, err := cfg.TokenKey()
	if err != nil {
		return nil, configError{err}
	}
	if tokenKey == nil && !cfg.Dev {
		return nil, configError{cfg.Require("oauth.token_key")}
	}
	clients, err := rest.ParseClients(string(cfg.OAuth.Clients))
	if err != nil {
		return nil, configError{&config.Error{Key: "oauth.clients", Msg: strings.TrimPrefix(err.Error(), "rest: ")}}
	}
	pcfg, err := pgxpool.ParseConfig(string(cc.DSN))
	if err != nil {
		return nil, configError{&config.Error{Key: "catalog.dsn", Msg: err.Error()}}
	}
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		pcfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "duckicelake"
	where := describeDB(pcfg.ConnConfig)

	c := &catalogService{schema: cc.Schema, log: log}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, fmt.Errorf("catalog database %s: %w", where, err)
	}
	if err := c.pool.Ping(ctx); err != nil {
		return nil, fmt.Errorf("catalog database %s: %w", where, err)
	}
	c.reader = ducklake.NewReader(c.pool, cc.Schema)
	if c.dataPath, err = c.checkCatalog(ctx, where); err != nil {
		return nil, err
	}
	if cc.DataPath != "" && withSlash(cc.DataPath) != c.dataPath {
		return nil, configError{&config.Error{Key: "catalog.data_path",
			Msg: fmt.Sprintf("%q, but the catalog in %s stores data path %q", cc.DataPath, where, c.dataPath)}}
	}

	if keyring != nil {
		if c.revocations, err = revoke.Open(ctx, c.pool, revoke.Options{Schema: cc.Schema, Logger: log}); err != nil {
			return nil, fmt.Errorf("catalog database %s: revocation list: %w", where, err)
		}
		keyring.Revocations = c.revocations
	}

	if err := c.openGovernance(ctx, cfg, clients); err != nil {
		return nil, fmt.Errorf("governance: %w", err)
	}

	// One store with the upstream's root keys for everything the catalog
	// reads and writes itself; what clients name is checked against their
	// tables' locations before it reaches it.
	root := objstore.NewS3(rootS3Client(&cfg.Upstream))
	c.mat = materialize.NewMaterializer(materialize.Config{
		Source: materialize.NewPGSource(c.pool, cc.Schema),
		Writer: root,
		// Tables upgraded to format version 3 (duckicelake.format-version)
		// turn DuckLake's delete files into deletion vectors: each is read
		// once with the root client and its positions kept.
		Options: materialize.Options{Objects: materialize.NewPositionCache(root, 0)},
	})
	c.rest, err = rest.New(ctx, rest.Config{
		Name:       cc.Name,
		Schema:     cc.Schema,
		Dev:        cfg.Dev,
		TokenKey:   tokenKey,
		TokenTTL:   cfg.OAuth.TokenTTL,
		SessionTTL: cfg.OAuth.SessionTTL,
		Clients:    clients,

		MaxAuthFailuresPerClient: cfg.OAuth.MaxFailuresPerClient,
		MaxAuthFailuresPerIP:     cfg.OAuth.MaxFailuresPerIP,
		AuthFailureWindow:        cfg.OAuth.FailureWindow,

		GatewayURL:     gatewayURL,
		Region:         cfg.Gateway.Region,
		VendTTL:        cc.VendTTL,
		SnapshotTTL:    cc.SnapshotTTL,
		RequestTimeout: cc.RequestTimeout,
		// Remote signing signs for the gateway; a sign request may name the
		// upstream's host or a virtual-hosted bucket as the gateway knows them.
		Signer: rest.SignerConfig{
			Upstream:            rest.SignerUpstream{Endpoint: cfg.Upstream.Endpoint, Region: cfg.Upstream.Region},
			VirtualHostSuffixes: cfg.Gateway.VirtualHostDomains,
		},
	}, rest.Deps{
		DB:           c.pool,
		Materializer: rest.Materialized(c.mat),
		Keyring:      keyring,
		Objects:      root,
		Authorizer:   c.authz,
		Governance: &rest.Governance{Engine: c.authz, Admin: admin.New(c.gov, c.check), Store: c.gov,
			Exports: c.exports, FailClosed: cfg.Governance.FailClosed,
			Direct:    &rest.DuckLakeDirect{Access: c.direct, OwnerDSN: string(cc.DSN), TTL: cc.VendTTL},
			MaskViews: c.masks},
		// The catalog's events (token requests included) go where the gateway's do: the JSON audit
		// log and the Postgres trail (read decisions written synchronously).
		Audit:   governance.Tee(audit, c.trail),
		Metrics: reg,
		Logger:  log,
	})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.Background())
	c.cleanCancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.cleanupScheduled(cctx, commit.New(commit.Config{Schema: cc.Schema, Objects: root}), cc.CleanupGrace, time.Minute)
	}()
	if len(clients) == 0 && !cfg.Dev {
		log.Warn("catalog: no oauth.clients; no client can obtain a token (set DUCKICELAKE_OAUTH_CLIENTS)")
	}
	if keyring == nil {
		log.Warn("catalog: no mint.keys; LoadTable vends no credentials")
	}
	return c, nil
}

// checkCatalog makes sure the database holds a DuckLake catalog of the
// version this build serves, with sidecar tables as new as it needs, and
// returns its data path. Every failure says what to run.
func (c *catalogService) checkCatalog(ctx context.Context, where string) (string, error) {
	initHint := fmt.Sprintf("run `duckicelake init --dsn <dsn> --schema %s --data-path s3://<bucket>/<prefix>/` first", c.schema)
	md, err := c.reader.Metadata(ctx)
	if isUndefined(err) {
		return "", fmt.Errorf("%w in schema %q of %s: %s", errNoCatalog, c.schema, where, initHint)
	}
	if err != nil {
		return "", fmt.Errorf("catalog database %s: %w", where, err)
	}
	if err := c.reader.CheckVersion(ctx); err != nil {
		return "", fmt.Errorf("catalog in schema %q of %s: %w", c.schema, where, err)
	}
	var version int
	err = c.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+
		pgx.Identifier{c.schema, "duckicelake_schema_migrations"}.Sanitize()).Scan(&version)
	if isUndefined(err) {
		version, err = 0, nil
	}
	if err != nil {
		return "", fmt.Errorf("catalog database %s: read the sidecar version: %w", where, err)
	}
	switch want := ducklake.SidecarVersion(); {
	case version < want:
		return "", fmt.Errorf("catalog in schema %q of %s: duckicelake's sidecar tables are at version %d, this build needs %d: "+
			"run `duckicelake init --dsn <dsn> --schema %s` to migrate them", c.schema, where, version, want, c.schema)
	case version > want:
		return "", fmt.Errorf("catalog in schema %q of %s: duckicelake's sidecar tables are at version %d, newer than this build's %d: "+
			"run a newer duckicelake", c.schema, where, version, want)
	}
	return md.DataPath, nil
}

// isUndefined reports a missing table or schema.
func isUndefined(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000")
}

// describeDB names a database for messages, without credentials.
func describeDB(c *pgx.ConnConfig) string {
	return fmt.Sprintf("database %q on %s:%d", c.Database, c.Host, c.Port)
}

func withSlash(p string) string {
	if strings.HasSuffix(p, "/") {
		return p
	}
	return p + "/"
}

// rootS3Client is the catalog's own S3 client for the upstream, with its
// root keys: it writes Iceberg metadata and purges dropped tables. Nothing
// it signs ever reaches a client.
func rootS3Client(u *config.Upstream) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(u.Endpoint),
		Region:       u.Region,
		UsePathStyle: u.PathStyle,
		Credentials:  credentials.NewStaticCredentialsProvider(u.AccessKey, string(u.SecretKey), ""),
	})
}

// Handler serves the catalog's routes (/v1/…).
func (c *catalogService) Handler(ctx *fasthttp.RequestCtx) { c.rest.Handler(ctx) }

// Ready checks that the catalog database answers.
func (c *catalogService) Ready(ctx context.Context) error {
	if _, err := c.pool.Exec(ctx, "SELECT 1"); err != nil {
		return fmt.Errorf("catalog database: %w", err)
	}
	return nil
}

// StartEager starts the eager path: in this process, a watcher that tells
// the REST catalog of every committed snapshot at once; and a campaign for
// the fleet's eager lock whose winner materialises the tables each snapshot
// changed, so a fresh LoadTable after a DuckDB commit finds them built.
func (c *catalogService) StartEager() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	observe := &eager.Watcher{Pool: c.pool, Schema: c.schema, Logger: c.log,
		Handler: func(ctx context.Context, id int64) {
			c.rest.ObserveSnapshot(id)
			c.authz.ObserveSnapshot(id)
			c.index.Observe(ctx, id)
			if c.exports != nil && c.exports.Active() {
				if ids, err := c.changedTables(ctx, id); err == nil {
					c.exports.Observe(id, ids)
				}
			}
		}}
	lead := &eager.Watcher{Pool: c.pool, Schema: c.schema, Logger: c.log, Handler: c.warm}
	for _, run := range []func(context.Context) error{observe.Observe, lead.Run} {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				c.log.Error("eager: watcher stopped", zap.Error(err))
			}
		}()
	}
}

// warm materialises every table snapshot snap changed, as of snap. It runs
// on the leader's listener goroutine, one snapshot after another.
func (c *catalogService) warm(ctx context.Context, snap int64) {
	start := time.Now()
	ids, err := c.changedTables(ctx, snap)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("eager: read snapshot changes", zap.Int64("snapshot", snap), zap.Error(err))
		}
		return
	}
	for _, id := range ids {
		bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		_, err := c.mat.Materialize(bctx, id, snap)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, ducklake.ErrNotFound), errors.Is(err, materialize.ErrUnrepresentable),
			errors.Is(err, materialize.ErrUnsupported), errors.Is(err, materialize.ErrUnsupportedType):
			// Dropped since, a view, or not expressible in Iceberg: LoadTable
			// answers those itself.
			c.log.Debug("eager: not materialised", zap.Int64("snapshot", snap), zap.Int64("table_id", id), zap.Error(err))
		default:
			if ctx.Err() == nil {
				c.log.Warn("eager: materialise", zap.Int64("snapshot", snap), zap.Int64("table_id", id), zap.Error(err))
			}
		}
	}
	c.log.Debug("eager: warmed", zap.Int64("snapshot", snap), zap.Int64s("table_ids", ids), zap.Duration("took", time.Since(start)))
}

// changedTables lists the ids of the tables snapshot snap created or
// changed, from its ducklake_snapshot_changes entry.
func (c *catalogService) changedTables(ctx context.Context, snap int64) ([]int64, error) {
	s, err := c.reader.Snapshot(ctx, snap)
	if err != nil {
		return nil, err
	}
	var ids []int64
	add := func(id int64) {
		for _, x := range ids {
			if x == id {
				return
			}
		}
		ids = append(ids, id)
	}
	for _, ch := range ducklake.ParseChanges(s.Changes) {
		switch {
		case ch.Kind == "created_table":
			ns, name, ok := splitQualified(ch.Target)
			if !ok {
				continue
			}
			t, err := c.reader.TableByName(ctx, snap, ns, name)
			if errors.Is(err, ducklake.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			add(t.ID)
		case strings.HasPrefix(ch.Kind, "dropped_"), strings.HasSuffix(ch.Kind, "_view"), strings.HasSuffix(ch.Kind, "_schema"):
		default:
			// inserted_into_table, deleted_from_table, altered_table,
			// compacted_table and the inlined_* kinds name a table id.
			if id, err := strconv.ParseInt(ch.Target, 10, 64); err == nil {
				add(id)
			}
		}
	}
	return ids, nil
}

// splitQualified splits a changes_made name, `"schema"."table"` with SQL
// quoting ("" inside a name is one quote).
func splitQualified(s string) (schema, table string, ok bool) {
	var parts []string
	for len(s) > 0 {
		if s[0] != '"' {
			return "", "", false
		}
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				break
			}
			b.WriteByte(s[i])
		}
		if i >= len(s) {
			return "", "", false
		}
		parts = append(parts, b.String())
		s = s[i+1:]
		if len(s) > 0 {
			if s[0] != '.' {
				return "", "", false
			}
			s = s[1:]
		}
	}
	if len(parts) != 2 {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// Close stops the watchers and the revocation list and closes the pool.
func (c *catalogService) Close() {
	if c.cancel != nil {
		c.cancel()
	}
	if c.govCancel != nil {
		c.govCancel()
	}
	if c.cleanCancel != nil {
		c.cleanCancel()
	}
	c.wg.Wait()
	if c.exports != nil {
		c.exports.Close()
	}
	if c.duck != nil {
		c.duck.Close()
	}
	if c.trail != nil {
		c.trail.Close()
	}
	if c.check != nil {
		c.check.Close()
	}
	if c.revocations != nil {
		c.revocations.Close()
	}
	if c.pool != nil {
		c.pool.Close()
	}
}

// auditSink is the trail as a governance.Sink, nil (not a typed nil) when
// there is none.
func (c *catalogService) auditSink() governance.Sink {
	if c.trail == nil {
		return nil
	}
	return c.trail
}

// cleanupScheduled deletes, every interval, the files DuckLake scheduled
// for deletion more than grace ago (expired snapshots' files, replaced
// client delete files, the manifests of engine commits): what DuckDB's
// ducklake_cleanup_old_files does, so no operator has to run it. Every
// process cleans up; a file another deleted first is no error.
func (c *catalogService) cleanupScheduled(ctx context.Context, commits *commit.Catalog, grace, interval time.Duration) {
	every(ctx, interval, func(rctx context.Context) {
		got, err := commits.CleanupScheduled(rctx, c.pool, time.Now().Add(-grace), c.log)
		switch {
		case err != nil && ctx.Err() == nil:
			c.log.Warn("catalog: cleanup of files scheduled for deletion", zap.Int("deleted", got.Deleted), zap.Error(err))
		case got.Deleted > 0 || got.Refused > 0:
			c.log.Info("catalog: files scheduled for deletion cleaned up", zap.Int("deleted", got.Deleted), zap.Int("refused", got.Refused))
		}
	})
}
