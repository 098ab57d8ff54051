package ducklake_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
)

var dumpArgs = []string{"--no-owner", "--no-privileges", "--no-comments"}

// schemaLines reduces a pg_dump --schema-only to sorted, order-independent
// facts: one line per table column (name, type, nullability, default) and
// one per constraint, index or other statement. Tables whose name starts
// with skipPrefix are left out.
func schemaLines(t *testing.T, dump, skipPrefix string) []string {
	t.Helper()
	var sql strings.Builder
	for _, line := range strings.Split(dump, "\n") {
		switch {
		case strings.HasPrefix(line, "--"), strings.HasPrefix(line, `\`), strings.TrimSpace(line) == "":
			continue
		}
		sql.WriteString(line)
		sql.WriteByte('\n')
	}
	space := regexp.MustCompile(`\s+`)
	createTable := regexp.MustCompile(`(?s)^CREATE TABLE (\S+) \((.*)\)$`)
	var out []string
	for _, stmt := range strings.Split(sql.String(), ";\n") {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" || strings.HasPrefix(stmt, "SET ") || strings.HasPrefix(stmt, "SELECT pg_catalog.set_config") {
			continue
		}
		if skipPrefix != "" && strings.Contains(stmt, "."+skipPrefix) {
			continue
		}
		if m := createTable.FindStringSubmatch(stmt); m != nil {
			for _, col := range strings.Split(m[2], ",\n") {
				out = append(out, "column "+m[1]+": "+space.ReplaceAllString(strings.TrimSpace(col), " "))
			}
			continue
		}
		out = append(out, space.ReplaceAllString(stmt, " "))
	}
	slices.Sort(out)
	return out
}

var (
	uuidRe = regexp.MustCompile(`'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'`)
	timeRe = regexp.MustCompile(`'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?[+-]\d\d(:\d\d)?'`)
	byRe   = regexp.MustCompile(`\('created_by', '[^']*'`)
)

// rowLines reduces INSERT statements to sorted lines with the values that
// differ on every run (uuids, times, the creating program) masked.
func rowLines(dump, skipPrefix string) []string {
	var out []string
	for _, line := range strings.Split(dump, "\n") {
		if !strings.HasPrefix(line, "INSERT ") || (skipPrefix != "" && strings.Contains(line, "."+skipPrefix)) {
			continue
		}
		line = uuidRe.ReplaceAllString(line, "<uuid>")
		line = timeRe.ReplaceAllString(line, "<time>")
		line = byRe.ReplaceAllString(line, "('created_by', <created_by>")
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: missing %s", what, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s: unexpected %s", what, g)
		}
	}
}

func initDB(t *testing.T, dsn string, opts ducklake.InitOptions) ducklake.InitResult {
	t.Helper()
	res, err := ducklake.Init(context.Background(), pgtest.Connect(t, dsn), opts)
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	return res
}

// lakeConn connects to a new database holding an empty catalog with data
// path s3://lake/data/.
func lakeConn(t *testing.T) *pgx.Conn {
	t.Helper()
	dsn := pgtest.Database(t)
	initDB(t, dsn, ducklake.InitOptions{DataPath: "s3://lake/data/"})
	return pgtest.Connect(t, dsn)
}

// allMigrations lists every sidecar migration version, 1..SidecarVersion.
func allMigrations() []int {
	var vs []int
	for v := 1; v <= ducklake.SidecarVersion(); v++ {
		vs = append(vs, v)
	}
	return vs
}

// TestInitMatchesDuckDB compares the catalog Init creates with the one
// DuckDB 1.5.5 created (testdata, made by testdata/generate.sh).
func TestInitMatchesDuckDB(t *testing.T) {
	dsn := pgtest.Database(t)
	res := initDB(t, dsn, ducklake.InitOptions{DataPath: "s3://lake/data"})
	if !res.Created || res.DataPath != "s3://lake/data/" || !slices.Equal(res.Migrations, allMigrations()) {
		t.Errorf("Init = %+v, want created, s3://lake/data/, migrations %v", res, allMigrations())
	}

	wantSchema, err := os.ReadFile("testdata/ducklake-1.0-schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	wantRows, err := os.ReadFile("testdata/ducklake-1.0-rows.sql")
	if err != nil {
		t.Fatal(err)
	}
	gotSchema := pgtest.Dump(t, dsn, append(dumpArgs, "--schema-only")...)
	want := schemaLines(t, string(wantSchema), "")
	if len(want) < 28*3 {
		t.Fatalf("reference schema has only %d facts; is testdata intact?", len(want))
	}
	diffLines(t, "schema", schemaLines(t, gotSchema, "duckicelake_"), want)

	gotRows := pgtest.Dump(t, dsn, append(dumpArgs, "--data-only", "--inserts")...)
	diffLines(t, "rows", rowLines(gotRows, "duckicelake_"), rowLines(string(wantRows), ""))

	// The sidecars exist besides the DuckLake tables.
	for _, table := range []string{"duckicelake_schema_migrations", "duckicelake_revocation", "duckicelake_table_property",
		"duckicelake_table_partition_spec", "duckicelake_table_sort_order", "duckicelake_metadata_file"} {
		if !strings.Contains(gotSchema, "CREATE TABLE public."+table+" (") {
			t.Errorf("sidecar %s missing", table)
		}
	}
}

func TestInitIsIdempotent(t *testing.T) {
	dsn := pgtest.Database(t)
	initDB(t, dsn, ducklake.InitOptions{DataPath: "s3://lake/data/"})
	before := stripRestrict(pgtest.Dump(t, dsn, append(dumpArgs, "--inserts")...))
	for _, path := range []string{"", "s3://lake/data/", "s3://lake/data//"} {
		res := initDB(t, dsn, ducklake.InitOptions{DataPath: path})
		if res.Created || len(res.Migrations) != 0 || res.DataPath != "s3://lake/data/" {
			t.Errorf("rerun with %q = %+v, want nothing done", path, res)
		}
	}
	if after := stripRestrict(pgtest.Dump(t, dsn, append(dumpArgs, "--inserts")...)); after != before {
		t.Errorf("rerunning Init changed the database")
	}
}

// stripRestrict drops pg_dump's \restrict lines, which carry a random key.
func stripRestrict(dump string) string {
	return regexp.MustCompile(`(?m)^\\(un)?restrict .*$`).ReplaceAllString(dump, "")
}

func TestInitConcurrent(t *testing.T) {
	dsn := pgtest.Database(t)
	const n = 4
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		conns[i] = pgtest.Connect(t, dsn)
	}
	results := make([]ducklake.InitResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = ducklake.Init(context.Background(), conns[i], ducklake.InitOptions{DataPath: "s3://lake/data/"})
		})
	}
	wg.Wait()
	created, migrated := 0, 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Init %d: %v", i, errs[i])
		}
		if results[i].Created {
			created++
		}
		migrated += len(results[i].Migrations)
	}
	if created != 1 || migrated != ducklake.SidecarVersion() {
		t.Errorf("%d inits created %d catalogs and applied %d migrations, want 1 and %d", n, created, migrated, ducklake.SidecarVersion())
	}
	var snapshots int
	if err := conns[0].QueryRow(context.Background(), "SELECT count(*) FROM ducklake_snapshot").Scan(&snapshots); err != nil || snapshots != 1 {
		t.Errorf("snapshots = %d (%v), want 1", snapshots, err)
	}
}

func TestInitRefuses(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		prepare string // SQL run on an initialised catalog
		opts    ducklake.InitOptions
		want    error
		msg     []string
	}{
		{
			name:    "DuckLake 0.3",
			prepare: "UPDATE ducklake_metadata SET value = '0.3' WHERE key = 'version'",
			want:    ducklake.ErrUnsupportedVersion,
			msg:     []string{"catalog is DuckLake 0.3 (DuckDB 1.4)", "open it once with DuckDB 1.5.x", "AUTOMATIC_MIGRATION TRUE", "migrate it to 1.0, then rerun"},
		},
		{
			name:    "newer DuckLake",
			prepare: "UPDATE ducklake_metadata SET value = '1.1' WHERE key = 'version'",
			want:    ducklake.ErrUnsupportedVersion,
			msg:     []string{"catalog is DuckLake 1.1", "newer than this duckicelake understands"},
		},
		{
			name:    "no version",
			prepare: "DELETE FROM ducklake_metadata WHERE key = 'version'",
			want:    ducklake.ErrNotCatalog,
		},
		{
			name:    "partial catalog",
			prepare: "DROP TABLE ducklake_metadata",
			want:    ducklake.ErrNotCatalog,
		},
		{
			name: "other data path",
			opts: ducklake.InitOptions{DataPath: "s3://other/"},
			want: ducklake.ErrDataPathMismatch,
			msg:  []string{`catalog data path is "s3://lake/data/", not "s3://other/"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn := lakeConn(t)
			if tc.prepare != "" {
				if _, err := conn.Exec(ctx, tc.prepare); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ducklake.Init(ctx, conn, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Init = %v, want %v", err, tc.want)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
		})
	}
}

func TestInitNeedsDataPath(t *testing.T) {
	dsn := pgtest.Database(t)
	conn := pgtest.Connect(t, dsn)
	if _, err := ducklake.Init(context.Background(), conn, ducklake.InitOptions{}); err == nil || !strings.Contains(err.Error(), "data path") {
		t.Fatalf("Init without data path = %v, want an error about the data path", err)
	}
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&n); err != nil || n != 0 {
		t.Errorf("failed Init left %d tables (%v)", n, err)
	}
}

func TestInitInOtherSchema(t *testing.T) {
	dsn := pgtest.Database(t)
	res := initDB(t, dsn, ducklake.InitOptions{DataPath: "/data/lake", Schema: "lake meta"})
	if !res.Created || res.DataPath != "/data/lake/" {
		t.Fatalf("Init = %+v", res)
	}
	r := ducklake.NewReader(pgtest.Connect(t, dsn), "lake meta")
	if err := r.CheckVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	schemas, err := r.Schemas(context.Background(), 0)
	if err != nil || len(schemas) != 1 || schemas[0].Name != "main" || schemas[0].Path != "/data/lake/main/" {
		t.Fatalf("Schemas = %+v, %v", schemas, err)
	}
	if got := initDB(t, dsn, ducklake.InitOptions{Schema: "lake meta"}); got.Created || len(got.Migrations) != 0 {
		t.Errorf("rerun = %+v", got)
	}
}

func TestReaderOnFreshCatalog(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	initDB(t, dsn, ducklake.InitOptions{DataPath: "s3://lake/data/", CreatedBy: "duckicelake test"})
	conn := pgtest.Connect(t, dsn)
	r := ducklake.NewReader(conn, "")
	md, err := r.Metadata(ctx)
	if err != nil || md.Version != "1.0" || md.DataPath != "s3://lake/data/" || md.CreatedBy != "duckicelake test" || md.Encrypted {
		t.Fatalf("Metadata = %+v, %v", md, err)
	}
	cur, err := r.CurrentSnapshot(ctx)
	if err != nil || cur.ID != 0 || cur.SchemaVersion != 0 || cur.NextCatalogID != 1 || cur.NextFileID != 0 || cur.Time.IsZero() {
		t.Fatalf("CurrentSnapshot = %+v, %v", cur, err)
	}
	if got := ducklake.ParseChanges(cur.Changes); len(got) != 1 || got[0] != (ducklake.Change{Kind: "created_schema", Target: `"main"`}) {
		t.Errorf("changes = %q", got)
	}
	if _, err := r.Snapshot(ctx, 1); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("Snapshot(1) = %v, want ErrNotFound", err)
	}
	if _, err := r.Table(ctx, 0, 1); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("Table = %v, want ErrNotFound", err)
	}
	if ts, err := r.Tables(ctx, 0); err != nil || len(ts) != 0 {
		t.Errorf("Tables = %+v, %v", ts, err)
	}
	if _, err := conn.Exec(ctx, "UPDATE ducklake_metadata SET value = '0.2' WHERE key = 'version'"); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckVersion(ctx); !errors.Is(err, ducklake.ErrUnsupportedVersion) || !strings.Contains(err.Error(), "DuckDB 1.3") {
		t.Errorf("CheckVersion = %v", err)
	}
}

// TestMigrateOlderCatalog: a server brings a catalog an older build
// initialised (here: sidecar version 2, before the commit, metadata-log
// and REST tables) up to date, keeping tables an older server created
// itself; a second run changes nothing.
func TestMigrateOlderCatalog(t *testing.T) {
	dsn := pgtest.Database(t)
	initDB(t, dsn, ducklake.InitOptions{DataPath: "s3://lake/data/"})
	conn := pgtest.Connect(t, dsn)
	ctx := context.Background()
	for _, q := range []string{
		`DELETE FROM duckicelake_schema_migrations WHERE version > 2`,
		`DROP TABLE duckicelake_metadata_file, duckicelake_table_sort_order, duckicelake_table_partition_spec, duckicelake_view_metadata`,
		// An older server made this one itself, with a row in it.
		`INSERT INTO duckicelake_namespace_property VALUES (1, 'k', 'v')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pool := pgtest.Pool(t, dsn)
	applied, err := ducklake.Migrate(ctx, pool, "")
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for v := 3; v <= ducklake.SidecarVersion(); v++ {
		want = append(want, v)
	}
	if !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM duckicelake_namespace_property`).Scan(&n); err != nil || n != 1 {
		t.Errorf("namespace properties after the migration: %d rows, %v", n, err)
	}
	for _, table := range []string{"duckicelake_metadata_file", "duckicelake_table_sort_order", "duckicelake_view_metadata"} {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil || !ok {
			t.Errorf("%s after the migration: %v %v", table, ok, err)
		}
	}
	if applied, err := ducklake.Migrate(ctx, pool, ""); err != nil || len(applied) != 0 {
		t.Errorf("second run applied %v, %v", applied, err)
	}
}
