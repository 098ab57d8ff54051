package rest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/catalog/views"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

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

// maxViewMetadataBytes bounds a view metadata file read for register-view.
const maxViewMetadataBytes = 16 << 20

// registerView serves POST …/namespaces/{ns}/register-view: a view made
// from a view metadata file, with its versions, schemas and properties as
// the file has them, answered as LoadView answers it. The file must be
// inside the namespace's location: the catalog reads it with its root
// credentials. The view keeps its UUID; a live view with that UUID is the
// same view, registered already (409).
func (s *Server) registerView(r *request) error {
	req, snap, sc, err := s.readRegistration(r, "view")
	if err != nil {
		return err
	}
	if err := s.nameClash(r.ctx, s.db, sc.ID, r.ns, req.Name, kindView); err != nil {
		return err
	}
	ml, holder, err := s.commits.MetadataFile(r.ctx, s.db, snap, commit.Namespace{ID: sc.ID, Name: r.ns, Path: sc.Path}, "metadata file", req.MetadataLocation)
	if err != nil {
		return err
	}
	if holder != "" {
		// A table's file, not read (see commit.Catalog.MetadataFile).
		return forbidden("metadata file %s is inside the location of table %s: views are not registered from a table's files", req.MetadataLocation, holder)
	}
	loc := ml.String()
	if s.objects == nil {
		return errorf(fasthttp.StatusNotAcceptable, TypeUnsupported, "this catalog has no storage client to read metadata files with, so it cannot register views")
	}
	data, err := s.objects.Get(r.ctx, ml, maxViewMetadataBytes)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return badRequest("view metadata file %s does not exist", req.MetadataLocation)
	case errors.Is(err, objstore.ErrTooLarge):
		return badRequest("view metadata file %s is larger than %d bytes", req.MetadataLocation, maxViewMetadataBytes)
	case errors.Is(err, objstore.ErrBadLocation): // a directory, say
		return badRequest("view metadata file %s: %v", req.MetadataLocation, err)
	case err != nil:
		return fmt.Errorf("read view metadata %s: %w", loc, err)
	}
	md, err := views.Parse(data)
	if err != nil {
		return badRequest("view metadata file %s: %s", req.MetadataLocation, viewReason(err))
	}
	uuid := strings.ToLower(md.UUID)
	if !isUUID(uuid) {
		return badRequest("view metadata file %s: view-uuid %q is not a UUID", req.MetadataLocation, md.UUID)
	}
	_, err = s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		sc, err := s.liveSchema(ctx, tx, r.ns, noSuchNamespace(r.ns))
		if err != nil {
			return change{}, err
		}
		if err := s.nameClash(ctx, tx, sc.ID, r.ns, req.Name, kindView); err != nil {
			return change{}, err
		}
		// As for tables: a view's UUID is its identity, so one view's
		// metadata file makes one live view.
		switch other, found, err := s.cat.ViewByUUID(ctx, tx, uuid); {
		case err != nil:
			return change{}, err
		case found:
			return change{}, errorf(fasthttp.StatusConflict, TypeAlreadyExists,
				"View already exists: the view of metadata file %s (UUID %s) is registered as %s", req.MetadataLocation, uuid, other)
		}
		def := duckLakeDef(md)
		// The file registered is the view's current metadata file; the
		// next one the catalog writes continues its numbering.
		side, err := viewSidecar(loc, md, metadataFileNumber(loc), def.SQL)
		if err != nil {
			return change{}, err
		}
		_, ed, err := s.cat.CreateView(ctx, tx, cur, next, ducklake.NewView{Schema: sc, Name: req.Name, UUID: uuid, ViewDef: def, Metadata: side})
		return ed, err
	})
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}

// metadataFileNumber is the version number of a metadata file named as
// Iceberg names them (00003-<uuid>.metadata.json → 3), else 1.
func metadataFileNumber(loc string) int {
	name := loc[strings.LastIndexByte(loc, '/')+1:]
	digits, _, ok := strings.Cut(name, "-")
	if !ok {
		return 1
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
