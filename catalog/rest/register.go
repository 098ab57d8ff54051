package rest

import "github.com/duckicelake/duckicelake/catalog/service"

// registerRequest is a RegisterTableRequest or a RegisterViewRequest
// (which has no overwrite).
type registerRequest struct {
	Name             string `json:"name"`
	MetadataLocation string `json:"metadata-location"`
	Overwrite        bool   `json:"overwrite"`
}

// readRegistration checks and reads what both register routes start
// with: write access, the request (kind "table" or "view"), the
// namespace as of the current snapshot, snap.
func (s *Server) readRegistration(r *request, kind string) (req registerRequest, snap int64, sc schemaAt, err error) {
	if err := s.readJSON(r.rc, &req); err != nil {
		return req, 0, schemaAt{}, err
	}
	if err := service.CheckName(kind, req.Name); err != nil {
		return req, 0, schemaAt{}, err
	}
	if req.MetadataLocation == "" {
		return req, 0, schemaAt{}, badRequest("a registration needs a metadata-location")
	}
	snap, sc, err = s.schemaNow(r.ctx, r.ns)
	return req, snap, sc, err
}

// registerTable serves POST …/namespaces/{ns}/register: a DuckLake table
// made from an Iceberg metadata file (commit.Catalog.Register), answered
// as LoadTable answers it. It needs what creating a table needs: write
// access to the namespace.
//
// overwrite=true is refused when the table exists
// (service.Catalog.RegisterTable says why).
func (s *Server) registerTable(r *request) error {
	if s.mat == nil {
		return unsupported("%s", offMat)
	}
	req, snap, sc, err := s.readRegistration(r, "table")
	if err != nil {
		return err
	}
	if err := s.svc.RegisterTable(r.ctx, r.p.Subject, snap, sc, req.Name, req.MetadataLocation, req.Overwrite); err != nil {
		return err
	}
	r.table = req.Name
	s.cache.drop(r.ns, r.table) // a table of that name dropped earlier
	return s.loadTable(r)
}

// registerView serves POST …/namespaces/{ns}/register-view: a view made
// from a view metadata file (service.Catalog.RegisterView), answered as
// LoadView answers it.
func (s *Server) registerView(r *request) error {
	req, snap, sc, err := s.readRegistration(r, "view")
	if err != nil {
		return err
	}
	md, loc, err := s.svc.RegisterView(r.ctx, r.p.Subject, snap, sc, req.Name, req.MetadataLocation)
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}
