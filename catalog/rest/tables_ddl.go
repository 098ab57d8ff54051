package rest

import (
	"context"
	"errors"
	"fmt"
	"github.com/duckicelake/duckicelake/governance"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/objstore"
)

// liveTable is a table that exists now (end_snapshot IS NULL).
type liveTable struct {
	ID           int64
	Path         string // as stored
	PathRelative bool
}

func (s *Server) lookupTable(ctx context.Context, tx pgx.Tx, schemaID int64, name string) (t liveTable, found bool, err error) {
	err = tx.QueryRow(ctx, `SELECT table_id, coalesce(path, ''), coalesce(path_is_relative, true) FROM `+s.t("ducklake_table")+`
		WHERE schema_id = $1 AND table_name = $2 AND end_snapshot IS NULL`, schemaID, name).Scan(&t.ID, &t.Path, &t.PathRelative)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, fmt.Errorf("look up table %q: %w", name, err)
	}
	return t, true, nil
}

// dropTable ends the table's rows as DuckDB's DROP TABLE does (table,
// partition info, columns, column tags, data and delete files, tags: the
// DuckLake specification's list). With purgeRequested=true its files are
// deleted from S3 afterwards; the purge is refused up front when another
// live table's files share the prefix.
func (s *Server) dropTable(r *request) error {
	purge := false
	// Case-insensitive: PyIceberg sends Python's "True" and "False".
	switch v := r.rc.QueryArgs().Peek("purgeRequested"); strings.ToLower(string(v)) {
	case "", "false":
	case "true":
		purge = true
	default:
		return badRequest("purgeRequested must be true or false, not %q", v)
	}
	if purge && s.objects == nil {
		return unsupported("purgeRequested: this catalog has no storage client to delete files with; drop without purge")
	}
	var target objstore.Location
	var droppedID int64
	snap, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		sc, exists, err := s.lookupSchema(ctx, tx, r.ns)
		if err != nil {
			return change{}, err
		}
		if !exists {
			return change{}, noSuchTable(r.ns, r.table)
		}
		t, exists, err := s.lookupTable(ctx, tx, sc.ID, r.table)
		if err != nil {
			return change{}, err
		}
		if !exists {
			return change{}, noSuchTable(r.ns, r.table)
		}
		droppedID = t.ID
		if purge {
			if target, err = s.purgeTarget(ctx, tx, sc, t); err != nil {
				return change{}, err
			}
		}
		for _, u := range []struct{ table, idColumn string }{
			{"ducklake_table", "table_id"},
			{"ducklake_partition_info", "table_id"},
			{"ducklake_column", "table_id"},
			{"ducklake_column_tag", "table_id"},
			{"ducklake_data_file", "table_id"},
			{"ducklake_delete_file", "table_id"},
			{"ducklake_tag", "object_id"},
		} {
			if _, err := tx.Exec(ctx, `UPDATE `+s.t(u.table)+` SET end_snapshot = $1 WHERE `+u.idColumn+` = $2 AND end_snapshot IS NULL`, next, t.ID); err != nil {
				return change{}, fmt.Errorf("drop table %q: %s: %w", r.table, u.table, err)
			}
		}
		if err := s.commits.DropStatistics(ctx, tx, t.ID); err != nil {
			return change{}, fmt.Errorf("drop table %q: %w", r.table, err)
		}
		return change{Changes: fmt.Sprintf("dropped_table:%d", t.ID)}, nil
	})
	if err != nil {
		return err
	}
	s.cache.drop(r.ns, r.table)
	s.refreshIndex(r.ctx, snap, r.ns+"."+r.table)
	if purge {
		// The drop is committed; a failed purge leaves files behind but
		// does not undo it, so it is logged rather than answered.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.PurgeTimeout)
		err := s.objects.DeletePrefix(ctx, target)
		cancel()
		if err != nil {
			s.log.Error("catalog: purge of a dropped table failed; its files remain",
				zap.String("table", r.ns+"."+r.table), zap.Stringer("location", target), zap.Error(err))
		}
	}
	if s.gov != nil && s.gov.Exports != nil {
		// The masked copies are the table's data too: with purge they go
		// now; without, after their grace (the sweep would find the drop
		// anyway, this saves it the wait).
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.PurgeTimeout)
		err := s.gov.Exports.Exporter().DropTable(ctx, s.objects, droppedID, purge && s.objects != nil)
		cancel()
		if err != nil {
			s.log.Error("catalog: the masked copies of a dropped table were not retired; the sweep retries",
				zap.String("table", r.ns+"."+r.table), zap.Error(err))
		}
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// purgeTarget resolves where table t's files live and checks that deleting
// that directory touches no other live table: none has a location that
// overlaps it, and none has one that cannot be compared with it (a path
// objstore.Parse refuses, "x/../t/", could name these very files).
func (s *Server) purgeTarget(ctx context.Context, tx pgx.Tx, sc liveSchema, t liveTable) (objstore.Location, error) {
	if !t.PathRelative || t.Path == "" || !strings.HasSuffix(t.Path, "/") {
		return objstore.Location{}, unsupported("purgeRequested: the table's path %q is not a directory of its own; drop without purge", t.Path)
	}
	path := s.resolve(s.resolve(s.dataPath, sc.Path, sc.PathRelative), t.Path, true)
	dir, err := objstore.ParseDir(path)
	switch {
	case err != nil:
		return objstore.Location{}, unsupported("purgeRequested: %v; drop without purge", err)
	case dir.Scheme() != objstore.SchemeS3 || dir.Key() == "":
		return objstore.Location{}, unsupported("purgeRequested: the table's files are not under an s3:// prefix (%s); drop without purge", path)
	}
	rows, err := tx.Query(ctx, `SELECT t.table_name, s.schema_name, coalesce(t.path, ''), coalesce(t.path_is_relative, true),
			coalesce(s.path, ''), coalesce(s.path_is_relative, true)
		FROM `+s.t("ducklake_table")+` t JOIN `+s.t("ducklake_schema")+` s USING (schema_id)
		WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL AND t.table_id <> $1`, t.ID)
	if err != nil {
		return objstore.Location{}, fmt.Errorf("read table paths: %w", err)
	}
	var (
		name, schema, tpath, spath string
		trel, srel                 bool
	)
	var clash, unknown string
	_, err = pgx.ForEachRow(rows, []any{&name, &schema, &tpath, &trel, &spath, &srel}, func() error {
		other, err := objstore.ParseDir(s.resolve(s.resolve(s.dataPath, spath, srel), tpath, trel))
		switch {
		case err != nil && unknown == "":
			unknown = schema + "." + name
		case err == nil && clash == "" && objstore.Overlaps(other, dir):
			clash = schema + "." + name
		}
		return nil
	})
	if err != nil {
		return objstore.Location{}, fmt.Errorf("read table paths: %w", err)
	}
	switch {
	case clash != "":
		return objstore.Location{}, errorf(fasthttp.StatusConflict, TypeCommitFailed,
			"purgeRequested: table %s keeps files under the same prefix %s; drop without purge", clash, path)
	case unknown != "":
		return objstore.Location{}, errorf(fasthttp.StatusConflict, TypeCommitFailed,
			"purgeRequested: table %s has a location that cannot be compared with %s, so its files may be there; drop without purge", unknown, path)
	}
	return dir, nil
}

// resolve applies DuckLake's path rule: a relative path is appended to its
// parent's.
func (s *Server) resolve(base, path string, relative bool) string {
	if relative {
		return base + path
	}
	return path
}

type renameRequest struct {
	Source      *tableIdentifier `json:"source"`
	Destination *tableIdentifier `json:"destination"`
}

// readRename reads a rename request for a table or view (kind): both
// identifiers well-formed, write access to both namespaces, a valid new name.
func (s *Server) readRename(r *request, kind string) (srcNS, src, dstNS, dst string, err error) {
	var req renameRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return "", "", "", "", err
	}
	if req.Source == nil || req.Destination == nil {
		return "", "", "", "", badRequest("a rename needs source and destination %s identifiers", kind)
	}
	for _, id := range []*tableIdentifier{req.Source, req.Destination} {
		if id.Name == nil || *id.Name == "" {
			return "", "", "", "", badRequest("a %s identifier needs a name", kind)
		}
		if id.Namespace == nil {
			return "", "", "", "", badRequest("a %s identifier needs a namespace", kind)
		}
	}
	// A namespace of several levels cannot exist here: the source is a
	// missing table or view, the destination a missing namespace.
	if levels, ok := multiLevelNamespace(req.Source.Namespace); ok {
		if kind == "view" {
			return "", "", "", "", noSuchView(strings.Join(levels, "."), *req.Source.Name)
		}
		return "", "", "", "", noSuchTable(strings.Join(levels, "."), *req.Source.Name)
	}
	if levels, ok := multiLevelNamespace(req.Destination.Namespace); ok {
		return "", "", "", "", noSuchNamespace(strings.Join(levels, "."))
	}
	for _, id := range []*tableIdentifier{req.Source, req.Destination} {
		if err := checkNamespace(id.Namespace); err != nil {
			return "", "", "", "", err
		}
	}
	srcNS, src = req.Source.Namespace[0], *req.Source.Name
	dstNS, dst = req.Destination.Namespace[0], *req.Destination.Name
	a := governance.ActionRenameTable
	if kind == "view" {
		a = governance.ActionRenameView
	}
	for _, ns := range [...]string{srcNS, dstNS} {
		if err := s.authorizeScope(r, a, ns); err != nil {
			return "", "", "", "", err
		}
	}
	if err := checkName(kind, dst); err != nil {
		return "", "", "", "", err
	}
	return srcNS, src, dstNS, dst, nil
}

// renameTable renames a table within its namespace as DuckDB's ALTER TABLE
// … RENAME TO does: the table row ends and a new row with the same id,
// UUID and path begins, the schema version goes up (with a
// ducklake_schema_versions row for the table), and the change is logged as
// created_table:"ns"."new", DuckDB's own notation for a rename. A missing
// source table (404 NoSuchTable) or destination namespace (404
// NoSuchNamespace) is reported before the refusal of a move to another
// namespace (406), as Iceberg's catalogs order them.
func (s *Server) renameTable(r *request) error {
	srcNS, src, dstNS, dst, err := s.readRename(r, "table")
	if err != nil {
		return err
	}
	snap, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		sc, exists, err := s.lookupSchema(ctx, tx, srcNS)
		if err != nil {
			return change{}, err
		}
		if !exists {
			return change{}, noSuchTable(srcNS, src)
		}
		t, exists, err := s.lookupTable(ctx, tx, sc.ID, src)
		if err != nil {
			return change{}, err
		}
		if !exists {
			return change{}, noSuchTable(srcNS, src)
		}
		if srcNS != dstNS {
			switch _, exists, err := s.lookupSchema(ctx, tx, dstNS); {
			case err != nil:
				return change{}, err
			case !exists:
				return change{}, noSuchNamespace(dstNS)
			}
			return change{}, unsupported("moving a table to another namespace is not supported: a DuckLake table's files live under its schema's path")
		}
		if err := s.renameClash(ctx, tx, sc.ID, srcNS+"."+src, dstNS, dst); err != nil {
			return change{}, err
		}
		if _, err := tx.Exec(ctx, `UPDATE `+s.t("ducklake_table")+` SET end_snapshot = $1 WHERE table_id = $2 AND end_snapshot IS NULL`, next, t.ID); err != nil {
			return change{}, fmt.Errorf("rename table: end %q: %w", src, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_table")+` (table_id, table_uuid, begin_snapshot, end_snapshot, schema_id, table_name, path, path_is_relative)
			SELECT table_id, table_uuid, $1, NULL, schema_id, $3, path, path_is_relative FROM `+s.t("ducklake_table")+`
			WHERE table_id = $2 AND end_snapshot = $1`, next, t.ID, dst); err != nil {
			return change{}, fmt.Errorf("rename table: insert %q: %w", dst, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_schema_versions")+` (begin_snapshot, schema_version, table_id) VALUES ($1, $2, $3)`,
			next, cur.SchemaVersion+1, t.ID); err != nil {
			return change{}, fmt.Errorf("rename table: schema version: %w", err)
		}
		return change{Changes: "created_table:" + quoteName(dstNS) + "." + quoteName(dst)}, nil
	})
	if err != nil {
		return err
	}
	s.cache.drop(srcNS, src)
	s.refreshIndex(r.ctx, snap, srcNS+"."+src)
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// refreshIndex brings this process's key index up to snap, the snapshot
// of a drop or rename of table, before the answer: the credentials vended
// for the old table are bound to it, and this process's gateway refuses
// them from the moment the client hears of the change (other processes
// learn of it by the eager NOTIFY path). The change is committed, so a
// failure is logged, not answered.
func (s *Server) refreshIndex(ctx context.Context, snap int64, table string) {
	if s.gov == nil || s.gov.Engine == nil {
		return
	}
	if err := s.gov.Engine.RefreshIndex(ctx, snap); err != nil {
		s.log.Error("catalog: the table index did not reach a drop or rename; this gateway honours the old table's credentials until it does",
			zap.String("table", table), zap.Int64("snapshot", snap), zap.Error(err))
	}
}
