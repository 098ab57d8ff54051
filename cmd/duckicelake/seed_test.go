package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/duckenv"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestSeed loads the sample through DuckLake into a real catalog on the
// stack's versitygw, twice: the second run changes nothing.
func TestSeed(t *testing.T) {
	endpoint := os.Getenv("DUCKICELAKE_TEST_S3_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("DUCKICELAKE_TEST_S3_ENDPOINT is not set")
		}
		t.Skip("DUCKICELAKE_TEST_S3_ENDPOINT not set (make test sets it)")
	}
	ext := govtest.ExtensionDir(t)
	dsn := pgtest.Database(t)
	ctx := context.Background()
	prefix := "seed-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "/"
	dataPath := "s3://" + os.Getenv("DUCKICELAKE_TEST_BUCKET") + "/" + prefix
	if _, err := ducklake.Init(ctx, pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: dataPath}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DUCKICELAKE_CATALOG_DSN":                dsn,
		"DUCKICELAKE_UPSTREAM_ENDPOINT":          endpoint,
		"DUCKICELAKE_UPSTREAM_ACCESS_KEY":        os.Getenv("DUCKICELAKE_TEST_S3_ACCESS_KEY"),
		"DUCKICELAKE_UPSTREAM_SECRET_KEY":        os.Getenv("DUCKICELAKE_TEST_S3_SECRET_KEY"),
		"DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY": ext,
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for run := 0; run < 2; run++ {
		var out, errb bytes.Buffer
		if code := seedCmd(ctx, []string{"-governed"}, &out, &errb, lookup); code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, errb.String())
		}
		if run == 1 && !strings.Contains(out.String(), "already holds 8 rows; left alone") {
			t.Errorf("second run:\n%s", out.String())
		}
	}
	db, err := duckenv.Open(ctx, duckenv.Options{ExtensionDirectory: ext, Extensions: []string{"httpfs", "ducklake", "postgres"},
		S3: duckenv.S3{Endpoint: endpoint, AccessKeyID: env["DUCKICELAKE_UPSTREAM_ACCESS_KEY"], Secret: env["DUCKICELAKE_UPSTREAM_SECRET_KEY"], PathStyle: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := duckenv.AttachDuckLake(ctx, db, "lake", dsn, "", "", true); err != nil {
		t.Fatal(err)
	}
	var customers, orders int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM lake.analytics.customers), (SELECT count(*) FROM lake.analytics.orders)`).Scan(&customers, &orders); err != nil {
		t.Fatal(err)
	}
	if customers != 8 || orders != 15 {
		t.Errorf("customers %d, orders %d; want 8 and 15", customers, orders)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// orders came in two snapshots, as Parquet files (not inlined rows).
	rows, err := pool.Query(ctx, `SELECT f.record_count FROM ducklake_data_file f JOIN ducklake_table t USING (table_id)
		WHERE t.table_name = 'orders' ORDER BY f.begin_snapshot`)
	if err != nil {
		t.Fatal(err)
	}
	var counts []int64
	for rows.Next() {
		var n int64
		rows.Scan(&n)
		counts = append(counts, n)
	}
	rows.Close()
	if len(counts) != 2 || counts[0] != 8 || counts[1] != 7 {
		t.Errorf("orders' data files hold %v rows, want [8 7]", counts)
	}
	st, err := store.New(pool, "").Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mask("mask_email") == nil || len(st.GrantedRoles("alice")) != 1 || len(st.ObjectTags) != 1 || len(st.Attachments) != 1 {
		t.Errorf("governance after two seeds: %+v", st)
	}
}
