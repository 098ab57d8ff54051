package rest

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/governance"
)

// updateTable serves POST …/namespaces/{ns}/tables/{table}: a
// CommitTableRequest, answered with the table's new metadata.
func (s *Server) updateTable(r *request) error {
	var req commit.TableCommit
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if id := req.Identifier; id != nil && (len(id.Namespace) != 1 || id.Namespace[0] != r.ns || id.Name != r.table) {
		return badRequest("the request's identifier %s.%s is not the table of the path, %s.%s",
			strings.Join(id.Namespace, "."), id.Name, r.ns, r.table)
	}
	snap, err := s.commitTables(r.ctx, r.p, []service.TableChange{{Namespace: r.ns, Name: r.table, Request: &req}})
	if err != nil {
		return err
	}
	return s.writeCommitResponse(r, snap)
}

// writeCommitResponse answers a CommitTableResponse: the table's metadata
// as LoadTable serves it at snapshot snap.
func (s *Server) writeCommitResponse(r *request, snap int64) error {
	e, err := s.buildEntry(r.ctx, r.ns, r.table, formAll, 0, snap, nil)
	if err != nil {
		return err
	}
	loc, _ := json.Marshal(e.location)
	body := make([]byte, 0, len(e.metadata)+len(loc)+40)
	body = append(body, `{"metadata-location":`...)
	body = append(body, loc...)
	body = append(body, `,"metadata":`...)
	body = append(body, e.metadata...)
	body = append(body, '}')
	r.rc.SetContentType(contentTypeJSON)
	r.rc.SetBody(body)
	return nil
}

// commitTables applies changes as one DuckLake snapshot
// (service.Catalog.CommitTables) and returns its id.
func (s *Server) commitTables(ctx context.Context, p *Principal, changes []service.TableChange) (int64, error) {
	snap, err := s.currentSnapshot(ctx)
	if err != nil {
		return 0, err
	}
	governor := s.gov != nil && s.principalAllows(p, governance.ActionAdminGovernance, "")
	return s.svc.CommitTables(ctx, p.Subject, governor, snap, changes)
}
