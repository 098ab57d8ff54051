package export

import (
	"context"
	"fmt"

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
	if _, err := x.cfg.PG.Exec(ctx, `UPDATE `+x.t("duckicelake_export")+` SET metadata_location = $3
		WHERE table_id = $1 AND signature = $2 AND snapshot_id = $4`, e.TableID, e.Signature, out.MetadataLocation, e.Snapshot); err != nil {
		return nil, fmt.Errorf("export: record the shadow metadata: %w", err)
	}
	e.MetadataLocation = out.MetadataLocation
	return out, nil
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
