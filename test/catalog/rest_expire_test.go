package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

type expireRead struct {
	Snapshots []int64           `json:"snapshots"`
	Current   int64             `json:"current"`
	Refs      []string          `json:"refs"`
	PyIceberg int               `json:"pyiceberg"`
	DuckDB    int               `json:"duckdb"`
	Equal     bool              `json:"equal"`
	Travel    map[string]string `json:"duckdb_time_travel"`
}

func pyExpire(t *testing.T, env *restEnv, ns string, out any, phase string, ids ...int64) {
	t.Helper()
	args := []string{phase, env.url, "writer-" + ns + ":pw", env.dsn, restDataPath, ns}
	if len(ids) > 0 {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = fmt.Sprint(id)
		}
		args = append(args, strings.Join(s, ","))
	}
	testsupport.RunPython(t, out, "rest_pyiceberg_expire.py", args...)
}

// catalogState is what a refused commit must leave as it was.
func catalogState(t *testing.T, env *restEnv) string {
	t.Helper()
	var s string
	if err := env.pool.QueryRow(context.Background(), `SELECT concat_ws(' | ',
		(SELECT string_agg(snapshot_id::text, ',' ORDER BY snapshot_id) FROM ducklake_snapshot),
		(SELECT count(*) FROM ducklake_data_file), (SELECT count(*) FROM ducklake_delete_file),
		(SELECT count(*) FROM ducklake_files_scheduled_for_deletion), (SELECT count(*) FROM duckicelake_table_ref))`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// scheduled lists ducklake_files_scheduled_for_deletion as absolute paths.
func scheduled(t *testing.T, env *restEnv) []string {
	t.Helper()
	return env.queryStrings(t, `SELECT CASE WHEN path_is_relative THEN $1 || path ELSE path END
		FROM ducklake_files_scheduled_for_deletion ORDER BY 1`, restDataPath)
}

func objectExists(t *testing.T, st s3Stack, location string) bool {
	t.Helper()
	key, ok := strings.CutPrefix(location, "s3://"+st.bucket+"/")
	if !ok {
		t.Fatalf("%s is not in bucket %s", location, st.bucket)
	}
	_, err := st.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(st.bucket), Key: aws.String(key)})
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey") {
		return false
	}
	if err != nil {
		t.Fatalf("head %s: %v", location, err)
	}
	return true
}

// TestRemoveSnapshots: Iceberg's remove-snapshots on a table PyIceberg and
// DuckDB wrote. Removing the current snapshot is refused (400) and changes
// nothing; a tag on a removed
// snapshot goes with it. PyIceberg's expire_snapshots removes two older
// snapshots: LoadTable lists them no more, PyIceberg and DuckDB read the
// same current rows, DuckDB's time travel to them fails, and the one data
// file only they saw is scheduled for deletion, which DuckDB's
// ducklake_cleanup_old_files carries out in S3. A snapshot DuckDB expires
// itself leaves LoadTable right too.
func TestRemoveSnapshots(t *testing.T) {
	ns := "rx" + randomHex(4)
	env := writeEnv(t, ns)
	st := requireStack(t, true)
	var w struct {
		Steps map[string]int64    `json:"steps"`
		Files map[string][]string `json:"files"`
	}
	pyExpire(t, env, ns, &w, "write")
	s := w.Steps
	tok := env.token("admin")
	path := "/v1/lake/namespaces/" + ns + "/tables/e"
	remove := func(ids ...int64) response {
		return env.do("POST", path, tok, map[string]any{"requirements": []any{},
			"updates": []any{map[string]any{"action": "remove-snapshots", "snapshot-ids": ids}}})
	}

	// Snapshots whose stretch also changed table o expire for e alone
	// (TestRemoveSnapshotsForOneTable); this test keeps to e's own.
	before := catalogState(t, env)
	for name, c := range map[string]struct {
		id   int64
		want string
	}{
		"current": {s["append 4"], "current snapshot"},
	} {
		r := remove(c.id)
		if r.code != 400 || r.errType() != "BadRequestException" || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: %d %s, want 400 BadRequestException with %q", name, r.code, r.body, c.want)
		}
		t.Logf("%s: %d %s", name, r.code, r.body)
	}
	if after := catalogState(t, env); after != before {
		t.Errorf("refused commits changed the catalog: %s, then %s", before, after)
	}

	// A tag on a snapshot that is removed is removed with it (Iceberg's
	// TableMetadata.Builder drops refs left dangling).
	if r := env.do("POST", path, tok, map[string]any{"updates": []any{map[string]any{"action": "set-snapshot-ref",
		"ref-name": "v3", "type": "tag", "snapshot-id": s["append 3"]}}}); r.code != 200 {
		t.Fatalf("tag: %d %s", r.code, r.body)
	}
	if r := remove(s["append 3"], 424242); r.code != 200 {
		t.Fatalf("remove the tagged snapshot (and an unknown id, ignored): %d %s", r.code, r.body)
	}
	var got expireRead
	pyExpire(t, env, ns, &got, "read")
	if slices.Contains(got.Snapshots, s["append 3"]) || slices.Contains(got.Refs, "v3") {
		t.Errorf("after removing %d: snapshots %v, refs %v", s["append 3"], got.Snapshots, got.Refs)
	}

	// PyIceberg's expire_snapshots: the first append and the overwrite.
	gone := []int64{s["append"], s["overwrite"]}
	pyExpire(t, env, ns, &got, "expire", gone...)
	want := map[int64]bool{}
	for _, id := range got.Snapshots {
		want[id] = true
	}
	for _, id := range gone {
		if want[id] {
			t.Errorf("LoadTable still lists snapshot %d: %v", id, got.Snapshots)
		}
		if msg := got.Travel[fmt.Sprint(id)]; msg == "read" || !strings.Contains(strings.ToLower(msg), "snapshot") {
			t.Errorf("DuckDB's time travel to expired snapshot %d: %s", id, msg)
		}
	}
	t.Logf("DuckDB's time travel to expired snapshots: %v", got.Travel)
	if got.Current != s["append 4"] || !got.Equal || got.PyIceberg != 90 {
		t.Errorf("current %d (want %d): PyIceberg %d rows, DuckDB %d, equal %v; want 90", got.Current, s["append 4"], got.PyIceberg, got.DuckDB, got.Equal)
	}
	// Only the first append's file was seen by the removed snapshots alone
	// (the overwrite removed it; the overwrite's own file lives on).
	onlyGone := map[string]bool{}
	for _, id := range gone {
		for _, f := range w.Files[fmt.Sprint(id)] {
			onlyGone[f] = true
		}
	}
	for id, files := range w.Files {
		if !slices.Contains(gone, mustInt(t, id)) {
			for _, f := range files {
				delete(onlyGone, f)
			}
		}
	}
	if len(onlyGone) != 1 {
		t.Fatalf("files only the expired snapshots read: %v", onlyGone)
	}
	var file string
	for f := range onlyGone {
		file = f
	}
	// Beside PyIceberg's manifest lists and manifests, which its commits
	// scheduled (TestEngineCommitsLeaveNoOrphans).
	var sch []string
	for _, p := range scheduled(t, env) {
		if !strings.HasSuffix(p, ".avro") {
			sch = append(sch, p)
		}
	}
	if !slices.Equal(sch, []string{file}) {
		t.Errorf("scheduled for deletion: %v, want [%s]", sch, file)
	}
	if !objectExists(t, st, file) {
		t.Fatalf("%s is gone before the cleanup", file)
	}
	env.duck("CALL ducklake_cleanup_old_files('l', cleanup_all => true)")
	if objectExists(t, st, file) {
		t.Errorf("%s is still in S3 after ducklake_cleanup_old_files", file)
	}
	if sch := scheduled(t, env); len(sch) != 0 {
		t.Errorf("still scheduled after the cleanup: %v", sch)
	}

	// DuckDB expires a snapshot of e itself (no new snapshot); after the
	// next snapshot (a DuckDB insert into o) LoadTable no longer lists it
	// and the data is intact.
	env.duck(fmt.Sprintf("SELECT count(*) FROM ducklake_expire_snapshots('l', versions => [%d])", s["duckdb e and o"]))
	env.duck("INSERT INTO l." + ns + ".o VALUES (9999, 'x')")
	pyExpire(t, env, ns, &got, "read")
	if slices.Contains(got.Snapshots, s["duckdb e and o"]) || got.Current != s["append 4"] || !got.Equal || got.PyIceberg != 90 {
		t.Errorf("after DuckDB expired %d: snapshots %v, current %d, PyIceberg %d rows, DuckDB %d, equal %v",
			s["duckdb e and o"], got.Snapshots, got.Current, got.PyIceberg, got.DuckDB, got.Equal)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLoadTableAfterDuckDBExpiry: DuckDB's ducklake_expire_snapshots
// commits no snapshot, yet the history it leaves is shorter; LoadTable
// must not keep answering from a cached history that lists the expired
// snapshots.
func TestLoadTableAfterDuckDBExpiry(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.sales", "CREATE TABLE l.sales.ex (id INTEGER)",
		"INSERT INTO l.sales.ex VALUES (1)", "INSERT INTO l.sales.ex VALUES (2)", "INSERT INTO l.sales.ex VALUES (3)")
	tok := env.token("reader")
	snapshots := func() []int64 {
		var md struct {
			Snapshots []struct {
				ID int64 `json:"snapshot-id"`
			} `json:"snapshots"`
		}
		env.metaInto(t, tok, "sales", "ex", &md)
		var ids []int64
		for _, s := range md.Snapshots {
			ids = append(ids, s.ID)
		}
		return ids
	}
	before := snapshots()
	if len(before) != 3 {
		t.Fatalf("snapshots before the expiry: %v", before)
	}
	env.duck("SELECT count(*) FROM ducklake_expire_snapshots('l', older_than => now())")
	time.Sleep(100 * time.Millisecond) // the catalog's SnapshotTTL is 20 ms here
	if after := snapshots(); !slices.Equal(after, before[2:]) {
		t.Errorf("snapshots after DuckDB expired all but the current one: %v, want %v", after, before[2:])
	}
}
