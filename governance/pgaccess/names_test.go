package pgaccess_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/pgaccess"
	"github.com/duckicelake/duckicelake/internal/duckenv"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestInjectionShapedNames: a catalog in an injection-shaped Postgres
// schema, under a data path with a quote, holding a DuckDB schema, table
// and column named like injections: arming, the vend and the statements
// it hands out quote them all, and the reader reads the table.
func TestInjectionShapedNames(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	const schema = `meta"; DROP TABLE x; --'s`
	data := filepath.Join(t.TempDir(), `da'ta"; --`) + "/"
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	open := func(dsn string, readOnly bool) *sql.DB {
		db, err := duckenv.Open(ctx, duckenv.Options{ExtensionDirectory: govtest.ExtensionDir(t), Extensions: []string{"ducklake", "postgres"}})
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		extra := []string{}
		if !readOnly {
			extra = append(extra, "DATA_INLINING_ROW_LIMIT 0")
		}
		q, err := duckenv.AttachSQL("lake", dsn, schema, data, readOnly, extra...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return db
	}
	ow := open(dsn, false)
	for _, q := range []string{
		`CREATE SCHEMA lake."s""; DROP SCHEMA x; --'"`,
		`CREATE TABLE lake."s""; DROP SCHEMA x; --'"."t""; DELETE FROM y; --'" ("c""ol'; --" VARCHAR, id INT)`,
		`INSERT INTO lake."s""; DROP SCHEMA x; --'"."t""; DELETE FROM y; --'" VALUES ('v', 1)`,
	} {
		if _, err := ow.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	acc, err := pgaccess.New(ctx, pool, pgaccess.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(ctx, `SELECT table_id FROM `+pgx.Identifier{schema, "ducklake_table"}.Sanitize()+` WHERE end_snapshot IS NULL`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	r, err := acc.CreateRole(ctx, pgaccess.Grant{Principal: `bob"; DROP ROLE postgres; --'`, Scope: `s'; --`,
		Tables: []pgaccess.TableAccess{{TableID: id, Files: true}}, Expiry: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+pgx.Identifier{r.Name}.Sanitize()) })
	rdsn, err := pgaccess.ReaderDSN(dsn, r)
	if err != nil {
		t.Fatal(err)
	}
	rd := open(rdsn, true)
	var col string
	if err := rd.QueryRow(`SELECT "c""ol'; --" FROM lake."s""; DROP SCHEMA x; --'"."t""; DELETE FROM y; --'"`).Scan(&col); err != nil || col != "v" {
		t.Fatalf("reader: %q, %v", col, err)
	}
	// The reader role's name keeps nothing of the principal's quotes.
	for _, c := range r.Name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			t.Fatalf("role name %q", r.Name)
		}
	}
}
