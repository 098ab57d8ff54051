package service

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// DB is the metastore connection the catalog runs on: queries, and the
// transactions of its commits.
type DB interface {
	ducklake.Querier
	ducklake.TxBeginner
}

// Config is what a Catalog is built from.
type Config struct {
	DB     DB
	Schema string // the Postgres schema of the catalog tables ("" for ducklake.DefaultSchema)
	// DataPath is the catalog's data path ("s3://lake/data/"), which
	// relative schema paths resolve against.
	DataPath string
	// Commits is the Iceberg commit path, whose state (statistics files)
	// a table drop ends with the table's rows.
	Commits *commit.Catalog
	// Materializer serves tables' Iceberg metadata, which commits are
	// checked against; nil refuses commits (ErrUnsupported).
	Materializer Materializer
	// Objects is the object store of the catalog's files (view metadata,
	// registered tables' metadata); nil when it has none, and then CanPurge
	// is false too.
	Objects objstore.Store
	// CanPurge says whether the catalog has a storage client to delete a
	// dropped table's files with (DropTable with purge).
	CanPurge bool
	// Committed, when set, is told of every snapshot this catalog commits,
	// before the method that committed it returns (a cache of the current
	// snapshot, say).
	Committed func(snap int64)
	// Now is the clock of view versions' timestamps; nil for time.Now.
	Now func() time.Time
}

// Catalog is the catalog's operations over one DuckLake metastore. It is
// safe for concurrent use.
type Catalog struct {
	db        DB
	cat       *ducklake.Catalog
	reader    *ducklake.Reader
	writer    *ducklake.Writer
	commits   *commit.Catalog
	mat       Materializer
	objects   objstore.Store
	schema    string // the catalog tables' Postgres schema
	dataPath  string
	canPurge  bool
	committed func(int64)
	now       func() time.Time
}

// New returns the Catalog of cfg.
func New(cfg Config) *Catalog {
	c := &Catalog{
		db:        cfg.DB,
		cat:       ducklake.NewCatalog(cfg.Schema, cfg.DataPath),
		reader:    ducklake.NewReader(cfg.DB, cfg.Schema),
		writer:    ducklake.NewWriter(cfg.DB, cfg.Schema),
		commits:   cfg.Commits,
		mat:       cfg.Materializer,
		schema:    cfg.Schema,
		objects:   cfg.Objects,
		dataPath:  cfg.DataPath,
		canPurge:  cfg.CanPurge,
		committed: cfg.Committed,
		now:       cfg.Now,
	}
	if c.schema == "" {
		c.schema = ducklake.DefaultSchema
	}
	if c.committed == nil {
		c.committed = func(int64) {}
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Statements is the DuckLake statements this catalog commits with, for the
// changes not yet made through one of its own methods.
func (c *Catalog) Statements() *ducklake.Catalog { return c.cat }

// DataPath is the catalog's data path ("s3://lake/data/").
func (c *Catalog) DataPath() string { return c.dataPath }

// Change is one change to the catalog inside a snapshot transaction: it
// reads and writes through tx, as of head, and makes snapshot next.
type Change func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error)

// Commit commits do as one DuckLake snapshot (ducklake.Writer.Commit, which
// retries a change that lost a race) by author and returns its id. A change
// that kept losing is refused with ErrConflict; do's own errors come back
// as they are.
func (c *Catalog) Commit(ctx context.Context, author string, do Change) (int64, error) {
	id, err := c.writer.Commit(ctx, author, do)
	var ce *ducklake.ConflictError
	switch {
	case errors.As(err, &ce):
		return 0, refuse(ErrConflict, "the catalog kept changing under this request (%d attempts); retry: %v", ce.Attempts, ce.Last)
	case err != nil:
		return 0, err
	}
	c.committed(id)
	return id, nil
}

// LiveSchema is live schema name as a change inside tx sees it, or missing
// when it does not exist (no such namespace, or no such table in it: the
// caller says which).
func (c *Catalog) LiveSchema(ctx context.Context, tx pgx.Tx, name string, missing error) (ducklake.Schema, error) {
	sc, err := c.cat.LiveSchema(ctx, tx, name)
	if errors.Is(err, ducklake.ErrNotFound) {
		return ducklake.Schema{}, missing
	}
	return sc, err
}
