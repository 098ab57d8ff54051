package commit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A table with inlined rows keeps them in one Postgres table per schema
// version (ducklake_inlined_data_<table id>_<schema version>), and DuckDB
// writes new inlined rows into the table's newest one. DuckDB's own ALTER
// creates the new version's table in the same transaction; a schema change
// committed here must too, or DuckDB's next INSERT goes into the previous
// version's table with the new columns and fails ("INSERT has more
// expressions than target columns") — or, after a drop, puts values under
// the wrong columns.

// inlinedTable creates the inlined-data table of the snapshot's new schema
// version for table tableID, with the table's top-level columns as they
// stand in tx, when the table already has inlined data tables. A table
// that never had inlined rows gets one from DuckDB at its first inlined
// INSERT, as DuckDB does after its own ALTER.
func (c *Catalog) inlinedTable(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64) error {
	var has bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+c.t("ducklake_inlined_data_tables")+` WHERE table_id = $1)`,
		tableID).Scan(&has); err != nil {
		return fmt.Errorf("inlined data tables: %w", err)
	}
	version := snap.NewSchemaVersion()
	name := "ducklake_inlined_data_" + strconv.FormatInt(tableID, 10) + "_" + strconv.FormatInt(version, 10)
	if !has {
		return nil
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+c.t("ducklake_inlined_data_tables")+` WHERE table_name = $1)`,
		name).Scan(&exists); err != nil || exists {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT column_name, column_type FROM `+c.t("ducklake_column")+`
		WHERE table_id = $1 AND end_snapshot IS NULL AND parent_column IS NULL ORDER BY column_order`, tableID)
	if err != nil {
		return fmt.Errorf("inlined data table columns: %w", err)
	}
	var cols []string
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			rows.Close()
			return fmt.Errorf("inlined data table columns: %w", err)
		}
		pg, err := inlinedType(typ)
		if err != nil {
			rows.Close()
			return fmt.Errorf("column %s: %w", col, err)
		}
		cols = append(cols, pgx.Identifier{col}.Sanitize()+" "+pg)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("inlined data table columns: %w", err)
	}
	ddl := `CREATE TABLE ` + c.t(pgx.Identifier{name}.Sanitize()) + ` (row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT`
	for _, col := range cols {
		ddl += ", " + col
	}
	if _, err := tx.Exec(ctx, ddl+")"); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_inlined_data_tables")+` (table_id, table_name, schema_version) VALUES ($1, $2, $3)`,
		tableID, name, version); err != nil {
		return fmt.Errorf("record %s: %w", name, err)
	}
	return nil
}

// inlinedType is the Postgres type DuckDB's ducklake extension (1.5)
// stores a DuckLake column type as in an inlined data table: read off the
// tables DuckDB itself creates (TestInlinedTypesMatchDuckDB). A type not
// listed is refused rather than guessed: a wrong type would make DuckDB
// misread or refuse the table's rows.
func inlinedType(t string) (string, error) {
	switch {
	case t == "boolean":
		return "BOOLEAN", nil
	case t == "int8", t == "int16":
		return "SMALLINT", nil
	case t == "int32", t == "uint8", t == "uint16":
		return "INTEGER", nil
	case t == "int64", t == "uint32":
		return "BIGINT", nil
	case t == "float32":
		return "REAL", nil
	case t == "float64":
		return "DOUBLE PRECISION", nil
	case strings.HasPrefix(t, "decimal("):
		return "NUMERIC", nil
	case t == "time":
		return "TIME", nil
	case t == "uuid":
		return "UUID", nil
	case t == "interval":
		return "INTERVAL", nil
	case t == "varchar", t == "blob", t == "json":
		return "BYTEA", nil
	case t == "uint64", t == "int128", t == "date", t == "timestamp", t == "timestamptz", t == "timestamp_ns",
		t == "timestamp_us", t == "timestamp_ms", t == "timestamp_s", t == "struct", t == "list", t == "map":
		return "VARCHAR", nil
	}
	return "", fmt.Errorf("%w: a column of type %s in a table with inlined rows (flush them first: CALL ducklake_flush_inlined_data)", ErrUnsupported, t)
}
