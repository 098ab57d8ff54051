package export

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/governance/sqltext"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// DB is what the exporter needs from Postgres; *pgxpool.Pool satisfies it.
type DB interface {
	ducklake.Querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Config configures an Exporter.
type Config struct {
	// DuckDB is the embedded DuckDB that reads the base table and writes
	// the copies: the catalog attached (read-only) as Alias, and an S3
	// secret that reads the base files and writes the export prefix
	// (internal/duckenv).
	DuckDB *sql.DB
	// Alias is the DuckLake catalog's name in DuckDB ("lake").
	Alias string
	// PG holds the export state (duckicelake_export*), beside the catalog.
	PG     DB
	Schema string
	// DataPath is the catalog's data path ("s3://lake/data/"): exports
	// live under <data path>__masked__/.
	DataPath string
	// Grace is how long a copy no export uses any more is kept: longer
	// than any credential that could read it lives.
	Grace  time.Duration
	Logger *zap.Logger
	Now    func() time.Time
	// Parallel bounds the base files copied at once (0: GOMAXPROCS).
	Parallel int
}

// Exporter builds masked copies. It is safe for concurrent use; builds of
// one (table, signature) should be serialised by the caller (Manager does).
type Exporter struct {
	cfg     Config
	qschema string
	root    objstore.Location
}

// New returns an Exporter.
func New(cfg Config) (*Exporter, error) {
	if cfg.DuckDB == nil || cfg.PG == nil {
		return nil, errors.New("export: DuckDB and Postgres are required")
	}
	if cfg.Alias == "" {
		cfg.Alias = "lake"
	}
	if cfg.Schema == "" {
		cfg.Schema = ducklake.DefaultSchema
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	dp, err := objstore.ParseDir(cfg.DataPath)
	if err != nil {
		return nil, fmt.Errorf("export: data path: %w", err)
	}
	root, err := dp.Join("__masked__/")
	if err != nil {
		return nil, fmt.Errorf("export: data path: %w", err)
	}
	return &Exporter{cfg: cfg, qschema: pgx.Identifier{cfg.Schema}.Sanitize(), root: root}, nil
}

// Prefix is the directory every export lives under: what masked
// principals' credentials may read, and what base-table credentials never
// need.
func (x *Exporter) Prefix() objstore.Location { return x.root }

func (x *Exporter) parallel() int {
	if x.cfg.Parallel > 0 {
		return x.cfg.Parallel
	}
	return runtime.GOMAXPROCS(0)
}

// Root is where the export of table tableID under signature sig lives.
func (x *Exporter) Root(tableID int64, sig string) objstore.Location {
	l, err := x.root.Join("t" + strconv.FormatInt(tableID, 10) + "/" + sig + "/")
	if err != nil {
		// The parts are digits and hex: a failure is a bug.
		panic(err)
	}
	return l
}

// Export is a built masked copy of one table under one signature.
type Export struct {
	TableID   int64
	Signature string
	// Snapshot is the base table's snapshot the copy holds.
	Snapshot int64
	Root     objstore.Location
	// MetadataLocation is the shadow metadata.json ("" until written).
	MetadataLocation string
	Files            []File
	BuiltAt          time.Time
}

// File is one masked copy of one source: a base data file, or the table's
// inlined rows (Source "ducklake_inlined_data_…").
type File struct {
	Source string
	// SourceRows is the source's live row count when copied: the copy
	// stays valid while it is unchanged (a data file only loses rows).
	SourceRows int64
	Location   string
	Records    int64
	Size       int64
	Footer     int64
	// Stats are the masked file's column statistics, by column name.
	Stats map[string]ColumnStats
}

// ColumnStats are one column's statistics in a masked file, as DuckDB
// wrote them.
type ColumnStats struct {
	Min        *string `json:"min,omitempty"`
	Max        *string `json:"max,omitempty"`
	NullCount  int64   `json:"null_count"`
	ValueCount int64   `json:"num_values"`
	SizeBytes  int64   `json:"column_size_bytes"`
}

func (x *Exporter) t(name string) string { return x.qschema + "." + name }

// Current reads the export of (tableID, sig) as last built; ok is false
// when there is none.
func (x *Exporter) Current(ctx context.Context, tableID int64, sig string) (*Export, bool, error) {
	e := &Export{TableID: tableID, Signature: sig}
	var root string
	err := x.cfg.PG.QueryRow(ctx, `SELECT snapshot_id, root, metadata_location, built_at FROM `+x.t("duckicelake_export")+
		` WHERE table_id = $1 AND signature = $2`, tableID, sig).Scan(&e.Snapshot, &root, &e.MetadataLocation, &e.BuiltAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("export: read export of table %d: %w", tableID, err)
	}
	if e.Root, err = objstore.ParseDir(root); err != nil {
		return nil, false, fmt.Errorf("export: stored root of table %d: %w", tableID, err)
	}
	rows, err := x.cfg.PG.Query(ctx, `SELECT source, source_rows, location, record_count, file_size, footer_size, stats FROM `+
		x.t("duckicelake_export_file")+` WHERE table_id = $1 AND signature = $2 ORDER BY source`, tableID, sig)
	if err != nil {
		return nil, false, fmt.Errorf("export: read export files of table %d: %w", tableID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var f File
		var stats []byte
		if err := rows.Scan(&f.Source, &f.SourceRows, &f.Location, &f.Records, &f.Size, &f.Footer, &stats); err != nil {
			return nil, false, fmt.Errorf("export: read export files of table %d: %w", tableID, err)
		}
		if err := json.Unmarshal(stats, &f.Stats); err != nil {
			return nil, false, fmt.Errorf("export: stats of %s: %w", f.Location, err)
		}
		e.Files = append(e.Files, f)
	}
	return e, true, rows.Err()
}

// inlined reports whether a source is the table's inlined rows, whose set
// of rows can grow (so its copy is rebuilt every time).
func inlined(source string) bool { return strings.HasPrefix(source, "ducklake_inlined_data_") }

// Build makes the export of table t under plan pl current as of snapshot:
// a masked copy of every source whose rows changed, the copies of the
// others kept. It does not write the shadow metadata (Shadow does).
func (x *Exporter) Build(ctx context.Context, t *plan.Table, pl *plan.Plan, snapshot int64) (*Export, error) {
	if pl.Signature == "" {
		return nil, errors.New("export: the plan restricts nothing; there is nothing to export")
	}
	start := x.cfg.Now()
	prev, _, err := x.Current(ctx, t.TableID, pl.Signature)
	if err != nil {
		return nil, err
	}
	if prev != nil && prev.Snapshot > snapshot {
		return prev, nil // a newer build won
	}
	kept := map[string]File{}
	if prev != nil {
		for _, f := range prev.Files {
			kept[f.Source] = f
		}
	}
	table := sqltext.MustIdent(x.cfg.Alias) + "." + sqltext.MustIdent(t.Namespace) + "." + sqltext.MustIdent(t.Name) +
		" AT (VERSION => " + strconv.FormatInt(snapshot, 10) + ")"
	sources, err := x.sources(ctx, table)
	if err != nil {
		return nil, err
	}
	fieldIDs, err := FieldIDs(t)
	if err != nil {
		return nil, err
	}
	root := x.Root(t.TableID, pl.Signature)
	e := &Export{TableID: t.TableID, Signature: pl.Signature, Snapshot: snapshot, Root: root, Files: make([]File, len(sources))}
	// A base file is usually one row group, which DuckDB copies on one
	// thread: copies of several files run side by side, each on its own
	// connection, so that a rebuild uses every core.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(x.parallel())
	written := 0
	for i, src := range sources {
		if f, ok := kept[src.name]; ok && f.SourceRows == src.rows && !inlined(src.name) {
			e.Files[i] = f
			delete(kept, src.name)
			continue
		}
		written++
		g.Go(func() error {
			f, err := x.copyOne(gctx, t, pl, table, fieldIDs, root, src, snapshot)
			e.Files[i] = f
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := x.record(ctx, e, kept); err != nil {
		return nil, err
	}
	x.cfg.Logger.Info("export built", zap.Int64("table_id", t.TableID), zap.String("signature", pl.Signature),
		zap.Int64("snapshot", snapshot), zap.Int("files", len(e.Files)), zap.Int("written", written),
		zap.Duration("took", x.cfg.Now().Sub(start)))
	return e, nil
}

type source struct {
	name string
	rows int64
}

// sources lists the table's live sources at the snapshot and their live
// row counts: count(*) by DuckLake's filename column reads file metadata
// and delete files only.
func (x *Exporter) sources(ctx context.Context, table string) ([]source, error) {
	rows, err := x.cfg.DuckDB.QueryContext(ctx, "SELECT filename, count(*) FROM "+table+" GROUP BY filename ORDER BY filename")
	if err != nil {
		return nil, fmt.Errorf("export: list the files of %s: %w", table, err)
	}
	defer rows.Close()
	var out []source
	for rows.Next() {
		var s source
		if err := rows.Scan(&s.name, &s.rows); err != nil {
			return nil, fmt.Errorf("export: list the files of %s: %w", table, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// copyOne writes the masked copy of one source and reads back its
// statistics.
func (x *Exporter) copyOne(ctx context.Context, t *plan.Table, pl *plan.Plan, table, fieldIDs string, root objstore.Location, src source, snapshot int64) (File, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d", pl.Signature, src.name, src.rows)
	if inlined(src.name) {
		fmt.Fprintf(h, "\x00%d", snapshot)
	}
	name := hex.EncodeToString(h.Sum(nil)[:16]) + ".parquet"
	loc, err := root.Join("data/" + name)
	if err != nil {
		return File{}, err
	}
	if loc.Scheme() == objstore.SchemeFile {
		// A catalog on a local data path: DuckDB writes into directories
		// that exist.
		if err := os.MkdirAll(filepath.Dir(loc.Path()), 0o755); err != nil {
			return File{}, fmt.Errorf("export: %w", err)
		}
	}
	lit, err := sqltext.String(src.name)
	if err != nil {
		return File{}, err
	}
	one := "(SELECT * FROM " + table + " WHERE filename = " + lit + ") AS " + sqltext.MustIdent(t.Name)
	target, _ := sqltext.String(loc.String())
	q := "COPY (" + pl.SelectFrom(t, one) + ") TO " + target + " (FORMAT parquet, FIELD_IDS " + fieldIDs + ", RETURN_STATS)"
	var f File
	var outName string
	var stats duckdb.Map
	var partitions any
	if err := x.cfg.DuckDB.QueryRowContext(ctx, q).Scan(&outName, &f.Records, &f.Size, &f.Footer, &stats, &partitions); err != nil {
		if ctx.Err() != nil {
			return File{}, fmt.Errorf("export: copy %s of table %s.%s: %w", src.name, t.Namespace, t.Name, ctx.Err())
		}
		return File{}, &CopyError{Namespace: t.Namespace, Table: t.Name, Source: src.name, Msg: ElideLiterals(err.Error())}
	}
	f.Source, f.SourceRows, f.Location = src.name, src.rows, loc.String()
	f.Stats = statsOf(stats)
	return f, nil
}

// statsOf reads RETURN_STATS' column_statistics.
func statsOf(m duckdb.Map) map[string]ColumnStats {
	out := make(map[string]ColumnStats, len(m))
	for k, v := range m {
		col, _ := k.(string)
		inner, _ := v.(duckdb.Map)
		var cs ColumnStats
		for sk, sv := range inner {
			key, _ := sk.(string)
			val := fmt.Sprint(sv)
			switch key {
			case "min":
				cs.Min = &val
			case "max":
				cs.Max = &val
			case "null_count":
				cs.NullCount, _ = strconv.ParseInt(val, 10, 64)
			case "num_values":
				cs.ValueCount, _ = strconv.ParseInt(val, 10, 64)
			case "column_size_bytes":
				cs.SizeBytes, _ = strconv.ParseInt(val, 10, 64)
			}
		}
		out[col] = cs
	}
	return out
}

// record makes e the current export of its table and signature, unless a
// build of a newer snapshot got there first, and retires the copies
// (unused) that e no longer uses.
func (x *Exporter) record(ctx context.Context, e *Export, unused map[string]File) error {
	tx, err := x.cfg.PG.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("export: record: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var stored int64 = -1
	err = tx.QueryRow(ctx, `SELECT snapshot_id FROM `+x.t("duckicelake_export")+` WHERE table_id = $1 AND signature = $2 FOR UPDATE`,
		e.TableID, e.Signature).Scan(&stored)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("export: record: %w", err)
	}
	if stored > e.Snapshot {
		return nil
	}
	e.BuiltAt = x.cfg.Now()
	if _, err := tx.Exec(ctx, `INSERT INTO `+x.t("duckicelake_export")+` (table_id, signature, snapshot_id, root, metadata_location, built_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (table_id, signature) DO UPDATE SET snapshot_id = EXCLUDED.snapshot_id,
		root = EXCLUDED.root, metadata_location = EXCLUDED.metadata_location, built_at = EXCLUDED.built_at`,
		e.TableID, e.Signature, e.Snapshot, e.Root.String(), e.MetadataLocation, e.BuiltAt); err != nil {
		return fmt.Errorf("export: record: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+x.t("duckicelake_export_file")+` WHERE table_id = $1 AND signature = $2`, e.TableID, e.Signature); err != nil {
		return fmt.Errorf("export: record: %w", err)
	}
	for _, f := range e.Files {
		stats, _ := json.Marshal(f.Stats)
		if _, err := tx.Exec(ctx, `INSERT INTO `+x.t("duckicelake_export_file")+` (table_id, signature, source, source_rows, location,
			record_count, file_size, footer_size, stats) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			e.TableID, e.Signature, f.Source, f.SourceRows, f.Location, f.Records, f.Size, f.Footer, stats); err != nil {
			return fmt.Errorf("export: record: %w", err)
		}
	}
	deleteAt := e.BuiltAt.Add(x.cfg.Grace)
	for _, f := range unused {
		if _, err := tx.Exec(ctx, `INSERT INTO `+x.t("duckicelake_export_retired")+` (location, delete_at) VALUES ($1, $2)
			ON CONFLICT (location) DO UPDATE SET delete_at = greatest(`+x.t("duckicelake_export_retired")+`.delete_at, EXCLUDED.delete_at)`,
			f.Location, deleteAt); err != nil {
			return fmt.Errorf("export: record: %w", err)
		}
	}
	// A copy in use again is not deleted.
	for _, f := range e.Files {
		if _, err := tx.Exec(ctx, `DELETE FROM `+x.t("duckicelake_export_retired")+` WHERE location = $1`, f.Location); err != nil {
			return fmt.Errorf("export: record: %w", err)
		}
	}
	return tx.Commit(ctx)
}

// FieldIDs is the FIELD_IDS option of a COPY that stamps t's Iceberg field
// ids (DuckLake column ids) on the Parquet columns, nested ones included.
func FieldIDs(t *plan.Table) (string, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range t.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := fieldIDs(&b, c.Name, c.ID, c.Type); err != nil {
			return "", err
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

func fieldIDs(b *strings.Builder, name string, id int64, t ducklake.Type) error {
	key, err := sqltext.String(name)
	if err != nil {
		return err
	}
	b.WriteString(key)
	b.WriteString(": ")
	if !t.Kind.Nested() {
		b.WriteString(strconv.FormatInt(id, 10))
		return nil
	}
	b.WriteString("{__duckdb_field_id: ")
	b.WriteString(strconv.FormatInt(id, 10))
	children := t.Fields
	for i, f := range children {
		b.WriteString(", ")
		childName := f.Name
		switch t.Kind {
		case ducklake.KindList:
			childName = "element"
		case ducklake.KindMap:
			childName = []string{"key", "value"}[min(i, 1)]
		}
		if err := fieldIDs(b, childName, f.ID, f.Type); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// CopyError is a masked copy DuckDB refused to write — most often a policy
// body that binds on its signature's type and fails on some value at run
// time (a cast, a division). Msg is DuckDB's message with its quoted
// literals elided: DuckDB quotes the value that failed ("Could not convert
// string 'alice@example.com' to INT32"), and that value is the cleartext
// the mask exists to hide, so not even the catalog's log may show it.
type CopyError struct {
	Namespace, Table, Source string
	Msg                      string
}

func (e *CopyError) Error() string {
	return "export: copy " + e.Source + " of table " + e.Namespace + "." + e.Table + ": " + e.Msg
}

// ElideLiterals replaces every single-quoted literal of a DuckDB message
// (in which two quotes in a row are an escaped quote) by '…'. An
// unterminated quote elides to the end.
func ElideLiterals(msg string) string {
	var b strings.Builder
	b.Grow(len(msg))
	for i := 0; i < len(msg); i++ {
		if msg[i] != '\'' {
			b.WriteByte(msg[i])
			continue
		}
		b.WriteString("'…'")
		for i++; i < len(msg); i++ {
			if msg[i] == '\'' {
				if i+1 < len(msg) && msg[i+1] == '\'' {
					i++
					continue
				}
				break
			}
		}
	}
	return b.String()
}
