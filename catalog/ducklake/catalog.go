package ducklake

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Catalog holds the statements that read and change the catalog's objects
// — schemas, tables, views, their tags — and the sidecar rows that belong
// to them (Iceberg namespace properties, Iceberg view metadata), as DuckDB
// reads and writes them. It runs them on the connection or transaction
// each call is given: reads on any Querier (a pgx.Tx for a consistent
// view), changes on the transaction of a Writer.Commit, taking the
// snapshot being made (next) and returning the Edit it records. The
// snapshot protocol itself stays in Writer. Catalog holds no state besides
// names, so one serves any number of goroutines.
type Catalog struct {
	schema   string // quoted Postgres schema
	dataPath string
}

// NewCatalog runs its statements on the catalog in Postgres schema schema
// ("" = DefaultSchema) whose data path (ducklake_metadata's data_path) is
// dataPath; relative paths resolve against it.
func NewCatalog(schema, dataPath string) *Catalog {
	if schema == "" {
		schema = DefaultSchema
	}
	return &Catalog{schema: pgx.Identifier{schema}.Sanitize(), dataPath: dataPath}
}

// t qualifies a catalog table name.
func (c *Catalog) t(name string) string { return c.schema + "." + name }

// Object is a kind of catalog object.
type Object uint8

const (
	// ObjectSchema is a ducklake_schema row.
	ObjectSchema Object = iota + 1
	// ObjectTable is a ducklake_table row.
	ObjectTable
	// ObjectView is a ducklake_view row.
	ObjectView
)

func (o Object) String() string {
	switch o {
	case ObjectSchema:
		return "schema"
	case ObjectTable:
		return "table"
	case ObjectView:
		return "view"
	}
	return fmt.Sprintf("object(%d)", uint8(o))
}

// ExistsError reports a change refused because a live object already has
// the name it needs. Tables and views share one namespace of names, as in
// DuckDB, so Kind may differ from the kind being made.
type ExistsError struct {
	Kind   Object // what holds the name
	Schema string // the schema holding it ("" for a schema)
	Name   string
}

func (e *ExistsError) Error() string {
	if e.Schema == "" {
		return fmt.Sprintf("%s %s already exists", e.Kind, e.Name)
	}
	return fmt.Sprintf("%s %s.%s already exists", e.Kind, e.Schema, e.Name)
}

// NotEmptyError reports a schema that cannot be dropped: live objects are
// still in it.
type NotEmptyError struct {
	Schema                string
	Tables, Views, Macros int
}

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("schema %s is not empty: %d tables, %d views, %d macros", e.Schema, e.Tables, e.Views, e.Macros)
}

// notFound wraps ErrNotFound for a live object of kind o called name.
func notFound(o Object, name string) error {
	return fmt.Errorf("%s %s: %w", o, name, ErrNotFound)
}

// endRows ends the live rows of table whose idColumn is id at snapshot
// next, as DuckDB's DROP does.
func (c *Catalog) endRows(ctx context.Context, tx pgx.Tx, next int64, table, idColumn string, id int64) error {
	if _, err := tx.Exec(ctx, `UPDATE `+c.t(table)+` SET end_snapshot = $1 WHERE `+idColumn+` = $2 AND end_snapshot IS NULL`, next, id); err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	return nil
}

// endedRows names rows that end with an object: a table and its column
// holding the object's id.
type endedRows struct{ table, idColumn string }

// endObject ends, at snapshot next, the live rows of object id in each of
// rows, as DuckDB's DROP does.
func (c *Catalog) endObject(ctx context.Context, tx pgx.Tx, next, id int64, rows []endedRows) error {
	for _, u := range rows {
		if err := c.endRows(ctx, tx, next, u.table, u.idColumn, id); err != nil {
			return err
		}
	}
	return nil
}

// NameKind says whether schema schemaID has a live table or view called
// name (0: neither).
func (c *Catalog) NameKind(ctx context.Context, q Querier, schemaID int64, name string) (Object, error) {
	var table, view bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+c.t("ducklake_table")+` WHERE schema_id = $1 AND table_name = $2 AND end_snapshot IS NULL),
		EXISTS (SELECT 1 FROM `+c.t("ducklake_view")+` WHERE schema_id = $1 AND view_name = $2 AND end_snapshot IS NULL)`,
		schemaID, name).Scan(&table, &view)
	switch {
	case err != nil:
		return 0, fmt.Errorf("look up %q: %w", name, err)
	case table:
		return ObjectTable, nil
	case view:
		return ObjectView, nil
	}
	return 0, nil
}

// isNoRows is pgx's "the query returned no row".
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// TablesFlagged says which of tables ids have table property key set to
// true (case and surrounding spaces aside) in the sidecar
// duckicelake_table_property, in one query.
func (c *Catalog) TablesFlagged(ctx context.Context, q Querier, ids []int64, key string) (map[int64]bool, error) {
	rows, err := q.Query(ctx, `SELECT table_id FROM `+c.t("duckicelake_table_property")+` WHERE table_id = ANY($1) AND key = $2 AND lower(trim(value)) = 'true'`, ids, key)
	if err != nil {
		return nil, fmt.Errorf("read table property %s: %w", key, err)
	}
	on, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read table property %s: %w", key, err)
	}
	out := make(map[int64]bool, len(on))
	for _, id := range on {
		out[id] = true
	}
	return out, nil
}
