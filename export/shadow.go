package export

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Putter stores objects: objstore.Store satisfies it.
type Putter interface {
	Put(ctx context.Context, loc objstore.Location, body []byte) error
}

// Shadow writes the shadow Iceberg metadata of export e — what a masked
// principal's LoadTable returns — and records its location: the base
// table's schema (same field ids, docs and properties) at e.Snapshot, one
// snapshot with e.Snapshot's id, unpartitioned, whose data files are the
// masked copies with their own statistics. No delete files (deletes are
// applied), no earlier snapshots (there is no historical masked copy).
// base is the base table's history at e.Snapshot (catalog/materialize's
// Source gives it).
func (x *Exporter) Shadow(ctx context.Context, e *Export, t *plan.Table, base *materialize.History, store Putter) (*materialize.Output, error) {
	h, err := shadowHistory(e, t, base)
	if err != nil {
		return nil, err
	}
	out, err := materialize.Build(h, e.Snapshot, materialize.Options{FormatVersion: 2})
	if err != nil {
		return nil, fmt.Errorf("export: shadow metadata of table %d: %w", e.TableID, err)
	}
	for _, f := range out.Files {
		loc, err := objstore.Parse(f.Location)
		if err != nil {
			return nil, fmt.Errorf("export: shadow file %s: %w", f.Location, err)
		}
		if !loc.Within(e.Root) {
			return nil, fmt.Errorf("export: shadow file %s is outside the export %s", f.Location, e.Root)
		}
		if err := store.Put(ctx, loc, f.Body); err != nil {
			return nil, fmt.Errorf("export: write %s: %w", f.Location, err)
		}
	}
	loc, err := objstore.Parse(out.MetadataLocation)
	if err != nil || !loc.Within(e.Root) {
		return nil, fmt.Errorf("export: shadow metadata at %s is outside the export %s", out.MetadataLocation, e.Root)
	}
	if err := store.Put(ctx, loc, out.MetadataJSON); err != nil {
		return nil, fmt.Errorf("export: write %s: %w", out.MetadataLocation, err)
	}
	written := []string{out.MetadataLocation}
	for _, f := range out.Files {
		written = append(written, f.Location)
	}
	if err := x.recordShadow(ctx, e, out.MetadataLocation, written); err != nil {
		return nil, err
	}
	e.MetadataLocation = out.MetadataLocation
	return out, nil
}

// recordShadow makes metadata the export's shadow metadata and keeps track
// of the shadow files (metadata.json, manifest list, manifests) on the
// retired list: the current build's are due never ('infinity'), and the
// ones of every earlier build of this export become due after the grace —
// a client that loaded them may still be reading. A build that lost to a
// newer one retires its own files at once, with the grace.
func (x *Exporter) recordShadow(ctx context.Context, e *Export, metadata string, written []string) error {
	tx, err := x.cfg.PG.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("export: record the shadow metadata: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	tag, err := tx.Exec(ctx, `UPDATE `+x.t("duckicelake_export")+` SET metadata_location = $3
		WHERE table_id = $1 AND signature = $2 AND snapshot_id = $4`, e.TableID, e.Signature, metadata, e.Snapshot)
	if err != nil {
		return fmt.Errorf("export: record the shadow metadata: %w", err)
	}
	retired := x.t("duckicelake_export_retired")
	grace := x.cfg.Now().Add(x.cfg.Grace)
	if tag.RowsAffected() == 0 {
		for _, loc := range written {
			if _, err := tx.Exec(ctx, `INSERT INTO `+retired+` (location, delete_at) VALUES ($1, $2) ON CONFLICT (location) DO NOTHING`,
				loc, grace); err != nil {
				return fmt.Errorf("export: retire the shadow files of a superseded build: %w", err)
			}
		}
		return tx.Commit(ctx)
	}
	if _, err := tx.Exec(ctx, `UPDATE `+retired+` SET delete_at = $2
		WHERE delete_at = 'infinity' AND starts_with(location, $1) AND location <> ALL($3)`, e.Root.String(), grace, written); err != nil {
		return fmt.Errorf("export: retire the previous shadow files: %w", err)
	}
	for _, loc := range written {
		if _, err := tx.Exec(ctx, `INSERT INTO `+retired+` (location, delete_at) VALUES ($1, 'infinity')
			ON CONFLICT (location) DO UPDATE SET delete_at = 'infinity'`, loc); err != nil {
			return fmt.Errorf("export: record the shadow files: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("export: record the shadow metadata: %w", err)
	}
	return nil
}

// shadowHistory is the History the shadow metadata is built from.
func shadowHistory(e *Export, t *plan.Table, base *materialize.History) (*materialize.History, error) {
	snap := e.Snapshot
	h := &materialize.History{Table: base.Table}
	h.Table.Path = e.Root.String()
	h.Table.RawPath, h.Table.PathIsRelative = e.Root.String(), false
	for _, s := range base.Snapshots {
		if s.ID == snap {
			s.Changes = ""
			h.Snapshots = []ducklake.Snapshot{s}
		}
	}
	if len(h.Snapshots) == 0 {
		return nil, fmt.Errorf("export: snapshot %d is not in the table's history: %w", snap, ducklake.ErrNotFound)
	}
	// The columns (and docs) as of the snapshot, all beginning there.
	for _, c := range base.Columns {
		if c.Begin > snap || c.End != 0 && c.End <= snap {
			continue
		}
		c.Begin, c.End = snap, 0
		h.Columns = append(h.Columns, c)
	}
	for _, ct := range base.Comments {
		if ct.Begin > snap || ct.End != 0 && ct.End <= snap {
			continue
		}
		ct.Begin, ct.End = snap, 0
		h.Comments = append(h.Comments, ct)
	}
	// Of the extras, the properties only: the base table's statistics
	// files describe its raw values, and refs name snapshots the copy lacks.
	h.Extras.Properties = base.Extras.Properties
	colID := make(map[string]int64, len(t.Columns))
	for _, c := range t.Columns {
		colID[c.Name] = c.ID
	}
	var rowID int64
	for i, f := range e.Files {
		if f.Records == 0 {
			continue // every row filtered out: nothing to read
		}
		id := int64(i + 1)
		h.DataFiles = append(h.DataFiles, ducklake.DataFile{ID: id, TableID: e.TableID, Begin: snap, RawPath: f.Location,
			Path: f.Location, Format: "parquet", RecordCount: f.Records, FileSizeBytes: f.Size, FooterSize: f.Footer, RowIDStart: rowID})
		rowID += f.Records
		for name, st := range f.Stats {
			cid, ok := colID[name]
			if !ok {
				continue // a nested leaf: its parent carries no bounds
			}
			h.Stats = append(h.Stats, ducklake.FileColumnStats{DataFileID: id, TableID: e.TableID, ColumnID: cid,
				ColumnSizeBytes: st.SizeBytes, ValueCount: st.ValueCount, NullCount: st.NullCount, Min: st.Min, Max: st.Max})
		}
	}
	return h, nil
}
