package rest

import (
	"encoding/json"
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/internal/creds"
)

// createTable serves POST …/namespaces/{ns}/tables. The table is created
// in one DuckLake snapshot, as DuckDB's CREATE TABLE would; the answer is
// what LoadTable answers for it right after (vended credentials
// included when asked for). A staged create writes nothing: it answers the
// metadata the table will have when a create transaction commits it.
func (s *Server) createTable(r *request) error {
	var req commit.CreateTableRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if req.StageCreate {
		return s.stageTable(r, &req)
	}
	if err := s.svc.CreateTable(r.ctx, r.p.Subject, r.ns, &req); err != nil {
		return err
	}
	r.table = req.Name
	s.cache.drop(r.ns, r.table) // a table of that name dropped earlier
	return s.loadTable(r)
}

// stageTable answers a staged create: LoadTableResult without a metadata
// location, with credentials for the table's location when asked for (the
// client may write data files before it commits).
func (s *Server) stageTable(r *request, req *commit.CreateTableRequest) error {
	snap, err := s.currentSnapshot(r.ctx)
	if err != nil {
		return err
	}
	md, err := s.svc.StageTable(r.ctx, snap, r.ns, req, s.now())
	if err != nil {
		return err
	}
	meta, err := json.Marshal(md)
	if err != nil {
		return err
	}
	config := s.tableConfig
	var vended []byte
	if wantsVending(r.rc) {
		// Bound to the UUID the create will commit (the client's
		// assign-uuid carries it): refused for any other table later at
		// this location.
		staged := creds.TableBinding{UUID: md.TableUUID, Namespace: r.ns, Name: req.Name, Snapshot: snap, Staged: true}
		sc, err := s.vend(r.p, r.ns, ducklake.Table{Name: req.Name, Path: md.Location + "/"}, false, staged)
		if err != nil {
			return err
		}
		if sc != nil {
			if config, err = json.Marshal(sc.Config); err != nil {
				return err
			}
			if vended, err = json.Marshal([]storageCredential{*sc}); err != nil {
				return err
			}
		}
		r.rc.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
	}
	body := append([]byte(`{"metadata":`), meta...)
	body = append(body, `,"config":`...)
	body = append(body, config...)
	if vended != nil {
		body = append(body, `,"storage-credentials":`...)
		body = append(body, vended...)
	}
	body = append(body, '}')
	r.rc.SetContentType(contentTypeJSON)
	r.rc.SetBody(body)
	return nil
}

// isNoSuchTable reports whether err answers NoSuchTable.
func isNoSuchTable(err error) bool {
	var e *Error
	return errors.Is(err, service.ErrNoSuchTable) || errors.As(err, &e) && e.Type == TypeNoSuchTable
}
