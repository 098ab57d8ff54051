package rest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/catalog/views"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Views. An Iceberg view is a DuckLake view (ducklake_view), so DuckDB
// clients attached to the catalog see and query the views Iceberg clients
// make, and the other way round. The ducklake_view row holds what DuckLake
// can: the current version's SQL — its duckdb representation, else its
// first — with that representation's dialect, and the schema's field names
// as column aliases. Everything else Iceberg keeps of a view (versions,
// schemas, other dialects, properties, location) lives in the sidecar
// ducklake sidecar (duckicelake_view_metadata), keyed by view id and written in the same transaction.
//
// A view DuckDB made has no sidecar row; it is served as a one-version view
// of its SQL, dialect as DuckLake records it ("duckdb"), with DuckDB's
// {DUCKLAKE_CATALOG}. qualifier dropped (the default catalog is this one)
// and an empty schema: DuckLake does not record a view's column types, and
// the catalog does not run SQL to learn them. The first commit to such a
// view gives it a sidecar row.
//
// A view's comment is DuckDB's: the ducklake_tag "comment" of the view is
// its "comment" property, both ways.

// TypeNoSuchView is the ErrorModel type of a view that does not exist.
const TypeNoSuchView = "NoSuchViewException"

func noSuchView(ns, name string) *Error {
	return errorf(fasthttp.StatusNotFound, TypeNoSuchView, "View does not exist: %s.%s", ns, name)
}

// objectKind is what a name in a namespace is: a table or a view.
type objectKind = ducklake.Object

const (
	kindTable = ducklake.ObjectTable
	kindView  = ducklake.ObjectView
)

// nameKind says whether schemaID has a live table or view called name (0:
// neither).
func (s *Server) nameKind(ctx context.Context, q ducklake.Querier, schemaID int64, name string) (objectKind, error) {
	return s.cat.NameKind(ctx, q, schemaID, name)
}

// nameClash refuses a new table or view (kind) called ns.name that would
// clash with a live one (service.Catalog.NameClash).
func (s *Server) nameClash(ctx context.Context, q ducklake.Querier, schemaID int64, ns, name string, kind objectKind) error {
	return s.svc.NameClash(ctx, q, schemaID, ns, name, kind)
}

// liveView is a view that exists now, with its sidecar row if it has one.
type liveView struct {
	ducklake.View
	Location string // where a view without metadata is said to live
}

// lookupView finds live view ns.name; noSuchView when it (or its
// namespace) does not exist.
func (s *Server) lookupView(ctx context.Context, q ducklake.Querier, ns, name string) (liveView, error) {
	dv, err := s.cat.LiveView(ctx, q, ns, name)
	switch {
	case errors.Is(err, ducklake.ErrNotFound):
		return liveView{}, noSuchView(ns, name)
	case err != nil:
		return liveView{}, err
	}
	return liveView{View: dv, Location: s.resolve(dv.SchemaPath, name, true)}, nil
}

// files is how many metadata files the view's sidecar says were written.
func (v *liveView) files() int {
	if v.Metadata == nil {
		return 0
	}
	return v.Metadata.Files
}

// duckLakeCatalogRef is how DuckDB writes a reference to the DuckLake
// catalog itself into a view's SQL.
const duckLakeCatalogRef = "{DUCKLAKE_CATALOG}."

// metadata returns the view's Iceberg metadata and its location: the
// sidecar's, or one made from the ducklake_view row.
func (v *liveView) metadata(ns string) (*views.Metadata, string, error) {
	var md *views.Metadata
	var loc string
	if v.Metadata != nil && v.Metadata.SQL == v.SQL {
		var err error
		loc = v.Metadata.Location
		if md, err = views.Parse(v.Metadata.Document); err != nil {
			return nil, "", fmt.Errorf("view %d: sidecar metadata: %w", v.ID, err)
		}
	} else {
		dialect := v.Dialect
		if dialect == "" {
			dialect = "duckdb"
		}
		ts := v.Created.UnixMilli()
		md = &views.Metadata{
			UUID:             v.UUID,
			FormatVersion:    views.FormatVersion,
			Location:         v.Location,
			CurrentVersionID: 1,
			Versions: []views.Version{{
				VersionID:   1,
				TimestampMS: ts,
				SchemaID:    0,
				Summary:     map[string]string{},
				Representations: []views.Representation{{
					Type: "sql", SQL: strings.ReplaceAll(v.SQL, duckLakeCatalogRef, ""), Dialect: dialect,
				}},
				DefaultNamespace: []string{ns},
			}},
			VersionLog: []views.LogEntry{{TimestampMS: ts, VersionID: 1}},
			Schemas:    []views.Schema{views.NewSchema(0, json.RawMessage(`[]`))},
		}
		loc = metadataLocation(md, 0, v.UUID)
	}
	if v.Comment != nil {
		if md.Properties == nil {
			md.Properties = map[string]string{}
		}
		md.Properties[views.PropComment] = *v.Comment
	} else {
		delete(md.Properties, views.PropComment)
	}
	return md, loc, nil
}

// metadataLocation names the n-th metadata file of a view: under
// write.metadata.path, else <location>/metadata, as Iceberg names them.
// The catalog serves the metadata from Postgres, and writes the file too
// when it can (writeViewFile), so the location can be registered again.
func metadataLocation(md *views.Metadata, n int, id string) string {
	dir := strings.TrimRight(md.Location, "/") + "/metadata"
	if p := md.Properties[views.PropMetadataPath]; p != "" {
		dir = strings.TrimRight(p, "/")
	}
	return fmt.Sprintf("%s/%05d-%s.metadata.json", dir, n, id)
}

// duckLakeForm is what the ducklake_view row of metadata md holds: the
// current version's duckdb representation, else its first, and the names
// of the current schema's fields as DuckDB column aliases.
func duckLakeForm(md *views.Metadata) (dialect, sql, aliases string) {
	cur := md.Current()
	r, ok := cur.SQL("duckdb")
	if !ok {
		r = cur.Representations[0]
	}
	if sc := md.Schema(cur.SchemaID); sc != nil {
		names := sc.FieldNames()
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = quoteName(n)
		}
		aliases = strings.Join(quoted, ",")
	}
	return r.Dialect, r.SQL, aliases
}

// duckLakeDef is the ducklake_view row and comment tag of metadata md
// (duckLakeForm, and its comment property).
func duckLakeDef(md *views.Metadata) ducklake.ViewDef {
	var d ducklake.ViewDef
	d.Dialect, d.SQL, d.Aliases = duckLakeForm(md)
	d.Comment = viewComment(md)
	return d
}

// viewComment is md's comment property; nil without one.
func viewComment(md *views.Metadata) *string {
	if c, ok := md.Properties[views.PropComment]; ok {
		return &c
	}
	return nil
}

// viewSidecar is the sidecar row of metadata md, its files-th file at loc,
// written for the ducklake_view SQL sql.
func viewSidecar(loc string, md *views.Metadata, files int, sql string) (ducklake.ViewMetadata, error) {
	doc, err := json.Marshal(md)
	if err != nil {
		return ducklake.ViewMetadata{}, fmt.Errorf("encode view metadata: %w", err)
	}
	return ducklake.ViewMetadata{Location: loc, Document: doc, Files: files, SQL: sql}, nil
}

// writeViewVersion commits md as the view's files-th metadata file, named
// by fileID in its namespace location nsPath: row writes the ducklake_view
// rows with md's sidecar (for the ducklake_view SQL sql), then the file
// itself is written (writeViewFile). It returns the file's location.
func (s *Server) writeViewVersion(ctx context.Context, nsPath string, md *views.Metadata, files int, fileID, sql string,
	row func(side ducklake.ViewMetadata) error) (string, error) {
	loc := metadataLocation(md, files, fileID)
	side, err := viewSidecar(loc, md, files, sql)
	if err != nil {
		return "", err
	}
	if err := row(side); err != nil {
		return "", err
	}
	if err := s.writeViewFile(ctx, nsPath, loc, md); err != nil {
		return "", err
	}
	return loc, nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

type loadViewResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         *views.Metadata   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

func writeView(r *request, loc string, md *views.Metadata) error {
	return writeJSON(r.rc, loadViewResult{MetadataLocation: loc, Metadata: md, Config: map[string]string{}})
}

// typeIllegalArgument is the ErrorModel type of an invalid view change:
// Iceberg's Java client raises an IllegalArgumentException with the
// message for it, as its own view builder would have, where it raises
// BadRequestException("Malformed request: …") for other 400s.
const typeIllegalArgument = "IllegalArgumentException"

// viewReason is why view metadata is invalid: the InvalidError's reason,
// or the whole error when it carries none.
func viewReason(err error) string {
	if ie := (*views.InvalidError)(nil); errors.As(err, &ie) {
		return ie.Reason
	}
	return err.Error()
}

// viewBadRequest turns an invalid metadata change into a 400.
func viewBadRequest(err error) error {
	if errors.Is(err, views.ErrInvalid) {
		return errorf(fasthttp.StatusBadRequest, typeIllegalArgument, "%s", viewReason(err))
	}
	return err
}

func (s *Server) listViews(r *request) error {
	names, err := s.cat.ViewNames(r.ctx, s.db, r.ns)
	if errors.Is(err, ducklake.ErrNotFound) {
		return noSuchNamespace(r.ns)
	}
	if err != nil {
		return err
	}
	slices.Sort(names)
	return writeIdentifiers(r, r.ns, names)
}

func (s *Server) loadView(r *request, name string) error {
	v, err := s.lookupView(r.ctx, s.db, r.ns, name)
	if err != nil {
		return err
	}
	var md *views.Metadata
	var loc string
	if governance.IsMaskedName(r.ns) {
		md, loc, err = s.maskingViewMetadata(r, &v, r.ns) // authorised as its principal's (authorizeMasking)
	} else {
		md, loc, err = v.metadata(r.ns)
	}
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}

func (s *Server) viewExists(r *request, name string) error {
	_, err := s.lookupView(r.ctx, s.db, r.ns, name)
	if err != nil {
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

func (s *Server) createView(r *request) error {
	var req createViewRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if err := service.CheckName("view", req.Name); err != nil {
		return err
	}
	if req.Schema == nil {
		return badRequest("a view needs a schema")
	}
	if req.ViewVersion == nil {
		return badRequest("a view needs a view-version")
	}
	if err := s.checkCreateViewReads(r, req.Name, req.ViewVersion); err != nil {
		return err
	}
	var (
		md  *views.Metadata
		loc string
	)
	fileID := newUUID() // one name however often the commit is retried
	_, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		sc, err := s.liveSchema(ctx, tx, r.ns, noSuchNamespace(r.ns))
		if err != nil {
			return change{}, err
		}
		if err := s.nameClash(ctx, tx, sc.ID, r.ns, req.Name, kindView); err != nil {
			return change{}, err
		}
		location := req.Location
		if location == "" {
			location = s.resolve(sc.Path, req.Name, true)
		}
		uuid := newUUID()
		if md, err = views.New(views.Create{UUID: uuid, Location: location, Properties: req.Properties,
			Schema: *req.Schema, Version: *req.ViewVersion}, s.now()); err != nil {
			return change{}, viewBadRequest(err)
		}
		def := duckLakeDef(md)
		var ed change
		loc, err = s.writeViewVersion(ctx, sc.Path, md, 1, fileID, def.SQL, func(side ducklake.ViewMetadata) (err error) {
			_, ed, err = s.cat.CreateView(ctx, tx, cur, next, ducklake.NewView{Schema: sc, Name: req.Name, UUID: uuid, ViewDef: def, Metadata: side})
			return err
		})
		return ed, err
	})
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}

// writeViewFile writes metadata md to its file at loc, as an Iceberg
// catalog would, so that the location a view reports can be read and
// registered again (register-view) after the view is dropped. It runs in
// the view's commit, before the transaction commits: a location the
// catalog answers always has its file. The file is written only inside
// the view's namespace location (nsPath), with the catalog's root
// credentials; a view whose location or write.metadata.path is elsewhere,
// or a catalog without an object writer, keeps its metadata in Postgres
// only, and its location names no file.
func (s *Server) writeViewFile(ctx context.Context, nsPath, loc string, md *views.Metadata) error {
	if s.objects == nil {
		return nil
	}
	l, err := objstore.Parse(loc)
	if err != nil || l.Scheme() != objstore.SchemeS3 {
		return nil
	}
	if dir, err := objstore.ParseDir(nsPath); err != nil || !l.Within(dir) {
		return nil
	}
	doc, err := json.Marshal(md)
	if err != nil {
		return fmt.Errorf("encode view metadata: %w", err)
	}
	if err := s.objects.Put(ctx, l, doc); err != nil {
		return fmt.Errorf("write view metadata file: %w", err)
	}
	return nil
}

type viewRequirement struct {
	Type string `json:"type"`
	UUID string `json:"uuid"`
}

type commitViewRequest struct {
	Identifier   *tableIdentifier  `json:"identifier"`
	Requirements []viewRequirement `json:"requirements"`
	Updates      []views.Update    `json:"updates"`
}

// replaceView commits updates to a view. They are applied to the view as
// it is when the commit runs, after its requirements hold, so a commit
// that lost a race to another is re-applied rather than refused.
func (s *Server) replaceView(r *request, name string) error {
	var req commitViewRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if req.Updates == nil {
		return badRequest("a view commit needs updates")
	}
	if err := s.checkReplaceViewReads(r, name, req.Updates); err != nil {
		return err
	}
	for _, rq := range req.Requirements {
		if rq.Type != "assert-view-uuid" {
			return badRequest("%q is not a view requirement (assert-view-uuid is)", rq.Type)
		}
	}
	check := func(md *views.Metadata) error {
		for _, rq := range req.Requirements {
			if rq.UUID != md.UUID {
				return errorf(fasthttp.StatusConflict, TypeCommitFailed, "Requirement failed: view UUID does not match: expected %s != %s", md.UUID, rq.UUID)
			}
		}
		return nil
	}
	if len(req.Updates) == 0 {
		v, err := s.lookupView(r.ctx, s.db, r.ns, name)
		if err != nil {
			return err
		}
		md, loc, err := v.metadata(r.ns)
		if err != nil {
			return err
		}
		if err := check(md); err != nil {
			return err
		}
		return writeView(r, loc, md)
	}
	var (
		md  *views.Metadata
		loc string
	)
	fileID := newUUID() // one name however often the commit is retried
	_, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		v, err := s.lookupView(ctx, tx, r.ns, name)
		if err != nil {
			return change{}, err
		}
		base, _, err := v.metadata(r.ns)
		if err != nil {
			return change{}, err
		}
		if err := check(base); err != nil {
			return change{}, err
		}
		if md, err = base.Apply(req.Updates, s.now()); err != nil {
			return change{}, viewBadRequest(err)
		}
		// The row changes only with the current version: a view DuckDB
		// made keeps its SQL as DuckDB wrote it through property changes.
		def := v.ViewDef
		if md.CurrentVersionID != base.CurrentVersionID {
			def = duckLakeDef(md)
		}
		def.Comment = viewComment(md)
		var ed change
		loc, err = s.writeViewVersion(ctx, v.SchemaPath, md, v.files()+1, fileID, def.SQL, func(side ducklake.ViewMetadata) (err error) {
			ed, err = s.cat.ReplaceView(ctx, tx, next, v.View, name, def, side)
			return err
		})
		return ed, err
	})
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}

// dropView ends the view's row and tags as DuckDB's DROP VIEW does, and
// forgets its Iceberg metadata.
func (s *Server) dropView(r *request, name string) error {
	_, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		v, err := s.lookupView(ctx, tx, r.ns, name)
		if err != nil {
			return change{}, err
		}
		return s.cat.DropView(ctx, tx, next, v.View, name)
	})
	if err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// renameView renames a view as DuckDB's ALTER VIEW … RENAME TO does: the
// row ends and a row with the same id, UUID and SQL begins under the new
// name, logged as created_view:"ns"."new". Unlike a table, a view has no
// files under its schema's path, so it may move to another namespace too.
// Its Iceberg metadata does not change.
func (s *Server) renameView(r *request) error {
	srcNS, src, dstNS, dst, err := s.readRename(r, "view")
	if err != nil {
		return err
	}
	_, err = s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		v, err := s.lookupView(ctx, tx, srcNS, src)
		if err != nil {
			return change{}, err
		}
		dsc, err := s.liveSchema(ctx, tx, dstNS, noSuchNamespace(dstNS))
		if err != nil {
			return change{}, err
		}
		if err := s.svc.RenameClash(ctx, tx, dsc.ID, srcNS+"."+src, dstNS, dst); err != nil {
			return change{}, err
		}
		return s.cat.RenameView(ctx, tx, next, v.View, src, dsc, dst)
	})
	if err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
