package rest

import (
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/governance"
)

type commitTransactionRequest struct {
	TableChanges []commit.TableCommit `json:"table-changes"`
}

// commitTransaction serves POST /v1/{prefix}/transactions/commit: every
// table's requirements are checked and its updates applied in one Postgres
// transaction and one DuckLake snapshot, so either all tables change or
// none does.
func (s *Server) commitTransaction(r *request) error {
	var req commitTransactionRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if len(req.TableChanges) == 0 {
		return badRequest("a transaction needs table-changes")
	}
	changes := make([]service.TableChange, 0, len(req.TableChanges))
	seen := map[string]bool{}
	for i := range req.TableChanges {
		tc := &req.TableChanges[i]
		id := tc.Identifier
		if id == nil || id.Name == "" || id.Namespace == nil {
			return badRequest("table change %d has no identifier (a namespace and a name)", i)
		}
		if levels, ok := multiLevelNamespace(id.Namespace); ok {
			// Cannot exist here, like any table of a missing namespace.
			return noSuchTable(strings.Join(levels, "."), id.Name)
		}
		if err := checkNamespace(id.Namespace); err != nil {
			return err
		}
		ns := id.Namespace[0]
		if err := s.authorizeScope(r, governance.ActionCommitTransaction, ns); err != nil {
			return err
		}
		key := ns + nsSeparator + id.Name
		if seen[key] {
			return badRequest("table %s.%s appears twice in the transaction; send its updates as one change", ns, id.Name)
		}
		seen[key] = true
		changes = append(changes, service.TableChange{Namespace: ns, Name: id.Name, Request: tc})
	}
	if _, err := s.commitTables(r.ctx, r.p, changes); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
