package catalog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"go.uber.org/zap/zaptest"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Issue 15 item 5: the catalog writes the Iceberg metadata of every commit
// itself, so the manifest lists and manifests an engine wrote for it are
// referenced by nothing once the commit is durable; they are scheduled for
// deletion in the commit's transaction and deleted by the cleanup sweep.

// servedTable is a table's Iceberg metadata as LoadTable serves it.
type servedTable struct {
	MetadataLocation string                `json:"metadata-location"`
	Metadata         iceberg.TableMetadata `json:"metadata"`
}

func loadServed(t *testing.T, env *restEnv, tok, ns, name string) servedTable {
	t.Helper()
	var s servedTable
	s.MetadataLocation = env.metaInto(t, tok, ns, name, &s.Metadata).Location
	return s
}

// referenced is every file the served metadata names: metadata files,
// every snapshot's manifest list, their manifests and the data and delete
// files those list, read from storage with the root keys.
func referenced(t *testing.T, store objstore.Store, s servedTable) map[string]bool {
	t.Helper()
	ctx := context.Background()
	get := func(p string) []byte {
		loc, err := objstore.Parse(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := store.Get(ctx, loc, 64<<20)
		if err != nil {
			t.Fatalf("served metadata names %s: %v", p, err)
		}
		return b
	}
	out := map[string]bool{s.MetadataLocation: true}
	for _, m := range s.Metadata.MetadataLog {
		out[m.MetadataFile] = true
	}
	for _, snap := range s.Metadata.Snapshots {
		out[snap.ManifestList] = true
		list, err := iceberg.ReadManifestList(get(snap.ManifestList))
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range list.Files {
			out[mf.Path] = true
			man, err := iceberg.ReadManifest(get(mf.Path))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range man.Entries {
				out[e.File.Path] = true
			}
		}
	}
	return out
}

// listPrefix lists every object under dir.
func listPrefix(t *testing.T, store objstore.Store, dir string) []string {
	t.Helper()
	d, err := objstore.ParseDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := store.List(context.Background(), d, func(o objstore.Object) error {
		out = append(out, o.Location.String())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func cleanup(t *testing.T, env *restEnv, store objstore.Store) commit.Cleaned {
	t.Helper()
	got, err := commit.New(commit.Config{Objects: store}).CleanupScheduled(context.Background(), env.pool, time.Now(), zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	return got
}

// TestEngineCommitsLeaveNoOrphans: iceberg-go creates a table and appends
// to it twice. Its manifest lists and manifests, which the served metadata
// does not reference, are scheduled for deletion by the commits; the
// cleanup (grace 0) deletes them, and then the table's prefix holds no
// manifest list or manifest the served metadata does not reference, every
// file it references still exists, and DuckDB and iceberg-go read the same
// rows as before. A drop with purge then leaves nothing under the prefix.
func TestEngineCommitsLeaveNoOrphans(t *testing.T) {
	ns := "or" + randomHex(4)
	env := writeEnv(t, ns)
	st := requireStack(t, true)
	store := objstore.NewS3(st.root())
	ctx := context.Background()
	cat, ident, tbl := icebergGoTable(t, env, ns)
	var err error
	for _, lo := range []int{0, 30} {
		txn := tbl.NewTransaction()
		if err := txn.AppendTable(ctx, icebergGoBatch(t, tbl.Schema(), lo, 30), 1000, nil); err != nil {
			t.Fatal(err)
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			t.Fatalf("append %d: %v", lo, err)
		}
	}
	const want = "[60 1770]"
	reads := func(when string) {
		t.Helper()
		if got := fmt.Sprint(env.duck("SELECT count(*), sum(id) FROM l." + ns + ".g")[0][0]); got != want {
			t.Errorf("%s DuckDB reads %s, want %s", when, got, want)
		}
		tb, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		at, err := tb.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("%s iceberg-go scan: %v", when, err)
		}
		defer at.Release()
		var n, sum int64
		rd := array.NewTableReader(at, 0)
		defer rd.Release()
		for rd.Next() {
			ids := rd.RecordBatch().Column(0).(*array.Int64)
			for i := 0; i < ids.Len(); i++ {
				n, sum = n+1, sum+ids.Value(i)
			}
		}
		if got := fmt.Sprint([]int64{n, sum}); got != want {
			t.Errorf("%s iceberg-go reads %s, want %s", when, got, want)
		}
	}
	reads("before the cleanup")

	tok := clientToken(t, env, "writer-"+ns, "pw")
	served := loadServed(t, env, tok, ns, "g")
	prefix := strings.TrimSuffix(served.Metadata.Location, "/") + "/"
	refs := referenced(t, store, served)
	var clientFiles []string
	for _, p := range listPrefix(t, store, prefix) {
		if strings.HasSuffix(p, ".avro") && !refs[p] && !materialize.Generated(p) {
			clientFiles = append(clientFiles, p)
		}
	}
	// Two appends: two manifest lists and at least two manifests.
	if len(clientFiles) < 4 {
		t.Fatalf("iceberg-go's unreferenced manifests under %s: %v, want at least 4", prefix, clientFiles)
	}
	sched := scheduled(t, env)
	for _, p := range clientFiles {
		if !slices.Contains(sched, p) {
			t.Errorf("%s is referenced by nothing and not scheduled for deletion (scheduled: %v)", p, sched)
		}
	}
	for _, p := range sched {
		if refs[p] || !strings.HasPrefix(p, prefix) {
			t.Errorf("scheduled for deletion: %s, referenced by the served metadata or outside %s", p, prefix)
		}
	}

	if got := cleanup(t, env, store); got.Deleted != len(sched) || got.Refused != 0 {
		t.Errorf("cleanup: %+v, want %d deleted and none refused", got, len(sched))
	}
	if left := scheduled(t, env); len(left) != 0 {
		t.Errorf("still scheduled after the cleanup: %v", left)
	}
	served = loadServed(t, env, tok, ns, "g")
	refs = referenced(t, store, served) // fails on any referenced file that is gone
	after := listPrefix(t, store, prefix)
	for _, p := range after {
		if strings.HasSuffix(p, ".avro") && !refs[p] {
			t.Errorf("after the cleanup %s remains, referenced by nothing the catalog serves", p)
		}
	}
	for p := range refs {
		if !slices.Contains(after, p) {
			t.Errorf("after the cleanup %s, which the served metadata references, is gone", p)
		}
	}
	reads("after the cleanup")

	// Purge: the whole prefix goes, whatever was left in it.
	if r := env.do("DELETE", "/v1/lake/namespaces/"+ns+"/tables/g?purgeRequested=true", tok, nil); r.code != 204 {
		t.Fatalf("drop with purge: %d %s", r.code, r.body)
	}
	if left := listPrefix(t, store, prefix); len(left) != 0 {
		t.Errorf("after the purge %s holds %v", prefix, left)
	}
}

// TestOrphanCleanupStaysInside: what a commit schedules and what the
// cleanup deletes never leave the table's files. A commit whose manifest
// lists a manifest outside its table is refused (403) and schedules
// nothing; one whose manifest carries a name materialize gives its own
// files gets only its manifest list scheduled, never that manifest or its
// data file. The cleanup refuses rows (written straight into Postgres)
// outside the data path and every table, climbing out with "..", or
// naming a file a table records, and keeps those files and rows.
func TestOrphanCleanupStaysInside(t *testing.T) {
	ns := "oi" + randomHex(4)
	env := writeEnv(t, ns)
	st := requireStack(t, true)
	store := objstore.NewS3(st.root())
	ctx := context.Background()
	admin := env.token("admin")
	for _, name := range []string{"t", "u"} {
		if r := env.do("POST", "/v1/lake/namespaces/"+ns+"/tables", admin, map[string]any{"name": name, "schema": locSchema}); r.code != 200 {
			t.Fatalf("create %s.%s: %d %s", ns, name, r.code, r.body)
		}
	}
	tok := clientToken(t, env, "writer-"+ns, "pw")
	tLoc := strings.TrimSuffix(loadServed(t, env, tok, ns, "t").Metadata.Location, "/")
	uLoc := strings.TrimSuffix(loadServed(t, env, tok, ns, "u").Metadata.Location, "/")
	key := func(loc string) string { return strings.TrimPrefix(loc, "s3://lake/") }
	exists := func(loc string) bool { return objectExists(t, st, loc) }
	commitTo := func(updates []map[string]any) response {
		return env.do("POST", "/v1/lake/namespaces/"+ns+"/tables/t", tok, map[string]any{"requirements": []any{}, "updates": updates})
	}

	id := time.Now().UnixNano() % 1e12
	// A manifest in u's location, listed by a manifest list in t's.
	outside := uLoc + "/metadata/stolen-m0.avro"
	list := tLoc + "/metadata/snap-out.avro"
	r := commitTo(clientSnapshot(t, st, id, list, key(list), outside, key(outside), tLoc+"/data/x.parquet"))
	if code, typ, _ := errorModel(t, r); r.code != 403 || code != 403 || typ != "ForbiddenException" {
		t.Errorf("a manifest in another table's location: %d %s", r.code, r.body)
	}
	if got := scheduled(t, env); len(got) != 0 {
		t.Errorf("the refused commit scheduled %v", got)
	}

	// A manifest named as materialize names its own, and its data file.
	lookalike := tLoc + "/metadata/1-0123456789abcdef-m0.avro"
	list = tLoc + "/metadata/snap-client.avro"
	data := tLoc + "/data/a.parquet"
	rootPut(t, st, "lake", key(data), []byte("PAR1 stands for a data file PAR1"))
	if r := commitTo(clientSnapshot(t, st, id+1, list, key(list), lookalike, key(lookalike), data)); r.code != 200 {
		t.Fatalf("commit: %d %s", r.code, r.body)
	}
	if got := scheduled(t, env); fmt.Sprint(got) != fmt.Sprint([]string{list}) {
		t.Errorf("scheduled %v, want only the manifest list %s", got, list)
	}

	elsewhere := "s3://lake/elsewhere-" + ns + "/x.bin"
	rootPut(t, st, "lake", key(elsewhere), []byte("not the catalog's"))
	for i, row := range []struct {
		path string
		rel  bool
	}{
		{elsewhere, false},
		{strings.TrimPrefix(data, restDataPath), true},
		{ns + "/t/../../elsewhere-" + ns + "/x.bin", true},
	} {
		if _, err := env.pool.Exec(ctx, `INSERT INTO ducklake_files_scheduled_for_deletion (data_file_id, path, path_is_relative, schedule_start)
			VALUES ($1, $2, $3, now() - interval '1 day')`, 900000+i, row.path, row.rel); err != nil {
			t.Fatal(err)
		}
	}
	if got := cleanup(t, env, store); got.Deleted != 1 || got.Refused != 3 {
		t.Errorf("cleanup: %+v, want the manifest list deleted and 3 rows refused", got)
	}
	if exists(list) {
		t.Errorf("%s survived the cleanup", list)
	}
	for _, p := range []string{elsewhere, data, lookalike, outside} {
		if !exists(p) {
			t.Errorf("the cleanup deleted %s", p)
		}
	}
	if got := scheduled(t, env); len(got) != 3 {
		t.Errorf("after the cleanup scheduled: %v, want the 3 refused rows kept", got)
	}
}

// TestRecordedFileLeavesTheSchedule: a path a commit records as a data
// file is taken off the deletion schedule, even one an earlier commit
// scheduled (here the manifest list of the first commit, which the second
// names as its data file), so DuckDB's ducklake_cleanup_old_files, which
// checks nothing, deletes every other scheduled manifest and keeps it.
func TestRecordedFileLeavesTheSchedule(t *testing.T) {
	ns := "os" + randomHex(4)
	env := writeEnv(t, ns)
	st := requireStack(t, true)
	if r := env.do("POST", "/v1/lake/namespaces/"+ns+"/tables", env.token("admin"), map[string]any{"name": "t", "schema": locSchema}); r.code != 200 {
		t.Fatalf("create %s.t: %d %s", ns, r.code, r.body)
	}
	tok := clientToken(t, env, "writer-"+ns, "pw")
	tLoc := strings.TrimSuffix(loadServed(t, env, tok, ns, "t").Metadata.Location, "/")
	key := func(loc string) string { return strings.TrimPrefix(loc, "s3://lake/") }
	id := time.Now().UnixNano() % 1e12
	var lists, manifests []string
	for i, data := range []string{tLoc + "/data/a.parquet", tLoc + "/metadata/list-0.avro"} {
		list, manifest := fmt.Sprintf("%s/metadata/list-%d.avro", tLoc, i), fmt.Sprintf("%s/metadata/manifest-%d.avro", tLoc, i)
		lists, manifests = append(lists, list), append(manifests, manifest)
		updates := clientSnapshot(t, st, id+int64(i), list, key(list), manifest, key(manifest), data)
		if r := env.do("POST", "/v1/lake/namespaces/"+ns+"/tables/t", tok, map[string]any{"requirements": []any{}, "updates": updates}); r.code != 200 {
			t.Fatalf("commit %d: %d %s", i, r.code, r.body)
		}
	}
	want := []string{lists[1], manifests[0], manifests[1]}
	if got := scheduled(t, env); !slices.Equal(got, want) {
		t.Errorf("scheduled %v, want %v", got, want)
	}
	env.duck("CALL ducklake_cleanup_old_files('l', cleanup_all => true)")
	if !objectExists(t, st, lists[0]) {
		t.Errorf("%s, a data file of the table now, was deleted", lists[0])
	}
	for _, p := range want {
		if objectExists(t, st, p) {
			t.Errorf("%s survived ducklake_cleanup_old_files", p)
		}
	}
}
