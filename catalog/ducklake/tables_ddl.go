package ducklake

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// LiveTable finds table name of schema schemaID that exists now, its Path
// resolved against schemaPath (the schema's, resolved); an error wrapping
// ErrNotFound when there is none.
func (c *Catalog) LiveTable(ctx context.Context, q Querier, schemaID int64, schemaPath, name string) (Table, error) {
	var t Table
	var uuid *string
	err := q.QueryRow(ctx, `SELECT table_id, table_uuid::text, begin_snapshot, coalesce(path, ''), coalesce(path_is_relative, true) FROM `+c.t("ducklake_table")+`
		WHERE schema_id = $1 AND table_name = $2 AND end_snapshot IS NULL`, schemaID, name).Scan(&t.ID, &uuid, &t.Begin, &t.RawPath, &t.PathIsRelative)
	switch {
	case isNoRows(err):
		return Table{}, notFound(ObjectTable, name)
	case err != nil:
		return Table{}, fmt.Errorf("look up table %q: %w", name, err)
	}
	t.UUID, t.SchemaID, t.Name = deref(uuid), schemaID, name
	t.Path = resolvePath(schemaPath, t.RawPath, t.PathIsRelative)
	return t, nil
}

// droppedWithTable lists the rows DuckDB's DROP TABLE ends, by the column
// holding the table id: the DuckLake specification's list.
var droppedWithTable = []endedRows{
	{"ducklake_table", "table_id"},
	{"ducklake_partition_info", "table_id"},
	{"ducklake_column", "table_id"},
	{"ducklake_column_tag", "table_id"},
	{"ducklake_data_file", "table_id"},
	{"ducklake_delete_file", "table_id"},
	{"ducklake_tag", "object_id"},
}

// DropTable ends live table t's rows at snapshot next as DuckDB's DROP
// TABLE does: the table, its partition info, columns, column tags, data
// and delete files, tags. What else keeps per-table state (statistics) is
// the caller's to drop in the same transaction.
func (c *Catalog) DropTable(ctx context.Context, tx pgx.Tx, next int64, t Table) (Edit, error) {
	if err := c.endObject(ctx, tx, next, t.ID, droppedWithTable); err != nil {
		return Edit{}, fmt.Errorf("drop table %q: %w", t.Name, err)
	}
	return Edit{Changes: fmt.Sprintf("dropped_table:%d", t.ID)}, nil
}

// RenameTable renames live table t of schema schema to to at snapshot
// next, as DuckDB's ALTER TABLE … RENAME TO does: the row ends and one
// with the same id, UUID and path begins, the schema version goes up
// (head's plus one, with a ducklake_schema_versions row for the table),
// and the change is logged as created_table:"schema"."to", DuckDB's own
// notation for a rename. The table stays in its schema.
func (c *Catalog) RenameTable(ctx context.Context, tx pgx.Tx, head Head, next int64, schema string, t Table, to string) (Edit, error) {
	if err := c.endRows(ctx, tx, next, "ducklake_table", "table_id", t.ID); err != nil {
		return Edit{}, fmt.Errorf("rename table: end %q: %w", t.Name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_table")+` (table_id, table_uuid, begin_snapshot, end_snapshot, schema_id, table_name, path, path_is_relative)
		SELECT table_id, table_uuid, $1, NULL, schema_id, $3, path, path_is_relative FROM `+c.t("ducklake_table")+`
		WHERE table_id = $2 AND end_snapshot = $1`, next, t.ID, to); err != nil {
		return Edit{}, fmt.Errorf("rename table: insert %q: %w", to, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_schema_versions")+` (begin_snapshot, schema_version, table_id) VALUES ($1, $2, $3)`,
		next, head.SchemaVersion+1, t.ID); err != nil {
		return Edit{}, fmt.Errorf("rename table: schema version: %w", err)
	}
	return Edit{Changes: "created_table:" + QuoteName(schema) + "." + QuoteName(to)}, nil
}

// TablePath is where a live table's files live.
type TablePath struct {
	Schema, Name string
	// Path is resolved: data path, schema path, table path.
	Path string
}

// LiveTablePaths lists where the files of every live table but table
// except live: the tables a purge of except's directory must not touch.
func (c *Catalog) LiveTablePaths(ctx context.Context, q Querier, except int64) ([]TablePath, error) {
	return Collect(ctx, q, "read table paths", `SELECT t.table_name, s.schema_name, coalesce(t.path, ''), coalesce(t.path_is_relative, true),
			coalesce(s.path, ''), coalesce(s.path_is_relative, true)
		FROM `+c.t("ducklake_table")+` t JOIN `+c.t("ducklake_schema")+` s USING (schema_id)
		WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL AND t.table_id <> $1`, []any{except}, func(row pgx.CollectableRow) (TablePath, error) {
		var (
			p            TablePath
			tpath, spath string
			trel, srel   bool
		)
		err := row.Scan(&p.Name, &p.Schema, &tpath, &trel, &spath, &srel)
		p.Path = resolvePath(resolvePath(c.dataPath, spath, srel), tpath, trel)
		return p, err
	})
}

// TableNames lists the names of the tables of schema schemaID visible at
// snapshot snap, in no particular order.
func (c *Catalog) TableNames(ctx context.Context, q Querier, snap, schemaID int64) ([]string, error) {
	return Collect(ctx, q, "read tables", `SELECT table_name FROM `+c.t("ducklake_table")+` WHERE `+visible("")+` AND schema_id = $2`,
		[]any{snap, schemaID}, pgx.RowTo[string])
}
