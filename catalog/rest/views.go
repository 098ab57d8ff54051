package rest

import (
	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/catalog/views"
	"github.com/duckicelake/duckicelake/governance"
)

// The view routes: transport for catalog/service's views (its views.go
// says how an Iceberg view is a DuckLake view), with the authorisation of
// what a view reads (viewreads.go) and governance's masking views
// (masking.go) here.

// TypeNoSuchView is the ErrorModel type of a view that does not exist.
const TypeNoSuchView = "NoSuchViewException"

type loadViewResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         *views.Metadata   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

func writeView(r *request, loc string, md *views.Metadata) error {
	return writeJSON(r.rc, loadViewResult{MetadataLocation: loc, Metadata: md, Config: map[string]string{}})
}

// typeIllegalArgument is the ErrorModel type of an invalid view change
// (service.ErrInvalidView): Iceberg's Java client raises an
// IllegalArgumentException with the message for it, as its own view
// builder would have, where it raises BadRequestException("Malformed
// request: …") for other 400s.
const typeIllegalArgument = "IllegalArgumentException"

func (s *Server) listViews(r *request) error {
	names, err := s.svc.ViewNames(r.ctx, r.ns)
	if err != nil {
		return err
	}
	return writeIdentifiers(r, r.ns, names)
}

func (s *Server) loadView(r *request, name string) error {
	v, err := s.svc.LookupView(r.ctx, r.ns, name)
	if err != nil {
		return err
	}
	var md *views.Metadata
	var loc string
	if governance.IsMaskedName(r.ns) {
		md, loc, err = s.maskingViewMetadata(r, &v, r.ns) // authorised as its principal's (authorizeMasking)
	} else {
		md, loc, err = v.IcebergMetadata(r.ns)
	}
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}

func (s *Server) viewExists(r *request, name string) error {
	if _, err := s.svc.LookupView(r.ctx, r.ns, name); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

type createViewRequest struct {
	Name        string            `json:"name"`
	Location    string            `json:"location"`
	Schema      *views.Schema     `json:"schema"`
	ViewVersion *views.Version    `json:"view-version"`
	Properties  map[string]string `json:"properties"`
}

// createView creates a view (service.Catalog.CreateView) once what it
// reads is authorised.
func (s *Server) createView(r *request) error {
	var body createViewRequest
	if err := s.readJSON(r.rc, &body); err != nil {
		return err
	}
	req := service.CreateView(body)
	if err := req.Check(); err != nil {
		return err
	}
	if err := s.checkCreateViewReads(r, req.Name, req.ViewVersion); err != nil {
		return err
	}
	md, loc, err := s.svc.CreateView(r.ctx, r.p.Subject, r.ns, req)
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}

type commitViewRequest struct {
	Identifier   *tableIdentifier          `json:"identifier"`
	Requirements []service.ViewRequirement `json:"requirements"`
	Updates      []views.Update            `json:"updates"`
}

// replaceView commits updates to a view (service.Catalog.ReplaceView)
// once the versions they add are authorised.
func (s *Server) replaceView(r *request, name string) error {
	var req commitViewRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	vc := service.ViewCommit{Requirements: req.Requirements, Updates: req.Updates}
	if err := vc.Check(); err != nil {
		return err
	}
	if err := s.checkReplaceViewReads(r, name, vc.Updates); err != nil {
		return err
	}
	md, loc, err := s.svc.ReplaceView(r.ctx, r.p.Subject, r.ns, name, vc)
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}

// dropView drops a view (service.Catalog.DropView).
func (s *Server) dropView(r *request, name string) error {
	if _, err := s.svc.DropView(r.ctx, r.p.Subject, r.ns, name); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// renameView renames a view, to another namespace too
// (service.Catalog.RenameView).
func (s *Server) renameView(r *request) error {
	srcNS, src, dstNS, dst, err := s.readRename(r, "view")
	if err != nil {
		return err
	}
	if _, err := s.svc.RenameView(r.ctx, r.p.Subject, srcNS, src, dstNS, dst); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
