package rest

import (
	"context"
	"fmt"
	"github.com/duckicelake/duckicelake/governance"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"
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

// schemaAt is a schema visible at a snapshot.
type schemaAt struct {
	ID   int64
	Name string
	Path string // resolved against the data path
}

// schemas lists the schemas visible at snap, by name; with name set, only
// that one.
func (s *Server) schemas(ctx context.Context, snap int64, name string) ([]schemaAt, error) {
	q := `SELECT schema_id, schema_name, coalesce(path, ''), coalesce(path_is_relative, true) FROM ` + s.t("ducklake_schema") + `
		WHERE begin_snapshot <= $1 AND (end_snapshot IS NULL OR end_snapshot > $1)`
	args := []any{snap}
	if name != "" {
		q += ` AND schema_name = $2`
		args = append(args, name)
	}
	rows, err := s.db.Query(ctx, q+` ORDER BY schema_name`, args...)
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (schemaAt, error) {
		var sc schemaAt
		var path string
		var rel bool
		err := row.Scan(&sc.ID, &sc.Name, &path, &rel)
		sc.Path = path
		if rel {
			sc.Path = s.dataPath + path
		}
		return sc, err
	})
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	return out, nil
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
	rows, err := s.db.Query(ctx, `SELECT key, value FROM `+s.t(namespacePropertyTable)+` WHERE schema_id = $1`, sc.ID)
	if err != nil {
		return nil, fmt.Errorf("read namespace properties: %w", err)
	}
	props := map[string]string{}
	var k, v string
	if _, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error { props[k] = v; return nil }); err != nil {
		return nil, fmt.Errorf("read namespace properties: %w", err)
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
	_, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		if _, exists, err := s.lookupSchema(ctx, tx, name); err != nil {
			return change{}, err
		} else if exists {
			return change{}, errorf(fasthttp.StatusConflict, TypeAlreadyExists, "Namespace already exists: %s", name)
		}
		id := cur.NextCatalogID
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t("ducklake_schema")+` (schema_id, schema_uuid, begin_snapshot, end_snapshot, schema_name, path, path_is_relative)
			VALUES ($1, gen_random_uuid(), $2, NULL, $3, $4, $5)`, id, next, name, path, relative); err != nil {
			return change{}, fmt.Errorf("insert schema %q: %w", name, err)
		}
		// A schema id that an earlier, failed catalog reused must not
		// inherit properties.
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.t(namespacePropertyTable)+` WHERE schema_id = $1`, id); err != nil {
			return change{}, fmt.Errorf("clear namespace properties: %w", err)
		}
		for k, v := range req.Properties {
			if k == propLocation {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+s.t(namespacePropertyTable)+` (schema_id, key, value) VALUES ($1, $2, $3)`, id, k, v); err != nil {
				return change{}, fmt.Errorf("insert namespace property: %w", err)
			}
		}
		return change{Changes: "created_schema:" + quoteName(name), CatalogIDs: 1}, nil
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
	_, err := s.commitDDL(r.ctx, r.p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		sc, exists, err := s.lookupSchema(ctx, tx, r.ns)
		if err != nil {
			return change{}, err
		}
		if !exists {
			return change{}, noSuchNamespace(r.ns)
		}
		var tables, views, macros int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+s.t("ducklake_table")+` WHERE schema_id = $1 AND end_snapshot IS NULL),
			(SELECT count(*) FROM `+s.t("ducklake_view")+` WHERE schema_id = $1 AND end_snapshot IS NULL),
			(SELECT count(*) FROM `+s.t("ducklake_macro")+` WHERE schema_id = $1 AND end_snapshot IS NULL)`, sc.ID).Scan(&tables, &views, &macros); err != nil {
			return change{}, fmt.Errorf("count the tables of %q: %w", r.ns, err)
		}
		if tables+views+macros > 0 {
			return change{}, errorf(fasthttp.StatusConflict, TypeNamespaceNotEmpty,
				"Namespace %s is not empty: %d tables, %d views, %d macros", r.ns, tables, views, macros)
		}
		if _, err := tx.Exec(ctx, `UPDATE `+s.t("ducklake_schema")+` SET end_snapshot = $1 WHERE schema_id = $2 AND end_snapshot IS NULL`, next, sc.ID); err != nil {
			return change{}, fmt.Errorf("drop schema %q: %w", r.ns, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE `+s.t("ducklake_tag")+` SET end_snapshot = $1 WHERE object_id = $2 AND end_snapshot IS NULL`, next, sc.ID); err != nil {
			return change{}, fmt.Errorf("drop schema %q tags: %w", r.ns, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.t(namespacePropertyTable)+` WHERE schema_id = $1`, sc.ID); err != nil {
			return change{}, fmt.Errorf("drop namespace properties: %w", err)
		}
		return change{Changes: fmt.Sprintf("dropped_schema:%d", sc.ID)}, nil
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
	tx, err := s.db.BeginTx(r.ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(r.ctx) //nolint:errcheck // a no-op after Commit
	sc, exists, err := s.lookupSchema(r.ctx, tx, r.ns)
	if err != nil {
		return err
	}
	if !exists {
		return noSuchNamespace(r.ns)
	}
	// Lock the schema's row so a concurrent drop waits for us (or we see it
	// gone).
	if _, err := tx.Exec(r.ctx, `SELECT 1 FROM `+s.t("ducklake_schema")+` WHERE schema_id = $1 AND end_snapshot IS NULL FOR SHARE`, sc.ID); err != nil {
		return fmt.Errorf("lock schema: %w", err)
	}
	out := updatePropertiesBody{Updated: []string{}, Removed: []string{}}
	removals := slices.Clone(req.Removals)
	slices.Sort(removals)
	removals = slices.Compact(removals)
	for _, k := range removals {
		tag, err := tx.Exec(r.ctx, `DELETE FROM `+s.t(namespacePropertyTable)+` WHERE schema_id = $1 AND key = $2`, sc.ID, k)
		if err != nil {
			return fmt.Errorf("remove namespace property: %w", err)
		}
		if tag.RowsAffected() > 0 {
			out.Removed = append(out.Removed, k)
		} else {
			out.Missing = append(out.Missing, k)
		}
	}
	for k, v := range req.Updates {
		if _, err := tx.Exec(r.ctx, `INSERT INTO `+s.t(namespacePropertyTable)+` (schema_id, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (schema_id, key) DO UPDATE SET value = excluded.value`, sc.ID, k, v); err != nil {
			return fmt.Errorf("update namespace property: %w", err)
		}
		out.Updated = append(out.Updated, k)
	}
	slices.Sort(out.Updated)
	if err := tx.Commit(r.ctx); err != nil {
		return fmt.Errorf("commit namespace properties: %w", err)
	}
	return writeJSON(r.rc, out)
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
