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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
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
// viewMetadataTable, keyed by view id and written in the same transaction.
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

// viewMetadataTable holds the Iceberg metadata of views made or changed over
// REST, by DuckLake view id.
const viewMetadataTable = "duckicelake_view_metadata"

func noSuchView(ns, name string) *Error {
	return errorf(fasthttp.StatusNotFound, TypeNoSuchView, "View does not exist: %s.%s", ns, name)
}

// objectKind is what a name in a namespace is: a table or a view.
type objectKind uint8

const (
	kindTable objectKind = iota + 1
	kindView
)

// nameKind says whether schemaID has a live table or view called name (0:
// neither).
func (s *Server) nameKind(ctx context.Context, q ducklake.Querier, schemaID int64, name string) (objectKind, error) {
	var table, view bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.t("ducklake_table")+` WHERE schema_id = $1 AND table_name = $2 AND end_snapshot IS NULL),
		EXISTS (SELECT 1 FROM `+s.t("ducklake_view")+` WHERE schema_id = $1 AND view_name = $2 AND end_snapshot IS NULL)`,
		schemaID, name).Scan(&table, &view)
	switch {
	case err != nil:
		return 0, fmt.Errorf("look up %q: %w", name, err)
	case table:
		return kindTable, nil
	case view:
		return kindView, nil
	}
	return 0, nil
}

// nameClash answers 409 AlreadyExists when creating a table or view (kind)
// called ns.name would clash with a live table or view of schemaID, in the
// words Iceberg's catalog tests expect; nil when the name is free. Tables
// and views share one namespace of names, as in DuckDB.
func (s *Server) nameClash(ctx context.Context, q ducklake.Querier, schemaID int64, ns, name string, kind objectKind) error {
	have, err := s.nameKind(ctx, q, schemaID, name)
	if err != nil || have == 0 {
		return err
	}
	var msg string
	switch {
	case have == kindView && kind == kindView:
		msg = "View already exists"
	case have == kindView:
		msg = "View with same name already exists"
	case kind == kindTable:
		msg = "Table already exists"
	default:
		msg = "Table with same name already exists"
	}
	return errorf(fasthttp.StatusConflict, TypeAlreadyExists, "%s: %s.%s", msg, ns, name)
}

// renameClash answers 409 AlreadyExists when renaming from (ns.name) to
// toNS.to would clash with a live table or view of schema toSchemaID.
func (s *Server) renameClash(ctx context.Context, q ducklake.Querier, toSchemaID int64, from, toNS, to string) error {
	have, err := s.nameKind(ctx, q, toSchemaID, to)
	if err != nil || have == 0 {
		return err
	}
	what := "Table"
	if have == kindView {
		what = "View"
	}
	return errorf(fasthttp.StatusConflict, TypeAlreadyExists, "Cannot rename %s to %s.%s. %s already exists", from, toNS, to, what)
}

// liveView is a view that exists now, with its sidecar row if it has one.
type liveView struct {
	ID       int64
	UUID     string
	SchemaID int64
	Dialect  string
	SQL      string
	Aliases  string
	Location string    // where a view without metadata is said to live
	NSPath   string    // its namespace's location, ending in "/"
	Created  time.Time // when the view id first appeared
	Comment  *string   // the live "comment" tag
	Metadata []byte    // sidecar; nil without a row
	MetaLoc  string    // sidecar metadata location
	Files    int       // sidecar metadata files written
	MetaSQL  string    // sidecar ducklake_sql
	hasMeta  bool
}

// lookupView finds live view ns.name; found is false when it (or its
// namespace) does not exist.
func (s *Server) lookupView(ctx context.Context, q ducklake.Querier, ns, name string) (v liveView, found bool, err error) {
	var (
		created *time.Time
		spath   string
		srel    bool
		meta    *string
		metaLoc *string
		files   *int32
		metaSQL *string
		dialect *string
		sql     *string
		aliases *string
	)
	err = q.QueryRow(ctx, `SELECT v.view_id, coalesce(v.view_uuid::text, ''), v.schema_id, v.dialect, v.sql, v.column_aliases,
			coalesce(sc.path, ''), coalesce(sc.path_is_relative, true),
			(SELECT sn.snapshot_time FROM `+s.t("ducklake_snapshot")+` sn
				WHERE sn.snapshot_id = (SELECT min(o.begin_snapshot) FROM `+s.t("ducklake_view")+` o WHERE o.view_id = v.view_id)),
			(SELECT tg.value FROM `+s.t("ducklake_tag")+` tg
				WHERE tg.object_id = v.view_id AND tg.key = 'comment' AND tg.end_snapshot IS NULL ORDER BY tg.begin_snapshot DESC LIMIT 1),
			m.metadata, m.metadata_location, m.files, m.ducklake_sql
		FROM `+s.t("ducklake_view")+` v
		JOIN `+s.t("ducklake_schema")+` sc ON sc.schema_id = v.schema_id AND sc.end_snapshot IS NULL
		LEFT JOIN `+s.t(viewMetadataTable)+` m ON m.view_id = v.view_id
		WHERE sc.schema_name = $1 AND v.view_name = $2 AND v.end_snapshot IS NULL`, ns, name).Scan(
		&v.ID, &v.UUID, &v.SchemaID, &dialect, &sql, &aliases, &spath, &srel, &created, &v.Comment, &meta, &metaLoc, &files, &metaSQL)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf("look up view %s.%s: %w", ns, name, err)
	}
	v.Dialect, v.SQL, v.Aliases = deref(dialect), deref(sql), deref(aliases)
	v.NSPath = s.resolve(s.dataPath, spath, srel)
	v.Location = s.resolve(v.NSPath, name, true)
	if created != nil {
		v.Created = *created
	}
	if meta != nil {
		v.hasMeta = true
		v.Metadata = []byte(*meta)
		v.MetaLoc, v.Files, v.MetaSQL = deref(metaLoc), int(*files), deref(metaSQL)
	}
	return v, true, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// duckLakeCatalogRef is how DuckDB writes a reference to the DuckLake
// catalog itself into a view's SQL.
const duckLakeCatalogRef = "{DUCKLAKE_CATALOG}."

// metadata returns the view's Iceberg metadata and its location: the
// sidecar's, or one made from the ducklake_view row.
func (v *liveView) metadata(ns string) (*views.Metadata, string, error) {
	var md *views.Metadata
	loc := v.MetaLoc
	if v.hasMeta && v.MetaSQL == v.SQL {
		var err error
		if md, err = views.Parse(v.Metadata); err != nil {
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
	var exists bool
	if err := s.db.QueryRow(r.ctx, `SELECT EXISTS (SELECT 1 FROM `+s.t("ducklake_schema")+` WHERE schema_name = $1 AND end_snapshot IS NULL)`,
		r.ns).Scan(&exists); err != nil {
		return fmt.Errorf("look up schema %q: %w", r.ns, err)
	}
	if !exists {
		return noSuchNamespace(r.ns)
	}
	rows, err := s.db.Query(r.ctx, `SELECT v.view_name FROM `+s.t("ducklake_view")+` v
		JOIN `+s.t("ducklake_schema")+` sc ON sc.schema_id = v.schema_id AND sc.end_snapshot IS NULL
		WHERE sc.schema_name = $1 AND v.end_snapshot IS NULL`, r.ns)
	if err != nil {
		return fmt.Errorf("read views: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read views: %w", err)
	}
	slices.Sort(names)
	page, next, err := paginate(names, r.rc.QueryArgs())
	if err != nil {
		return err
	}
	out := listTablesBody{NextPageToken: next, Identifiers: make([]tableIdentifier, len(page))}
	for i := range page {
		out.Identifiers[i] = tableIdentifier{Namespace: []string{r.ns}, Name: &page[i]}
	}
	return writeJSON(r.rc, out)
}

func (s *Server) loadView(r *request, name string) error {
	v, found, err := s.lookupView(r.ctx, s.db, r.ns, name)
	if err != nil {
		return err
	}
	if !found {
		return noSuchView(r.ns, name)
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
	_, found, err := s.lookupView(r.ctx, s.db, r.ns, name)
	if err != nil {
		return err
	}
	if !found {
		return noSuchView(r.ns, name)
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
	if err := checkName("view", req.Name); err != nil {
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
		sc, exists, err := s.lookupSchema(ctx, tx, r.ns)
		if err != nil {
			return change{}, err
		}
		if !exists {
			return change{}, noSuchNamespace(r.ns)
		}
		if err := s.nameClash(ctx, tx, sc.ID, r.ns, req.Name, kindView); err != nil {
			return change{}, err
		}
		nsPath := s.resolve(s.dataPath, sc.Path, sc.PathRelative)
		location := req.Location
		if location == "" {
			location = s.resolve(nsPath, req.Name, true)
		}
		id, uuid := cur.NextCatalogID, newUUID()
		if md, err = views.New(views.Create{UUID: uuid, Location: location, Properties: req.Properties,
			Schema: *req.Schema, Version: *req.ViewVersion}, s.now()); err != nil {
			return change{}, viewBadRequest(err)
		}
		dialect, sql, aliases := duckLakeForm(md)
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_view")+` (view_id, view_uuid, begin_snapshot, end_snapshot, schema_id, view_name, dialect, sql, column_aliases)
			VALUES ($1, $2::uuid, $3, NULL, $4, $5, $6, $7, $8)`, id, uuid, next, sc.ID, req.Name, dialect, sql, aliases); err != nil {
			return change{}, fmt.Errorf("insert view %q: %w", req.Name, err)
		}
		if err := s.setViewComment(ctx, tx, id, next, nil, md); err != nil {
			return change{}, err
		}
		loc = metadataLocation(md, 1, fileID)
		if err := s.putViewMetadata(ctx, tx, id, loc, md, 1, sql); err != nil {
			return change{}, err
		}
		if err := s.writeViewFile(ctx, nsPath, loc, md); err != nil {
			return change{}, err
		}
		return change{Changes: "created_view:" + quoteName(r.ns) + "." + quoteName(req.Name), CatalogIDs: 1}, nil
	})
	if err != nil {
		return err
	}
	return writeView(r, loc, md)
}

// setViewComment makes the view's "comment" tag say what md's comment
// property says (old is the live tag).
func (s *Server) setViewComment(ctx context.Context, tx pgx.Tx, viewID, next int64, old *string, md *views.Metadata) error {
	c, ok := md.Properties[views.PropComment]
	if old == nil && !ok || old != nil && ok && *old == c {
		return nil
	}
	if old != nil {
		if _, err := tx.Exec(ctx, `UPDATE `+s.t("ducklake_tag")+` SET end_snapshot = $1 WHERE object_id = $2 AND key = 'comment' AND end_snapshot IS NULL`,
			next, viewID); err != nil {
			return fmt.Errorf("end view comment: %w", err)
		}
	}
	if ok {
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_tag")+` (object_id, begin_snapshot, end_snapshot, key, value) VALUES ($1, $2, NULL, 'comment', $3)`,
			viewID, next, c); err != nil {
			return fmt.Errorf("insert view comment: %w", err)
		}
	}
	return nil
}

func (s *Server) putViewMetadata(ctx context.Context, tx pgx.Tx, viewID int64, loc string, md *views.Metadata, files int, sql string) error {
	doc, err := json.Marshal(md)
	if err != nil {
		return fmt.Errorf("encode view metadata: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.t(viewMetadataTable)+` (view_id, metadata_location, metadata, files, ducklake_sql)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (view_id) DO UPDATE SET metadata_location = excluded.metadata_location, metadata = excluded.metadata,
			files = excluded.files, ducklake_sql = excluded.ducklake_sql`, viewID, loc, string(doc), files, sql); err != nil {
		return fmt.Errorf("write view metadata: %w", err)
	}
	return nil
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
		v, found, err := s.lookupView(r.ctx, s.db, r.ns, name)
		if err != nil {
			return err
		}
		if !found {
			return noSuchView(r.ns, name)
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
		v, found, err := s.lookupView(ctx, tx, r.ns, name)
		if err != nil {
			return change{}, err
		}
		if !found {
			return change{}, noSuchView(r.ns, name)
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
		dialect, sql, aliases := v.Dialect, v.SQL, v.Aliases
		if md.CurrentVersionID != base.CurrentVersionID {
			dialect, sql, aliases = duckLakeForm(md)
		}
		if dialect != v.Dialect || sql != v.SQL || aliases != v.Aliases {
			if _, err := tx.Exec(ctx, `UPDATE `+s.t("ducklake_view")+` SET end_snapshot = $1 WHERE view_id = $2 AND end_snapshot IS NULL`, next, v.ID); err != nil {
				return change{}, fmt.Errorf("replace view %q: end: %w", name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_view")+` (view_id, view_uuid, begin_snapshot, end_snapshot, schema_id, view_name, dialect, sql, column_aliases)
				VALUES ($1, $2::uuid, $3, NULL, $4, $5, $6, $7, $8)`, v.ID, v.UUID, next, v.SchemaID, name, dialect, sql, aliases); err != nil {
				return change{}, fmt.Errorf("replace view %q: insert: %w", name, err)
			}
		}
		if err := s.setViewComment(ctx, tx, v.ID, next, v.Comment, md); err != nil {
			return change{}, err
		}
		files := v.Files + 1
		loc = metadataLocation(md, files, fileID)
		if err := s.putViewMetadata(ctx, tx, v.ID, loc, md, files, sql); err != nil {
			return change{}, err
		}
		if err := s.writeViewFile(ctx, v.NSPath, loc, md); err != nil {
			return change{}, err
		}
		return change{Changes: fmt.Sprintf("altered_view:%d", v.ID)}, nil
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
		v, found, err := s.lookupView(ctx, tx, r.ns, name)
		if err != nil {
			return change{}, err
		}
		if !found {
			return change{}, noSuchView(r.ns, name)
		}
		for _, u := range []struct{ table, idColumn string }{
			{"ducklake_view", "view_id"},
			{"ducklake_tag", "object_id"},
		} {
			if _, err := tx.Exec(ctx, `UPDATE `+s.t(u.table)+` SET end_snapshot = $1 WHERE `+u.idColumn+` = $2 AND end_snapshot IS NULL`, next, v.ID); err != nil {
				return change{}, fmt.Errorf("drop view %q: %s: %w", name, u.table, err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.t(viewMetadataTable)+` WHERE view_id = $1`, v.ID); err != nil {
			return change{}, fmt.Errorf("drop view %q: metadata: %w", name, err)
		}
		return change{Changes: fmt.Sprintf("dropped_view:%d", v.ID)}, nil
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
		v, found, err := s.lookupView(ctx, tx, srcNS, src)
		if err != nil {
			return change{}, err
		}
		if !found {
			return change{}, noSuchView(srcNS, src)
		}
		dsc, exists, err := s.lookupSchema(ctx, tx, dstNS)
		if err != nil {
			return change{}, err
		}
		if !exists {
			return change{}, noSuchNamespace(dstNS)
		}
		if err := s.renameClash(ctx, tx, dsc.ID, srcNS+"."+src, dstNS, dst); err != nil {
			return change{}, err
		}
		if _, err := tx.Exec(ctx, `UPDATE `+s.t("ducklake_view")+` SET end_snapshot = $1 WHERE view_id = $2 AND end_snapshot IS NULL`, next, v.ID); err != nil {
			return change{}, fmt.Errorf("rename view: end %q: %w", src, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_view")+` (view_id, view_uuid, begin_snapshot, end_snapshot, schema_id, view_name, dialect, sql, column_aliases)
			SELECT view_id, view_uuid, $1, NULL, $3, $4, dialect, sql, column_aliases FROM `+s.t("ducklake_view")+`
			WHERE view_id = $2 AND end_snapshot = $1`, next, v.ID, dsc.ID, dst); err != nil {
			return change{}, fmt.Errorf("rename view: insert %q: %w", dst, err)
		}
		return change{Changes: "created_view:" + quoteName(dstNS) + "." + quoteName(dst)}, nil
	})
	if err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
