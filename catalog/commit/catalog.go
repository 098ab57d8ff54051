package commit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Snapshot is the DuckLake snapshot one Postgres transaction is writing:
// the id it will have, the head it builds on, and the ids handed out so
// far. The caller inserts the ducklake_snapshot row (its primary key is
// what makes concurrent writers lose cleanly) and, after every table's
// changes, stores NextCatalogID, NextFileID, the schema version and
// Changes as DuckDB would.
type Snapshot struct {
	ID            int64 // the snapshot being written
	Head          int64 // the snapshot it builds on
	SchemaVersion int64 // the head's schema version
	NextCatalogID int64 // the next free catalog id (tables, partitions, sort orders)
	NextFileID    int64 // the next free data or delete file id

	changes       []string
	schemaChanged bool
	// replaced holds the client files the snapshot already scheduled for
	// deletion: a Puffin file holds the deletion vectors of many data
	// files and is replaced once.
	replaced map[string]bool
}

// NewSchemaVersion is the schema version the snapshot gets when it changes
// the schema: one more than the head's.
func (s *Snapshot) NewSchemaVersion() int64 { return s.SchemaVersion + 1 }

// SchemaChanged reports whether the snapshot changes any table's schema
// (columns, partitioning, sort order, or a new table): then its schema
// version is NewSchemaVersion, else the head's.
func (s *Snapshot) SchemaChanged() bool { return s.schemaChanged }

// Changes is the ducklake_snapshot_changes.changes_made value, in DuckDB's
// notation (created_table:"s"."t",inserted_into_table:3,…).
func (s *Snapshot) Changes() string { return strings.Join(s.changes, ",") }

func (s *Snapshot) change(entry string) {
	if !slices.Contains(s.changes, entry) {
		s.changes = append(s.changes, entry)
	}
}

func (s *Snapshot) catalogID() int64 {
	id := s.NextCatalogID
	s.NextCatalogID++
	return id
}

func (s *Snapshot) fileID() int64 {
	id := s.NextFileID
	s.NextFileID++
	return id
}

// Catalog writes Iceberg commits into one DuckLake catalog. It holds no
// state besides its configuration, so one Catalog serves every request.
type Catalog struct {
	schema string // quoted Postgres schema of the ducklake_* tables
	// names answers which live object holds a name.
	names *ducklake.Catalog
	// Objects reads the manifest lists and manifests clients write, and
	// writes the delete files a commit rewrites; it needs credentials for
	// every table's files (the catalog's root credentials, never a
	// client's), so nothing reaches it before its location is checked (see
	// TableDir).
	objects objstore.Store
	// MaxObjectBytes bounds one manifest list or manifest.
	maxObjectBytes int64
	maxFormat      int
}

// Config configures a Catalog.
type Config struct {
	// Schema is the Postgres schema of the catalog tables ("" is public).
	Schema string
	// Objects reads client-written manifests and metadata files and writes
	// rewritten delete files; without it, commits that add snapshots and
	// registrations are refused.
	Objects objstore.Store
	// MaxObjectBytes bounds one manifest list or manifest (64 MiB).
	MaxObjectBytes int64
	// MaxFormatVersion is the newest Iceberg format version tables may be
	// created in or upgraded to (2): the one the catalog's materialiser
	// serves. A table's version is the formatVersionProperty.
	MaxFormatVersion int
}

// formatVersionProperty chooses the Iceberg format version a table is
// served in; catalog/materialize reads it. The catalog sets it on create
// and upgrade-format-version, clients cannot set it.
const formatVersionProperty = materialize.FormatVersionProperty

// New returns a Catalog.
func New(cfg Config) *Catalog {
	schema := cfg.Schema
	if schema == "" {
		schema = ducklake.DefaultSchema
	}
	if cfg.MaxObjectBytes <= 0 {
		cfg.MaxObjectBytes = 64 << 20
	}
	if cfg.MaxFormatVersion < 2 {
		cfg.MaxFormatVersion = 2
	}
	return &Catalog{schema: pgx.Identifier{schema}.Sanitize(), names: ducklake.NewCatalog(schema, ""), objects: cfg.Objects, maxObjectBytes: cfg.MaxObjectBytes,
		maxFormat: cfg.MaxFormatVersion}
}

func (c *Catalog) t(name string) string { return c.schema + "." + name }

// reader reads through q; within the transaction, it sees this commit's
// own rows.
func (c *Catalog) reader(q ducklake.Querier) *ducklake.Reader {
	return ducklake.NewReader(q, strings.Trim(c.schema, `"`))
}

// columnsAt reads table tableID's column rows visible at the snapshot
// being written (this commit's changes included).
func (c *Catalog) columnsAt(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64) ([]ducklake.Column, error) {
	cols, err := c.reader(tx).ColumnRows(ctx, snap.ID, tableID)
	if err != nil {
		return nil, err
	}
	return cols, nil
}

// maxColumnID is the largest column id table tableID ever had: new
// columns must not reuse a dropped column's id.
func (c *Catalog) maxColumnID(ctx context.Context, tx pgx.Tx, tableID int64) (int64, error) {
	var n int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(column_id), 0) FROM `+c.t("ducklake_column")+` WHERE table_id = $1`, tableID).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the column ids of table %d: %w", tableID, err)
	}
	return n, nil
}
