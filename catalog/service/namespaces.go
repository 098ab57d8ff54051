package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
)

// PropLocation is the namespace property that reports (and, at creation,
// sets) the DuckLake schema's path. It is not stored as a property.
const PropLocation = "location"

// DefaultSchema is the schema every DuckLake catalog starts with; DuckDB
// resolves unqualified names in it, so it is never dropped from here.
const DefaultSchema = "main"

// Namespace is a namespace with its properties, the location among them.
type Namespace struct {
	Name       string
	Properties map[string]string
}

// Namespaces lists the namespaces visible at snapshot snap.
func (c *Catalog) Namespaces(ctx context.Context, snap int64) ([]ducklake.Schema, error) {
	return c.cat.SchemasAt(ctx, c.db, snap, "")
}

// NamespaceAt is namespace name as of snapshot snap (ErrNoSuchNamespace
// when it does not exist then).
func (c *Catalog) NamespaceAt(ctx context.Context, snap int64, name string) (ducklake.Schema, error) {
	scs, err := c.cat.SchemasAt(ctx, c.db, snap, name)
	if err != nil {
		return ducklake.Schema{}, err
	}
	if len(scs) == 0 {
		return ducklake.Schema{}, NoSuchNamespace(name)
	}
	return scs[0], nil
}

// Properties is namespace sc's properties, its location among them.
func (c *Catalog) Properties(ctx context.Context, sc ducklake.Schema) (map[string]string, error) {
	props, err := c.cat.SchemaProperties(ctx, c.db, sc.ID)
	if err != nil {
		return nil, err
	}
	props[PropLocation] = sc.Path
	return props, nil
}

// CreateNamespace creates namespace name by author with props; a location
// property, an absolute URI, sets its path (by default name/ under the
// data path). The answer is the namespace with its location.
func (c *Catalog) CreateNamespace(ctx context.Context, author, name string, props map[string]string) (Namespace, error) {
	if err := CheckName("namespace", name); err != nil {
		return Namespace{}, err
	}
	if err := CheckProperties(props, nil); err != nil {
		return Namespace{}, err
	}
	path, relative := name+"/", true
	if loc, ok := props[PropLocation]; ok {
		if !strings.Contains(loc, "://") {
			return Namespace{}, refuse(ErrInvalid, "location %q must be an absolute URI such as s3://bucket/path/", loc)
		}
		path, relative = strings.TrimRight(loc, "/")+"/", false
	}
	stored := make(map[string]string, len(props))
	for k, v := range props {
		if k != PropLocation {
			stored[k] = v
		}
	}
	_, err := c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		ed, err := c.cat.CreateSchema(ctx, tx, head, next, ducklake.NewSchema{Name: name, Path: path, PathIsRelative: relative, Properties: stored})
		if ee := (*ducklake.ExistsError)(nil); errors.As(err, &ee) {
			return ducklake.Edit{}, refuse(ErrAlreadyExists, "Namespace already exists: %s", name)
		}
		return ed, err
	})
	if err != nil {
		return Namespace{}, err
	}
	out := Namespace{Name: name, Properties: make(map[string]string, len(props)+1)}
	for k, v := range props {
		out.Properties[k] = v
	}
	if relative {
		path = c.dataPath + path
	}
	out.Properties[PropLocation] = path
	return out, nil
}

// DropNamespace drops empty namespace name by author.
func (c *Catalog) DropNamespace(ctx context.Context, author, name string) error {
	if name == DefaultSchema {
		return refuse(ErrInvalid, "namespace %q is the DuckLake catalog's default schema and cannot be dropped", DefaultSchema)
	}
	_, err := c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		ed, err := c.cat.DropSchema(ctx, tx, next, name)
		var ne *ducklake.NotEmptyError
		switch {
		case errors.Is(err, ducklake.ErrNotFound):
			return ducklake.Edit{}, NoSuchNamespace(name)
		case errors.As(err, &ne):
			return ducklake.Edit{}, refuse(ErrNotEmpty, "Namespace %s is not empty: %d tables, %d views, %d macros", name, ne.Tables, ne.Views, ne.Macros)
		}
		return ed, err
	})
	return err
}

// UpdateProperties removes and sets namespace name's properties. They are
// not DuckLake state, so no snapshot is made. A key both removed and
// updated is refused (ErrUnprocessable), and so is a change of the
// location (ErrUnsupported).
func (c *Catalog) UpdateProperties(ctx context.Context, name string, removals []string, updates map[string]string) (ducklake.PropertyChanges, error) {
	if err := CheckProperties(updates, removals); err != nil {
		return ducklake.PropertyChanges{}, err
	}
	for _, k := range removals {
		if _, ok := updates[k]; ok {
			return ducklake.PropertyChanges{}, refuse(ErrUnprocessable, "property %q is both updated and removed", k)
		}
	}
	if _, ok := updates[PropLocation]; ok || slices.Contains(removals, PropLocation) {
		return ducklake.PropertyChanges{}, refuse(ErrUnsupported, "the %q property is the DuckLake schema's path and cannot change", PropLocation)
	}
	ch, err := c.cat.SetSchemaProperties(ctx, c.db, name, removals, updates)
	if errors.Is(err, ducklake.ErrNotFound) {
		return ducklake.PropertyChanges{}, NoSuchNamespace(name)
	}
	return ch, err
}

// CheckName validates a new namespace, table or view name (kind names
// which). DuckLake accepts any string; these rules keep names usable as
// path segments of the data path and in Iceberg identifiers, and keep
// governance's masking-view names its own.
func CheckName(kind, name string) error {
	switch {
	case name == "":
		return refuse(ErrInvalid, "empty %s name", kind)
	case len(name) > 1024:
		return refuse(ErrInvalid, "%s name is %d bytes, at most 1024", kind, len(name))
	case !utf8.ValidString(name):
		return refuse(ErrInvalid, "%s name is not valid UTF-8", kind)
	case name == "." || name == "..":
		return refuse(ErrInvalid, "%s name %q is not allowed", kind, name)
	case strings.ContainsRune(name, '/'):
		return refuse(ErrInvalid, "%s name %q contains '/', which would nest its data path", kind, name)
	case governance.IsMaskedName(name):
		return refuse(ErrInvalid, "%s name %q: names starting with %q are reserved for governance's masking views", kind, name, governance.MaskedNamePrefix)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return refuse(ErrInvalid, "%s name %q contains a control character", kind, name)
		}
	}
	return nil
}

// CheckProperties refuses property keys and values Postgres text cannot
// hold: a NUL byte, or bytes that are not UTF-8 (ErrInvalid, rather than
// the failure the insert would end in).
func CheckProperties(props map[string]string, keys []string) error {
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
			return refuse(ErrInvalid, "property %q: keys and values must be UTF-8 text without NUL bytes", k)
		}
	}
	return nil
}
