package ducklake

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/tableindex"
)

// The loader of internal/tableindex lives here, beside the rest of the
// catalog's DuckLake SQL, and the index package stays free of the catalog:
// governance and the gateway import tableindex, and only this file knows
// how DuckLake stores tables and files. Locations are parsed with
// internal/objstore, the one Location type, so that what the index matches
// is what every other containment decision accepts.

// TableIndexSource reads what tableindex.Build needs at snapshot snap
// (a tableindex.LoadFunc): every table visible at snap with its directory
// resolved (data path, schema path, table path: DuckLake's relative and
// absolute rules, as Tables resolves them), and every data and delete file
// stored with an absolute path (path_is_relative = false) that was added at
// or before snap, ended ones included: time travel to an older snapshot
// still reads them until expiry deletes their rows. Files with relative
// paths are not read: they resolve inside their table's directory.
//
// Tables and files that are not on S3 (a local DATA_PATH), or whose
// location internal/objstore refuses (a ".." segment, say), are listed in
// Source.Unindexed instead. A snapshot that does not exist is ErrNotFound:
// an index must not claim a snapshot whose commits it has not seen.
func (r *Reader) TableIndexSource(ctx context.Context, snap int64) (tableindex.Source, error) {
	src := tableindex.Source{Snapshot: snap}
	if _, err := r.Snapshot(ctx, snap); err != nil {
		return src, fmt.Errorf("table index: %w", err)
	}
	schemas, err := r.Schemas(ctx, snap)
	if err != nil {
		return src, fmt.Errorf("table index: %w", err)
	}
	names := make(map[int64]string, len(schemas))
	for _, s := range schemas {
		names[s.ID] = s.Name
	}
	tables, err := r.Tables(ctx, snap)
	if err != nil {
		return src, fmt.Errorf("table index: %w", err)
	}
	src.Tables = make([]tableindex.Table, 0, len(tables))
	for _, t := range tables {
		loc, reason := s3Location(t.Path, true)
		if reason != "" {
			src.Unindexed = append(src.Unindexed, tableindex.Unindexed{TableID: t.ID, Path: t.Path, Reason: reason})
			continue
		}
		src.Tables = append(src.Tables, tableindex.Table{
			ID: t.ID, SchemaID: t.SchemaID, UUID: t.UUID, Namespace: names[t.SchemaID], Name: t.Name,
			Bucket: loc.Bucket(), Prefix: loc.Key(),
		})
	}

	// No index serves path_is_relative: both statements scan their table.
	// A partial index (… WHERE path_is_relative = false) as a sidecar
	// migration would make this proportional to the absolute files only.
	rows, err := r.db.Query(ctx, `SELECT table_id, 1, path, end_snapshot FROM `+r.t("ducklake_data_file")+`
			WHERE path_is_relative = false AND begin_snapshot <= $1
		UNION ALL
		SELECT table_id, 2, path, end_snapshot FROM `+r.t("ducklake_delete_file")+`
			WHERE path_is_relative = false AND begin_snapshot <= $1`, snap)
	if err != nil {
		return src, fmt.Errorf("table index: read absolute file paths: %w", err)
	}
	var (
		tableID int64
		kind    int
		path    string
		endSnap *int64
	)
	_, err = pgx.ForEachRow(rows, []any{&tableID, &kind, &path, &endSnap}, func() error {
		loc, reason := s3Location(path, false)
		if reason != "" {
			src.Unindexed = append(src.Unindexed, tableindex.Unindexed{TableID: tableID, Path: path, Reason: reason})
			return nil
		}
		k := tableindex.DataFile
		if kind == 2 {
			k = tableindex.DeleteFile
		}
		src.Files = append(src.Files, tableindex.File{TableID: tableID, Kind: k, Bucket: loc.Bucket(), Key: loc.Key(), End: end(endSnap)})
		return nil
	})
	if err != nil {
		return src, fmt.Errorf("table index: read absolute file paths: %w", err)
	}
	return src, nil
}

// s3Location parses path as a directory (dir) or an object on S3; reason
// says why it is not one.
func s3Location(path string, dir bool) (objstore.Location, string) {
	parse := objstore.Parse
	if dir {
		parse = objstore.ParseDir
	}
	loc, err := parse(path)
	if err != nil {
		return loc, err.Error()
	}
	if loc.Scheme() != objstore.SchemeS3 {
		return loc, "not on S3"
	}
	return loc, ""
}
