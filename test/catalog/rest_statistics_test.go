package catalog_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

// statsMeta is the part of a table's metadata statistics files live in.
type statsMeta struct {
	Location  string `json:"location"`
	Snapshots []struct {
		ID int64 `json:"snapshot-id"`
	} `json:"snapshots"`
	Statistics          []map[string]any `json:"statistics"`
	PartitionStatistics []map[string]any `json:"partition-statistics"`
}

func (e *restEnv) statsMeta(t *testing.T, tok, ns, table string) statsMeta {
	t.Helper()
	var m statsMeta
	e.metaInto(t, tok, ns, table, &m)
	return m
}

// statsRows counts the statistics files the catalog keeps of table ns.name
// (by its latest row's id, dropped or not).
func (e *restEnv) statsRows(t *testing.T, tableID int64) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM duckicelake_table_statistics WHERE table_id = $1`, tableID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *restEnv) tableID(t *testing.T, ns, name string) int64 {
	t.Helper()
	var id int64
	if err := e.pool.QueryRow(context.Background(), `SELECT t.table_id FROM ducklake_table t JOIN ducklake_schema s USING (schema_id)
		WHERE s.schema_name = $1 AND t.table_name = $2 ORDER BY t.begin_snapshot DESC LIMIT 1`, ns, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// puffin is a StatisticsFile as Trino's ANALYZE commits it (an NDV sketch
// per column), as JSON would decode it.
func puffin(snapshot int64, path string) map[string]any {
	return roundTrip(map[string]any{
		"snapshot-id": snapshot, "statistics-path": path, "file-size-in-bytes": 413, "file-footer-size-in-bytes": 309,
		"blob-metadata": []any{map[string]any{"type": "apache-datasketches-theta-v1", "snapshot-id": snapshot, "sequence-number": 2,
			"fields": []any{1}, "properties": map[string]any{"ndv": "5"}}},
	})
}

func partitionStats(snapshot int64, path string) map[string]any {
	return roundTrip(map[string]any{"snapshot-id": snapshot, "statistics-path": path, "file-size-in-bytes": 1024})
}

func roundTrip(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// TestCommitStatistics: set-statistics and set-partition-statistics keep
// the file entry exactly as committed and LoadTable serves it (Trino's
// SHOW STATS reads the NDV sketches from it); remove-* removes it; a file
// outside the table's location (another table's, elsewhere in the bucket,
// dot segments) is refused as every file a client names is (403), and one
// about a snapshot that is not the table's — another table's, or none — is
// refused (400), changing nothing; expiring a snapshot removes its
// statistics; a dropped table's go with it, and a table recreated under
// the same name inherits none.
func TestCommitStatistics(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.sales", "CREATE TABLE l.sales.orders (id BIGINT)",
		"INSERT INTO l.sales.orders SELECT i FROM range(3) r(i)", "INSERT INTO l.sales.orders SELECT i FROM range(2) r(i)",
		"CREATE TABLE l.sales.other (id BIGINT)", "INSERT INTO l.sales.other VALUES (1)")
	tok := env.token("writer")
	path := "/v1/lake/namespaces/sales/tables/orders"
	m := env.statsMeta(t, tok, "sales", "orders")
	if len(m.Snapshots) != 2 || m.Statistics != nil || m.PartitionStatistics != nil {
		t.Fatalf("orders before: %+v", m)
	}
	s1, s2 := m.Snapshots[0].ID, m.Snapshots[1].ID
	other := env.statsMeta(t, tok, "sales", "other")
	ownFile := m.Location + "/metadata/20261202_stats-" + "a1.stats"
	commit := func(updates ...map[string]any) response {
		return env.do("POST", path, tok, commitBody(nil, updates...))
	}
	setStats := func(f map[string]any) map[string]any {
		return map[string]any{"action": "set-statistics", "snapshot-id": f["snapshot-id"], "statistics": f}
	}

	want := puffin(s2, ownFile)
	r := commit(setStats(want))
	if r.code != 200 {
		t.Fatalf("set-statistics: %d %s", r.code, r.body)
	}
	var resp struct {
		Metadata statsMeta `json:"metadata"`
	}
	r.decode(t, &resp)
	if !reflect.DeepEqual(resp.Metadata.Statistics, []map[string]any{want}) {
		t.Errorf("the commit's answer: statistics %v, want %v", resp.Metadata.Statistics, want)
	}
	if got := env.statsMeta(t, tok, "sales", "orders").Statistics; !reflect.DeepEqual(got, []map[string]any{want}) {
		t.Errorf("LoadTable: statistics %v, want %v", got, want)
	}
	part := partitionStats(s2, m.Location+"/metadata/partition-stats-"+"a1.parquet")
	if r := commit(map[string]any{"action": "set-partition-statistics", "partition-statistics": part}); r.code != 200 {
		t.Fatalf("set-partition-statistics: %d %s", r.code, r.body)
	}
	if got := env.statsMeta(t, tok, "sales", "orders"); !reflect.DeepEqual(got.PartitionStatistics, []map[string]any{part}) ||
		!reflect.DeepEqual(got.Statistics, []map[string]any{want}) {
		t.Errorf("LoadTable: partition-statistics %v, want %v (statistics %v)", got.PartitionStatistics, part, got.Statistics)
	}

	refused := []struct {
		name    string
		update  map[string]any
		code    int
		errType string
	}{
		{"another table's files", setStats(puffin(s2, other.Location+"/metadata/stolen.stats")), 403, "ForbiddenException"},
		{"a sibling prefix", setStats(puffin(s2, m.Location+"x/metadata/a.stats")), 403, "ForbiddenException"},
		{"dot segments into another table", setStats(puffin(s2, m.Location+"/../other/metadata/a.stats")), 403, "ForbiddenException"},
		{"elsewhere in the bucket", setStats(puffin(s2, "s3://lake/elsewhere/a.stats")), 403, "ForbiddenException"},
		{"partition statistics of another table's files", map[string]any{"action": "set-partition-statistics",
			"partition-statistics": partitionStats(s2, other.Location+"/metadata/p.parquet")}, 403, "ForbiddenException"},
		{"a snapshot of another table", setStats(puffin(other.Snapshots[0].ID, ownFile)), 400, "BadRequestException"},
		{"no such snapshot", setStats(puffin(s2+1000, ownFile)), 400, "BadRequestException"},
		{"partition statistics of another table's snapshot", map[string]any{"action": "set-partition-statistics",
			"partition-statistics": partitionStats(other.Snapshots[0].ID, ownFile)}, 400, "BadRequestException"},
		{"deprecated snapshot-id disagrees", map[string]any{"action": "set-statistics", "snapshot-id": s1, "statistics": puffin(s2, ownFile)}, 400, "BadRequestException"},
		{"no blob-metadata", map[string]any{"action": "set-statistics", "statistics": map[string]any{"snapshot-id": s2,
			"statistics-path": ownFile, "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1}}, 400, "BadRequestException"},
		{"remove-statistics without snapshot-id", map[string]any{"action": "remove-statistics"}, 400, "BadRequestException"},
	}
	for _, c := range refused {
		before := catalogState(t, env)
		r := commit(c.update)
		if r.code != c.code || r.errType() != c.errType {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.code, r.body, c.code, c.errType)
		}
		if after := catalogState(t, env); after != before {
			t.Errorf("%s changed the catalog: %s → %s", c.name, before, after)
		}
	}
	if got := env.statsMeta(t, tok, "sales", "orders").Statistics; !reflect.DeepEqual(got, []map[string]any{want}) {
		t.Errorf("after the refusals: statistics %v, want %v", got, want)
	}

	// A second file, for s1; then s2's removed: s1's stays.
	first := puffin(s1, m.Location+"/metadata/b2.stats")
	if r := commit(setStats(first)); r.code != 200 {
		t.Fatalf("set-statistics %d: %d %s", s1, r.code, r.body)
	}
	if got := env.statsMeta(t, tok, "sales", "orders").Statistics; !reflect.DeepEqual(got, []map[string]any{first, want}) {
		t.Errorf("two files: statistics %v", got)
	}
	if r := commit(map[string]any{"action": "remove-statistics", "snapshot-id": s2},
		map[string]any{"action": "remove-partition-statistics", "snapshot-id": s2}); r.code != 200 {
		t.Fatalf("remove-statistics: %d %s", r.code, r.body)
	}
	got := env.statsMeta(t, tok, "sales", "orders")
	if !reflect.DeepEqual(got.Statistics, []map[string]any{first}) || got.PartitionStatistics != nil {
		t.Errorf("after remove-statistics %d: statistics %v, partition-statistics %v", s2, got.Statistics, got.PartitionStatistics)
	}

	// Expiring s1 removes its statistics file with it.
	id := env.tableID(t, "sales", "orders")
	if r := commit(map[string]any{"action": "remove-snapshots", "snapshot-ids": []int64{s1}}); r.code != 200 {
		t.Fatalf("remove-snapshots %d: %d %s", s1, r.code, r.body)
	}
	if got := env.statsMeta(t, tok, "sales", "orders").Statistics; got != nil || env.statsRows(t, id) != 0 {
		t.Errorf("after expiring %d: statistics %v, %d rows kept", s1, got, env.statsRows(t, id))
	}

	// Dropped with the table; nothing for its successor under the name.
	if r := commit(setStats(puffin(s2, ownFile))); r.code != 200 {
		t.Fatalf("set-statistics again: %d %s", r.code, r.body)
	}
	if r := env.do("DELETE", path, tok, nil); r.code != 204 {
		t.Fatalf("drop: %d %s", r.code, r.body)
	}
	if n := env.statsRows(t, id); n != 0 {
		t.Errorf("the dropped table keeps %d statistics files", n)
	}
	env.duck("CREATE TABLE l.sales.orders (id BIGINT)", "INSERT INTO l.sales.orders VALUES (7)")
	if got := env.statsMeta(t, tok, "sales", "orders"); got.Statistics != nil || got.PartitionStatistics != nil {
		t.Errorf("the recreated table: statistics %v, partition-statistics %v", got.Statistics, got.PartitionStatistics)
	}
}
