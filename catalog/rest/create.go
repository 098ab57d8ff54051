package rest

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
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
	if s.mat == nil {
		return unsupported("%s", offMat)
	}
	var req commit.CreateTableRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if err := service.CheckName("table", req.Name); err != nil {
		return err
	}
	if req.Schema == nil {
		return badRequest("a table needs a schema")
	}
	if req.StageCreate {
		return s.stageTable(r, &req)
	}
	_, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		sc, err := s.liveSchema(ctx, tx, r.ns, noSuchNamespace(r.ns))
		if err != nil {
			return change{}, err
		}
		snap := &commit.Snapshot{ID: next, Head: cur.ID, SchemaVersion: cur.SchemaVersion,
			NextCatalogID: cur.NextCatalogID, NextFileID: cur.NextFileID}
		ns := commit.Namespace{ID: sc.ID, Name: r.ns, Path: sc.Path}
		if _, err := s.commits.CreateTable(ctx, tx, snap, ns, &req); err != nil {
			return change{}, commitError(err)
		}
		return change{Changes: snap.Changes(), CatalogIDs: snap.NextCatalogID - cur.NextCatalogID}, nil
	})
	if err != nil {
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
	snap, sc, err := s.schemaNow(r.ctx, r.ns)
	if err != nil {
		return err
	}
	if _, err := s.tableAt(r.ctx, snap, r.ns, req.Name); err == nil {
		return errorf(fasthttp.StatusConflict, TypeAlreadyExists, "Table already exists: %s.%s", r.ns, req.Name)
	} else if !isNoSuchTable(err) {
		return err
	}
	md, err := s.commits.StageTable(r.ctx, s.db, snap, commit.Namespace{ID: sc.ID, Name: r.ns, Path: sc.Path}, req, s.now())
	if err != nil {
		return commitError(err)
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

func isNoSuchTable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Type == TypeNoSuchTable
}
