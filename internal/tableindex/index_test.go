package tableindex

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fixture is a catalog with every shape a lookup must tell apart.
func fixture() Source {
	return Source{
		Snapshot: 42,
		Tables: []Table{
			{ID: 1, SchemaID: 10, Namespace: "a", Name: "t", Bucket: "lake", Prefix: "data/a/t/"},
			{ID: 2, SchemaID: 10, Namespace: "a", Name: "t2", Bucket: "lake", Prefix: "data/a/t2/"},
			{ID: 3, SchemaID: 10, UUID: "uuid-3", Namespace: "a", Name: "sub", Bucket: "lake", Prefix: "data/a/t/sub/"},
			{ID: 4, SchemaID: 11, Namespace: "b", Name: "tab", Bucket: "lake", Prefix: "data/b/tab/"},
			{ID: 5, SchemaID: 10, Namespace: "a", Name: "t", Bucket: "other", Prefix: "x/t/"},
			{ID: 6, SchemaID: 12, Namespace: "ext", Name: "e", Bucket: "lake", Prefix: "ext/warehouse/e/"},
			{ID: 7, SchemaID: 11, Namespace: "b", Name: "twin", Bucket: "lake", Prefix: "data/b/tab/"},
			{ID: 8, SchemaID: 13, Namespace: "r", Name: "root", Bucket: "rooted", Prefix: ""},
			{ID: 9, SchemaID: 13, Namespace: "r", Name: "in", Bucket: "rooted", Prefix: "in/"},
			{ID: 10, SchemaID: 10, Namespace: "a", Name: "noslash", Bucket: "lake", Prefix: "norm/t"},
			{ID: 11, SchemaID: 14, Namespace: "local", Name: "l", Bucket: "", Prefix: "tmp/l/"},
		},
		Files: []File{
			{TableID: 2, Kind: DataFile, Bucket: "lake", Key: "outside/f1.parquet"},
			{TableID: 2, Kind: DeleteFile, Bucket: "lake", Key: "outside/d1.parquet", End: 5},
			{TableID: 1, Kind: DataFile, Bucket: "lake", Key: "data/a/t/own.parquet"},
			{TableID: 4, Kind: DataFile, Bucket: "lake", Key: "data/a/t/stolen.parquet"},
			{TableID: 1, Kind: DataFile, Bucket: "lake", Key: "outside/both.parquet"},
			{TableID: 2, Kind: DataFile, Bucket: "lake", Key: "outside/both.parquet"},
			{TableID: 99, Kind: DataFile, Bucket: "lake", Key: "outside/orphan.parquet"},
			{TableID: 1, Kind: DataFile, Bucket: "bkt2", Key: "f.parquet"},
			{TableID: 1, Kind: DataFile, Bucket: "lake", Key: "outside/f8.parquet", End: 3},
			{TableID: 1, Kind: DataFile, Bucket: "lake", Key: "outside/f8.parquet"},
			{TableID: 11, Kind: DataFile, Bucket: "lake", Key: "outside/of-a-local-table.parquet"},
		},
		Unindexed: []Unindexed{{TableID: 11, Path: "/tmp/l/", Reason: "not on S3"}},
	}
}

func TestLookup(t *testing.T) {
	x := Build(fixture())
	for _, tc := range []struct {
		bucket, key string
		id          int64 // 0: no match
		via         Via
		shared      bool
		end         int64
	}{
		{"lake", "data/a/t/x.parquet", 1, ViaDirectory, false, 0},
		{"lake", "data/a/t/", 1, ViaDirectory, false, 0}, // the directory itself (a list prefix)
		{"lake", "data/a/t", 0, 0, false, 0},             // could be t's or t2's: neither
		{"lake", "data/a/t2/x", 2, ViaDirectory, false, 0},
		{"lake", "data/a/t2", 0, 0, false, 0},
		{"lake", "data/a/tx/y", 0, 0, false, 0}, // t is a prefix of tx's name, not its directory
		{"lake", "data/a/t/sub/x", 3, ViaDirectory, true, 0},
		{"lake", "data/a/t/sub/", 3, ViaDirectory, true, 0},
		{"lake", "data/a/t/sub", 1, ViaDirectory, false, 0}, // a file named sub in t
		{"lake", "data/a/t/subway/x", 1, ViaDirectory, false, 0},
		{"lake", "data/a/t/deep/er/still/x", 1, ViaDirectory, false, 0},
		{"lake", "data/a/", 0, 0, false, 0},
		{"lake", "", 0, 0, false, 0},
		{"lake", "/data/a/t/x", 0, 0, false, 0},
		{"lake", "outside/f1.parquet", 2, ViaDataFile, false, 0},
		{"lake", "outside/d1.parquet", 2, ViaDeleteFile, false, 5},
		{"lake", "outside/f1.parquet.bak", 0, 0, false, 0},
		{"lake", "outside/f1.parque", 0, 0, false, 0},
		{"lake", "outside/", 0, 0, false, 0},
		{"lake", "data/a/t/own.parquet", 1, ViaDirectory, false, 0}, // absolute, but in its own directory
		{"lake", "data/a/t/stolen.parquet", 4, ViaDataFile, true, 0},
		{"lake", "outside/both.parquet", 1, ViaDataFile, true, 0},
		{"lake", "outside/orphan.parquet", 0, 0, false, 0}, // its table is not in the index
		{"lake", "outside/f8.parquet", 1, ViaDataFile, false, 0},
		{"lake", "outside/of-a-local-table.parquet", 0, 0, false, 0},
		{"lake", "data/b/tab/x", 4, ViaDirectory, true, 0}, // twin has the same directory
		{"lake", "ext/warehouse/e/part=1/x.parquet", 6, ViaDirectory, false, 0},
		{"lake", "norm/t/x", 10, ViaDirectory, false, 0},
		{"lake", "norm/t2/x", 0, 0, false, 0},
		{"lake", "tmp/l/x", 0, 0, false, 0},
		{"other", "x/t/y", 5, ViaDirectory, false, 0},
		{"other", "data/a/t/x", 0, 0, false, 0},
		{"LAKE", "data/a/t/x", 0, 0, false, 0},
		{"lak", "data/a/t/x", 0, 0, false, 0},
		{"", "data/a/t/x", 0, 0, false, 0},
		{"rooted", "anything", 8, ViaDirectory, false, 0},
		{"rooted", "", 8, ViaDirectory, false, 0},
		{"rooted", "in/x", 9, ViaDirectory, true, 0},
		{"rooted", "in", 8, ViaDirectory, false, 0},
		{"bkt2", "f.parquet", 1, ViaDataFile, false, 0},
		{"bkt2", "g.parquet", 0, 0, false, 0},
		{"nobucket", "x", 0, 0, false, 0},
	} {
		t.Run(tc.bucket+"/"+tc.key, func(t *testing.T) {
			m, ok := x.Lookup([]byte(tc.bucket), []byte(tc.key))
			if tc.id == 0 {
				if ok {
					t.Fatalf("matched table %d (%s), want no match", m.Table.ID, m.Via)
				}
				return
			}
			if !ok {
				t.Fatalf("no match, want table %d", tc.id)
			}
			if m.Table.ID != tc.id || m.Via != tc.via || m.Shared != tc.shared || m.FileEnd != tc.end {
				t.Errorf("got table %d via %s shared %v end %d, want %d via %s shared %v end %d",
					m.Table.ID, m.Via, m.Shared, m.FileEnd, tc.id, tc.via, tc.shared, tc.end)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	src := fixture()
	x := Build(src)
	if x.Snapshot() != 42 {
		t.Errorf("Snapshot = %d", x.Snapshot())
	}
	if x.Tables() != 10 { // the local table has no bucket
		t.Errorf("Tables = %d, want 10", x.Tables())
	}
	// f1, d1, stolen, both, f.parquet, f8: not own.parquet (in its own
	// directory), nor the orphan's, nor the local table's.
	if x.Files() != 6 {
		t.Errorf("Files = %d, want 6", x.Files())
	}
	if tb, ok := x.Table(3); !ok || tb.Name != "sub" || tb.Namespace != "a" {
		t.Errorf("Table(3) = %+v, %v", tb, ok)
	}
	if tb, ok := x.Table(10); !ok || tb.Prefix != "norm/t/" {
		t.Errorf("Table(10) = %+v, %v: the prefix is a directory", tb, ok)
	}
	if tb, ok := x.TableByUUID("uuid-3"); !ok || tb.ID != 3 {
		t.Errorf("TableByUUID(uuid-3) = %+v, %v", tb, ok)
	}
	if _, ok := x.TableByUUID(""); ok {
		t.Error("TableByUUID(\"\") found a table")
	}
	if _, ok := x.Table(11); ok {
		t.Error("a table without a bucket is indexed")
	}
	if len(x.Unindexed()) != 1 {
		t.Errorf("Unindexed = %v", x.Unindexed())
	}
	// Build keeps nothing of src: changing it changes no answer.
	src.Tables[0].Prefix = "elsewhere/"
	src.Unindexed[0].Path = "changed"
	if m, ok := x.Lookup([]byte("lake"), []byte("data/a/t/x")); !ok || m.Table.ID != 1 {
		t.Error("the index changed with its source")
	}
	if x.Unindexed()[0].Path != "/tmp/l/" {
		t.Error("Unindexed shares the source's slice")
	}
	// Tables given twice (by id) count once.
	y := Build(Source{Tables: []Table{
		{ID: 1, Bucket: "b", Prefix: "p/"}, {ID: 1, Bucket: "b", Prefix: "q/"},
	}})
	if y.Tables() != 1 {
		t.Errorf("a table given twice: Tables = %d", y.Tables())
	}
}

func TestNilIndex(t *testing.T) {
	var x *Index
	if _, ok := x.Lookup([]byte("lake"), []byte("k")); ok {
		t.Error("the nil index matched")
	}
	if x.Snapshot() != -1 || x.Tables() != 0 || x.Files() != 0 || x.Unindexed() != nil {
		t.Error("the nil index is not empty")
	}
	if _, ok := x.Table(1); ok {
		t.Error("the nil index has a table")
	}
	if _, ok := Build(Source{}).Lookup([]byte("lake"), []byte("k")); ok {
		t.Error("the empty index matched")
	}
}

func TestLookupAllocatesNothing(t *testing.T) {
	x := Build(fixture())
	bucket, keys := []byte("lake"), [][]byte{
		[]byte("data/a/t/sub/x"), []byte("outside/f1.parquet"), []byte("nothing/here"), []byte("data/a/t"),
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, k := range keys {
			x.Lookup(bucket, k)
		}
	}); n != 0 {
		t.Errorf("Lookup allocates %.1f times", n)
	}
}

// linear is the reference: every table and file compared, as the signer's
// scan did. Files first, then the longest directory, the lowest id of
// equals.
func linear(src Source, bucket, key []byte) (int64, Via, bool) {
	tables := map[int64]Table{}
	for _, t := range src.Tables {
		if t.Bucket == "" {
			continue
		}
		if t.Prefix != "" && !strings.HasSuffix(t.Prefix, "/") {
			t.Prefix += "/"
		}
		if _, dup := tables[t.ID]; !dup {
			tables[t.ID] = t
		}
	}
	var best *Table
	for _, t := range tables {
		if t.Bucket == string(bucket) && bytes.HasPrefix(key, []byte(t.Prefix)) &&
			(best == nil || len(t.Prefix) > len(best.Prefix) || len(t.Prefix) == len(best.Prefix) && t.ID < best.ID) {
			best = &t
		}
	}
	for _, f := range src.Files {
		t, ok := tables[f.TableID]
		if !ok || f.Bucket != string(bucket) || f.Key != string(key) || best != nil && best.ID == t.ID {
			continue
		}
		if f.Kind == DeleteFile {
			return t.ID, ViaDeleteFile, true
		}
		return t.ID, ViaDataFile, true
	}
	if best == nil {
		return 0, 0, false
	}
	return best.ID, ViaDirectory, true
}

func FuzzLookup(f *testing.F) {
	src := fixture()
	x := Build(src)
	for _, k := range []string{"data/a/t/x", "data/a/t/sub/", "outside/f1.parquet", "in/x", "", "/", "data//a/t/x", "norm/t"} {
		for _, b := range []string{"lake", "rooted", "other", "bkt2"} {
			f.Add(b, []byte(k))
		}
	}
	f.Fuzz(func(t *testing.T, bucket string, key []byte) {
		m, ok := x.Lookup([]byte(bucket), key)
		id, via, wantOK := linear(src, []byte(bucket), key)
		if ok != wantOK || ok && (m.Table.ID != id || m.Via != via) {
			got := "none"
			if ok {
				got = fmt.Sprintf("%d via %s", m.Table.ID, m.Via)
			}
			t.Fatalf("Lookup(%q, %q) = %s, the linear scan says %d via %s (%v)", bucket, key, got, id, via, wantOK)
		}
	})
}

func TestSharedNesting(t *testing.T) {
	// Three levels: the middle and the inner are both inside another.
	x := Build(Source{Tables: []Table{
		{ID: 1, Bucket: "b", Prefix: "a/"},
		{ID: 2, Bucket: "b", Prefix: "a/b/"},
		{ID: 3, Bucket: "b", Prefix: "a/b/c/"},
		{ID: 4, Bucket: "b", Prefix: "z/"},
	}})
	var got []string
	for _, k := range []string{"a/x", "a/b/x", "a/b/c/x", "z/x"} {
		m, _ := x.Lookup([]byte("b"), []byte(k))
		got = append(got, fmt.Sprintf("%d:%v", m.Table.ID, m.Shared))
	}
	if want := []string{"1:false", "2:true", "3:true", "4:false"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestClaimantsAndUnder(t *testing.T) {
	x := Build(Source{Snapshot: 1, Tables: []Table{
		{ID: 1, Namespace: "a", Name: "t", Bucket: "lake", Prefix: "data/a/t/"},
		{ID: 2, Namespace: "a", Name: "t_sub", Bucket: "lake", Prefix: "data/a/t/sub/"},
		{ID: 3, Namespace: "a", Name: "twin", Bucket: "lake", Prefix: "data/a/t/sub/"},
		{ID: 4, Namespace: "a", Name: "t2", Bucket: "lake", Prefix: "data/a/t2/"},
		{ID: 5, Namespace: "b", Name: "s", Bucket: "lake", Prefix: "data/b/s/"},
		{ID: 6, Namespace: "b", Name: "x", Bucket: "other", Prefix: "data/a/t/"},
	}, Files: []File{
		{TableID: 5, Kind: DataFile, Bucket: "lake", Key: "ext/f.parquet"},
		{TableID: 4, Kind: DataFile, Bucket: "lake", Key: "ext/f.parquet"},
	}})
	ids := func(f func(fn func(*Table) bool)) []int64 {
		var out []int64
		f(func(t *Table) bool { out = append(out, t.ID); return true })
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name string
		got  []int64
		want []int64
	}{
		{"nested and twin directories", ids(func(fn func(*Table) bool) { x.Claimants([]byte("lake"), []byte("data/a/t/sub/f.parquet"), fn) }), []int64{1, 2, 3}},
		{"one table", ids(func(fn func(*Table) bool) { x.Claimants([]byte("lake"), []byte("data/a/t2/f"), fn) }), []int64{4}},
		{"file of two tables", ids(func(fn func(*Table) bool) { x.Claimants([]byte("lake"), []byte("ext/f.parquet"), fn) }), []int64{4, 5}},
		{"unclaimed", ids(func(fn func(*Table) bool) { x.Claimants([]byte("lake"), []byte("data/c/f"), fn) }), nil},
		{"under a namespace", ids(func(fn func(*Table) bool) { x.Under([]byte("lake"), []byte("data/a/"), fn) }), []int64{1, 2, 3, 4}},
		{"under a partial name", ids(func(fn func(*Table) bool) { x.Under([]byte("lake"), []byte("data/a/t"), fn) }), []int64{1, 2, 3, 4}},
		{"under a table", ids(func(fn func(*Table) bool) { x.Under([]byte("lake"), []byte("data/a/t/"), fn) }), []int64{1, 2, 3}},
		{"under everything", ids(func(fn func(*Table) bool) { x.Under([]byte("lake"), nil, fn) }), []int64{1, 2, 3, 4, 5}},
		{"other bucket", ids(func(fn func(*Table) bool) { x.Under([]byte("other"), []byte("data/"), fn) }), []int64{6}},
		{"nil index", ids(func(fn func(*Table) bool) { (*Index)(nil).Under([]byte("lake"), nil, fn) }), nil},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
