package materialize

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// Source reads the DuckLake history of one table. *PGSource reads it from
// the catalog in Postgres; tests and benchmarks may build a History by hand.
type Source interface {
	// History returns everything about table tableID that snapshots up to
	// snapshotID can see. It fails with an error wrapping
	// ducklake.ErrNotFound when the table does not exist at snapshotID.
	History(ctx context.Context, tableID, snapshotID int64) (*History, error)
}

// MetadataRecorder is a Source that keeps a record of the metadata files
// written of its tables, which their metadata-log then lists (History's
// MetadataLog).
type MetadataRecorder interface {
	// RecordMetadata records that location holds table tableID's metadata
	// as of snapshot snapshotID, last updated at lastUpdatedMS.
	RecordMetadata(ctx context.Context, tableID, snapshotID int64, location string, lastUpdatedMS int64) error
}

// History is the full record of one table up to a snapshot: every version
// of its rows, not just the ones visible at the end, so that every earlier
// snapshot can be rebuilt from it.
type History struct {
	Table ducklake.Table // as of the snapshot asked for, path resolved
	// Snapshots are every catalog snapshot up to it, ascending, but those
	// expired for this table alone (see withoutExpired).
	Snapshots []ducklake.Snapshot

	Columns    []ducklake.Column        // every version (Begin/End), children included
	Comments   []ducklake.ColumnTag     // every version of the columns' "comment" tags (Iceberg docs)
	Partitions []ducklake.PartitionInfo // every spec the table had

	// DataFiles holds every data file row of the table, paths resolved, with
	// PartitionValues; Delete and InlinedDeletes are not used here.
	DataFiles      []ducklake.DataFile
	DeleteFiles    []ducklake.DeleteFile // every version, paths resolved
	Stats          []ducklake.FileColumnStats
	InlinedDeletes []InlinedDelete // deletions of data file rows kept in Postgres

	// Inlined holds the inlined rows of every schema version, each row with
	// its Begin and End (rows ended before the snapshot included).
	Inlined []ducklake.InlinedData

	// NameMappings tell readers how to find columns in files written
	// without field ids (ducklake_add_data_files).
	NameMappings []ducklake.NameMapping

	// Extras are the table's properties, sort orders and refs.
	Extras Extras

	// MetadataLog lists metadata files written earlier of the table, one
	// per snapshot built at (the newest), oldest first. Builds happen at
	// the snapshots the table changed at (see Resolver), so these are its
	// earlier versions.
	MetadataLog []LoggedMetadata

	// DeletePositions holds what each delete file (by id) deletes; format
	// version 3 turns it into deletion vectors. Sources leave it empty:
	// LoadDeletePositions fills it (Materialise does, for version 3).
	DeletePositions map[int64][]DeletedPosition
}

// LoggedMetadata is a metadata file written of the table as of Snapshot.
type LoggedMetadata struct {
	Snapshot int64
	iceberg.MetadataLogEntry
}

// InlinedDelete is one row of ducklake_inlined_delete_<table id>: row
// position Pos of data file DataFileID was deleted at snapshot Begin.
type InlinedDelete struct {
	DataFileID int64
	Pos        int64
	Begin      int64
}

// PGSource reads histories from a DuckLake catalog in Postgres. It uses
// ducklake.Reader where the reader answers "as of snapshot N" and its own
// queries for the unfiltered history. Pass a read-only repeatable-read
// transaction as the Querier to read one consistent state.
type PGSource struct {
	db     ducklake.Querier
	schema string // quoted
	r      *ducklake.Reader
	// sidecars are the sidecar tables known to exist: once created
	// (duckicelake init, or serve's migrations) they stay.
	sidecars sync.Map // table name → struct{}
}

// NewPGSource reads the catalog in Postgres schema schema ("" = the default).
func NewPGSource(db ducklake.Querier, schema string) *PGSource {
	if schema == "" {
		schema = ducklake.DefaultSchema
	}
	return &PGSource{db: db, schema: pgx.Identifier{schema}.Sanitize(), r: ducklake.NewReader(db, schema)}
}

func (s *PGSource) t(name string) string { return s.schema + "." + name }

func resolve(base, path string, relative bool) string {
	if relative {
		return base + path
	}
	return path
}

func orZero(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// History implements Source.
func (s *PGSource) History(ctx context.Context, tableID, snapshotID int64) (*History, error) {
	table, err := s.r.Table(ctx, snapshotID, tableID)
	if err != nil {
		return nil, err
	}
	h := &History{Table: table}
	snaps, err := s.r.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	for _, sn := range snaps {
		if sn.ID <= snapshotID {
			h.Snapshots = append(h.Snapshots, sn)
		}
	}
	if h.Snapshots, err = s.withoutExpired(ctx, tableID, h.Snapshots); err != nil {
		return nil, err
	}
	if h.Partitions, err = s.r.PartitionSpecs(ctx, tableID); err != nil {
		return nil, err
	}
	if h.NameMappings, err = s.r.NameMappings(ctx, tableID); err != nil {
		return nil, err
	}
	steps := []func(context.Context, *History, int64) error{
		s.columns, s.comments, s.dataFiles, s.partitionValues, s.deleteFiles, s.stats, s.inlinedDeletes, s.inlined, s.extras, s.metadataLog,
	}
	for _, step := range steps {
		if err := step(ctx, h, snapshotID); err != nil {
			return nil, fmt.Errorf("history of table %d: %w", tableID, err)
		}
	}
	return h, nil
}

func (s *PGSource) columns(ctx context.Context, h *History, snap int64) error {
	var err error
	h.Columns, err = ducklake.Collect(ctx, s.db, "read columns", `SELECT column_id, begin_snapshot, end_snapshot, table_id, column_order,
			column_name, column_type, initial_default, default_value, coalesce(nulls_allowed, true),
			parent_column, coalesce(default_value_type, ''), coalesce(default_value_dialect, '')
		FROM `+s.t("ducklake_column")+` WHERE table_id = $1 AND begin_snapshot <= $2
		ORDER BY begin_snapshot, column_order, column_id`, []any{h.Table.ID, snap}, func(row pgx.CollectableRow) (ducklake.Column, error) {
		var c ducklake.Column
		var e, parent *int64
		err := row.Scan(&c.ID, &c.Begin, &e, &c.TableID, &c.Order, &c.Name, &c.Type, &c.InitialDefault,
			&c.DefaultValue, &c.NullsAllowed, &parent, &c.DefaultValueType, &c.DefaultValueDialect)
		c.End, c.ParentColumn = orZero(e), orZero(parent)
		return c, err
	})
	return err
}

const metadataFileTable = "duckicelake_metadata_file"

// metadataLog reads the metadata files recorded for the table before
// snapshot snap (none on a catalog without the sidecar table).
func (s *PGSource) metadataLog(ctx context.Context, h *History, snap int64) error {
	if ok, err := s.sidecarExists(ctx, metadataFileTable); err != nil || !ok {
		return err
	}
	var err error
	h.MetadataLog, err = ducklake.Collect(ctx, s.db, "read the metadata log", `SELECT DISTINCT ON (snapshot_id) snapshot_id, location, last_updated_ms
		FROM `+s.t(metadataFileTable)+` WHERE table_id = $1 AND snapshot_id < $2
		ORDER BY snapshot_id, last_updated_ms DESC, location`, []any{h.Table.ID, snap}, func(row pgx.CollectableRow) (LoggedMetadata, error) {
		var m LoggedMetadata
		err := row.Scan(&m.Snapshot, &m.MetadataFile, &m.TimestampMS)
		return m, err
	})
	return err
}

// RecordMetadata implements MetadataRecorder (a no-op on a catalog
// without the sidecar table).
func (s *PGSource) RecordMetadata(ctx context.Context, tableID, snapshotID int64, location string, lastUpdatedMS int64) error {
	if ok, err := s.sidecarExists(ctx, metadataFileTable); err != nil || !ok {
		return err
	}
	// Querier has no Exec; an INSERT through Query reports its error on Close.
	rows, err := s.db.Query(ctx, `INSERT INTO `+s.t(metadataFileTable)+` (table_id, snapshot_id, location, last_updated_ms)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, tableID, snapshotID, location, lastUpdatedMS)
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	if err != nil {
		return fmt.Errorf("record metadata file %s: %w", location, err)
	}
	return nil
}

// comments reads every version of the table's column comments: DuckDB's
// COMMENT ON COLUMN and Iceberg docs are both ducklake_column_tag
// "comment" rows.
func (s *PGSource) comments(ctx context.Context, h *History, snap int64) error {
	var err error
	h.Comments, err = ducklake.Collect(ctx, s.db, "read column comments", `SELECT table_id, column_id, begin_snapshot, end_snapshot, "key", coalesce("value", '')
		FROM `+s.t("ducklake_column_tag")+` WHERE table_id = $1 AND "key" = 'comment' AND begin_snapshot <= $2
		ORDER BY begin_snapshot, column_id`, []any{h.Table.ID, snap}, func(row pgx.CollectableRow) (ducklake.ColumnTag, error) {
		var t ducklake.ColumnTag
		var e *int64
		err := row.Scan(&t.TableID, &t.ColumnID, &t.Begin, &e, &t.Key, &t.Value)
		t.End = orZero(e)
		return t, err
	})
	return err
}

func (s *PGSource) dataFiles(ctx context.Context, h *History, snap int64) error {
	var err error
	h.DataFiles, err = ducklake.Collect(ctx, s.db, "read data files", `SELECT data_file_id, table_id, begin_snapshot, end_snapshot, file_order,
			path, coalesce(path_is_relative, true), coalesce(file_format, 'parquet'), record_count,
			file_size_bytes, footer_size, row_id_start, partition_id, coalesce(encryption_key, ''),
			mapping_id, partial_max
		FROM `+s.t("ducklake_data_file")+` WHERE table_id = $1 AND begin_snapshot <= $2
		ORDER BY begin_snapshot, file_order NULLS LAST, data_file_id`, []any{h.Table.ID, snap}, func(row pgx.CollectableRow) (ducklake.DataFile, error) {
		var f ducklake.DataFile
		var e, order, recs, size, footer, rowID, part, mapping, pmax *int64
		err := row.Scan(&f.ID, &f.TableID, &f.Begin, &e, &order, &f.RawPath, &f.PathIsRelative, &f.Format,
			&recs, &size, &footer, &rowID, &part, &f.EncryptionKey, &mapping, &pmax)
		f.End, f.FileOrder, f.RecordCount, f.FileSizeBytes, f.FooterSize = orZero(e), orZero(order), orZero(recs), orZero(size), orZero(footer)
		f.RowIDStart, f.PartitionID, f.MappingID, f.PartialMax = orZero(rowID), orZero(part), orZero(mapping), orZero(pmax)
		f.Path = resolve(h.Table.Path, f.RawPath, f.PathIsRelative)
		return f, err
	})
	return err
}

func (s *PGSource) partitionValues(ctx context.Context, h *History, snap int64) error {
	byID := make(map[int64]*ducklake.DataFile, len(h.DataFiles))
	for i := range h.DataFiles {
		byID[h.DataFiles[i].ID] = &h.DataFiles[i]
	}
	var (
		fileID, key int64
		value       *string
	)
	return ducklake.Each(ctx, s.db, "read partition values", `SELECT data_file_id, partition_key_index, partition_value
		FROM `+s.t("ducklake_file_partition_value")+` WHERE table_id = $1
		ORDER BY data_file_id, partition_key_index`, []any{h.Table.ID},
		[]any{&fileID, &key, &value}, func() error {
			if f := byID[fileID]; f != nil {
				pv := ducklake.FilePartitionValue{KeyIndex: key, Null: value == nil}
				if value != nil {
					pv.Value = *value
				}
				f.PartitionValues = append(f.PartitionValues, pv)
			}
			return nil
		})
}

func (s *PGSource) deleteFiles(ctx context.Context, h *History, snap int64) error {
	var err error
	h.DeleteFiles, err = ducklake.Collect(ctx, s.db, "read delete files", `SELECT delete_file_id, table_id, begin_snapshot, end_snapshot, data_file_id,
			path, coalesce(path_is_relative, true), coalesce(format, 'parquet'), delete_count,
			file_size_bytes, footer_size, coalesce(encryption_key, ''), partial_max
		FROM `+s.t("ducklake_delete_file")+` WHERE table_id = $1 AND begin_snapshot <= $2
		ORDER BY begin_snapshot, delete_file_id`, []any{h.Table.ID, snap}, func(row pgx.CollectableRow) (ducklake.DeleteFile, error) {
		var d ducklake.DeleteFile
		var e, dataFile, count, size, footer, pmax *int64
		var path *string
		err := row.Scan(&d.ID, &d.TableID, &d.Begin, &e, &dataFile, &path, &d.PathIsRelative, &d.Format,
			&count, &size, &footer, &d.EncryptionKey, &pmax)
		d.End, d.DataFileID, d.DeleteCount, d.FileSizeBytes, d.FooterSize, d.PartialMax = orZero(e), orZero(dataFile), orZero(count), orZero(size), orZero(footer), orZero(pmax)
		if path != nil {
			d.RawPath = *path
		}
		d.Path = resolve(h.Table.Path, d.RawPath, d.PathIsRelative)
		return d, err
	})
	return err
}

func (s *PGSource) stats(ctx context.Context, h *History, snap int64) error {
	var err error
	h.Stats, err = ducklake.Collect(ctx, s.db, "read column stats", `SELECT st.data_file_id, st.table_id, st.column_id, coalesce(st.column_size_bytes, -1),
			coalesce(st.value_count, -1), coalesce(st.null_count, -1), st.min_value, st.max_value,
			coalesce(st.contains_nan, false), coalesce(st.extra_stats, '')
		FROM `+s.t("ducklake_file_column_stats")+` st JOIN `+s.t("ducklake_data_file")+` d USING (data_file_id)
		WHERE st.table_id = $1 AND d.table_id = $1 AND d.begin_snapshot <= $2
		ORDER BY st.data_file_id, st.column_id`, []any{h.Table.ID, snap}, func(row pgx.CollectableRow) (ducklake.FileColumnStats, error) {
		var st ducklake.FileColumnStats
		err := row.Scan(&st.DataFileID, &st.TableID, &st.ColumnID, &st.ColumnSizeBytes, &st.ValueCount, &st.NullCount,
			&st.Min, &st.Max, &st.ContainsNaN, &st.ExtraStats)
		return st, err
	})
	return err
}

func (s *PGSource) exists(ctx context.Context, name string) (bool, error) {
	return s.r.TableExists(ctx, name)
}

func (s *PGSource) inlinedDeletes(ctx context.Context, h *History, snap int64) error {
	name := fmt.Sprintf("ducklake_inlined_delete_%d", h.Table.ID)
	if ok, err := s.exists(ctx, name); err != nil || !ok {
		return err
	}
	rows, err := s.db.Query(ctx, `SELECT file_id, row_id, min(begin_snapshot) FROM `+s.t(pgx.Identifier{name}.Sanitize())+`
		WHERE begin_snapshot <= $1 GROUP BY file_id, row_id ORDER BY file_id, row_id`, snap)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	h.InlinedDeletes, err = pgx.CollectRows(rows, pgx.RowToStructByPos[InlinedDelete])
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

// inlined reads every inlined row ever written, with its Begin and End.
// ducklake.Reader.InlinedData returns the rows visible at one snapshot with
// their ranges; a row is visible at its own Begin, so one call per distinct
// Begin (filtered to that Begin) collects them all.
func (s *PGSource) inlined(ctx context.Context, h *History, snap int64) error {
	tables, err := s.r.InlinedTables(ctx, h.Table.ID)
	if err != nil {
		return err
	}
	var begins []int64
	for _, it := range tables {
		ok, err := s.exists(ctx, it.Name)
		if err != nil {
			return err
		}
		if !ok {
			continue // flushed and dropped
		}
		rows, err := s.db.Query(ctx, `SELECT DISTINCT begin_snapshot FROM `+s.t(pgx.Identifier{it.Name}.Sanitize())+`
			WHERE begin_snapshot <= $1`, snap)
		if err != nil {
			return fmt.Errorf("read %s: %w", it.Name, err)
		}
		bs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("read %s: %w", it.Name, err)
		}
		begins = append(begins, bs...)
	}
	slices.Sort(begins)
	begins = slices.Compact(begins)
	byTable := map[string]*ducklake.InlinedData{}
	var order []string
	for _, b := range begins {
		data, err := s.r.InlinedData(ctx, b, h.Table.ID)
		if err != nil {
			return err
		}
		for _, d := range data {
			acc := byTable[d.Name]
			if acc == nil {
				acc = &ducklake.InlinedData{InlinedTable: d.InlinedTable, Columns: d.Columns}
				byTable[d.Name] = acc
				order = append(order, d.Name)
			}
			for _, row := range d.Rows {
				if row.Begin == b {
					acc.Rows = append(acc.Rows, row)
				}
			}
		}
	}
	for _, name := range order {
		d := byTable[name]
		slices.SortFunc(d.Rows, func(a, b ducklake.InlinedRow) int { return cmpInt(a.RowID, b.RowID) })
		h.Inlined = append(h.Inlined, *d)
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
