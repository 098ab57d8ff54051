package ducklake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotFound reports a snapshot, schema or table that does not exist at the
// snapshot asked for.
var ErrNotFound = errors.New("not found")

// Querier is what Reader needs from Postgres: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all satisfy it. Pass a read-only repeatable-read transaction to get
// one consistent view across several calls.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Reader reads a DuckLake 1.0 catalog. It holds no state besides its
// connection, so one Reader serves any number of goroutines.
type Reader struct {
	db         Querier
	schema     string // quoted Postgres schema
	schemaName string // as given
}

// NewReader reads the catalog in Postgres schema schema ("" = DefaultSchema).
func NewReader(db Querier, schema string) *Reader {
	if schema == "" {
		schema = DefaultSchema
	}
	return &Reader{db: db, schema: pgx.Identifier{schema}.Sanitize(), schemaName: schema}
}

// t qualifies a catalog table name.
func (r *Reader) t(name string) string { return r.schema + "." + name }

// visible is the spec's "exists at snapshot $1" predicate for alias a.
func visible(a string) string {
	return fmt.Sprintf("%[1]sbegin_snapshot <= $1 AND (%[1]send_snapshot IS NULL OR %[1]send_snapshot > $1)", a)
}

// Metadata reads ducklake_metadata.
func (r *Reader) Metadata(ctx context.Context) (Metadata, error) {
	return readMetadata(ctx, r.db, r.schema)
}

// CheckVersion fails with a *VersionError unless the catalog is FormatVersion.
func (r *Reader) CheckVersion(ctx context.Context) error {
	md, err := r.Metadata(ctx)
	if err != nil {
		return err
	}
	return checkVersion(md)
}

type rowQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func readMetadata(ctx context.Context, db rowQuerier, quotedSchema string) (Metadata, error) {
	var md Metadata
	rows, err := db.Query(ctx, `SELECT "key", "value", coalesce("scope", ''), coalesce(scope_id, 0) FROM `+quotedSchema+`.ducklake_metadata`)
	if err != nil {
		return md, fmt.Errorf("read ducklake_metadata: %w", err)
	}
	md.Settings, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Setting, error) {
		var s Setting
		err := row.Scan(&s.Key, &s.Value, &s.Scope, &s.ScopeID)
		return s, err
	})
	if err != nil {
		return md, fmt.Errorf("read ducklake_metadata: %w", err)
	}
	for _, s := range md.Settings {
		if s.Scope != "" {
			continue
		}
		switch s.Key {
		case "version":
			md.Version = s.Value
		case "created_by":
			md.CreatedBy = s.Value
		case "data_path":
			md.DataPath = s.Value
		case "encrypted":
			md.Encrypted = s.Value == "true"
		}
	}
	return md, nil
}

const snapshotCols = `s.snapshot_id, s.snapshot_time, s.schema_version, s.next_catalog_id, s.next_file_id,
	coalesce(c.changes_made, ''), coalesce(c.author, ''), coalesce(c.commit_message, ''), coalesce(c.commit_extra_info, '')`

func scanSnapshot(row pgx.CollectableRow) (Snapshot, error) {
	var s Snapshot
	var t *time.Time
	err := row.Scan(&s.ID, &t, &s.SchemaVersion, &s.NextCatalogID, &s.NextFileID,
		&s.Changes, &s.Author, &s.CommitMessage, &s.CommitExtraInfo)
	if t != nil {
		s.Time = *t
	}
	return s, err
}

// Snapshots lists every snapshot, oldest first.
func (r *Reader) Snapshots(ctx context.Context) ([]Snapshot, error) {
	rows, err := r.db.Query(ctx, `SELECT `+snapshotCols+` FROM `+r.t("ducklake_snapshot")+` s
		LEFT JOIN `+r.t("ducklake_snapshot_changes")+` c USING (snapshot_id) ORDER BY s.snapshot_id`)
	if err != nil {
		return nil, fmt.Errorf("read snapshots: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanSnapshot)
	if err != nil {
		return nil, fmt.Errorf("read snapshots: %w", err)
	}
	return out, nil
}

// Snapshot reads snapshot id; ErrNotFound if it does not exist (or expired).
func (r *Reader) Snapshot(ctx context.Context, id int64) (Snapshot, error) {
	return r.oneSnapshot(ctx, fmt.Sprintf("snapshot %d", id), `s.snapshot_id = $1`, id)
}

// CurrentSnapshot reads the newest snapshot.
func (r *Reader) CurrentSnapshot(ctx context.Context) (Snapshot, error) {
	return r.oneSnapshot(ctx, "current snapshot", `s.snapshot_id = (SELECT max(snapshot_id) FROM `+r.t("ducklake_snapshot")+`)`)
}

func (r *Reader) oneSnapshot(ctx context.Context, what, where string, args ...any) (Snapshot, error) {
	rows, err := r.db.Query(ctx, `SELECT `+snapshotCols+` FROM `+r.t("ducklake_snapshot")+` s
		LEFT JOIN `+r.t("ducklake_snapshot_changes")+` c USING (snapshot_id) WHERE `+where, args...)
	if err != nil {
		return Snapshot{}, fmt.Errorf("read snapshot: %w", err)
	}
	s, err := pgx.CollectExactlyOneRow(rows, scanSnapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if err != nil {
		return s, fmt.Errorf("read snapshot: %w", err)
	}
	return s, nil
}

// resolvePath applies DuckLake's path rule: a relative path is appended to the
// path of its parent (data path, schema, table); an absolute one stands alone.
func resolvePath(base, path string, relative bool) string {
	if !relative {
		return path
	}
	return base + path
}

func end(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func orZero(p *int64) int64 { return end(p) }

// Schemas lists the schemas visible at snapshot snap, ordered by id.
func (r *Reader) Schemas(ctx context.Context, snap int64) ([]Schema, error) {
	md, err := r.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	return r.schemas(ctx, snap, md.DataPath, "")
}

func (r *Reader) schemas(ctx context.Context, snap int64, dataPath, extra string, args ...any) ([]Schema, error) {
	rows, err := r.db.Query(ctx, `SELECT schema_id, coalesce(schema_uuid::text, ''), begin_snapshot, end_snapshot,
		schema_name, coalesce(path, ''), coalesce(path_is_relative, true)
		FROM `+r.t("ducklake_schema")+` WHERE `+visible("")+extra+` ORDER BY schema_id`, append([]any{snap}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Schema, error) {
		var s Schema
		var e *int64
		err := row.Scan(&s.ID, &s.UUID, &s.Begin, &e, &s.Name, &s.RawPath, &s.PathIsRelative)
		s.End = end(e)
		s.Path = resolvePath(dataPath, s.RawPath, s.PathIsRelative)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	return out, nil
}

// Tables lists the tables of every schema visible at snapshot snap, ordered
// by id, with their paths resolved.
func (r *Reader) Tables(ctx context.Context, snap int64) ([]Table, error) {
	return r.tables(ctx, snap, "")
}

// Table reads table tableID as of snapshot snap; ErrNotFound if it does not
// exist then.
func (r *Reader) Table(ctx context.Context, snap, tableID int64) (Table, error) {
	ts, err := r.tables(ctx, snap, ` AND t.table_id = $2`, tableID)
	if err != nil {
		return Table{}, err
	}
	if len(ts) == 0 {
		return Table{}, fmt.Errorf("table %d at snapshot %d: %w", tableID, snap, ErrNotFound)
	}
	return ts[0], nil
}

// TableByName finds table schema.name as of snapshot snap.
func (r *Reader) TableByName(ctx context.Context, snap int64, schema, name string) (Table, error) {
	ts, err := r.tables(ctx, snap, ` AND s.schema_name = $2 AND t.table_name = $3`, schema, name)
	if err != nil {
		return Table{}, err
	}
	if len(ts) == 0 {
		return Table{}, fmt.Errorf("table %s.%s at snapshot %d: %w", schema, name, snap, ErrNotFound)
	}
	return ts[0], nil
}

// UUIDHistory is what the catalog's history says of a table UUID.
type UUIDHistory struct {
	// Found: a table of the UUID was committed, at some snapshot.
	Found bool
	// Live: it is not dropped (a row of it has no end snapshot).
	Live bool
	// Begin is the latest snapshot a row of it begins at.
	Begin int64
}

// TableUUIDHistory reads whether a table of UUID uuid was ever committed,
// live or dropped, and when: a staged create's credential is good for keys
// no table claims only until its table exists, and a key index older than
// the commit must catch up before it can tell.
func (r *Reader) TableUUIDHistory(ctx context.Context, uuid string) (UUIDHistory, error) {
	var h UUIDHistory
	var begin *int64
	var live *bool
	if err := r.db.QueryRow(ctx, `SELECT max(begin_snapshot), bool_or(end_snapshot IS NULL) FROM `+r.t("ducklake_table")+
		` WHERE table_uuid::text = lower($1)`, uuid).Scan(&begin, &live); err != nil {
		return h, fmt.Errorf("look up table UUID %s: %w", uuid, err)
	}
	if begin != nil {
		h.Found, h.Begin, h.Live = true, *begin, live != nil && *live
	}
	return h, nil
}

func (r *Reader) tables(ctx context.Context, snap int64, extra string, args ...any) ([]Table, error) {
	md, err := r.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := r.db.Query(ctx, `SELECT t.table_id, coalesce(t.table_uuid::text, ''), t.begin_snapshot, t.end_snapshot,
			t.schema_id, t.table_name, coalesce(t.path, ''), coalesce(t.path_is_relative, true),
			coalesce(s.path, ''), coalesce(s.path_is_relative, true)
		FROM `+r.t("ducklake_table")+` t JOIN `+r.t("ducklake_schema")+` s USING (schema_id)
		WHERE `+visible("t.")+` AND `+visible("s.")+extra+` ORDER BY t.table_id`, append([]any{snap}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("read tables: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Table, error) {
		var t Table
		var e *int64
		var schemaPath string
		var schemaRel bool
		err := row.Scan(&t.ID, &t.UUID, &t.Begin, &e, &t.SchemaID, &t.Name, &t.RawPath, &t.PathIsRelative, &schemaPath, &schemaRel)
		t.End = end(e)
		t.Path = resolvePath(resolvePath(md.DataPath, schemaPath, schemaRel), t.RawPath, t.PathIsRelative)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read tables: %w", err)
	}
	return out, nil
}

// ColumnRows reads the ducklake_column rows of table tableID visible at
// snapshot snap (nested children included), ordered by column_order.
func (r *Reader) ColumnRows(ctx context.Context, snap, tableID int64) ([]Column, error) {
	out, err := r.columnRows(ctx, snap, "table_id = $2", tableID)
	if err != nil {
		return nil, fmt.Errorf("read columns of table %d: %w", tableID, err)
	}
	return out, nil
}

// columnRows reads the column rows visible at snap that match where (over
// $2 = arg), ordered by table, then column order.
func (r *Reader) columnRows(ctx context.Context, snap int64, where string, arg any) ([]Column, error) {
	rows, err := r.db.Query(ctx, `SELECT column_id, begin_snapshot, end_snapshot, table_id, column_order,
			column_name, column_type, initial_default, default_value, coalesce(nulls_allowed, true),
			parent_column, coalesce(default_value_type, ''), coalesce(default_value_dialect, '')
		FROM `+r.t("ducklake_column")+` WHERE `+where+` AND `+visible("")+` ORDER BY table_id, column_order, column_id`, snap, arg)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Column, error) {
		var c Column
		var e, parent *int64
		err := row.Scan(&c.ID, &c.Begin, &e, &c.TableID, &c.Order, &c.Name, &c.Type, &c.InitialDefault,
			&c.DefaultValue, &c.NullsAllowed, &parent, &c.DefaultValueType, &c.DefaultValueDialect)
		c.End, c.ParentColumn = end(e), orZero(parent)
		return c, err
	})
}

// Columns returns the top-level columns of table tableID at snapshot snap,
// in column order, with nested types assembled from their child columns.
func (r *Reader) Columns(ctx context.Context, snap, tableID int64) ([]Field, error) {
	cols, err := r.ColumnRows(ctx, snap, tableID)
	if err != nil {
		return nil, err
	}
	fields, err := BuildFields(cols)
	if err != nil {
		return nil, fmt.Errorf("table %d at snapshot %d: %w", tableID, snap, err)
	}
	return fields, nil
}

// ColumnsOf is Columns for many tables in one query: the top-level
// columns of each of tableIDs at snapshot snap. A table with no columns at
// snap (not live then) has no entry.
func (r *Reader) ColumnsOf(ctx context.Context, snap int64, tableIDs []int64) (map[int64][]Field, error) {
	out := make(map[int64][]Field, len(tableIDs))
	if len(tableIDs) == 0 {
		return out, nil
	}
	cols, err := r.columnRows(ctx, snap, "table_id = ANY($2)", tableIDs)
	if err != nil {
		return nil, fmt.Errorf("read columns of %d tables: %w", len(tableIDs), err)
	}
	for i := 0; i < len(cols); {
		j := i
		for j < len(cols) && cols[j].TableID == cols[i].TableID {
			j++
		}
		fields, err := BuildFields(cols[i:j])
		if err != nil {
			return nil, fmt.Errorf("table %d at snapshot %d: %w", cols[i].TableID, snap, err)
		}
		out[cols[i].TableID] = fields
		i = j
	}
	return out, nil
}

// BuildFields assembles column rows of one table version (as ColumnRows
// returns them, ordered by column_order) into top-level fields.
func BuildFields(cols []Column) ([]Field, error) {
	children := make(map[int64][]int, len(cols)) // parent id -> indexes into cols
	var top []int
	for i, c := range cols {
		if c.ParentColumn == 0 {
			top = append(top, i)
		} else {
			children[c.ParentColumn] = append(children[c.ParentColumn], i)
		}
	}
	var build func(i, depth int) (Field, error)
	build = func(i, depth int) (Field, error) {
		c := cols[i]
		if depth > 64 {
			return Field{}, fmt.Errorf("column %d: nesting too deep (a parent_column cycle?)", c.ID)
		}
		t, err := ParseType(c.Type)
		if err != nil {
			return Field{}, fmt.Errorf("column %d (%s): %w", c.ID, c.Name, err)
		}
		f := Field{ID: c.ID, Name: c.Name, Type: t, Nullable: c.NullsAllowed}
		kids := children[c.ID]
		switch {
		case t.Kind == KindList && len(kids) != 1,
			t.Kind == KindMap && len(kids) != 2,
			t.Kind == KindStruct && len(kids) == 0:
			return Field{}, fmt.Errorf("column %d (%s): %s with %d children", c.ID, c.Name, t.Kind, len(kids))
		case !t.Kind.Nested() && len(kids) != 0:
			return Field{}, fmt.Errorf("column %d (%s): %s with children", c.ID, c.Name, t.Kind)
		}
		for _, k := range kids {
			child, err := build(k, depth+1)
			if err != nil {
				return Field{}, err
			}
			f.Type.Fields = append(f.Type.Fields, child)
		}
		return f, nil
	}
	out := make([]Field, 0, len(top))
	for _, i := range top {
		f, err := build(i, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// DataFiles lists the data files of table tableID visible at snapshot snap,
// in file order, each with its partition values, the delete file visible at
// snap and its inlined deletions up to snap.
func (r *Reader) DataFiles(ctx context.Context, snap, tableID int64) ([]DataFile, error) {
	table, err := r.Table(ctx, snap, tableID)
	if err != nil {
		return nil, err
	}
	rows, err := r.db.Query(ctx, `SELECT d.data_file_id, d.table_id, d.begin_snapshot, d.end_snapshot, d.file_order,
			d.path, coalesce(d.path_is_relative, true), coalesce(d.file_format, 'parquet'), d.record_count,
			d.file_size_bytes, d.footer_size, d.row_id_start, d.partition_id, coalesce(d.encryption_key, ''),
			d.mapping_id, d.partial_max,
			del.delete_file_id, del.begin_snapshot, del.end_snapshot, del.path, coalesce(del.path_is_relative, true),
			coalesce(del.format, 'parquet'), del.delete_count, del.file_size_bytes, del.footer_size,
			coalesce(del.encryption_key, ''), del.partial_max
		FROM `+r.t("ducklake_data_file")+` d
		LEFT JOIN (SELECT * FROM `+r.t("ducklake_delete_file")+` WHERE `+visible("")+`) del USING (data_file_id)
		WHERE d.table_id = $2 AND `+visible("d.")+`
		ORDER BY d.file_order NULLS LAST, d.data_file_id`, snap, tableID)
	if err != nil {
		return nil, fmt.Errorf("read data files of table %d: %w", tableID, err)
	}
	files, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (DataFile, error) {
		var f DataFile
		var (
			e, order, recs, size, footer, rowID, part, mapping, pmax       *int64
			delID, delBegin, delEnd, delCount, delSize, delFooter, delPMax *int64
			delPath                                                        *string
			delRel                                                         bool
			delFormat, delKey                                              string
		)
		err := row.Scan(&f.ID, &f.TableID, &f.Begin, &e, &order, &f.RawPath, &f.PathIsRelative, &f.Format,
			&recs, &size, &footer, &rowID, &part, &f.EncryptionKey, &mapping, &pmax,
			&delID, &delBegin, &delEnd, &delPath, &delRel, &delFormat, &delCount, &delSize, &delFooter, &delKey, &delPMax)
		if err != nil {
			return f, err
		}
		f.End, f.FileOrder, f.RecordCount, f.FileSizeBytes, f.FooterSize = end(e), orZero(order), orZero(recs), orZero(size), orZero(footer)
		f.RowIDStart, f.PartitionID, f.MappingID, f.PartialMax = orZero(rowID), orZero(part), orZero(mapping), orZero(pmax)
		f.Path = resolvePath(table.Path, f.RawPath, f.PathIsRelative)
		if delID != nil {
			d := &DeleteFile{ID: *delID, TableID: f.TableID, Begin: orZero(delBegin), End: end(delEnd), DataFileID: f.ID,
				PathIsRelative: delRel, Format: delFormat, DeleteCount: orZero(delCount), FileSizeBytes: orZero(delSize),
				FooterSize: orZero(delFooter), EncryptionKey: delKey, PartialMax: orZero(delPMax)}
			if delPath != nil {
				d.RawPath = *delPath
			}
			d.Path = resolvePath(table.Path, d.RawPath, d.PathIsRelative)
			f.Delete = d
		}
		return f, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read data files of table %d: %w", tableID, err)
	}
	if len(files) == 0 {
		return files, nil
	}
	byID := make(map[int64]*DataFile, len(files))
	for i := range files {
		byID[files[i].ID] = &files[i]
	}

	rows, err = r.db.Query(ctx, `SELECT v.data_file_id, v.partition_key_index, v.partition_value
		FROM `+r.t("ducklake_file_partition_value")+` v JOIN `+r.t("ducklake_data_file")+` d USING (data_file_id)
		WHERE v.table_id = $2 AND d.table_id = $2 AND `+visible("d.")+`
		ORDER BY v.data_file_id, v.partition_key_index`, snap, tableID)
	if err != nil {
		return nil, fmt.Errorf("read partition values of table %d: %w", tableID, err)
	}
	var (
		fileID, key int64
		value       *string
	)
	_, err = pgx.ForEachRow(rows, []any{&fileID, &key, &value}, func() error {
		if f := byID[fileID]; f != nil {
			pv := FilePartitionValue{KeyIndex: key, Null: value == nil}
			if value != nil {
				pv.Value = *value
			}
			f.PartitionValues = append(f.PartitionValues, pv)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read partition values of table %d: %w", tableID, err)
	}

	dels, err := r.InlinedDeletes(ctx, snap, tableID)
	if err != nil {
		return nil, err
	}
	for id, pos := range dels {
		if f := byID[id]; f != nil {
			f.InlinedDeletes = pos
		}
	}
	return files, nil
}

// InlinedDeletes reads ducklake_inlined_delete_<tableID>: rows of data files
// that DuckDB deleted without writing a delete file, as sorted row positions
// per data file id, for deletions made up to snapshot snap.
func (r *Reader) InlinedDeletes(ctx context.Context, snap, tableID int64) (map[int64][]int64, error) {
	name := fmt.Sprintf("ducklake_inlined_delete_%d", tableID)
	ok, err := r.TableExists(ctx, name)
	if err != nil || !ok {
		return nil, err
	}
	rows, err := r.db.Query(ctx, `SELECT file_id, row_id FROM `+r.t(name)+` WHERE begin_snapshot <= $1 ORDER BY file_id, row_id`, snap)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	out := make(map[int64][]int64)
	var fileID, pos int64
	_, err = pgx.ForEachRow(rows, []any{&fileID, &pos}, func() error {
		list := out[fileID]
		// Sorted input: a repeated position (the same row deleted twice) is skipped.
		if n := len(list); n == 0 || list[n-1] != pos {
			out[fileID] = append(list, pos)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

// TableExists reports whether table name exists in the catalog's schema:
// sidecar tables a catalog DuckDB created lacks until its first migration,
// inlined-data tables a DuckDB expiry dropped.
func (r *Reader) TableExists(ctx context.Context, name string) (bool, error) {
	var ok bool
	err := r.db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, r.t(pgx.Identifier{name}.Sanitize())).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up table %s: %w", name, err)
	}
	return ok, nil
}

// FileColumnStats reads the per-file column statistics of the data files of
// table tableID visible at snapshot snap, ordered by file and column id.
func (r *Reader) FileColumnStats(ctx context.Context, snap, tableID int64) ([]FileColumnStats, error) {
	rows, err := r.db.Query(ctx, `SELECT st.data_file_id, st.table_id, st.column_id, coalesce(st.column_size_bytes, -1),
			coalesce(st.value_count, -1), coalesce(st.null_count, -1), st.min_value, st.max_value,
			coalesce(st.contains_nan, false), coalesce(st.extra_stats, '')
		FROM `+r.t("ducklake_file_column_stats")+` st JOIN `+r.t("ducklake_data_file")+` d USING (data_file_id)
		WHERE st.table_id = $2 AND d.table_id = $2 AND `+visible("d.")+`
		ORDER BY st.data_file_id, st.column_id`, snap, tableID)
	if err != nil {
		return nil, fmt.Errorf("read file column stats of table %d: %w", tableID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (FileColumnStats, error) {
		var s FileColumnStats
		err := row.Scan(&s.DataFileID, &s.TableID, &s.ColumnID, &s.ColumnSizeBytes, &s.ValueCount, &s.NullCount,
			&s.Min, &s.Max, &s.ContainsNaN, &s.ExtraStats)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("read file column stats of table %d: %w", tableID, err)
	}
	return out, nil
}

// PartitionSpecs lists every partition spec table tableID ever had, oldest
// first; a data file names its spec by PartitionID.
func (r *Reader) PartitionSpecs(ctx context.Context, tableID int64) ([]PartitionInfo, error) {
	return r.partitions(ctx, `i.table_id = $1`, tableID)
}

// Partition returns the partition spec of table tableID at snapshot snap, or
// nil when the table is not partitioned then.
func (r *Reader) Partition(ctx context.Context, snap, tableID int64) (*PartitionInfo, error) {
	ps, err := r.partitions(ctx, `i.table_id = $2 AND i.begin_snapshot <= $1 AND (i.end_snapshot IS NULL OR i.end_snapshot > $1)`, snap, tableID)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	return &ps[len(ps)-1], nil
}

func (r *Reader) partitions(ctx context.Context, where string, args ...any) ([]PartitionInfo, error) {
	rows, err := r.db.Query(ctx, `SELECT i.partition_id, i.table_id, i.begin_snapshot, i.end_snapshot,
			c.partition_key_index, c.column_id, coalesce(c."transform", 'identity')
		FROM `+r.t("ducklake_partition_info")+` i
		LEFT JOIN `+r.t("ducklake_partition_column")+` c ON c.partition_id = i.partition_id AND c.table_id = i.table_id
		WHERE `+where+` ORDER BY i.begin_snapshot, i.partition_id, c.partition_key_index`, args...)
	if err != nil {
		return nil, fmt.Errorf("read partitions: %w", err)
	}
	var out []PartitionInfo
	var (
		id, table, begin int64
		e, key, col      *int64
		transform        string
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &table, &begin, &e, &key, &col, &transform}, func() error {
		if n := len(out); n == 0 || out[n-1].ID != id {
			out = append(out, PartitionInfo{ID: id, TableID: table, Begin: begin, End: end(e)})
		}
		if key != nil {
			p := &out[len(out)-1]
			p.Columns = append(p.Columns, PartitionColumn{KeyIndex: *key, ColumnID: orZero(col), Transform: transform})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read partitions: %w", err)
	}
	return out, nil
}

// Tags lists the object tags (schemas, tables, views) visible at snapshot snap.
func (r *Reader) Tags(ctx context.Context, snap int64) ([]Tag, error) {
	rows, err := r.db.Query(ctx, `SELECT object_id, begin_snapshot, end_snapshot, "key", coalesce("value", '')
		FROM `+r.t("ducklake_tag")+` WHERE `+visible("")+` ORDER BY object_id, "key"`, snap)
	if err != nil {
		return nil, fmt.Errorf("read tags: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Tag, error) {
		var t Tag
		var e *int64
		err := row.Scan(&t.ObjectID, &t.Begin, &e, &t.Key, &t.Value)
		t.End = end(e)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read tags: %w", err)
	}
	return out, nil
}

// ColumnTags lists the column tags of table tableID visible at snapshot snap.
func (r *Reader) ColumnTags(ctx context.Context, snap, tableID int64) ([]ColumnTag, error) {
	rows, err := r.db.Query(ctx, `SELECT table_id, column_id, begin_snapshot, end_snapshot, "key", coalesce("value", '')
		FROM `+r.t("ducklake_column_tag")+` WHERE table_id = $2 AND `+visible("")+` ORDER BY column_id, "key"`, snap, tableID)
	if err != nil {
		return nil, fmt.Errorf("read column tags: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ColumnTag, error) {
		var t ColumnTag
		var e *int64
		err := row.Scan(&t.TableID, &t.ColumnID, &t.Begin, &e, &t.Key, &t.Value)
		t.End = end(e)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read column tags: %w", err)
	}
	return out, nil
}

// NameMappings lists the name mappings of table tableID (they are not
// versioned: a data file names its mapping by MappingID).
func (r *Reader) NameMappings(ctx context.Context, tableID int64) ([]NameMapping, error) {
	rows, err := r.db.Query(ctx, `SELECT m.mapping_id, m.table_id, coalesce(m."type", ''),
			n.column_id, n.source_name, n.target_field_id, n.parent_column, n.is_partition
		FROM `+r.t("ducklake_column_mapping")+` m
		LEFT JOIN `+r.t("ducklake_name_mapping")+` n USING (mapping_id)
		WHERE m.table_id = $1 ORDER BY m.mapping_id, n.column_id`, tableID)
	if err != nil {
		return nil, fmt.Errorf("read name mappings: %w", err)
	}
	var out []NameMapping
	var (
		id, table           int64
		typ                 string
		col, target, parent *int64
		source              *string
		isPartition         *bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &table, &typ, &col, &source, &target, &parent, &isPartition}, func() error {
		if n := len(out); n == 0 || out[n-1].ID != id {
			out = append(out, NameMapping{ID: id, TableID: table, Type: typ})
		}
		if col != nil {
			e := NameMappingEntry{ColumnID: *col, TargetFieldID: orZero(target), ParentColumn: orZero(parent)}
			if source != nil {
				e.SourceName = *source
			}
			e.IsPartition = isPartition != nil && *isPartition
			m := &out[len(out)-1]
			m.Entries = append(m.Entries, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read name mappings: %w", err)
	}
	return out, nil
}

// SnapshotRange is the newest and the oldest snapshot of the catalog: what
// every table's history depends on (DuckDB's ducklake_expire_snapshots
// removes the oldest without committing a new one). Two index probes. An
// error wrapping ErrNotCatalog when ducklake_snapshot is empty.
func (r *Reader) SnapshotRange(ctx context.Context) (newest, oldest int64, err error) {
	var hi, lo *int64
	if err := r.db.QueryRow(ctx, `SELECT max(snapshot_id), min(snapshot_id) FROM `+r.t("ducklake_snapshot")).Scan(&hi, &lo); err != nil {
		return 0, 0, fmt.Errorf("read the current snapshot: %w", err)
	}
	if hi == nil {
		return 0, 0, fmt.Errorf("read the current snapshot: ducklake_snapshot is empty: %w", ErrNotCatalog)
	}
	return *hi, *lo, nil
}
