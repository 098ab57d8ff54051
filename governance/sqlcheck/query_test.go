package sqlcheck

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestCheckQuery(t *testing.T) {
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	ok := []struct {
		q    string
		want []TableRef
	}{
		{"SELECT email FROM analytics.customers", []TableRef{{"analytics", "customers"}}},
		{"select count(*) from analytics.customers a join analytics.orders o using (id) join analytics.customers b using (id);",
			[]TableRef{{"analytics", "customers"}, {"analytics", "orders"}}},
		{"WITH x AS (SELECT * FROM analytics.customers) SELECT * FROM x, range(3)", []TableRef{{"analytics", "customers"}}},
		{"SELECT 1", nil},
		{"SELECT * FROM analytics.customers WHERE id IN (SELECT id FROM sales.orders)", []TableRef{{"analytics", "customers"}, {"sales", "orders"}}},
	}
	for _, c2 := range ok {
		got, err := c.CheckQuery(ctx, c2.q)
		if err != nil || !reflect.DeepEqual(got, c2.want) {
			t.Errorf("CheckQuery(%q) = %v, %v; want %v", c2.q, got, err, c2.want)
		}
	}
	refused := []string{
		"",
		"SELECT 1; SELECT 2",
		"COPY (SELECT 1) TO '/tmp/x.csv'",
		"COPY analytics.customers TO '/tmp/x.parquet'",
		"ATTACH 'x.db' AS x",
		"ATTACH 'ducklake:postgres:dbname=ducklake' AS lake",
		"INSTALL httpfs",
		"LOAD httpfs",
		"SET enable_external_access = true",
		"RESET lock_configuration",
		"PRAGMA database_list",
		"CREATE TABLE t AS SELECT 1",
		"INSERT INTO analytics.customers VALUES (1)",
		"DELETE FROM analytics.customers",
		"CALL duckdb_secrets()",
		"SELECT * FROM read_csv('/etc/passwd')",
		"SELECT * FROM '/etc/passwd'",
		"SELECT * FROM 's3://lake/data/analytics/customers/x.parquet'",
		"SELECT * FROM read_parquet('s3://lake/data/x.parquet')",
		"SELECT * FROM iceberg_scan('s3://lake/data/analytics/customers')",
		"SELECT * FROM glob('/*')",
		"SELECT * FROM duckdb_secrets()",
		"SELECT * FROM lake.analytics.customers",
		"SELECT getenv('HOME')",
		"SELECT current_setting('s3_secret_access_key')",
		"SELECT * FROM analytics.customers, read_text('/etc/passwd')",
		"SELECT (SELECT content FROM read_text('/etc/passwd'))",
		"SELECT * FROM query('SELECT 1')",
		"SELECT * FROM analytics.customers AT (VERSION => 1)",
		"SELECT 1; COPY (SELECT 1) TO '/tmp/x'",
	}
	for _, q := range refused {
		_, err := c.CheckQuery(ctx, q)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("CheckQuery(%q) = %v, want a refusal", q, err)
		}
	}
}

func FuzzCheckQuery(f *testing.F) {
	c, err := Open()
	if err != nil {
		f.Fatal(err)
	}
	defer c.Close()
	for _, s := range []string{"SELECT 1", "SELECT * FROM a.b", "COPY x TO 'y'", "WITH x AS (SELECT 1) SELECT * FROM x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		tables, err := c.CheckQuery(context.Background(), q)
		if err != nil {
			return
		}
		for _, tr := range tables {
			if tr.Namespace == "" || tr.Table == "" {
				t.Fatalf("accepted %q reading %+v", q, tr)
			}
		}
	})
}
