package commit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/governance/sqltext"
	"github.com/duckicelake/duckicelake/internal/duckenv"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// DuckLake has no equality deletes, so an equality delete file a snapshot
// adds becomes the position deletes it stands for (issue 15 item 10, the
// seeds' "equality-delete file" row): for each data file it applies to by
// Iceberg's sequence-number rule — every live data file but those the same
// snapshot adds (their data sequence number is the delete's, and an
// equality delete applies only to strictly older ones) — and its partition
// scope (a delete written under a partitioned spec applies to the data
// files of the same DuckLake partition and values only, an unpartitioned
// one to all), the positions of the rows whose key columns equal a row of
// the delete file (NULL equal to NULL, as Iceberg has it) are found with an
// embedded DuckDB and recorded as position deletes through addPositions,
// merged with the data file's deletes so far. The delete file itself is
// never registered: it is scheduled for deletion with the commit.

// maxScannedFileBytes bounds one data file an equality delete is applied
// to: the catalog reads it whole (with its root credentials, through its
// object store) into a scratch file for DuckDB.
const maxScannedFileBytes = 1 << 30

// eqKey is one key column of an equality delete.
type eqKey struct {
	id       int64
	name     string // the table's column name, for messages
	ice      iceberg.Type
	duckType string // the DuckDB type both files are read as
	// initial is the DuckDB expression of the column's initial default,
	// what a data file written before the column existed holds: NULL, or
	// a cast literal.
	initial string
}

// eqScanner is the embedded DuckDB and scratch directory the equality
// deletes of one snapshot are applied with; opened at the first.
type eqScanner struct {
	db   *sql.DB
	conn *sql.Conn
	dir  string
	n    int // files fetched so far, for scratch names
}

func openScanner(ctx context.Context) (*eqScanner, error) {
	dir, err := os.MkdirTemp("", "duckicelake-eqdelete-")
	if err != nil {
		return nil, fmt.Errorf("equality deletes: scratch directory: %w", err)
	}
	// No extensions and no S3 secret: DuckDB reads only the scratch files
	// the catalog fetched into dir.
	db, err := duckenv.Open(ctx, duckenv.Options{Threads: 2, MemoryLimit: "1GB", TempDirectory: filepath.Join(dir, "spill")})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("equality deletes: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("equality deletes: %w", err)
	}
	return &eqScanner{db: db, conn: conn, dir: dir}, nil
}

func (s *eqScanner) close() {
	if s == nil {
		return
	}
	s.conn.Close()
	s.db.Close()
	os.RemoveAll(s.dir)
}

// fetch copies the object at location (at most max bytes) into a scratch
// file and returns its SQL string literal; the caller removes the file.
func (s *eqScanner) fetch(ctx context.Context, c *Catalog, location string, max int64) (path, literal string, err error) {
	loc, err := objstore.Parse(location)
	if err != nil {
		return "", "", err
	}
	body, err := c.objects.Get(ctx, loc, max)
	if err != nil {
		return "", "", err
	}
	s.n++
	path = filepath.Join(s.dir, strconv.Itoa(s.n)+".parquet")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return "", "", fmt.Errorf("equality deletes: scratch file: %w", err)
	}
	literal, err = sqltext.String(path)
	return path, literal, err
}

// named restates a DuckDB error about the scratch file at path in terms
// of the object at location: the client knows no scratch paths.
func named(err error, path, location string) string {
	return strings.ReplaceAll(err.Error(), path, location)
}

// addEqualityDeletes applies the equality delete files of ch, the change
// of one Iceberg snapshot, to the table's data files (see above). data
// and removedDelete are applyFiles', after the snapshot's other files.
func (c *Catalog) addEqualityDeletes(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, sh *tableShape, ch *fileChange,
	data map[string]*liveData, removedDelete map[int64]bool, specAlias map[int]int64) error {
	if len(ch.addEqDeletes) == 0 {
		return nil
	}
	if c.objects == nil {
		return unsupported("equality delete file %s: this catalog has no object reader to read it", ch.addEqDeletes[0].file.Path)
	}
	if err := c.refuseInlinedRows(ctx, tx, snap, t, ch.addEqDeletes[0].file.Path); err != nil {
		return err
	}
	cols, err := c.columnsAt(ctx, tx, snap, t.ID)
	if err != nil {
		return err
	}
	initial := map[int64]*string{}
	for _, col := range cols {
		initial[col.ID] = col.InitialDefault
	}
	// Candidates: the live data files no file of this snapshot is, with
	// what their partition scope and readability need.
	own := map[string]bool{}
	for _, a := range ch.addData {
		own[a.file.Path] = true
	}
	var targets []string
	for p := range data {
		if !own[p] {
			targets = append(targets, p)
		}
	}
	slices.Sort(targets)
	parts, mapped, err := c.dataFileScopes(ctx, tx, snap, t)
	if err != nil {
		return err
	}

	var scan *eqScanner
	defer func() { scan.close() }()
	for _, a := range ch.addEqDeletes {
		f := a.file
		keys, err := eqKeys(f, sh, initial)
		if err != nil {
			return err
		}
		info, values, err := eqScope(a, sh, specAlias)
		if err != nil {
			return err
		}
		if scan == nil {
			if scan, err = openScanner(ctx); err != nil {
				return err
			}
		}
		n, err := scan.loadKeys(ctx, c, f, keys)
		if err != nil {
			return err
		}
		byTarget := map[string][]int64{}
		for _, p := range targets {
			if n == 0 {
				break
			}
			d := data[p]
			if info != nil && (d.partitionID != info.ID || !slices.EqualFunc(parts[d.id], values, eqPtr)) {
				continue
			}
			if mapped[d.id] {
				return unsupported("equality delete file %s applies to data file %s, whose columns DuckLake finds by a name mapping (added with ducklake_add_data_files), not by field id; rewrite that data file first", f.Path, p)
			}
			pos, err := scan.matches(ctx, c, p, keys)
			if err != nil {
				return err
			}
			if len(pos) > 0 {
				byTarget[p] = pos
			}
		}
		if len(byTarget) == 0 {
			// Nothing to delete: the file only goes.
			if err := c.replaceClientFile(ctx, tx, snap, f.Path); err != nil {
				return err
			}
			continue
		}
		if err := c.addPositions(ctx, tx, snap, t, f, data, removedDelete, byTarget, false); err != nil {
			return err
		}
	}
	return nil
}

func eqPtr(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// eqKeys resolves f's equality_ids to the table's columns.
func eqKeys(f *iceberg.DataFile, sh *tableShape, initial map[int64]*string) ([]eqKey, error) {
	if !strings.EqualFold(f.Format, iceberg.FormatParquet) {
		return nil, unsupported("equality delete file %s is %s; only Parquet equality delete files are taken", f.Path, f.Format)
	}
	if f.KeyMetadata != nil {
		return nil, unsupported("delete file %s is encrypted; this catalog does not take encrypted files", f.Path)
	}
	if len(f.EqualityIDs) == 0 {
		return nil, invalid("equality delete file %s has no equality_ids", f.Path)
	}
	var keys []eqKey
	seen := map[int64]bool{}
	for _, id := range f.EqualityIDs {
		id := int64(id)
		if seen[id] {
			return nil, invalid("equality delete file %s names field id %d twice in equality_ids", f.Path, id)
		}
		seen[id] = true
		top, isTop := sh.top[id]
		l, isLeaf := sh.leaves[id]
		switch {
		case !isTop && isLeaf:
			return nil, unsupported("equality delete file %s: field id %d is a nested field; only top-level columns are taken as equality keys", f.Path, id)
		case !isTop:
			return nil, invalid("equality delete file %s: equality field id %d is no column of the table", f.Path, id)
		case !isLeaf:
			return nil, unsupported("equality delete file %s: column %q (field id %d) is of type %s; only primitive columns are taken as equality keys", f.Path, top.Name, id, top.Type)
		}
		dt, ok := duckSQLType(l.duck)
		if !ok {
			return nil, unsupported("equality delete file %s: column %q is of type %s, which equality deletes do not take", f.Path, top.Name, l.duck)
		}
		k := eqKey{id: id, name: top.Name, ice: l.ice, duckType: dt, initial: "NULL"}
		if v := initial[id]; v != nil {
			lit, err := sqltext.String(*v)
			if err != nil {
				return nil, fmt.Errorf("column %q: initial default: %w", top.Name, err)
			}
			k.initial = "CAST(" + lit + " AS " + dt + ")"
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// eqScope is the DuckLake partition and values an equality delete file
// applies within (nil: every data file).
func eqScope(a addedFile, sh *tableShape, specAlias map[int]int64) (*ducklake.PartitionInfo, []*string, error) {
	for _, pf := range a.spec.Fields {
		if pf.Transform.Kind == iceberg.TransformTruncate {
			// DuckLake keeps no truncate values, so the scope cannot be
			// told; applying the delete more widely would delete rows
			// Iceberg readers keep.
			return nil, nil, unsupported("equality delete file %s is written under partition spec %d, whose truncate field %q DuckLake records no values for; write it under an unpartitioned spec (a global delete) or one without truncate fields",
				a.file.Path, a.spec.ID, pf.Name)
		}
	}
	return sh.partitionOf(a, specAlias)
}

// dataFileScopes reads the partition values (by data file id, in key
// order) of the table's live data files, and which of them DuckLake reads
// through a name mapping.
func (c *Catalog) dataFileScopes(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table) (map[int64][]*string, map[int64]bool, error) {
	live := ` FROM ` + c.t("ducklake_data_file") + ` f WHERE f.table_id = $1 AND f.begin_snapshot <= $2 AND (f.end_snapshot IS NULL OR f.end_snapshot > $2)`
	parts := map[int64][]*string{}
	rows, err := tx.Query(ctx, `SELECT v.data_file_id, v.partition_value FROM `+c.t("ducklake_file_partition_value")+` v
		WHERE v.table_id = $1 AND EXISTS (SELECT 1`+live+` AND f.data_file_id = v.data_file_id) ORDER BY v.data_file_id, v.partition_key_index`, t.ID, snap.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("read the partition values of table %d: %w", t.ID, err)
	}
	var (
		id  int64
		val *string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &val}, func() error {
		parts[id] = append(parts[id], val)
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("read the partition values of table %d: %w", t.ID, err)
	}
	rows, err = tx.Query(ctx, `SELECT f.data_file_id`+live+` AND f.mapping_id IS NOT NULL`, t.ID, snap.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("read the data files of table %d: %w", t.ID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, nil, fmt.Errorf("read the data files of table %d: %w", t.ID, err)
	}
	mapped := map[int64]bool{}
	for _, id := range ids {
		mapped[id] = true
	}
	return parts, mapped, nil
}

// refuseInlinedRows refuses an equality delete on a table with rows DuckDB
// keeps in Postgres (inlined) at the snapshot: catalog/materialize serves
// them as a data file older than the delete, so it applies to them, and
// this catalog deletes only rows of Parquet files.
func (c *Catalog) refuseInlinedRows(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, path string) error {
	rows, err := tx.Query(ctx, `SELECT table_name FROM `+c.t("ducklake_inlined_data_tables")+` WHERE table_id = $1`, t.ID)
	if err != nil {
		return fmt.Errorf("inlined data tables of table %d: %w", t.ID, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("inlined data tables of table %d: %w", t.ID, err)
	}
	for _, name := range names {
		var has bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+c.t(pgx.Identifier{name}.Sanitize())+`
			WHERE begin_snapshot <= $1 AND (end_snapshot IS NULL OR end_snapshot > $1))`, snap.ID).Scan(&has); err != nil {
			return fmt.Errorf("inlined rows of table %d: %w", t.ID, err)
		}
		if has {
			return unsupported("equality delete file %s: the table has rows DuckDB keeps in Postgres (inlined), which equality deletes are not applied to; flush them with DuckDB's ducklake_flush_inlined_data first", path)
		}
	}
	return nil
}

// schemaMap is read_parquet's schema argument reading keys by field id as
// k0, k1, …, with default (NULL for the delete file, which must hold every
// key) for a data file without the column.
func schemaMap(keys []eqKey, defaults bool) string {
	var b strings.Builder
	b.WriteString("MAP {")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		def := "NULL"
		if defaults {
			def = k.initial
		}
		fmt.Fprintf(&b, "%d: {name: 'k%d', type: '%s', default_value: %s}", k.id, i, k.duckType, def)
	}
	b.WriteString("}")
	return b.String()
}

// loadKeys reads the key columns of equality delete file f into DuckDB
// table eq (its distinct rows), after checking that f has each of them by
// field id with a type the column takes. It returns the number of rows.
func (s *eqScanner) loadKeys(ctx context.Context, c *Catalog, f *iceberg.DataFile, keys []eqKey) (int64, error) {
	path, lit, err := s.fetch(ctx, c, f.Path, c.maxObjectBytes)
	if err != nil {
		return 0, objectError("equality delete file", f.Path, err)
	}
	defer os.Remove(path)
	types, err := s.topLevelTypes(ctx, lit)
	if err != nil {
		return 0, invalid("equality delete file %s: %s", f.Path, named(err, path, f.Path))
	}
	for _, k := range keys {
		got, ok := types[k.id]
		switch {
		case !ok:
			return 0, invalid("equality delete file %s has no column with field id %d (column %q)", f.Path, k.id, k.name)
		case !deleteTypeFits(k.ice, got):
			return 0, invalid("equality delete file %s: the column with field id %d is %s, which does not match column %q (%s)", f.Path, k.id, got, k.name, k.ice)
		}
	}
	if _, err := s.conn.ExecContext(ctx, `CREATE OR REPLACE TABLE eq AS SELECT DISTINCT * FROM read_parquet(`+lit+`, schema = `+schemaMap(keys, false)+`)`); err != nil {
		return 0, invalid("equality delete file %s: %s", f.Path, named(err, path, f.Path))
	}
	var n int64
	if err := s.conn.QueryRowContext(ctx, `SELECT count(*) FROM eq`).Scan(&n); err != nil {
		return 0, fmt.Errorf("equality delete file %s: %w", f.Path, err)
	}
	if f.RecordCount > 0 && n == 0 {
		return 0, invalid("equality delete file %s: record_count %d, the file has no rows", f.Path, f.RecordCount)
	}
	return n, nil
}

// topLevelTypes reads a Parquet file's top-level columns: their DuckDB
// types by field id.
func (s *eqScanner) topLevelTypes(ctx context.Context, lit string) (map[int64]string, error) {
	rows, err := s.conn.QueryContext(ctx, `SELECT field_id, coalesce(num_children, 0), coalesce(duckdb_type, '') FROM parquet_schema(`+lit+`)`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]string{}
	// The schema is depth first; stack holds the children each open
	// group has left, the root's first.
	var stack []int64
	first := true
	for rows.Next() {
		var (
			id       sql.NullInt64
			children int64
			typ      string
		)
		if err := rows.Scan(&id, &children, &typ); err != nil {
			return nil, err
		}
		if first {
			stack, first = append(stack, children), false
			continue
		}
		if len(stack) == 0 {
			return nil, errors.New("malformed Parquet schema")
		}
		if len(stack) == 1 && id.Valid {
			out[id.Int64] = typ
		}
		stack[len(stack)-1]--
		if children > 0 {
			stack = append(stack, children)
		}
		for len(stack) > 0 && stack[len(stack)-1] == 0 {
			stack = stack[:len(stack)-1]
		}
	}
	return out, rows.Err()
}

// matches returns the positions of data file location's rows whose keys
// equal a row of eq, ascending.
func (s *eqScanner) matches(ctx context.Context, c *Catalog, location string, keys []eqKey) ([]int64, error) {
	path, lit, err := s.fetch(ctx, c, location, maxScannedFileBytes)
	if errors.Is(err, objstore.ErrTooLarge) {
		return nil, unsupported("data file %s is larger than the %d bytes this catalog reads to apply an equality delete; write position deletes for it instead", location, maxScannedFileBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("read data file %s: %w", location, err)
	}
	defer os.Remove(path)
	on := make([]string, len(keys))
	for i := range keys {
		on[i] = fmt.Sprintf("eq.k%d IS NOT DISTINCT FROM d.k%d", i, i)
	}
	rows, err := s.conn.QueryContext(ctx, `SELECT d.file_row_number FROM read_parquet(`+lit+`, schema = `+schemaMap(keys, true)+`, file_row_number = true) d
		WHERE EXISTS (SELECT 1 FROM eq WHERE `+strings.Join(on, " AND ")+`) ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("apply an equality delete to data file %s: %s", location, named(err, path, location))
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("apply an equality delete to data file %s: %w", location, err)
	}
	return out, nil
}

// duckSQLType is the DuckDB type a DuckLake column of type t is read as.
func duckSQLType(t ducklake.Type) (string, bool) {
	if t.Kind == ducklake.KindDecimal {
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), true
	}
	s, ok := duckTypes[t.Kind]
	return s, ok
}

var duckTypes = map[ducklake.Kind]string{
	ducklake.KindBoolean: "BOOLEAN", ducklake.KindInt8: "TINYINT", ducklake.KindInt16: "SMALLINT",
	ducklake.KindInt32: "INTEGER", ducklake.KindInt64: "BIGINT", ducklake.KindInt128: "HUGEINT",
	ducklake.KindUint8: "UTINYINT", ducklake.KindUint16: "USMALLINT", ducklake.KindUint32: "UINTEGER",
	ducklake.KindFloat32: "FLOAT", ducklake.KindFloat64: "DOUBLE", ducklake.KindTime: "TIME",
	ducklake.KindDate: "DATE", ducklake.KindTimestamp: "TIMESTAMP", ducklake.KindTimestampS: "TIMESTAMP_S",
	ducklake.KindTimestampMS: "TIMESTAMP_MS", ducklake.KindTimestampNS: "TIMESTAMP_NS",
	ducklake.KindTimestampTZ: "TIMESTAMPTZ", ducklake.KindVarchar: "VARCHAR", ducklake.KindJSON: "VARCHAR",
	ducklake.KindBlob: "BLOB", ducklake.KindUUID: "UUID",
}

// deleteTypeFits reports whether a delete file column DuckDB reads as
// duck (parquet_schema's duckdb_type) holds values of Iceberg type t: the
// type itself, or one Iceberg promotes to it (int → long, float → double,
// a narrower decimal of the same scale), so that reading it as the
// column's type loses nothing.
func deleteTypeFits(t iceberg.Type, duck string) bool {
	duck = strings.ToUpper(strings.TrimSpace(duck))
	if t.ID == iceberg.TypeDecimal {
		var p, s int
		if _, err := fmt.Sscanf(duck, "DECIMAL(%d,%d)", &p, &s); err != nil {
			return false
		}
		return s == t.Scale && p <= t.Precision
	}
	return slices.Contains(fitting[t.ID], duck)
}

var fitting = map[iceberg.TypeID][]string{
	iceberg.TypeBoolean:     {"BOOLEAN"},
	iceberg.TypeInt:         {"INTEGER", "SMALLINT", "TINYINT"},
	iceberg.TypeLong:        {"BIGINT", "INTEGER", "SMALLINT", "TINYINT"},
	iceberg.TypeFloat:       {"FLOAT"},
	iceberg.TypeDouble:      {"DOUBLE", "FLOAT"},
	iceberg.TypeDate:        {"DATE"},
	iceberg.TypeTime:        {"TIME"},
	iceberg.TypeTimestamp:   {"TIMESTAMP", "TIMESTAMP_MS", "TIMESTAMP_S"},
	iceberg.TypeTimestampTZ: {"TIMESTAMP WITH TIME ZONE"},
	iceberg.TypeTimestampNS: {"TIMESTAMP_NS"},
	iceberg.TypeString:      {"VARCHAR"},
	iceberg.TypeBinary:      {"BLOB"},
	iceberg.TypeFixed:       {"BLOB"},
	iceberg.TypeUUID:        {"UUID"},
}
