package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/views"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Views. An Iceberg view is a DuckLake view (ducklake_view), so DuckDB
// clients attached to the catalog see and query the views Iceberg clients
// make, and the other way round. The ducklake_view row holds what DuckLake
// can: the current version's SQL — its duckdb representation, else its
// first — with that representation's dialect, and the schema's field names
// as column aliases. Everything else Iceberg keeps of a view (versions,
// schemas, other dialects, properties, location) lives in the sidecar
// table duckicelake_view_metadata, keyed by view id and written in the
// same transaction.
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

// View is a view that exists now, with its sidecar row if it has one.
type View struct {
	ducklake.View
	Location string // where a view without metadata is said to live
}

// LookupView finds live view ns.name; NoSuchView when it or its namespace
// does not exist.
func (c *Catalog) LookupView(ctx context.Context, ns, name string) (View, error) {
	return c.lookupView(ctx, c.db, ns, name)
}

// lookupView is LookupView through q (a change's transaction).
func (c *Catalog) lookupView(ctx context.Context, q ducklake.Querier, ns, name string) (View, error) {
	dv, err := c.cat.LiveView(ctx, q, ns, name)
	switch {
	case errors.Is(err, ducklake.ErrNotFound):
		return View{}, NoSuchView(ns, name)
	case err != nil:
		return View{}, err
	}
	// DuckLake's path rule: a view's location is relative to its schema's.
	return View{View: dv, Location: dv.SchemaPath + name}, nil
}

// ViewNames lists the live views of namespace ns, sorted; NoSuchNamespace
// when it does not exist.
func (c *Catalog) ViewNames(ctx context.Context, ns string) ([]string, error) {
	names, err := c.cat.ViewNames(ctx, c.db, ns)
	if errors.Is(err, ducklake.ErrNotFound) {
		return nil, NoSuchNamespace(ns)
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// files is how many metadata files the view's sidecar says were written.
func (v *View) files() int {
	if v.View.Metadata == nil {
		return 0
	}
	return v.View.Metadata.Files
}

// duckLakeCatalogRef is how DuckDB writes a reference to the DuckLake
// catalog itself into a view's SQL.
const duckLakeCatalogRef = "{DUCKLAKE_CATALOG}."

// IcebergMetadata returns the view's Iceberg metadata (its default
// namespace ns when it has no sidecar row) and the location of its
// metadata file: the sidecar's, or one made from the ducklake_view row.
func (v *View) IcebergMetadata(ns string) (*views.Metadata, string, error) {
	var md *views.Metadata
	var loc string
	if side := v.View.Metadata; side != nil && side.SQL == v.SQL {
		var err error
		loc = side.Location
		if md, err = views.Parse(side.Document); err != nil {
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
			quoted[i] = ducklake.QuoteName(n)
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
func (c *Catalog) writeViewVersion(ctx context.Context, nsPath string, md *views.Metadata, files int, fileID, sql string,
	row func(side ducklake.ViewMetadata) error) (string, error) {
	loc := metadataLocation(md, files, fileID)
	side, err := viewSidecar(loc, md, files, sql)
	if err != nil {
		return "", err
	}
	if err := row(side); err != nil {
		return "", err
	}
	if err := c.writeViewFile(ctx, nsPath, loc, md); err != nil {
		return "", err
	}
	return loc, nil
}

// writeViewFile writes metadata md to its file at loc, as an Iceberg
// catalog would, so that the location a view reports can be read and
// registered again (RegisterView) after the view is dropped. It runs in
// the view's commit, before the transaction commits: a location the
// catalog answers always has its file. The file is written only inside
// the view's namespace location (nsPath), with the catalog's root
// credentials; a view whose location or write.metadata.path is elsewhere,
// or a catalog without an object store, keeps its metadata in Postgres
// only, and its location names no file.
func (c *Catalog) writeViewFile(ctx context.Context, nsPath, loc string, md *views.Metadata) error {
	if c.objects == nil {
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
	if err := c.objects.Put(ctx, l, doc); err != nil {
		return fmt.Errorf("write view metadata file: %w", err)
	}
	return nil
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

// viewReason is why view metadata is invalid: the InvalidError's reason,
// or the whole error when it carries none.
func viewReason(err error) string {
	if ie := (*views.InvalidError)(nil); errors.As(err, &ie) {
		return ie.Reason
	}
	return err.Error()
}

// invalidView turns an invalid metadata change into ErrInvalidView; other
// errors come back as they are.
func invalidView(err error) error {
	if errors.Is(err, views.ErrInvalid) {
		return refuse(ErrInvalidView, "%s", viewReason(err))
	}
	return err
}

// CreateView is a request for a new view: a CreateViewRequest's fields.
type CreateView struct {
	Name        string
	Location    string // "" for <namespace location><name>
	Schema      *views.Schema
	ViewVersion *views.Version
	Properties  map[string]string
}

// Check refuses (ErrInvalid) a request that is wrong whatever the catalog
// holds: a bad name, no schema, no version. CreateView checks it too; a
// transport calls it first to refuse such a request before it looks
// further (at what the view reads, say).
func (req *CreateView) Check() error {
	if err := CheckName("view", req.Name); err != nil {
		return err
	}
	if req.Schema == nil {
		return refuse(ErrInvalid, "a view needs a schema")
	}
	if req.ViewVersion == nil {
		return refuse(ErrInvalid, "a view needs a view-version")
	}
	return nil
}

// CreateView creates view ns.name by author, with its first metadata file,
// and returns the view's metadata and that file's location. A name a live
// table or view has is refused with ErrAlreadyExists, metadata the view
// rules refuse with ErrInvalidView.
func (c *Catalog) CreateView(ctx context.Context, author, ns string, req CreateView) (*views.Metadata, string, error) {
	if err := req.Check(); err != nil {
		return nil, "", err
	}
	var (
		md  *views.Metadata
		loc string
	)
	fileID := newUUID() // one name however often the commit is retried
	_, err := c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		sc, err := c.LiveSchema(ctx, tx, ns, NoSuchNamespace(ns))
		if err != nil {
			return ducklake.Edit{}, err
		}
		if err := c.NameClash(ctx, tx, sc.ID, ns, req.Name, ducklake.ObjectView); err != nil {
			return ducklake.Edit{}, err
		}
		location := req.Location
		if location == "" {
			location = sc.Path + req.Name
		}
		uuid := newUUID()
		if md, err = views.New(views.Create{UUID: uuid, Location: location, Properties: req.Properties,
			Schema: *req.Schema, Version: *req.ViewVersion}, c.now()); err != nil {
			return ducklake.Edit{}, invalidView(err)
		}
		def := duckLakeDef(md)
		var ed ducklake.Edit
		loc, err = c.writeViewVersion(ctx, sc.Path, md, 1, fileID, def.SQL, func(side ducklake.ViewMetadata) (err error) {
			_, ed, err = c.cat.CreateView(ctx, tx, head, next, ducklake.NewView{Schema: sc, Name: req.Name, UUID: uuid, ViewDef: def, Metadata: side})
			return err
		})
		return ed, err
	})
	if err != nil {
		return nil, "", err
	}
	return md, loc, nil
}

// ViewRequirement is a requirement of a view commit; assert-view-uuid is
// the only type.
type ViewRequirement struct {
	Type string `json:"type"`
	UUID string `json:"uuid"`
}

// ViewCommit is a commit to a view: requirements, and updates to apply
// when they hold.
type ViewCommit struct {
	Requirements []ViewRequirement
	Updates      []views.Update
}

// Check refuses (ErrInvalid) a commit without updates (an empty list is
// one: it loads the view after checking the requirements). ReplaceView
// checks it too; a transport calls it first, as CreateView.Check.
func (vc *ViewCommit) Check() error {
	if vc.Updates == nil {
		return refuse(ErrInvalid, "a view commit needs updates")
	}
	return nil
}

// check refuses (ErrConflict) metadata md that a requirement does not
// hold for.
func (vc *ViewCommit) check(md *views.Metadata) error {
	for _, rq := range vc.Requirements {
		if rq.UUID != md.UUID {
			return refuse(ErrConflict, "Requirement failed: view UUID does not match: expected %s != %s", md.UUID, rq.UUID)
		}
	}
	return nil
}

// ReplaceView commits vc to view ns.name by author and returns the view's
// metadata and the location of its file. The updates are applied to the
// view as it is when the commit runs, after its requirements hold, so a
// commit that lost a race to another is re-applied rather than refused. A
// commit with no updates writes nothing: it answers the view as it is.
func (c *Catalog) ReplaceView(ctx context.Context, author, ns, name string, vc ViewCommit) (*views.Metadata, string, error) {
	if err := vc.Check(); err != nil {
		return nil, "", err
	}
	for _, rq := range vc.Requirements {
		if rq.Type != "assert-view-uuid" {
			return nil, "", refuse(ErrInvalid, "%q is not a view requirement (assert-view-uuid is)", rq.Type)
		}
	}
	if len(vc.Updates) == 0 {
		v, err := c.LookupView(ctx, ns, name)
		if err != nil {
			return nil, "", err
		}
		md, loc, err := v.IcebergMetadata(ns)
		if err != nil {
			return nil, "", err
		}
		if err := vc.check(md); err != nil {
			return nil, "", err
		}
		return md, loc, nil
	}
	var (
		md  *views.Metadata
		loc string
	)
	fileID := newUUID() // one name however often the commit is retried
	_, err := c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		v, err := c.lookupView(ctx, tx, ns, name)
		if err != nil {
			return ducklake.Edit{}, err
		}
		base, _, err := v.IcebergMetadata(ns)
		if err != nil {
			return ducklake.Edit{}, err
		}
		if err := vc.check(base); err != nil {
			return ducklake.Edit{}, err
		}
		if md, err = base.Apply(vc.Updates, c.now()); err != nil {
			return ducklake.Edit{}, invalidView(err)
		}
		// The row changes only with the current version: a view DuckDB
		// made keeps its SQL as DuckDB wrote it through property changes.
		def := v.ViewDef
		if md.CurrentVersionID != base.CurrentVersionID {
			def = duckLakeDef(md)
		}
		def.Comment = viewComment(md)
		var ed ducklake.Edit
		loc, err = c.writeViewVersion(ctx, v.SchemaPath, md, v.files()+1, fileID, def.SQL, func(side ducklake.ViewMetadata) (err error) {
			ed, err = c.cat.ReplaceView(ctx, tx, next, v.View, name, def, side)
			return err
		})
		return ed, err
	})
	if err != nil {
		return nil, "", err
	}
	return md, loc, nil
}

// DropView ends view ns.name's row and tags as DuckDB's DROP VIEW does,
// and forgets its Iceberg metadata. It returns the drop's snapshot.
func (c *Catalog) DropView(ctx context.Context, author, ns, name string) (int64, error) {
	return c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		v, err := c.lookupView(ctx, tx, ns, name)
		if err != nil {
			return ducklake.Edit{}, err
		}
		return c.cat.DropView(ctx, tx, next, v.View, name)
	})
}

// RenameView renames view srcNS.src to dstNS.dst as DuckDB's ALTER VIEW …
// RENAME TO does: the row ends and a row with the same id, UUID and SQL
// begins under the new name, logged as created_view:"ns"."new". Unlike a
// table, a view has no files under its schema's path, so it may move to
// another namespace too. Its Iceberg metadata does not change. It returns
// the rename's snapshot.
func (c *Catalog) RenameView(ctx context.Context, author, srcNS, src, dstNS, dst string) (int64, error) {
	return c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		v, err := c.lookupView(ctx, tx, srcNS, src)
		if err != nil {
			return ducklake.Edit{}, err
		}
		dsc, err := c.LiveSchema(ctx, tx, dstNS, NoSuchNamespace(dstNS))
		if err != nil {
			return ducklake.Edit{}, err
		}
		if err := c.RenameClash(ctx, tx, dsc.ID, srcNS+"."+src, dstNS, dst); err != nil {
			return ducklake.Edit{}, err
		}
		return c.cat.RenameView(ctx, tx, next, v.View, src, dsc, dst)
	})
}

// maxViewMetadataBytes bounds a view metadata file read for RegisterView.
const maxViewMetadataBytes = 16 << 20

// RegisterView makes view sc.Name + "." + name by author from the view
// metadata file at metadataLocation, with its versions, schemas and
// properties as the file has them, where sc is the namespace as of
// snapshot snap; it returns the view's metadata and the file's location.
// The file must be inside the namespace's location: the catalog reads it
// with its root credentials. The view keeps its UUID; a live view with
// that UUID is the same view, registered already (ErrAlreadyExists); a
// file inside a table's location is refused with ErrForbidden, one
// catalog/commit refuses (outside the namespace's location, say) as
// CommitError has it.
func (c *Catalog) RegisterView(ctx context.Context, author string, snap int64, sc ducklake.Schema, name, metadataLocation string) (*views.Metadata, string, error) {
	ns := sc.Name
	if err := c.NameClash(ctx, c.db, sc.ID, ns, name, ducklake.ObjectView); err != nil {
		return nil, "", err
	}
	ml, holder, err := c.commits.MetadataFile(ctx, c.db, snap, commit.Namespace{ID: sc.ID, Name: ns, Path: sc.Path}, "metadata file", metadataLocation)
	if err != nil {
		return nil, "", CommitError(err)
	}
	if holder != "" {
		// A table's file, not read (see commit.Catalog.MetadataFile).
		return nil, "", refuse(ErrForbidden, "metadata file %s is inside the location of table %s: views are not registered from a table's files", metadataLocation, holder)
	}
	loc := ml.String()
	if c.objects == nil {
		return nil, "", refuse(ErrUnsupported, "this catalog has no storage client to read metadata files with, so it cannot register views")
	}
	data, err := c.objects.Get(ctx, ml, maxViewMetadataBytes)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return nil, "", refuse(ErrInvalid, "view metadata file %s does not exist", metadataLocation)
	case errors.Is(err, objstore.ErrTooLarge):
		return nil, "", refuse(ErrInvalid, "view metadata file %s is larger than %d bytes", metadataLocation, maxViewMetadataBytes)
	case errors.Is(err, objstore.ErrBadLocation): // a directory, say
		return nil, "", refuse(ErrInvalid, "view metadata file %s: %v", metadataLocation, err)
	case err != nil:
		return nil, "", fmt.Errorf("read view metadata %s: %w", loc, err)
	}
	md, err := views.Parse(data)
	if err != nil {
		return nil, "", refuse(ErrInvalid, "view metadata file %s: %s", metadataLocation, viewReason(err))
	}
	uuid := strings.ToLower(md.UUID)
	if !isUUID(uuid) {
		return nil, "", refuse(ErrInvalid, "view metadata file %s: view-uuid %q is not a UUID", metadataLocation, md.UUID)
	}
	_, err = c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		sc, err := c.LiveSchema(ctx, tx, ns, NoSuchNamespace(ns))
		if err != nil {
			return ducklake.Edit{}, err
		}
		if err := c.NameClash(ctx, tx, sc.ID, ns, name, ducklake.ObjectView); err != nil {
			return ducklake.Edit{}, err
		}
		// As for tables: a view's UUID is its identity, so one view's
		// metadata file makes one live view.
		switch other, found, err := c.cat.ViewByUUID(ctx, tx, uuid); {
		case err != nil:
			return ducklake.Edit{}, err
		case found:
			return ducklake.Edit{}, refuse(ErrAlreadyExists,
				"View already exists: the view of metadata file %s (UUID %s) is registered as %s", metadataLocation, uuid, other)
		}
		def := duckLakeDef(md)
		// The file registered is the view's current metadata file; the
		// next one the catalog writes continues its numbering.
		side, err := viewSidecar(loc, md, metadataFileNumber(loc), def.SQL)
		if err != nil {
			return ducklake.Edit{}, err
		}
		_, ed, err := c.cat.CreateView(ctx, tx, head, next, ducklake.NewView{Schema: sc, Name: name, UUID: uuid, ViewDef: def, Metadata: side})
		return ed, err
	})
	if err != nil {
		return nil, "", err
	}
	return md, loc, nil
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
