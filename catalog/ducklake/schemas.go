package ducklake

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// namespacePropertyTable holds Iceberg namespace properties by DuckLake
// schema id: DuckLake has no place for them.
const namespacePropertyTable = "duckicelake_namespace_property"

const schemaCols = `schema_id, coalesce(schema_uuid::text, ''), begin_snapshot, end_snapshot,
	schema_name, coalesce(path, ''), coalesce(path_is_relative, true)`

func (c *Catalog) scanSchema(row pgx.Row) (Schema, error) {
	var s Schema
	var e *int64
	err := row.Scan(&s.ID, &s.UUID, &s.Begin, &e, &s.Name, &s.RawPath, &s.PathIsRelative)
	s.End = end(e)
	s.Path = resolvePath(c.dataPath, s.RawPath, s.PathIsRelative)
	return s, err
}

// SchemasAt lists the schemas visible at snapshot snap, by name; with name
// set, only that one (none when it does not exist then).
func (c *Catalog) SchemasAt(ctx context.Context, q Querier, snap int64, name string) ([]Schema, error) {
	sql := `SELECT ` + schemaCols + ` FROM ` + c.t("ducklake_schema") + ` WHERE ` + visible("")
	args := []any{snap}
	if name != "" {
		sql += ` AND schema_name = $2`
		args = append(args, name)
	}
	return Collect(ctx, q, "read schemas", sql+` ORDER BY schema_name`, args, func(row pgx.CollectableRow) (Schema, error) { return c.scanSchema(row) })
}

// LiveSchemaNames lists the names of the schemas that exist now, in no
// particular order.
func (c *Catalog) LiveSchemaNames(ctx context.Context, q Querier) ([]string, error) {
	return Collect(ctx, q, "list schemas", `SELECT schema_name FROM `+c.t("ducklake_schema")+` WHERE end_snapshot IS NULL`, nil, pgx.RowTo[string])
}

// LiveSchema finds the schema called name that exists now (end_snapshot
// IS NULL); an error wrapping ErrNotFound when there is none. Within a
// change's transaction it is what the change builds on.
func (c *Catalog) LiveSchema(ctx context.Context, q Querier, name string) (Schema, error) {
	s, err := c.scanSchema(q.QueryRow(ctx, `SELECT `+schemaCols+` FROM `+c.t("ducklake_schema")+`
		WHERE schema_name = $1 AND end_snapshot IS NULL`, name))
	switch {
	case isNoRows(err):
		return Schema{}, notFound(ObjectSchema, name)
	case err != nil:
		return Schema{}, fmt.Errorf("look up schema %q: %w", name, err)
	}
	return s, nil
}

// NewSchema is a schema to create.
type NewSchema struct {
	Name string
	// Path is its path as stored: relative to the data path when
	// PathIsRelative, else an absolute URI. It ends in "/".
	Path           string
	PathIsRelative bool
	// Properties are its Iceberg namespace properties (the sidecar).
	Properties map[string]string
}

// CreateSchema adds schema ns at snapshot next with the next catalog id of
// head, as DuckDB's CREATE SCHEMA does, and its properties; an
// *ExistsError when a live schema has the name.
func (c *Catalog) CreateSchema(ctx context.Context, tx pgx.Tx, head Head, next int64, ns NewSchema) (Edit, error) {
	if _, err := c.LiveSchema(ctx, tx, ns.Name); err == nil {
		return Edit{}, &ExistsError{Kind: ObjectSchema, Name: ns.Name}
	} else if !errors.Is(err, ErrNotFound) {
		return Edit{}, err
	}
	id := head.NextCatalogID
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_schema")+` (schema_id, schema_uuid, begin_snapshot, end_snapshot, schema_name, path, path_is_relative)
		VALUES ($1, gen_random_uuid(), $2, NULL, $3, $4, $5)`, id, next, ns.Name, ns.Path, ns.PathIsRelative); err != nil {
		return Edit{}, fmt.Errorf("insert schema %q: %w", ns.Name, err)
	}
	// A schema id that an earlier, failed catalog reused must not inherit
	// properties.
	if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(namespacePropertyTable)+` WHERE schema_id = $1`, id); err != nil {
		return Edit{}, fmt.Errorf("clear namespace properties: %w", err)
	}
	for k, v := range ns.Properties {
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(namespacePropertyTable)+` (schema_id, key, value) VALUES ($1, $2, $3)`, id, k, v); err != nil {
			return Edit{}, fmt.Errorf("insert namespace property: %w", err)
		}
	}
	return Edit{Changes: "created_schema:" + QuoteName(ns.Name), CatalogIDs: 1}, nil
}

// DropSchema ends schema name and its tags at snapshot next, as DuckDB's
// DROP SCHEMA does, and forgets its properties: an error wrapping
// ErrNotFound when it does not exist, a *NotEmptyError while tables, views
// or macros live in it.
func (c *Catalog) DropSchema(ctx context.Context, tx pgx.Tx, next int64, name string) (Edit, error) {
	sc, err := c.LiveSchema(ctx, tx, name)
	if err != nil {
		return Edit{}, err
	}
	ne := NotEmptyError{Schema: name}
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+c.t("ducklake_table")+` WHERE schema_id = $1 AND end_snapshot IS NULL),
		(SELECT count(*) FROM `+c.t("ducklake_view")+` WHERE schema_id = $1 AND end_snapshot IS NULL),
		(SELECT count(*) FROM `+c.t("ducklake_macro")+` WHERE schema_id = $1 AND end_snapshot IS NULL)`, sc.ID).Scan(&ne.Tables, &ne.Views, &ne.Macros); err != nil {
		return Edit{}, fmt.Errorf("count the tables of %q: %w", name, err)
	}
	if ne.Tables+ne.Views+ne.Macros > 0 {
		return Edit{}, &ne
	}
	if err := c.endObject(ctx, tx, next, sc.ID, []endedRows{{"ducklake_schema", "schema_id"}, {"ducklake_tag", "object_id"}}); err != nil {
		return Edit{}, fmt.Errorf("drop schema %q: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(namespacePropertyTable)+` WHERE schema_id = $1`, sc.ID); err != nil {
		return Edit{}, fmt.Errorf("drop namespace properties: %w", err)
	}
	return Edit{Changes: fmt.Sprintf("dropped_schema:%d", sc.ID)}, nil
}

// SchemaProperties reads the Iceberg namespace properties of schema
// schemaID.
func (c *Catalog) SchemaProperties(ctx context.Context, q Querier, schemaID int64) (map[string]string, error) {
	props := map[string]string{}
	var k, v string
	if err := Each(ctx, q, "read namespace properties", `SELECT key, value FROM `+c.t(namespacePropertyTable)+` WHERE schema_id = $1`,
		[]any{schemaID}, []any{&k, &v}, func() error { props[k] = v; return nil }); err != nil {
		return nil, err
	}
	return props, nil
}

// PropertyChanges is what SetSchemaProperties did, each list sorted.
type PropertyChanges struct {
	Updated, Removed, Missing []string
}

// SetSchemaProperties removes and sets Iceberg namespace properties of
// live schema name in one transaction of its own. Properties are not
// DuckLake state, so no snapshot is made; the schema's row is locked so
// that a concurrent drop waits (or is seen). An error wrapping ErrNotFound
// when the schema does not exist. A key both removed and updated ends up
// updated; callers refuse that first.
func (c *Catalog) SetSchemaProperties(ctx context.Context, db TxBeginner, name string, removals []string, updates map[string]string) (PropertyChanges, error) {
	out := PropertyChanges{Updated: []string{}, Removed: []string{}}
	tx, err := db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return out, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	sc, err := c.LiveSchema(ctx, tx, name)
	if err != nil {
		return out, err
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+c.t("ducklake_schema")+` WHERE schema_id = $1 AND end_snapshot IS NULL FOR SHARE`, sc.ID); err != nil {
		return out, fmt.Errorf("lock schema: %w", err)
	}
	removals = slices.Clone(removals)
	slices.Sort(removals)
	for _, k := range slices.Compact(removals) {
		tag, err := tx.Exec(ctx, `DELETE FROM `+c.t(namespacePropertyTable)+` WHERE schema_id = $1 AND key = $2`, sc.ID, k)
		if err != nil {
			return out, fmt.Errorf("remove namespace property: %w", err)
		}
		if tag.RowsAffected() > 0 {
			out.Removed = append(out.Removed, k)
		} else {
			out.Missing = append(out.Missing, k)
		}
	}
	for k, v := range updates {
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(namespacePropertyTable)+` (schema_id, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (schema_id, key) DO UPDATE SET value = excluded.value`, sc.ID, k, v); err != nil {
			return out, fmt.Errorf("update namespace property: %w", err)
		}
		out.Updated = append(out.Updated, k)
	}
	slices.Sort(out.Updated)
	if err := tx.Commit(ctx); err != nil {
		return out, fmt.Errorf("commit namespace properties: %w", err)
	}
	return out, nil
}
