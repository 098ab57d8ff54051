package materialize

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/bounded"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// synthHistory makes the history of a table written by snapshots commits
// of files/snapshots files each, partitioned by year(ts) and bucket(8, id),
// with statistics on four columns. Every tenth commit also deletes rows
// (a delete file for an older data file) and every fiftieth rewrites an
// older file (UPDATE: the old file ends, a new one begins). It stands in
// for a DuckLake catalog too large to seed through DuckDB in a benchmark.
func synthHistory(snapshots, files int) *History {
	cols := []ducklake.Column{
		{ID: 1, Begin: 1, TableID: 1, Order: 1, Name: "id", Type: "int64", NullsAllowed: true},
		{ID: 2, Begin: 1, TableID: 1, Order: 2, Name: "ts", Type: "timestamp", NullsAllowed: true},
		{ID: 3, Begin: 1, TableID: 1, Order: 3, Name: "cat", Type: "varchar", NullsAllowed: true},
		{ID: 4, Begin: 1, TableID: 1, Order: 4, Name: "v", Type: "float64", NullsAllowed: true},
	}
	h := &History{
		Table:   ducklake.Table{ID: 1, UUID: "01938a4e-0000-7000-8000-000000000001", Name: "big", Path: "s3://lake/main/big/"},
		Columns: cols,
		Partitions: []ducklake.PartitionInfo{{ID: 1, TableID: 1, Begin: 1, Columns: []ducklake.PartitionColumn{
			{KeyIndex: 0, ColumnID: 2, Transform: "year"}, {KeyIndex: 1, ColumnID: 1, Transform: "bucket(8)"}}}},
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	h.Snapshots = append(h.Snapshots, ducklake.Snapshot{ID: 0, Time: t0}, ducklake.Snapshot{ID: 1, Time: t0, SchemaVersion: 1})
	perSnap := max(files/snapshots, 1)
	fileID, rowID := int64(100), int64(0)
	for s := int64(2); s < int64(snapshots)+2; s++ {
		h.Snapshots = append(h.Snapshots, ducklake.Snapshot{ID: s, Time: t0.Add(time.Duration(s) * time.Second), SchemaVersion: 1,
			Changes: "inserted_into_table:1"})
		for i := range perSnap {
			year := 2020 + int(s)%5
			bucket := (int(s) + i) % 8
			f := ducklake.DataFile{ID: fileID, TableID: 1, Begin: s, Format: "parquet",
				Path:        fmt.Sprintf("s3://lake/main/big/year=%d/bucket=%d/f%d.parquet", year, bucket, fileID),
				RecordCount: 1000, FileSizeBytes: 64 << 10, RowIDStart: rowID, PartitionID: 1,
				PartitionValues: []ducklake.FilePartitionValue{{KeyIndex: 0, Value: strconv.Itoa(year)}, {KeyIndex: 1, Value: strconv.Itoa(bucket)}}}
			h.DataFiles = append(h.DataFiles, f)
			lo, hi := strconv.FormatInt(rowID, 10), strconv.FormatInt(rowID+999, 10)
			day := fmt.Sprintf("%d-03-%02d 10:00:00", year, 1+i%28)
			h.Stats = append(h.Stats,
				ducklake.FileColumnStats{DataFileID: fileID, ColumnID: 1, ColumnSizeBytes: 8000, ValueCount: 1000, Min: &lo, Max: &hi},
				ducklake.FileColumnStats{DataFileID: fileID, ColumnID: 2, ColumnSizeBytes: 8000, ValueCount: 1000, Min: &day, Max: &day},
				ducklake.FileColumnStats{DataFileID: fileID, ColumnID: 3, ColumnSizeBytes: 3000, ValueCount: 990, NullCount: 10, Min: sp("alpha"), Max: sp("omega")},
				ducklake.FileColumnStats{DataFileID: fileID, ColumnID: 4, ColumnSizeBytes: 8000, ValueCount: 1000, Min: sp("-1.5"), Max: sp("99.25")})
			fileID++
			rowID += 1000
		}
		if s%10 == 0 && len(h.DataFiles) > 20 {
			target := h.DataFiles[len(h.DataFiles)-20]
			h.DeleteFiles = append(h.DeleteFiles, ducklake.DeleteFile{ID: fileID, TableID: 1, Begin: s, DataFileID: target.ID,
				Path: fmt.Sprintf("s3://lake/main/big/d%d-delete.parquet", fileID), Format: "parquet", DeleteCount: 3, FileSizeBytes: 900})
			if h.DeletePositions == nil {
				h.DeletePositions = map[int64][]DeletedPosition{}
			}
			h.DeletePositions[fileID] = []DeletedPosition{{Pos: 1}, {Pos: 500}, {Pos: 999}}
			fileID++
		}
		if s%50 == 0 && len(h.DataFiles) > 100 {
			old := &h.DataFiles[len(h.DataFiles)-100]
			if old.End == 0 {
				old.End = s
			}
		}
	}
	return h
}

func TestSynthHistoryBuilds(t *testing.T) {
	h := synthHistory(100, 1000)
	out, err := Build(h, h.Snapshots[len(h.Snapshots)-1].ID, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Metadata.Snapshots); n != 100 {
		t.Errorf("%d snapshots, want 100", n)
	}
	cur := out.Metadata.CurrentSnapshot()
	if cur.Summary["total-data-files"] != "998" || cur.Summary["total-delete-files"] == "0" {
		t.Errorf("summary %v", cur.Summary)
	}
}

// BenchmarkMaterializeCold builds the full metadata of a table with 1,000
// snapshots and 10,000 data files from a history already in memory (a
// synthetic one; see synthHistory): no Postgres, no storage, the
// materialiser's own cost.
func BenchmarkMaterializeCold(b *testing.B) {
	h := synthHistory(1000, 10000)
	last := h.Snapshots[len(h.Snapshots)-1].ID
	b.ReportAllocs()
	var bytes int64
	for b.Loop() {
		out, err := Build(h, last, Options{})
		if err != nil {
			b.Fatal(err)
		}
		bytes = 0
		for _, f := range out.Files {
			bytes += int64(len(f.Body))
		}
	}
	b.ReportMetric(float64(bytes)/1e6, "MB-written")
}

// BenchmarkMaterializerNextSnapshot is the warm path of a new commit: the
// Materializer already stored everything of the previous snapshot and
// builds the next one (the history is rebuilt; only new files are stored).
func BenchmarkMaterializerNextSnapshot(b *testing.B) {
	h := synthHistory(1000, 10000)
	last := h.Snapshots[len(h.Snapshots)-1].ID
	m := NewMaterializer(Config{Source: historySource{h}, Writer: objstore.NewMem(), CacheEntries: 1})
	ctx := context.Background()
	if _, err := m.Materialize(ctx, 1, last-1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Materialize(ctx, 1, last); err != nil {
			b.Fatal(err)
		}
		m.mu.Lock()
		m.results = bounded.NewLRU[cacheKey, cached](1) // force a rebuild of the same snapshot
		m.mu.Unlock()
	}
}
