package rest

import (
	"context"
	"strings"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/governance"
)

// dropTable drops the table (service.Catalog.DropTable); with
// purgeRequested=true its files are deleted from S3 afterwards.
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
	d, err := s.svc.DropTable(r.ctx, r.p.Subject, r.ns, r.table, purge)
	if err != nil {
		return err
	}
	s.cache.drop(r.ns, r.table)
	s.refreshIndex(r.ctx, d.Snapshot, r.ns+"."+r.table)
	if purge {
		// The drop is committed; a failed purge leaves files behind but
		// does not undo it, so it is logged rather than answered.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.PurgeTimeout)
		err := s.objects.DeletePrefix(ctx, d.Purge)
		cancel()
		if err != nil {
			s.log.Error("catalog: purge of a dropped table failed; its files remain",
				zap.String("table", r.ns+"."+r.table), zap.Stringer("location", d.Purge), zap.Error(err))
		}
	}
	if s.gov != nil && s.gov.Exports != nil {
		// The masked copies are the table's data too: with purge they go
		// now; without, after their grace (the sweep would find the drop
		// anyway, this saves it the wait).
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.PurgeTimeout)
		err := s.gov.Exports.Exporter().DropTable(ctx, s.objects, d.TableID, purge && s.objects != nil)
		cancel()
		if err != nil {
			s.log.Error("catalog: the masked copies of a dropped table were not retired; the sweep retries",
				zap.String("table", r.ns+"."+r.table), zap.Error(err))
		}
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
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
			return "", "", "", "", service.NoSuchView(strings.Join(levels, "."), *req.Source.Name)
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

// renameTable renames a table within its namespace
// (service.Catalog.RenameTable).
func (s *Server) renameTable(r *request) error {
	srcNS, src, dstNS, dst, err := s.readRename(r, "table")
	if err != nil {
		return err
	}
	snap, err := s.svc.RenameTable(r.ctx, r.p.Subject, srcNS, src, dstNS, dst)
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
