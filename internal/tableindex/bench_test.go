package tableindex

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
)

const (
	benchTables = 10_000
	benchFiles  = 3_000 // absolute-path files, outside their tables' directories
)

// benchSource is a lake of 10,000 tables in 100 schemas under one data
// path, a tenth of them at absolute paths of their own elsewhere in the
// bucket, and 3,000 files added by absolute path from an ingest area, the
// way DuckDB's ducklake_add_data_files registers them.
func benchSource() Source {
	src := Source{Snapshot: 1}
	for i := range benchTables {
		t := Table{ID: int64(i + 1), SchemaID: int64(i%100 + 1), Namespace: fmt.Sprintf("ns%03d", i%100),
			Name: fmt.Sprintf("t%05d", i), Bucket: "lake"}
		t.Prefix = "data/" + t.Namespace + "/" + t.Name + "/"
		if i%10 == 9 {
			t.Prefix = fmt.Sprintf("warehouse/team%02d/%s/", i%37, t.Name)
		}
		src.Tables = append(src.Tables, t)
	}
	for i := range benchFiles {
		src.Files = append(src.Files, File{TableID: int64(i*3 + 1), Kind: DataFile, Bucket: "lake",
			Key: fmt.Sprintf("ingest/2026/11/%05d/part-%05d.parquet", i%500, i)})
	}
	return src
}

// benchKeys are 1,024 keys of one kind, so that a lookup is not always the
// same few cache lines.
func benchKeys(kind string) (bucket []byte, keys [][]byte) {
	bucket = []byte("lake")
	for i := range 1024 {
		n := (i * 7919) % benchTables
		var k string
		switch kind {
		case "directory":
			k = fmt.Sprintf("data/ns%03d/t%05d/ducklake-0193a4e3-6b2c-7d4e-9f10-%012d.parquet", n%100, n, i)
			if n%10 == 9 {
				k = fmt.Sprintf("warehouse/team%02d/t%05d/ducklake-0193a4e3-6b2c-7d4e-9f10-%012d.parquet", n%37, n, i)
			}
		case "partitioned":
			k = fmt.Sprintf("data/ns%03d/t%05d/region=eu/day=2026-11-%02d/ducklake-0193a4e3-%012d.parquet", n%100, n, i%28+1, i)
			if n%10 == 9 {
				k = fmt.Sprintf("warehouse/team%02d/t%05d/region=eu/day=2026-11-%02d/ducklake-0193a4e3-%012d.parquet", n%37, n, i%28+1, i)
			}
		case "outside-file":
			f := i % benchFiles
			k = fmt.Sprintf("ingest/2026/11/%05d/part-%05d.parquet", f%500, f)
		case "miss":
			k = fmt.Sprintf("scratch/user%03d/tmp/%012d.csv", i%100, i)
		case "other-bucket":
			bucket = []byte("archive")
			k = fmt.Sprintf("data/ns%03d/t%05d/x.parquet", n%100, n)
		}
		keys = append(keys, []byte(k))
	}
	return bucket, keys
}

var benchKinds = []string{"directory", "partitioned", "outside-file", "miss", "other-bucket"}

// BenchmarkLookup is the hot-path cost: one lookup among 10,000 tables
// and 3,000 outside files.
func BenchmarkLookup(b *testing.B) {
	x := Build(benchSource())
	for _, kind := range benchKinds {
		bucket, keys := benchKeys(kind)
		want := kind != "miss" && kind != "other-bucket"
		b.Run(kind, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := x.Lookup(bucket, keys[i%len(keys)]); ok != want {
					b.Fatalf("Lookup(%s) = %v", keys[i%len(keys)], ok)
				}
				i++
			}
		})
	}
}

// BenchmarkLookupLive is Lookup through a Live (one atomic load more),
// from every core at once.
func BenchmarkLookupLive(b *testing.B) {
	src := benchSource()
	l := &Live{Load: func(context.Context, int64) (Source, error) { return src, nil }}
	if _, err := l.Refresh(context.Background(), 1); err != nil {
		b.Fatal(err)
	}
	bucket, keys := benchKeys("directory")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Lookup(bucket, keys[i%len(keys)])
			i++
		}
	})
}

// BenchmarkLookupLinear is the scan the remote signer does today
// (catalog/rest tableIdx.find: every table's prefix compared, longest
// first), over the same tables, for comparison.
func BenchmarkLookupLinear(b *testing.B) {
	src := benchSource()
	tables := slices.Clone(src.Tables)
	slices.SortStableFunc(tables, func(a, b Table) int { return len(b.Prefix) - len(a.Prefix) })
	find := func(bucket, key []byte) (*Table, bool) {
		for i := range tables {
			if t := &tables[i]; t.Bucket == string(bucket) && bytes.HasPrefix(key, []byte(t.Prefix)) {
				return t, true
			}
		}
		return nil, false
	}
	bucket, keys := benchKeys("directory")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := find(bucket, keys[i%len(keys)]); !ok {
			b.Fatal("miss")
		}
		i++
	}
}

// BenchmarkBuild is the in-memory part of a rebuild: the index of 10,000
// tables and 3,000 files from a loaded Source.
func BenchmarkBuild(b *testing.B) {
	src := benchSource()
	b.ReportAllocs()
	for b.Loop() {
		if x := Build(src); x.Tables() != benchTables {
			b.Fatal(x.Tables())
		}
	}
}
