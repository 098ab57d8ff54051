package commit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/governance/govtest"
)

// TestInlinedTypesMatchDuckDB: for every type inlinedType knows, the
// Postgres type of the column DuckDB itself creates in an inlined data
// table is the one inlinedType gives.
func TestInlinedTypesMatchDuckDB(t *testing.T) {
	l := govtest.New(t, "CREATE SCHEMA lake.s",
		`CREATE TABLE lake.s.t (bo BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INTEGER, i64 BIGINT, u8 UTINYINT, u16 USMALLINT,
			u32 UINTEGER, u64 UBIGINT, h HUGEINT, f FLOAT, d DOUBLE, dec DECIMAL(10,2), dec2 DECIMAL(38,6), dt DATE, tm TIME,
			ts TIMESTAMP, tsz TIMESTAMPTZ, tsns TIMESTAMP_NS, tsms TIMESTAMP_MS, tss TIMESTAMP_S, v VARCHAR, u UUID, bl BLOB,
			js JSON, iv INTERVAL, st STRUCT(x INTEGER, y VARCHAR), li INTEGER[], mp MAP(VARCHAR, INTEGER))`,
		"INSERT INTO lake.s.t (bo) VALUES (true)")
	ctx := context.Background()
	rows, err := l.Pool.Query(ctx, `SELECT c.column_name, c.column_type, upper(i.data_type)
		FROM ducklake_column c JOIN ducklake_inlined_data_tables d ON d.table_id = c.table_id
		JOIN information_schema.columns i ON i.table_name = d.table_name AND i.column_name = c.column_name
		WHERE c.parent_column IS NULL ORDER BY c.column_order`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var col, typ, pg string
		if err := rows.Scan(&col, &typ, &pg); err != nil {
			t.Fatal(err)
		}
		got, err := inlinedType(typ)
		if err != nil {
			t.Errorf("%s %s: %v", col, typ, err)
			continue
		}
		if want := map[string]string{"CHARACTER VARYING": "VARCHAR", "TIME WITHOUT TIME ZONE": "TIME"}[pg]; want != "" {
			pg = want
		}
		if got != pg {
			t.Errorf("%s (%s): inlinedType says %s, DuckDB made %s", col, typ, got, pg)
		}
		n++
	}
	if n != 29 {
		t.Fatalf("compared %d columns, want 29 (did DuckDB inline the row?)", n)
	}
	if _, err := inlinedType("geometry"); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "flush") {
		t.Errorf("an unknown type: %v", err)
	}
}
