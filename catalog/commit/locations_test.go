package commit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// countingStore counts the reads that reach object storage.
type countingStore struct {
	*objstore.MemStore
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, loc objstore.Location, max int64) ([]byte, error) {
	c.gets.Add(1)
	return c.MemStore.Get(ctx, loc, max)
}

// badLocations are the locations a client may name for a file of table
// s.t (s3://lake/data/s/t) that the commit path refuses, all alike as
// outside the table's location (ErrForbidden): what objstore.Parse refuses
// and what is not within. The first is the one catalog/commit's under()
// and catalog/rest's underDir() disagreed on.
var badLocations = []struct{ name, loc string }{
	{"a trailing ..", "s3://lake/data/s/t/x/.."},
	{"a .. climbing out", "s3://lake/data/s/t/../u/f.avro"},
	{"a .. climbing back in", "s3://lake/data/s/../s/t/f.avro"},
	{"a . segment", "s3://lake/data/s/t/./f.avro"},
	{"an empty segment", "s3://lake/data/s/t//f.avro"},
	{"backslashes", `s3://lake/data/s/t\..\u\f.avro`},
	{"a control character", "s3://lake/data/s/t/f\x00.avro"},
	{"another scheme", "gs://lake/data/s/t/f.avro"},
	{"a relative path", "t/f.avro"},
	{"a sibling whose name extends the table's", "s3://lake/data/s/t2/f.avro"},
	{"the table's directory", "s3://lake/data/s/t/"},
	{"the namespace", "s3://lake/data/s/f.avro"},
	{"another bucket", "s3://other/data/s/t/f.avro"},
	{"another bucket's case", "s3://LAKE/data/s/t/f.avro"},
	{"a local path", "/lake/data/s/t/f.avro"},
}

// put stores body at loc when loc names an object at all: a location the
// catalog must refuse is never read, whatever is there.
func put(m *objstore.MemStore, loc string, body []byte) {
	if l, err := objstore.Parse(loc); err == nil && !l.IsDir() {
		m.Set(loc, body)
	}
}

// clientSnapshot writes a manifest with one data file at dataPath and a
// manifest list naming it at listPath/manifestPath, and returns the updates
// that commit it as snapshot id.
func (l *lake) clientSnapshot(id int64, listPath, manifestPath, dataPath string) []Update {
	l.t.Helper()
	schema := &iceberg.Schema{Fields: []iceberg.NestedField{{ID: 1, Name: "id", Type: iceberg.Primitive(iceberg.TypeLong)}}}
	mw, err := iceberg.NewManifestWriter(iceberg.ManifestInfo{FormatVersion: 2, Content: iceberg.ManifestData, Schema: schema})
	if err != nil {
		l.t.Fatal(err)
	}
	body, mf, err := mw.Write([]iceberg.ManifestEntry{{Status: iceberg.StatusAdded, File: &iceberg.DataFile{
		Content: iceberg.ContentData, Path: dataPath, Format: "PARQUET", RecordCount: 3, FileSizeBytes: 400}}}, 0)
	if err != nil {
		l.t.Fatal(err)
	}
	mf.Path, mf.AddedSnapshotID = manifestPath, id
	put(l.objects, manifestPath, body)
	list, err := iceberg.WriteManifestList(iceberg.ManifestListInfo{FormatVersion: 2, SnapshotID: id, SequenceNumber: 1}, []iceberg.ManifestFile{mf})
	if err != nil {
		l.t.Fatal(err)
	}
	put(l.objects, listPath, list)
	return []Update{
		{Action: ActionAddSnapshot, Snapshot: &iceberg.Snapshot{SnapshotID: id, ManifestList: listPath, Summary: map[string]string{"operation": iceberg.OpAppend}}},
		{Action: ActionSetSnapshotRef, RefName: "main", Type: "branch", SnapshotID: &id},
	}
}

// countingLake is a lake whose catalog counts its reads, with live tables
// of the given names (each at its default location) and the head snapshot.
func countingLake(t *testing.T, tables ...string) (*lake, *countingStore, int64) {
	l := newLake(t)
	ctx := context.Background()
	store := &countingStore{MemStore: l.objects}
	l.cat = New(Config{Objects: store})
	schema := &iceberg.Schema{Fields: []iceberg.NestedField{{ID: 1, Name: "id", Type: iceberg.Primitive(iceberg.TypeLong)}}}
	for _, name := range tables {
		l.mustCreate(&CreateTableRequest{Name: name, Schema: schema})
	}
	var head int64
	if err := l.pool.QueryRow(ctx, `SELECT max(snapshot_id) FROM ducklake_snapshot`).Scan(&head); err != nil {
		t.Fatal(err)
	}
	return l, store, head
}

// TestCommitRefusesLocations: the commit path refuses every bad location
// as a manifest list, a manifest and a data file, before reading it (and
// for a manifest list, before reading anything), and records nothing;
// locations that are literally inside the table are taken.
func TestCommitRefusesLocations(t *testing.T) {
	l, store, _ := countingLake(t, "t", "t2")
	const dir = "s3://lake/data/s/t/metadata/"
	files := func() string { return fmt.Sprint(l.query(`SELECT count(*) FROM ducklake_data_file`)) }
	id := int64(100)
	for _, place := range []struct {
		name  string
		reads int64 // before the refusal
		paths func(bad string) (list, manifest, data string)
	}{
		{"manifest list", 0, func(bad string) (string, string, string) {
			return bad, dir + "m.avro", "s3://lake/data/s/t/data/f.parquet"
		}},
		{"manifest", 1, func(bad string) (string, string, string) {
			return dir + "snap.avro", bad, "s3://lake/data/s/t/data/f.parquet"
		}},
		{"data file", 2, func(bad string) (string, string, string) { return dir + "snap.avro", dir + "m.avro", bad }},
	} {
		for _, tc := range badLocations {
			id++
			list, manifest, data := place.paths(tc.loc)
			updates := l.clientSnapshot(id, list, manifest, data)
			store.gets.Store(0)
			_, err := l.commit("t", &TableCommit{Updates: updates})
			if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "is not inside the table location s3://lake/data/s/t") {
				t.Errorf("%s at %s (%q): %v, want ErrForbidden", place.name, tc.name, tc.loc, err)
			}
			if n := store.gets.Load(); n != place.reads {
				t.Errorf("%s at %s: %d reads before the refusal, want %d", place.name, tc.name, n, place.reads)
			}
			if got := files(); got != "[[0]]" {
				t.Fatalf("%s at %s: data files recorded: %s", place.name, tc.name, got)
			}
		}
	}
	// A directory inside the table is no manifest list.
	id++
	if _, err := l.commit("t", &TableCommit{Updates: l.clientSnapshot(id, dir, dir+"m.avro", "s3://lake/data/s/t/data/f.parquet")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a directory as the manifest list: %v", err)
	}
	// A percent-encoding is a literal key, inside the table; s3a:// is
	// s3://.
	for _, p := range []string{"s3://lake/data/s/t/data/%2e%2e/f.parquet", "s3a://lake/data/s/t/data/g.parquet"} {
		id++
		if _, err := l.commit("t", &TableCommit{Updates: l.clientSnapshot(id, dir+fmt.Sprint(id)+".avro", dir+fmt.Sprint(id)+"-m.avro", p)}); err != nil {
			t.Errorf("data file %s: %v", p, err)
		}
	}
	if got := fmt.Sprint(l.query(`SELECT path, path_is_relative FROM ducklake_data_file ORDER BY 1`)); got != "[[data/%2e%2e/f.parquet true] [data/g.parquet true]]" {
		t.Errorf("data files recorded: %s", got)
	}
}

// TestCommitDirChecksBeforeReading: what the REST catalog checks before it
// reads a commit's manifests (CommitDir): a table the commit creates may
// only be placed inside its namespace, away from live tables, and its
// manifest lists inside it; the refusal is the same whether or not the
// manifest list exists, and nothing is read.
func TestCommitDirChecksBeforeReading(t *testing.T) {
	l, store, head := countingLake(t, "live")
	ctx := context.Background()
	for _, tc := range []struct {
		location string
		kind     error
	}{
		{"s3://lake/data/u/x", ErrForbidden},        // another namespace
		{"s3://other/x", ErrForbidden},              // another bucket
		{"s3://lake/data/s", ErrForbidden},          // the namespace itself
		{"s3://lake/data/s/..", ErrInvalid},         // its parent, spelled with ..
		{"s3://lake/data/s/x/..", ErrInvalid},       // itself, spelled with ..
		{"s3://lake/data/s/./live", ErrInvalid},     // a live table's, spelled with .
		{"s3://lake/data/s/live", ErrForbidden},     // a live table's
		{"s3://lake/data/s/live/sub", ErrForbidden}, // inside a live table's
	} {
		var answers []string
		for _, key := range []string{"/metadata/exists.avro", "/metadata/absent.avro"} {
			list := tc.location + key
			if strings.Contains(key, "exists") {
				put(l.objects, list, []byte("not avro"))
			}
			id := int64(9)
			req := &TableCommit{Updates: []Update{
				{Action: ActionSetLocation, Location: tc.location},
				{Action: ActionAddSnapshot, Snapshot: &iceberg.Snapshot{SnapshotID: id, ManifestList: list, Summary: map[string]string{"operation": iceberg.OpAppend}}},
			}}
			store.gets.Store(0)
			_, err := l.cat.CommitDir(ctx, l.pool, head, Target{Namespace: l.ns, Name: "probe"}, req)
			if !errors.Is(err, tc.kind) {
				t.Errorf("set-location %s: %v, want %v", tc.location, err, tc.kind)
			}
			if store.gets.Load() != 0 {
				t.Errorf("set-location %s: %d reads", tc.location, store.gets.Load())
			}
			answers = append(answers, fmt.Sprint(err))
		}
		if answers[0] != answers[1] {
			t.Errorf("set-location %s: %q and %q", tc.location, answers[0], answers[1])
		}
	}
	// Inside the namespace, away from live tables: the manifest list must
	// be inside the table's location.
	req := &TableCommit{Updates: []Update{
		{Action: ActionSetLocation, Location: "s3://lake/data/s/new"},
		{Action: ActionAddSnapshot, Snapshot: &iceberg.Snapshot{SnapshotID: 1, ManifestList: "s3://lake/data/s/live/metadata/snap.avro"}},
	}}
	if _, err := l.cat.CommitDir(ctx, l.pool, head, Target{Namespace: l.ns, Name: "probe"}, req); !errors.Is(err, ErrForbidden) {
		t.Errorf("a manifest list in another table: %v", err)
	}
	req.Updates[1].Snapshot.ManifestList = "s3://lake/data/s/new/metadata/snap.avro"
	if d, err := l.cat.CommitDir(ctx, l.pool, head, Target{Namespace: l.ns, Name: "probe"}, req); err != nil || d.String() != "s3://lake/data/s/new" {
		t.Errorf("a table of its own: %v, %v", d, err)
	}
	if store.gets.Load() != 0 {
		t.Errorf("%d reads", store.gets.Load())
	}
}

// TestReadRegistrationChecksBeforeReading: a metadata file to register
// outside the namespace, or inside a live table's location, is refused
// unread; one whose table location is no table's own is refused before
// its manifests are read.
func TestReadRegistrationChecksBeforeReading(t *testing.T) {
	l, store, head := countingLake(t, "live")
	ctx := context.Background()
	for _, tc := range []struct {
		file  string
		kind  error
		reads int64
	}{
		{"s3://lake/data/u/x.metadata.json", ErrForbidden, 0},
		{"s3://lake/data/s/../u/x.metadata.json", ErrForbidden, 0},
		{"s3://lake/data/s/live/metadata/v1.metadata.json", ErrExists, 0},
	} {
		put(l.objects, tc.file, []byte(registerSeed))
		store.gets.Store(0)
		if _, err := l.cat.ReadRegistration(ctx, l.pool, head, l.ns, "r", tc.file); !errors.Is(err, tc.kind) || store.gets.Load() != tc.reads {
			t.Errorf("metadata file %s: %v after %d reads, want %v", tc.file, err, store.gets.Load(), tc.kind)
		}
	}
	for i, tc := range []struct {
		location string
		kind     error
	}{
		{"s3://lake/data/s/..", ErrInvalid},
		{"s3://lake/data/s/./live", ErrInvalid},
		{"s3://lake/data/s/live", ErrForbidden},
		{"s3://lake/data/u/t", ErrForbidden},
	} {
		md := strings.Replace(registerSeed, `"location":"s3://lake/data/s/t"`, fmt.Sprintf("%q:%q", "location", tc.location), 1)
		file := fmt.Sprintf("s3://lake/data/s/reg/%d.metadata.json", i)
		l.objects.Set(file, []byte(md))
		store.gets.Store(0)
		if _, err := l.cat.ReadRegistration(ctx, l.pool, head, l.ns, "r", file); !errors.Is(err, tc.kind) || store.gets.Load() != 1 {
			t.Errorf("table location %s: %v after %d reads, want %v after the metadata file's", tc.location, err, store.gets.Load(), tc.kind)
		}
	}
}
