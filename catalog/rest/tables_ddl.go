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

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// lookupTable finds live table ns.name within tx, and its schema;
// noSuchTable when either does not exist.
func (s *Server) lookupTable(ctx context.Context, tx pgx.Tx, ns, name string) (schemaAt, ducklake.Table, error) {
	sc, err := s.liveSchema(ctx, tx, ns, noSuchTable(ns, name))
	if err != nil {
		return sc, ducklake.Table{}, err
	}
	t, err := s.cat.LiveTable(ctx, tx, sc.ID, sc.Path, name)
	if errors.Is(err, ducklake.ErrNotFound) {
		err = noSuchTable(ns, name)
	}
	return sc, t, err
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
		_, t, err := s.lookupTable(ctx, tx, r.ns, r.table)
		if err != nil {
			return change{}, err
		}
		droppedID = t.ID
		if purge {
			if target, err = s.purgeTarget(ctx, tx, t); err != nil {
				return change{}, err
			}
		}
		ed, err := s.cat.DropTable(ctx, tx, next, t)
		if err != nil {
			return change{}, err
		}
		if err := s.commits.DropStatistics(ctx, tx, t.ID); err != nil {
			return change{}, fmt.Errorf("drop table %q: %w", r.table, err)
		}
		return ed, nil
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
func (s *Server) purgeTarget(ctx context.Context, tx pgx.Tx, t ducklake.Table) (objstore.Location, error) {
	if !t.PathIsRelative || t.RawPath == "" || !strings.HasSuffix(t.RawPath, "/") {
		return objstore.Location{}, unsupported("purgeRequested: the table's path %q is not a directory of its own; drop without purge", t.RawPath)
	}
	path := t.Path
	dir, err := objstore.ParseDir(path)
	switch {
	case err != nil:
		return objstore.Location{}, unsupported("purgeRequested: %v; drop without purge", err)
	case dir.Scheme() != objstore.SchemeS3 || dir.Key() == "":
		return objstore.Location{}, unsupported("purgeRequested: the table's files are not under an s3:// prefix (%s); drop without purge", path)
	}
	others, err := s.cat.LiveTablePaths(ctx, tx, t.ID)
	if err != nil {
		return objstore.Location{}, err
	}
	var clash, unknown string
	for _, o := range others {
		other, err := objstore.ParseDir(o.Path)
		switch {
		case err != nil && unknown == "":
			unknown = o.Schema + "." + o.Name
		case err == nil && clash == "" && objstore.Overlaps(other, dir):
			clash = o.Schema + "." + o.Name
		}
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
	if err := service.CheckName(kind, dst); err != nil {
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
		sc, t, err := s.lookupTable(ctx, tx, srcNS, src)
		if err != nil {
			return change{}, err
		}
		if srcNS != dstNS {
			if _, err := s.liveSchema(ctx, tx, dstNS, noSuchNamespace(dstNS)); err != nil {
				return change{}, err
			}
			return change{}, unsupported("moving a table to another namespace is not supported: a DuckLake table's files live under its schema's path")
		}
		if err := s.renameClash(ctx, tx, sc.ID, srcNS+"."+src, dstNS, dst); err != nil {
			return change{}, err
		}
		return s.cat.RenameTable(ctx, tx, cur, next, srcNS, t, dst)
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
