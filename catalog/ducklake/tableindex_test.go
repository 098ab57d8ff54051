package ducklake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/tableindex"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// tableIndexRows is a history of four snapshots written as DuckLake rows,
// with every path rule the loader must follow: relative and absolute schema
// and table paths, nested tables, a rename, a drop, local and refused
// paths, and data and delete files by relative and absolute paths inside
// and outside their tables, one of them ending.
const tableIndexRows = `
INSERT INTO ducklake_snapshot VALUES
	(1, now(), 1, 30, 200), (2, now(), 2, 31, 201), (3, now(), 3, 31, 201), (4, now(), 3, 31, 201);
INSERT INTO ducklake_schema VALUES
	(1, gen_random_uuid(), 1, NULL, 'abs', 's3://other-bucket/warehouse/abs/', false),
	(2, gen_random_uuid(), 1, NULL, 'local', '/srv/lake/local/', false);
INSERT INTO ducklake_table VALUES
	(10, '00000000-0000-0000-0000-00000000000a', 1, 2, 0, 't', 't/', true),
	(10, '00000000-0000-0000-0000-00000000000a', 2, NULL, 0, 't_renamed', 't/', true),
	(11, gen_random_uuid(), 1, 3, 0, 't2', 't2/', true),
	(12, gen_random_uuid(), 1, NULL, 0, 'sub', 't/sub/', true),
	(13, gen_random_uuid(), 1, NULL, 1, 'e', 'e/', true),
	(14, gen_random_uuid(), 1, NULL, 0, 'x', 's3://lake/elsewhere/x/', false),
	(15, gen_random_uuid(), 1, NULL, 2, 'l', 'l/', true),
	(16, gen_random_uuid(), 1, NULL, 0, 'bad', 'a/../b/', true),
	(17, gen_random_uuid(), 2, NULL, 0, 'later', 'later/', true);
INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, end_snapshot, path, path_is_relative) VALUES
	(100, 10, 1, NULL, 'ducklake-1.parquet', true),
	(101, 11, 1, NULL, 's3://lake/ingest/a.parquet', false),
	(102, 10, 1, NULL, 's3://lake/data/main/t/inside.parquet', false),
	(103, 13, 1, 3, 's3://lake/ingest/b.parquet', false),
	(104, 11, 1, NULL, '/local/file.parquet', false),
	(105, 10, 2, NULL, 's3://lake/ingest/c.parquet', false),
	(106, 10, 1, NULL, 's3://lake/ingest/unknown.parquet', NULL);
INSERT INTO ducklake_delete_file (delete_file_id, table_id, begin_snapshot, end_snapshot, data_file_id, path, path_is_relative) VALUES
	(200, 11, 1, NULL, 101, 's3://lake/ingest/a-deletes.parquet', false),
	(201, 10, 1, NULL, 100, 'ducklake-1-deletes.parquet', true);
`

func TestTableIndexSource(t *testing.T) {
	ctx := context.Background()
	conn := lakeConn(t)
	if _, err := conn.Exec(ctx, tableIndexRows); err != nil {
		t.Fatal(err)
	}
	r := ducklake.NewReader(conn, "")

	type want struct {
		bucket, key string
		table       string // "ns.name", "" for no match
		via         tableindex.Via
		shared      bool
		end         int64
	}
	for _, tc := range []struct {
		snap      int64
		lookups   []want
		unindexed []string
	}{
		{1, []want{
			{"lake", "data/main/t/ducklake-1.parquet", "main.t", tableindex.ViaDirectory, false, 0},
			{"lake", "data/main/t/", "main.t", tableindex.ViaDirectory, false, 0},
			{"lake", "data/main/t", "", 0, false, 0},
			{"lake", "data/main/t2/x", "main.t2", tableindex.ViaDirectory, false, 0},
			{"lake", "data/main/t/sub/x", "main.sub", tableindex.ViaDirectory, true, 0},
			{"lake", "data/main/t/inside.parquet", "main.t", tableindex.ViaDirectory, false, 0},
			{"lake", "ingest/a.parquet", "main.t2", tableindex.ViaDataFile, false, 0},
			{"lake", "ingest/a-deletes.parquet", "main.t2", tableindex.ViaDeleteFile, false, 0},
			{"lake", "ingest/b.parquet", "abs.e", tableindex.ViaDataFile, false, 3},
			{"lake", "ingest/c.parquet", "", 0, false, 0}, // added at 2
			{"lake", "ingest/unknown.parquet", "", 0, false, 0},
			{"other-bucket", "warehouse/abs/e/part=1/x", "abs.e", tableindex.ViaDirectory, false, 0},
			{"lake", "warehouse/abs/e/x", "", 0, false, 0},
			{"lake", "elsewhere/x/y", "main.x", tableindex.ViaDirectory, false, 0},
			{"lake", "data/main/later/x", "", 0, false, 0},
			{"lake", "data/main/b/x", "", 0, false, 0},
		}, []string{"/local/file.parquet", "/srv/lake/local/l/", "s3://lake/data/main/a/../b/"}},
		{2, []want{
			{"lake", "data/main/t/x", "main.t_renamed", tableindex.ViaDirectory, false, 0},
			{"lake", "ingest/c.parquet", "main.t_renamed", tableindex.ViaDataFile, false, 0},
			{"lake", "data/main/later/x", "main.later", tableindex.ViaDirectory, false, 0},
		}, []string{"/local/file.parquet", "/srv/lake/local/l/", "s3://lake/data/main/a/../b/"}},
		{3, []want{
			{"lake", "data/main/t2/x", "", 0, false, 0}, // dropped at 3
			{"lake", "ingest/a.parquet", "", 0, false, 0},
			{"lake", "ingest/b.parquet", "abs.e", tableindex.ViaDataFile, false, 3},
			{"lake", "data/main/t/sub/x", "main.sub", tableindex.ViaDirectory, true, 0},
		}, []string{"/local/file.parquet", "/srv/lake/local/l/", "s3://lake/data/main/a/../b/"}},
	} {
		src, err := r.TableIndexSource(ctx, tc.snap)
		if err != nil {
			t.Fatalf("snapshot %d: %v", tc.snap, err)
		}
		x := tableindex.Build(src)
		if x.Snapshot() != tc.snap {
			t.Errorf("snapshot %d: index at %d", tc.snap, x.Snapshot())
		}
		for _, w := range tc.lookups {
			m, ok := x.Lookup([]byte(w.bucket), []byte(w.key))
			got := ""
			if ok {
				got = m.Table.Namespace + "." + m.Table.Name
			}
			if got != w.table || ok && (m.Via != w.via || m.Shared != w.shared || m.FileEnd != w.end) {
				t.Errorf("snapshot %d: %s/%s = %q via %s shared %v end %d, want %q via %s shared %v end %d", tc.snap,
					w.bucket, w.key, got, m.Via, m.Shared, m.FileEnd, w.table, w.via, w.shared, w.end)
			}
		}
		var unindexed []string
		for _, u := range src.Unindexed {
			unindexed = append(unindexed, u.Path)
		}
		slices.Sort(unindexed)
		if !slices.Equal(unindexed, tc.unindexed) {
			t.Errorf("snapshot %d: unindexed %q, want %q", tc.snap, unindexed, tc.unindexed)
		}
	}
	if tb, ok := mustIndex(t, r, 2).Table(10); !ok || tb.UUID != "00000000-0000-0000-0000-00000000000a" || tb.SchemaID != 0 {
		t.Errorf("table 10 = %+v, %v", tb, ok)
	}

	// A snapshot that does not exist (yet) has no index.
	if _, err := r.TableIndexSource(ctx, 9); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("snapshot 9: %v, want ErrNotFound", err)
	}

	// Through a Live, as the signer and the eager path use it.
	l := &tableindex.Live{Load: r.TableIndexSource}
	if _, err := l.Refresh(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if m, ok := l.Lookup([]byte("lake"), []byte("ingest/c.parquet")); !ok || m.Table.ID != 10 {
		t.Errorf("Live lookup = %+v, %v", m, ok)
	}
}

func mustIndex(t *testing.T, r *ducklake.Reader, snap int64) *tableindex.Index {
	t.Helper()
	src, err := r.TableIndexSource(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	return tableindex.Build(src)
}

// TestTableIndexSourceDuckDB has a real DuckDB 1.5 write a lake on S3 (the
// test stack's backend) with files it registers by absolute path
// (ducklake_add_data_files): one outside every table, one inside another
// table's directory. The loader must place DuckDB's own rows as DuckDB
// wrote them.
func TestTableIndexSourceDuckDB(t *testing.T) {
	s3 := make(map[string]string)
	for _, k := range []string{"ENDPOINT", "ACCESS_KEY", "SECRET_KEY", "BUCKET"} {
		if s3[k] = os.Getenv("DUCKICELAKE_TEST_S3_" + k); s3[k] == "" && k != "BUCKET" {
			if os.Getenv("CI") != "" {
				t.Fatalf("DUCKICELAKE_TEST_S3_%s is not set; CI must run this test against the stack", k)
			}
			t.Skipf("DUCKICELAKE_TEST_S3_%s not set: no S3 backend (make test starts one)", k)
		}
	}
	if s3["BUCKET"] == "" {
		s3["BUCKET"] = "lake"
	}
	region := os.Getenv("DUCKICELAKE_TEST_S3_REGION")
	if region == "" {
		region = "us-east-1"
	}
	dsn := pgtest.Database(t)
	// Each run writes under a prefix of its own (the bucket outlives it):
	// the test database's name.
	var run string
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "dbname="); ok {
			run = v
		}
	}
	data := "s3://" + s3["BUCKET"] + "/tableindex-" + run + "/data/"

	cmd := exec.Command(venvPython(t), filepath.Join("testdata", "tableindex_scenario.py"),
		dsn, data, s3["ENDPOINT"], s3["ACCESS_KEY"], s3["SECRET_KEY"], region)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tableindex_scenario.py: %v\n%s", err, stderr.String())
	}
	var report struct {
		Snapshot int64    `json:"snapshot"`
		Outside  string   `json:"outside"` // s3://… registered to main.t
		Foreign  string   `json:"foreign"` // s3://… in s.u's directory, registered to main.t
		Own      []string `json:"own"`     // main.t's and s.u's files DuckDB wrote itself
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("tableindex_scenario.py: bad report: %v\n%s", err, stdout.String())
	}

	ctx := context.Background()
	r := ducklake.NewReader(pgtest.Connect(t, dsn), "")
	src, err := r.TableIndexSource(ctx, report.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if len(src.Files) != 2 || len(src.Unindexed) != 0 {
		t.Errorf("files by absolute path %+v, unindexed %+v; want the two DuckDB registered", src.Files, src.Unindexed)
	}
	x := tableindex.Build(src)
	lookup := func(loc string) (string, tableindex.Match) {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
		m, ok := x.Lookup([]byte(bucket), []byte(key))
		if !ok {
			return "", m
		}
		return m.Table.Namespace + "." + m.Table.Name, m
	}
	if got, m := lookup(report.Outside); got != "main.t" || m.Via != tableindex.ViaDataFile || m.Shared {
		t.Errorf("%s: %s via %s shared %v, want main.t's data file", report.Outside, got, m.Via, m.Shared)
	}
	if got, m := lookup(report.Foreign); got != "main.t" || m.Via != tableindex.ViaDataFile || !m.Shared {
		t.Errorf("%s: %s via %s shared %v, want main.t's data file, shared with s.u", report.Foreign, got, m.Via, m.Shared)
	}
	for _, own := range report.Own {
		want := "main.t"
		if strings.Contains(own, "/s/u/") {
			want = "s.u"
		}
		if got, m := lookup(own); got != want || m.Via != tableindex.ViaDirectory {
			t.Errorf("%s: %s via %s, want %s's directory", own, got, m.Via, want)
		}
	}
}

// venvPython is the venv's interpreter ($DUCKICELAKE_PYTHON or
// <repo>/.venv/bin/python); without it the test is skipped, or fails under
// CI. (One more copy of the lookup test/catalog and catalog/materialize
// have, until the shared test-support package holds it.)
func venvPython(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DUCKICELAKE_PYTHON")
	if p == "" {
		p = filepath.Join("..", "..", ".venv", "bin", "python")
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Python venv at %s (scripts/venv.sh makes it)", p)
		}
		t.Skipf("no Python venv at %s; run scripts/venv.sh", p)
	}
	return p
}

// BenchmarkTableIndexSource is a rebuild's catalog part, on a real
// Postgres: 10,000 tables in 100 schemas, 50,000 data files with relative
// paths and 3,000 by absolute path, read at the newest snapshot; then the
// in-memory Build.
func BenchmarkTableIndexSource(b *testing.B) {
	ctx := context.Background()
	dsn := pgtest.Database(b)
	if _, err := ducklake.Init(ctx, pgtest.Connect(b, dsn), ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		b.Fatal(err)
	}
	conn := pgtest.Connect(b, dsn)
	if _, err := conn.Exec(ctx, `
		INSERT INTO ducklake_snapshot VALUES (1, now(), 1, 20000, 60000);
		INSERT INTO ducklake_schema SELECT s, gen_random_uuid(), 1, NULL, 'ns' || s, 'ns' || s || '/', true
			FROM generate_series(1, 100) s;
		INSERT INTO ducklake_table SELECT 1000 + t, gen_random_uuid(), 1, NULL, 1 + t % 100, 't' || t, 't' || t || '/', true
			FROM generate_series(0, 9999) t;
		INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, path, path_is_relative)
			SELECT f, 1000 + f % 10000, 1, 'ducklake-' || f || '.parquet', true FROM generate_series(0, 49999) f;
		INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, path, path_is_relative)
			SELECT 50000 + f, 1000 + (f * 3) % 10000, 1, 's3://lake/ingest/' || f || '.parquet', false
			FROM generate_series(0, 2999) f;
		ANALYZE`); err != nil {
		b.Fatal(err)
	}
	r := ducklake.NewReader(conn, "")
	b.ReportAllocs()
	for b.Loop() {
		src, err := r.TableIndexSource(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		if x := tableindex.Build(src); x.Tables() != 10_000 || x.Files() != 3_000 {
			b.Fatalf("%d tables, %d files", x.Tables(), x.Files())
		}
	}
}
