package rest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/oauth"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/bounded"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// DB is what the catalog needs from Postgres; *pgxpool.Pool satisfies it.
// Reads run on it directly, DDL in transactions from BeginTx.
type DB interface {
	ducklake.Querier
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Metadata is a table's Iceberg metadata as of one DuckLake snapshot
// (service.Metadata).
type Metadata = service.Metadata

// Materializer produces Iceberg metadata for a DuckLake table as of a
// catalog snapshot (service.Materializer).
type Materializer = service.Materializer

// Deps are the parts a Server works with.
type Deps struct {
	// DB reaches the DuckLake catalog. Required.
	DB DB
	// Materializer answers LoadTable; nil answers it 501.
	Materializer Materializer
	// Keyring mints vended credentials; nil vends none.
	Keyring *creds.Keyring
	// Objects is object storage with the catalog's root credentials: it
	// reads the manifests Iceberg clients write and the metadata files
	// tables and views are registered from, writes views' metadata files
	// at the locations the catalog reports, and deletes the files of tables
	// dropped with purgeRequested. nil refuses commits that add snapshots,
	// registering and purging, and keeps views' metadata in Postgres only.
	Objects objstore.Store
	// Authorizer decides, after the table scope, whether a remotely signed
	// S3 request may be signed: the same instance the gateway asks per
	// request (serve hands both the one it builds); nil is
	// governance.ScopeOnly.
	Authorizer governance.Authorizer
	// Governance enforces and authors tags, masks, row policies, roles and
	// grants; nil serves no governance routes and governs nothing.
	Governance *Governance
	// Audit receives one event per token request, LoadTable, vend,
	// signature, DDL and commit; the disclosing reads and every denial through
	// governance.RecordSync, before the answer is sent. nil discards them.
	Audit governance.Sink
	// Metrics registers the per-route request metrics; nil keeps them
	// unregistered.
	Metrics prometheus.Registerer
	// Logger receives errors; nil discards them.
	Logger *zap.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Server is the Iceberg REST catalog. Handler serves it.
type Server struct {
	cfg Config
	// auditScratch pools the events audit builds (*auditScratch).
	auditScratch sync.Pool
	db           DB
	reader       *ducklake.Reader
	svc          *service.Catalog  // the catalog's operations (namespaces; the snapshot commit)
	cat          *ducklake.Catalog // svc's statements, for the routes not yet moved into svc
	mat          Materializer
	keyring      *creds.Keyring
	signer       *remoteSigner // nil: remote signing is not configured
	gov          *Governance   // nil: no governance
	commits      *commit.Catalog
	objects      objstore.Store // nil: no register, no purge, no view metadata files
	log          *zap.Logger
	now          func() time.Time

	routes  []route // the route table (routes.go)
	sink    governance.Sink
	metrics *routeMetrics

	auth *oauth.Server // the token endpoint and token verification

	dataPath string // the catalog's data path, "s3://lake/data/"
	schema   string // quoted Postgres schema of the catalog tables

	snap     snapshotCache
	cache    responseCache
	govCache responseCache // governed LoadTable answers, per plan signature
	// maskSchemas: each principal's masking schema per namespace (masking.go).
	maskSchemas bounded.Map[string, maskSchemaEntry]
	flight      singleflight.Group
	signScopes  scopeCache

	configBody  []byte   // GET /v1/config, encoded once
	tableConfig []byte   // LoadTableResult config without credentials
	etagSeed    [32]byte // changes the ETags when the configuration changes
}

// New checks that the catalog is a DuckLake catalog this build serves,
// applies the sidecar migrations it lacks (ducklake.Migrate) and returns
// the Server.
func New(ctx context.Context, cfg Config, deps Deps) (*Server, error) {
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.DB == nil {
		return nil, errors.New("rest: no database")
	}
	s := &Server{
		cfg:     cfg,
		db:      deps.DB,
		reader:  ducklake.NewReader(deps.DB, cfg.Schema),
		mat:     deps.Materializer,
		keyring: deps.Keyring,
		objects: deps.Objects,
		gov:     deps.Governance,
		log:     deps.Logger,
		now:     deps.Now,
	}
	s.signScopes.Max, s.maskSchemas.Max = maxSignerCreds, maxMaskSchemas
	if s.gov != nil && s.gov.Exports != nil && s.gov.MaskViews != nil {
		// Masking views over a masked copy follow its refreshes.
		s.gov.Exports.OnRefresh(s.exportRefreshed)
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	schema := cfg.Schema
	if schema == "" {
		schema = ducklake.DefaultSchema
	}
	s.schema = pgx.Identifier{schema}.Sanitize()
	tokenKey := cfg.TokenKey
	if len(tokenKey) == 0 {
		// Dev mode without a key: tokens are valid for this process only.
		tokenKey = make([]byte, 32)
		if _, err := rand.Read(tokenKey); err != nil {
			return nil, fmt.Errorf("rest: token key: %w", err)
		}
	}
	auth, err := newAuth(&cfg, tokenKey, &deps)
	if err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	s.auth = auth
	signer, err := newRemoteSigner(&cfg, deps.Keyring, deps.Authorizer, s.log)
	if err != nil {
		return nil, err
	}
	s.signer = signer
	s.routes = routeTable()
	if s.sink = deps.Audit; s.sink == nil {
		s.sink = governance.Discard
	}
	if s.metrics, err = newRouteMetrics(deps.Metrics); err != nil {
		return nil, fmt.Errorf("rest: metrics: %w", err)
	}
	s.snap.ttl = cfg.SnapshotTTL
	s.cache.Max = cfg.CacheEntries
	s.govCache.Max = cfg.CacheEntries

	md, err := s.reader.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("rest: read the DuckLake catalog (run duckicelake init first?): %w", err)
	}
	if err := s.reader.CheckVersion(ctx); err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	s.dataPath = md.DataPath
	s.commits = commit.New(commit.Config{Schema: cfg.Schema, Objects: deps.Objects, MaxFormatVersion: 3})
	s.svc = service.New(service.Config{DB: deps.DB, Schema: cfg.Schema, DataPath: md.DataPath, Commits: s.commits, Materializer: deps.Materializer, Objects: deps.Objects, CanPurge: deps.Objects != nil,
		Committed: func(id int64) { s.snap.set(catalogState{id: id}, time.Now()) }, Now: s.now})
	s.cat = s.svc.Statements()
	// The sidecar tables this build needs (a catalog DuckDB created, or an
	// older duckicelake initialised, lacks some).
	if _, err := ducklake.Migrate(ctx, deps.DB, cfg.Schema); err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	// catalog/materialize serves a table in the format version its
	// duckicelake.format-version property names, up to 3.
	if s.configBody, err = s.encodeConfig(); err != nil {
		return nil, err
	}
	if s.tableConfig, err = json.Marshal(s.storageConfig()); err != nil {
		return nil, err
	}
	s.etagSeed = sha256.Sum256(append(append([]byte{}, s.configBody...), s.tableConfig...))
	return s, nil
}

// t qualifies a catalog table name.
func (s *Server) t(name string) string { return s.schema + "." + name }
