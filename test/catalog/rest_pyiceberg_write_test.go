package catalog_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// writeEnv is a catalog whose materialised files and client-written
// manifests live in the stack's bucket, with a namespace ns, an OAuth
// client "writer-<ns>" that may write it, "wo-<ns>" that may only write, and an S3 credential for DuckDB
// (REST_DUCK_S3_*) on the namespace's data path.
func writeEnv(t *testing.T, ns string) *restEnv {
	t.Helper()
	st := requireStack(t, true)
	env := newRestEnv(t, withS3Materializer(st), withOwnGateway(t, st, false), func(c *rest.Config, d *rest.Deps) {
		// The scenarios load a table right after DuckDB commits to it, and
		// no NOTIFY path tells this catalog of the commit: every request
		// reads the current snapshot, rather than one SnapshotTTL old.
		c.SnapshotTTL = time.Nanosecond
		c.Clients = append(slices.Clone(c.Clients), rest.Client{ID: "writer-" + ns, Secret: "pw", Scopes: []string{"ns:" + ns + ":rw"}},
			rest.Client{ID: "wo-" + ns, Secret: "pw", Scopes: []string{"ns:" + ns + ":w"}})
		d.Objects = objstore.NewS3(st.root())
	})
	duckDBThroughGateway(t, env, st, "duckdb-writer", ns, creds.Read|creds.Write|creds.List)
	env.duck("CREATE SCHEMA l." + ns)
	return env
}

// compareReport is the part of every rest_pyiceberg_write.py report that
// compares PyIceberg's and DuckDB's reads of each recorded snapshot.
type compareReport struct {
	Steps []struct {
		Step      string   `json:"step"`
		Snapshot  int64    `json:"snapshot"`
		PyIceberg int      `json:"pyiceberg"`
		DuckDB    int      `json:"duckdb"`
		Equal     bool     `json:"equal"`
		OnlyPy    []string `json:"only_pyiceberg"`
		OnlyDuck  []string `json:"only_duckdb"`
	} `json:"steps"`
	Current struct {
		PyIceberg int  `json:"pyiceberg"`
		DuckDB    int  `json:"duckdb"`
		Equal     bool `json:"equal"`
	} `json:"current"`
	DuckDBColumns []string `json:"duckdb_columns"`
	IcebergSchema []string `json:"iceberg_schema"`
}

// check fails t unless PyIceberg and DuckDB read the same rows at every
// recorded snapshot, which are distinct, and the wanted row counts.
func (c *compareReport) check(t *testing.T, want map[string]int) {
	t.Helper()
	seen := map[int64]string{}
	for _, s := range c.Steps {
		if !s.Equal || s.PyIceberg != s.DuckDB {
			t.Errorf("%s (snapshot %d): PyIceberg read %d rows, DuckDB %d; only PyIceberg: %q; only DuckDB: %q",
				s.Step, s.Snapshot, s.PyIceberg, s.DuckDB, s.OnlyPy, s.OnlyDuck)
		}
		if n, ok := want[s.Step]; ok && s.PyIceberg != n {
			t.Errorf("%s: %d rows, want %d", s.Step, s.PyIceberg, n)
		}
		if prev, dup := seen[s.Snapshot]; dup {
			t.Errorf("%s and %s share snapshot %d", prev, s.Step, s.Snapshot)
		}
		seen[s.Snapshot] = s.Step
	}
	if !c.Current.Equal || c.Current.PyIceberg == 0 {
		t.Errorf("current rows: PyIceberg %d, DuckDB %d, equal %v", c.Current.PyIceberg, c.Current.DuckDB, c.Current.Equal)
	}
	if !slices.Equal(c.DuckDBColumns, c.IcebergSchema) {
		t.Errorf("DuckDB columns %v, Iceberg schema %v", c.DuckDBColumns, c.IcebergSchema)
	}
}

func pyWriteScenario(t *testing.T, env *restEnv, scenario, ns string, out any) {
	t.Helper()
	testsupport.RunPython(t, out, "rest_pyiceberg_write.py", scenario, env.url, "writer-"+ns+":pw", env.dsn, restDataPath, ns)
}

// TestPyIcebergWriteLifecycle: PyIceberg 0.12 with vended credentials
// creates a table and appends, overwrites, deletes and evolves its schema
// through the catalog, interleaved with DuckDB INSERTs into the same
// DuckLake table; DuckDB reads exactly what PyIceberg reads at every
// snapshot, and PyIceberg every DuckDB write.
func TestPyIcebergWriteLifecycle(t *testing.T) {
	ns := "wl" + randomHex(4)
	env := writeEnv(t, ns)
	var got struct {
		compareReport
		CreatedFieldIDs [][]any `json:"created_field_ids"`
		EvolvedSchema   [][]any `json:"evolved_schema"`
		Docs            struct {
			PyIceberg map[string]string `json:"pyiceberg"`
			DuckDB    map[string]string `json:"duckdb"`
		} `json:"docs"`
		AppendAfterDuckDB int    `json:"append_after_duckdb_conflicts"`
		DeleteInlined     string `json:"delete_inlined"`
		InlinedRows       int    `json:"inlined_rows"`
		Conflicts         int    `json:"conflicts"`
	}
	pyWriteScenario(t, env, "lifecycle", ns, &got)
	got.check(t, map[string]int{
		"append": 200, "duckdb insert": 220, "append on a moved head": 320,
		"overwrite": 280, "delete": 270, "append after schema change": 290,
		"duckdb insert after schema change": 310,
	})
	// DuckDB numbers columns depth first; PyIceberg's create numbered the
	// top level first. The table keeps DuckDB's numbering.
	if fmt.Sprint(got.CreatedFieldIDs) != "[[1 id] [2 name] [3 amount] [4 qty] [5 ts] [6 d] [7 price] [8 flag] [9 s] [12 tags]]" {
		t.Errorf("field ids after create: %v", got.CreatedFieldIDs)
	}
	if fmt.Sprint(got.EvolvedSchema[1]) != "[2 label string]" || fmt.Sprint(got.EvolvedSchema[3]) != "[4 qty long]" ||
		fmt.Sprint(got.EvolvedSchema[len(got.EvolvedSchema)-1]) != "[14 extra long]" {
		t.Errorf("evolved schema: %v", got.EvolvedSchema)
	}
	wantDocs := map[string]string{"amount": "what the row is worth", "extra": "set in DuckDB"}
	if !maps.Equal(got.Docs.PyIceberg, wantDocs) || !maps.Equal(got.Docs.DuckDB, wantDocs) {
		t.Errorf("column docs: PyIceberg %q, DuckDB %q, want both %q", got.Docs.PyIceberg, got.Docs.DuckDB, wantDocs)
	}
	if got.AppendAfterDuckDB < 1 {
		t.Errorf("PyIceberg's append on a head DuckDB moved got %d conflicts, want at least one (then a retry)", got.AppendAfterDuckDB)
	}
	if !strings.HasPrefix(got.DeleteInlined, "UnsupportedOperationException") || !strings.Contains(got.DeleteInlined, "inlined") || got.InlinedRows != 2 {
		t.Errorf("deleting inlined rows: %s (%d rows left)", got.DeleteInlined, got.InlinedRows)
	}
	// The DuckLake rows are what DuckDB writes: file ids from next_file_id,
	// row ids from the table stats, schema versions only for schema changes.
	var files, rowGaps int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE row_id_start IS NULL)
		FROM ducklake_data_file WHERE end_snapshot IS NULL`).Scan(&files, &rowGaps); err != nil {
		t.Fatal(err)
	}
	if files == 0 || rowGaps != 0 {
		t.Errorf("%d live data files, %d without row ids", files, rowGaps)
	}
	var overlaps int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM ducklake_data_file a JOIN ducklake_data_file b
		ON a.table_id = b.table_id AND a.data_file_id < b.data_file_id
		AND a.row_id_start < b.row_id_start + b.record_count AND b.row_id_start < a.row_id_start + a.record_count`).Scan(&overlaps); err != nil {
		t.Fatal(err)
	}
	if overlaps != 0 {
		t.Errorf("%d pairs of data files share row ids", overlaps)
	}
}

// TestPyIcebergWritePartitioned: a table partitioned by day(ts),
// bucket[4](id) and identity(cat), created by PyIceberg, written by
// PyIceberg and DuckDB: DuckDB's filtered reads (which prune by the
// partition values the catalog stored for PyIceberg's files) count what
// PyIceberg's do, and a partition-aligned delete drops whole files.
func TestPyIcebergWritePartitioned(t *testing.T) {
	ns := "wp" + randomHex(4)
	env := writeEnv(t, ns)
	var got struct {
		compareReport
		Spec    [][]any          `json:"spec"`
		Filters map[string][]int `json:"filters"`
	}
	pyWriteScenario(t, env, "partitioned", ns, &got)
	got.check(t, map[string]int{"append": 30, "duckdb insert": 60, "append 2": 90, "delete partition": 70})
	// Iceberg's day needs DuckLake's year and month keys of the same
	// column too; the spec served back has the day field alone (PyIceberg
	// refuses to write under redundant calendar fields).
	if fmt.Sprint(got.Spec) != "[[ts_day day 2] [id_bucket bucket[4] 1] [cat identity 3]]" {
		t.Errorf("spec after create: %v", got.Spec)
	}
	for sql, n := range got.Filters {
		if n[0] != n[1] || n[0] == 0 {
			t.Errorf("WHERE %s: PyIceberg %d rows, DuckDB %d", sql, n[0], n[1])
		}
	}
	// Every live file has a value per key, and PyIceberg's agree with the
	// values DuckDB computes for its own files' rows.
	var bad int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM ducklake_data_file d
		JOIN ducklake_table t ON t.table_id = d.table_id AND t.end_snapshot IS NULL AND t.table_name = 'p'
		WHERE d.end_snapshot IS NULL AND (d.partition_id IS NULL OR
			(SELECT count(*) FROM ducklake_file_partition_value v WHERE v.data_file_id = d.data_file_id) <> 5)`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("%d live files of p without a partition or with a value per key missing", bad)
		rows, _ := env.pool.Query(context.Background(), `SELECT d.data_file_id, d.partition_id, d.path, (SELECT count(*) FROM ducklake_file_partition_value v WHERE v.data_file_id = d.data_file_id) FROM ducklake_data_file d WHERE d.end_snapshot IS NULL`)
		for rows.Next() {
			var id int64
			var part *int64
			var path string
			var n int
			rows.Scan(&id, &part, &path, &n)
			t.Logf("file %d partition %v values %d %s", id, part, n, path)
		}
	}
	// PyIceberg wrote ids 4, 5, 6 at 2024-01-02 (ts = 7 hours × id), and
	// deleted 4 (cat 'b').
	rows := env.duck(`SELECT list(id ORDER BY id) FROM l.` + ns + `.p p WHERE year(ts) = 2024 AND month(ts) = 1 AND day(ts) = 2`)
	if n := fmt.Sprint(rows[0][0][0]); n != "[5 6]" {
		t.Errorf("DuckDB ids of 2024-01-02: %v, want [5 6]", n)
	}
}

// TestPyIcebergPositionDeletes: a position delete file committed through
// the catalog becomes the DuckLake delete file of its data file; both
// PyIceberg and DuckDB skip the deleted rows. DuckLake keeps one delete
// file per data file, so a second delete file for it is merged with the
// first, and one file spanning two data files is split into one per file;
// PyIceberg and DuckDB still read identical rows at every snapshot.
func TestPyIcebergPositionDeletes(t *testing.T) {
	ns := "wd" + randomHex(4)
	env := writeEnv(t, ns)
	var got struct {
		compareReport
		DataFiles  int     `json:"data_files"`
		DeletedIDs []int64 `json:"deleted_ids"`
		IDs        []int64 `json:"ids"`
		DuckIDs    []int64 `json:"duckdb_ids"`
		Second     string  `json:"second delete file for the same data file"`
		Spanning   string  `json:"one delete file for two data files"`
	}
	pyWriteScenario(t, env, "deletes", ns, &got)
	if got.Second != "accepted" {
		t.Errorf("second delete file: %s", got.Second)
	}
	if got.Spanning != "accepted" {
		t.Errorf("delete file spanning two data files: %s", got.Spanning)
	}
	got.check(t, map[string]int{"appends": 20, "position delete": 18,
		"second delete file for the same data file": 17, "one delete file for two data files": 15})
	if got.DataFiles != 2 || len(got.DeletedIDs) != 5 || len(got.IDs) != 15 || !slices.Equal(got.IDs, got.DuckIDs) {
		t.Errorf("files %d, deleted %v, PyIceberg ids %v, DuckDB ids %v", got.DataFiles, got.DeletedIDs, got.IDs, got.DuckIDs)
	}
	for _, id := range got.DeletedIDs {
		if slices.Contains(got.IDs, id) {
			t.Errorf("deleted id %d still read", id)
		}
	}
	// One live delete file per data file: 4 positions in the first (merged
	// 1, 3, 5 and 6 from the split), 1 in the second.
	var counts []int64
	if err := env.pool.QueryRow(context.Background(), `SELECT array_agg(d.delete_count ORDER BY d.delete_count)
		FROM ducklake_delete_file d JOIN ducklake_table t USING (table_id)
		WHERE d.end_snapshot IS NULL AND t.end_snapshot IS NULL AND t.table_name = 'pd'`).Scan(&counts); err != nil || !slices.Equal(counts, []int64{1, 4}) {
		t.Errorf("live DuckLake delete files' delete counts: %v (%v), want [1 4]", counts, err)
	}
}

// TestPyIcebergStagedCreate: create_table_transaction answers a staged
// table (nothing in DuckLake yet); its commit creates the table and its
// first data in one snapshot.
func TestPyIcebergStagedCreate(t *testing.T) {
	ns := "ws" + randomHex(4)
	env := writeEnv(t, ns)
	var got struct {
		compareReport
		Before bool    `json:"exists_before_commit"`
		After  bool    `json:"exists_after_commit"`
		Spec   [][]any `json:"spec"`
	}
	pyWriteScenario(t, env, "staged", ns, &got)
	got.check(t, map[string]int{"create and append": 25})
	if got.Before || !got.After || fmt.Sprint(got.Spec) != "[[b bucket[2]]]" {
		t.Errorf("exists before %v, after %v; spec %v", got.Before, got.After, got.Spec)
	}
	var changes string
	if err := env.pool.QueryRow(context.Background(), `SELECT changes_made FROM ducklake_snapshot_changes ORDER BY snapshot_id DESC LIMIT 1`).Scan(&changes); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(changes, `created_table:"`+ns+`"."st"`) || !strings.Contains(changes, "inserted_into_table:") {
		t.Errorf("the create transaction's snapshot changes: %s", changes)
	}
}

// TestPyIcebergRacesDuckDB: two PyIceberg writers append while DuckDB
// inserts into the same table. Each commit either wins the next snapshot
// id or loses cleanly: PyIceberg gets a CommitFailedException (and
// retries), DuckDB retries on its own; afterwards every row of every
// writer is there exactly once.
func TestPyIcebergRacesDuckDB(t *testing.T) {
	ns := "wr" + randomHex(4)
	env := writeEnv(t, ns)
	var got struct {
		Errors    []string         `json:"errors"`
		Want      map[string]int   `json:"want"`
		DuckDB    map[string][]int `json:"duckdb"`
		PyIceberg map[string]int   `json:"pyiceberg"`
		PyConf    int              `json:"pyiceberg_conflicts"`
		DuckConf  int              `json:"duckdb_conflicts_raised"`
	}
	pyWriteScenario(t, env, "race", ns, &got)
	if len(got.Errors) > 0 {
		t.Fatalf("writers failed: %v", got.Errors)
	}
	for who, n := range got.Want {
		if d := got.DuckDB[who]; len(d) != 2 || d[0] != n || d[1] != n {
			t.Errorf("DuckDB reads %v rows of %s (count, distinct), want %d", d, who, n)
		}
		if got.PyIceberg[who] != n {
			t.Errorf("PyIceberg reads %d rows of %s, want %d", got.PyIceberg[who], who, n)
		}
	}
	if got.PyIceberg["distinct"] != got.Want["py"]+got.Want["duck"] {
		t.Errorf("PyIceberg reads %d distinct ids, want %d", got.PyIceberg["distinct"], got.Want["py"]+got.Want["duck"])
	}
	if got.PyConf == 0 {
		t.Errorf("no PyIceberg commit lost a race: the writers did not overlap")
	}
	t.Logf("conflicts: PyIceberg %d (retried), DuckDB raised %d (after its own retries)", got.PyConf, got.DuckConf)
}

// TestPyIcebergPartitionEvolution: PyIceberg adds partition fields to an
// unpartitioned table and a sort order; DuckLake gets a new partitioning
// (old files keep none) and sort expressions, and DuckDB reads and prunes
// the files PyIceberg wrote under each spec.
func TestPyIcebergPartitionEvolution(t *testing.T) {
	ns := "we" + randomHex(4)
	env := writeEnv(t, ns)
	var got struct {
		compareReport
		Spec     [][]string `json:"spec"`
		SpecID   int        `json:"spec_id"`
		DayCount []int      `json:"day_count"`
	}
	pyWriteScenario(t, env, "evolve", ns, &got)
	got.check(t, map[string]int{"unpartitioned": 20, "partitioned": 40, "after sort order": 50, "duckdb insert": 70, "delete": 45})
	if fmt.Sprint(got.Spec) != "[[cat identity] [ts_day day]]" || got.SpecID == 0 {
		t.Errorf("spec after evolution: %v (id %d)", got.Spec, got.SpecID)
	}
	if got.DayCount[0] != got.DayCount[1] || got.DayCount[0] != 1 {
		t.Errorf("rows of 2024-03-26: PyIceberg %d, DuckDB %d, want 1", got.DayCount[0], got.DayCount[1])
	}
	// The first files had no partition; the delete rewrote them under the
	// new spec.
	var parts, unpartitioned, live int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(DISTINCT partition_id), count(*) FILTER (WHERE partition_id IS NULL),
			count(*) FILTER (WHERE partition_id IS NULL AND d.end_snapshot IS NULL)
		FROM ducklake_data_file d JOIN ducklake_table t USING (table_id) WHERE t.table_name = 'e'`).Scan(&parts, &unpartitioned, &live); err != nil {
		t.Fatal(err)
	}
	if parts != 1 || unpartitioned == 0 || live != 0 {
		t.Errorf("files of e: %d partitionings besides none, %d unpartitioned files, %d of them live", parts, unpartitioned, live)
	}
	var sortExpr string
	if err := env.pool.QueryRow(context.Background(), `SELECT string_agg(e.expression || ' ' || e.sort_direction, ',') FROM ducklake_sort_expression e
		JOIN ducklake_sort_info i USING (sort_id) WHERE i.end_snapshot IS NULL`).Scan(&sortExpr); err != nil || sortExpr != "id DESC" {
		t.Errorf("sort order in DuckLake: %q (%v)", sortExpr, err)
	}
}

// TestPyIcebergSpecsAndOrders: the partition spec and sort order PyIceberg
// creates a table with come back as created — field names and ids, a
// truncate[2] field DuckLake has no transform for, an order by a bucket —
// and filters on the truncated column find every row: files whose
// truncate value the statistics cannot give (DuckDB's, of mixed prefixes)
// are served under the spec without it, never with a made-up value.
func TestPyIcebergSpecsAndOrders(t *testing.T) {
	ns := "ws" + randomHex(4)
	env := writeEnv(t, ns)
	type served struct {
		SpecID  int     `json:"spec_id"`
		Spec    [][]any `json:"spec"`
		OrderID int     `json:"order_id"`
		Order   [][]any `json:"order"`
		Specs   [][]any `json:"specs"`
	}
	var got struct {
		compareReport
		Created     served              `json:"created"`
		Loaded      served              `json:"loaded"`
		AfterDuckDB served              `json:"after_duckdb"`
		Filters     map[string][]int    `json:"filters"`
		FilesBySpec map[string][]string `json:"files_by_spec"`
		Planned     []int               `json:"planned"`
	}
	pyWriteScenario(t, env, "specs", ns, &got)
	got.check(t, map[string]int{"append": 40, "duckdb insert mixed": 70, "duckdb insert one prefix": 100, "duckdb insert inlined": 102,
		"append after duckdb": 107})
	wantSpec := "[[1000 shard bucket[4] 1] [1001 name_prefix truncate[2] 2]]"
	wantOrder := "[[bucket[4] 1 ASC NULLS FIRST] [identity 2 DESC NULLS FIRST]]"
	for name, s := range map[string]served{"created": got.Created, "loaded": got.Loaded, "after DuckDB": got.AfterDuckDB} {
		if fmt.Sprint(s.Spec) != wantSpec || s.SpecID != 0 {
			t.Errorf("%s: spec %d %v, want 0 %s", name, s.SpecID, s.Spec, wantSpec)
		}
		if fmt.Sprint(s.Order) != wantOrder || s.OrderID != 1 {
			t.Errorf("%s: sort order %d %v, want 1 %s", name, s.OrderID, s.Order, wantOrder)
		}
	}
	// Beside the client's spec: the one without the truncate field and an
	// unpartitioned one, both listed from the start so that no client picks
	// their ids.
	if want := "[[0 [shard name_prefix]] [1 []] [2 [shard]]]"; fmt.Sprint(got.Loaded.Specs) != want || fmt.Sprint(got.AfterDuckDB.Specs) != want {
		t.Errorf("specs %v then %v, want %s", got.Loaded.Specs, got.AfterDuckDB.Specs, want)
	}
	for sql, n := range got.Filters {
		if n[0] != n[1] || n[0] == 0 {
			t.Errorf("WHERE %s: PyIceberg %d rows, DuckDB %d", sql, n[0], n[1])
		}
	}
	// PyIceberg's files and DuckDB's single-prefix files carry truncate
	// values; DuckDB's mixed ones are under spec 2, the inlined rows under
	// spec 1.
	if len(got.FilesBySpec["1"]) != 1 || len(got.FilesBySpec["2"]) == 0 || len(got.FilesBySpec["0"]) == 0 {
		t.Errorf("files by spec: %v", got.FilesBySpec)
	}
	for _, v := range got.FilesBySpec["0"] {
		if !slices.Contains([]string{"aa", "ab", "ba", "bb", "qq"}, v) {
			t.Errorf("a file of spec 0 has truncate value %q", v)
		}
	}
	if !slices.Contains(got.FilesBySpec["0"], "qq") {
		t.Errorf("DuckDB's file of one prefix has no truncate value: %v", got.FilesBySpec)
	}
	if got.Planned[0] >= got.Planned[1] {
		t.Errorf("a filter on one prefix plans %d of %d files: no pruning", got.Planned[0], got.Planned[1])
	}
	// DuckLake holds the bucket key only, and no sort (it cannot sort by a
	// bucket); the sidecar holds the rest.
	var keys, sorts int
	if err := env.pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM ducklake_partition_column c JOIN ducklake_partition_info i USING (partition_id)
				WHERE i.table_id = t.table_id AND i.end_snapshot IS NULL),
			(SELECT count(*) FROM ducklake_sort_info s WHERE s.table_id = t.table_id AND s.end_snapshot IS NULL)
		FROM ducklake_table t WHERE t.table_name = 'sp' AND t.end_snapshot IS NULL`).Scan(&keys, &sorts); err != nil {
		t.Fatal(err)
	}
	if keys != 1 || sorts != 0 {
		t.Errorf("DuckLake partition keys %d, sorts %d; want 1 and 0", keys, sorts)
	}
}
