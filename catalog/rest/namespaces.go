package rest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
)

// propLocation is the namespace property that reports (and, at creation,
// sets) the DuckLake schema's path. It is not stored as a property.
const propLocation = "location"

type namespaceBody struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

type listNamespacesBody struct {
	NextPageToken *string    `json:"next-page-token"`
	Namespaces    [][]string `json:"namespaces"`
}

type updatePropertiesRequest struct {
	Removals []string          `json:"removals"`
	Updates  map[string]string `json:"updates"`
}

type updatePropertiesBody struct {
	Updated []string `json:"updated"`
	Removed []string `json:"removed"`
	Missing []string `json:"missing"`
}

// schemaAt is a schema: its id, name and resolved path (ducklake.Schema).
type schemaAt = ducklake.Schema

// schemas lists the schemas visible at snap, by name; with name set, only
// that one.
func (s *Server) schemas(ctx context.Context, snap int64, name string) ([]schemaAt, error) {
	return s.cat.SchemasAt(ctx, s.db, snap, name)
}

// schemaNow is the current snapshot and the namespace name as of it
// (NoSuchNamespace when it does not exist).
func (s *Server) schemaNow(ctx context.Context, name string) (int64, schemaAt, error) {
	snap, err := s.currentSnapshot(ctx)
	if err != nil {
		return 0, schemaAt{}, err
	}
	sc, err := s.schemaNamed(ctx, snap, name)
	return snap, sc, err
}

// schemaNamed finds schema name at snap, or answers NoSuchNamespace.
func (s *Server) schemaNamed(ctx context.Context, snap int64, name string) (schemaAt, error) {
	scs, err := s.schemas(ctx, snap, name)
	if err != nil {
		return schemaAt{}, err
	}
	if len(scs) == 0 {
		return schemaAt{}, noSuchNamespace(name)
	}
	return scs[0], nil
}

func (s *Server) listNamespaces(r *request) error {
	args := r.rc.QueryArgs()
	snap, err := s.currentSnapshot(r.ctx)
	if err != nil {
		return err
	}
	if parent := args.Peek("parent"); len(parent) > 0 {
		// One level: a namespace has no children, but an unknown parent is
		// still a 404.
		ns, err := unescapeQuery(parent)
		if err != nil {
			return err
		}
		if levels, ok := multiLevelNamespace([]string{ns}); ok {
			return noSuchNamespace(strings.Join(levels, "."))
		}
		if err := checkNamespace([]string{ns}); err != nil {
			return err
		}
		if err := s.authorizeScope(r, governance.ActionListNamespaces, ns); err != nil {
			return err
		}
		if _, err := s.schemaNamed(r.ctx, snap, ns); err != nil {
			return err
		}
		return writeJSON(r.rc, listNamespacesBody{Namespaces: [][]string{}})
	}
	scs, err := s.schemas(r.ctx, snap, "")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(scs))
	for _, sc := range scs {
		// Only what the caller may read: a namespace's existence is not a
		// secret worth a 403, but its name may be.
		if s.allowsScope(r, governance.ActionLoadNamespace, sc.Name) {
			names = append(names, sc.Name)
		}
	}
	slices.Sort(names)
	page, next, err := paginate(names, args)
	if err != nil {
		return err
	}
	out := listNamespacesBody{NextPageToken: next, Namespaces: make([][]string, len(page))}
	for i, n := range page {
		out.Namespaces[i] = []string{n}
	}
	return writeJSON(r.rc, out)
}

// unescapeQuery is for query values, which fasthttp has already decoded.
func unescapeQuery(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", badRequest("namespace is not valid UTF-8")
	}
	return string(b), nil
}

func (s *Server) loadNamespace(r *request) error {
	_, sc, err := s.schemaNow(r.ctx, r.ns)
	if err != nil {
		return err
	}
	props, err := s.namespaceProperties(r.ctx, sc)
	if err != nil {
		return err
	}
	return writeJSON(r.rc, namespaceBody{Namespace: []string{sc.Name}, Properties: props})
}

func (s *Server) namespaceProperties(ctx context.Context, sc schemaAt) (map[string]string, error) {
	props, err := s.cat.SchemaProperties(ctx, s.db, sc.ID)
	if err != nil {
		return nil, err
	}
	props[propLocation] = sc.Path
	return props, nil
}

func (s *Server) namespaceExists(r *request) error {
	if _, _, err := s.schemaNow(r.ctx, r.ns); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// checkName validates a new schema or table name. DuckLake accepts any
// string; these rules keep names usable as path segments of the data path
// and in Iceberg identifiers.
func checkName(kind, name string) error {
	switch {
	case name == "":
		return badRequest("empty %s name", kind)
	case len(name) > 1024:
		return badRequest("%s name is %d bytes, at most 1024", kind, len(name))
	case !utf8.ValidString(name):
		return badRequest("%s name is not valid UTF-8", kind)
	case name == "." || name == "..":
		return badRequest("%s name %q is not allowed", kind, name)
	case strings.ContainsRune(name, '/'):
		return badRequest("%s name %q contains '/', which would nest its data path", kind, name)
	case governance.IsMaskedName(name):
		return badRequest("%s name %q: names starting with %q are reserved for governance's masking views", kind, name, governance.MaskedNamePrefix)
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return badRequest("%s name %q contains a control character", kind, name)
		}
	}
	return nil
}

func (s *Server) createNamespace(r *request) error {
	var req namespaceBody
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if req.Namespace == nil {
		return badRequest("missing namespace")
	}
	if err := checkNamespace(req.Namespace); err != nil {
		return err
	}
	name := req.Namespace[0]
	if err := checkName("namespace", name); err != nil {
		return err
	}
	if err := checkProperties(req.Properties, nil); err != nil {
		return err
	}
	path, relative := name+"/", true
	if loc, ok := req.Properties[propLocation]; ok {
		if !strings.Contains(loc, "://") {
			return badRequest("location %q must be an absolute URI such as s3://bucket/path/", loc)
		}
		path, relative = strings.TrimRight(loc, "/")+"/", false
	}
	stored := make(map[string]string, len(req.Properties))
	for k, v := range req.Properties {
		if k != propLocation {
			stored[k] = v
		}
	}
	_, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		ed, err := s.cat.CreateSchema(ctx, tx, cur, next, ducklake.NewSchema{Name: name, Path: path, PathIsRelative: relative, Properties: stored})
		if ee := (*ducklake.ExistsError)(nil); errors.As(err, &ee) {
			return change{}, errorf(fasthttp.StatusConflict, TypeAlreadyExists, "Namespace already exists: %s", name)
		}
		return ed, err
	})
	if err != nil {
		return err
	}
	props := map[string]string{}
	for k, v := range req.Properties {
		props[k] = v
	}
	if relative {
		props[propLocation] = s.dataPath + path
	} else {
		props[propLocation] = path
	}
	return writeJSON(r.rc, namespaceBody{Namespace: []string{name}, Properties: props})
}

// defaultSchema is the schema every DuckLake catalog starts with; DuckDB
// resolves unqualified names in it, so it is never dropped from here.
const defaultSchema = "main"

func (s *Server) dropNamespace(r *request) error {
	if r.ns == defaultSchema {
		return badRequest("namespace %q is the DuckLake catalog's default schema and cannot be dropped", defaultSchema)
	}
	_, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, _ snapshotRow, next int64) (change, error) {
		ed, err := s.cat.DropSchema(ctx, tx, next, r.ns)
		var ne *ducklake.NotEmptyError
		switch {
		case errors.Is(err, ducklake.ErrNotFound):
			return change{}, noSuchNamespace(r.ns)
		case errors.As(err, &ne):
			return change{}, errorf(fasthttp.StatusConflict, TypeNamespaceNotEmpty,
				"Namespace %s is not empty: %d tables, %d views, %d macros", r.ns, ne.Tables, ne.Views, ne.Macros)
		}
		return ed, err
	})
	if err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// updateProperties changes the sidecar only: properties are not DuckLake
// state, so no snapshot is made.
func (s *Server) updateProperties(r *request) error {
	var req updatePropertiesRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if err := checkProperties(req.Updates, req.Removals); err != nil {
		return err
	}
	for _, k := range req.Removals {
		if _, ok := req.Updates[k]; ok {
			return errorf(fasthttp.StatusUnprocessableEntity, TypeUnprocessableEntity,
				"property %q is both updated and removed", k)
		}
	}
	if _, ok := req.Updates[propLocation]; ok || slices.Contains(req.Removals, propLocation) {
		return unsupported("the %q property is the DuckLake schema's path and cannot change", propLocation)
	}
	ch, err := s.cat.SetSchemaProperties(r.ctx, s.db, r.ns, req.Removals, req.Updates)
	if errors.Is(err, ducklake.ErrNotFound) {
		return noSuchNamespace(r.ns)
	}
	if err != nil {
		return err
	}
	return writeJSON(r.rc, updatePropertiesBody{Updated: ch.Updated, Removed: ch.Removed, Missing: ch.Missing})
}

// checkProperties refuses property keys and values Postgres text cannot
// hold: a NUL byte, or bytes that are not UTF-8 (a 400, not the 500 the
// insert would fail with).
func checkProperties(props map[string]string, keys []string) error {
	for k, v := range props {
		if err := checkPropertyText(k, v); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if err := checkPropertyText(k, ""); err != nil {
			return err
		}
	}
	return nil
}

func checkPropertyText(k, v string) error {
	for _, t := range [...]string{k, v} {
		if strings.IndexByte(t, 0) >= 0 || !utf8.ValidString(t) {
			return badRequest("property %q: keys and values must be UTF-8 text without NUL bytes", k)
		}
	}
	return nil
}
