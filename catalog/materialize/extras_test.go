package materialize

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// TestBuildExtras: properties (but the catalog's own duckicelake.* keys),
// sort orders current at the snapshot asked for, and refs to snapshots the
// metadata has are served.
func TestBuildExtras(t *testing.T) {
	h := eventsHistory()
	desc := iceberg.SortField{Transform: iceberg.Identity, Direction: "desc", NullOrder: "nulls-first"}
	asc := iceberg.SortField{Transform: iceberg.Identity, Direction: "asc", NullOrder: "nulls-last"}
	h.Extras = Extras{
		Properties: map[string]string{"owner": "etl", "duckicelake.format-version": "2"},
		SortOrders: []SortVersion{
			{Begin: 2, End: 4, Order: iceberg.SortOrder{OrderID: 7, Fields: []iceberg.SortField{asc}}, Expressions: []string{"cat"}},
			{Begin: 4, End: 5, Order: iceberg.SortOrder{OrderID: 9, Fields: []iceberg.SortField{desc, asc}}, Expressions: []string{"id", `"ts"`}},
			{Begin: 5, Order: iceberg.SortOrder{OrderID: 11, Fields: []iceberg.SortField{asc}}, Expressions: []string{"lower(cat)"}},
		},
		Refs: map[string]iceberg.SnapshotRef{"v1": {SnapshotID: 3, Type: "tag"}, "gone": {SnapshotID: 2, Type: "tag"}, "main": {SnapshotID: 3, Type: "branch"}},
	}
	out, err := Build(h, 6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := out.Metadata
	if fmt.Sprint(md.Properties) != "map[owner:etl]" {
		t.Errorf("properties %v", md.Properties)
	}
	var orders []string
	for _, o := range md.SortOrders {
		orders = append(orders, fmt.Sprint(o.OrderID, o.Fields))
	}
	// The order sorted by an expression Iceberg cannot name is left out,
	// and the table is then unsorted as far as Iceberg can tell.
	if fmt.Sprint(orders) != "[0 [] 7 [{identity 3 asc nulls-last}] 9 [{identity 1 desc nulls-first} {identity 2 asc nulls-last}]]" || md.DefaultSortOrderID != 0 {
		t.Errorf("sort orders %v, default %d", orders, md.DefaultSortOrderID)
	}
	if r, ok := md.Refs["v1"]; !ok || r.SnapshotID != 3 || r.Type != "tag" || len(md.Refs) != 2 || md.Refs["main"].SnapshotID != 6 {
		t.Errorf("refs %+v", md.Refs)
	}
	// At snapshot 4 order 9 is the default.
	out, err = Build(h, 4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Metadata.DefaultSortOrderID != 9 {
		t.Errorf("default sort order at snapshot 4: %d", out.Metadata.DefaultSortOrderID)
	}
}

// TestClientOrders: orders clients set are served with their ids and
// transforms, and are the default while the DuckLake sort written for
// them (none for a transform) is current; a later DuckDB SET SORTED BY
// takes over, under its sort id or, should a client have used it, the next
// free one.
func TestClientOrders(t *testing.T) {
	h := eventsHistory()
	asc := iceberg.SortField{Transform: iceberg.Identity, Direction: "asc", NullOrder: "nulls-last"}
	bucket := iceberg.SortField{Transform: iceberg.Bucket(16), SourceID: 1, Direction: "asc", NullOrder: "nulls-last"}
	id := asc
	id.SourceID = 1
	h.Extras = Extras{
		SortOrders: []SortVersion{
			{Begin: 3, End: 4, Order: iceberg.SortOrder{OrderID: 40, Fields: []iceberg.SortField{asc}}, Expressions: []string{"id"}},
			{Begin: 5, Order: iceberg.SortOrder{OrderID: 2, Fields: []iceberg.SortField{asc}}, Expressions: []string{"cat"}},
		},
		Orders: []OrderVersion{
			{Begin: 2, End: 3, Order: iceberg.SortOrder{OrderID: 1, Fields: []iceberg.SortField{bucket, id}}},
			{Begin: 3, End: 4, Order: iceberg.SortOrder{OrderID: 2, Fields: []iceberg.SortField{id}}, SortID: 40},
			{Begin: 4, Order: iceberg.SortOrder{OrderID: 1, Fields: []iceberg.SortField{bucket, id}}},
		},
	}
	for _, c := range []struct {
		snap    int64
		orders  string
		current int
	}{
		{2, "[0 1]", 1},
		{3, "[0 1 2]", 2},
		{4, "[0 1 2]", 1},
		// DuckDB's sort 2 collides with the client's order 2: served as 3.
		{6, "[0 1 2 3]", 3},
	} {
		out, err := Build(h, c.snap, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int
		for _, o := range out.Metadata.SortOrders {
			ids = append(ids, o.OrderID)
			if o.OrderID == 1 && fmt.Sprint(o.Fields) != "[{bucket[16] 1 asc nulls-last} {identity 1 asc nulls-last}]" {
				t.Errorf("snapshot %d: order 1 %v", c.snap, o.Fields)
			}
		}
		if fmt.Sprint(ids) != c.orders || out.Metadata.DefaultSortOrderID != c.current {
			t.Errorf("snapshot %d: orders %v default %d, want %s %d", c.snap, ids, out.Metadata.DefaultSortOrderID, c.orders, c.current)
		}
	}
}

// TestBuildStatistics: the statistics files engines registered are served
// as committed, only those of snapshots the metadata lists (a file about a
// DuckLake snapshot that is no Iceberg snapshot of the table, or one
// expired, is not: the metadata would not validate, and readers would look
// for a snapshot that is not there).
func TestBuildStatistics(t *testing.T) {
	h := eventsHistory()
	puffin := func(snap int64) iceberg.StatisticsFile {
		return iceberg.StatisticsFile{SnapshotID: snap, StatisticsPath: fmt.Sprintf("s3://lake/main/ev/metadata/%d.stats", snap),
			FileSizeInBytes: 400, FileFooterSizeInBytes: 300, BlobMetadata: []iceberg.BlobMetadata{
				{Type: "apache-datasketches-theta-v1", SnapshotID: snap, SequenceNumber: snap, Fields: []int{1}, Properties: map[string]string{"ndv": "98"}}}}
	}
	h.Extras.Statistics = []iceberg.StatisticsFile{puffin(2), puffin(3), puffin(6)}
	h.Extras.PartitionStatistics = []iceberg.PartitionStatisticsFile{{SnapshotID: 2, StatisticsPath: "s3://lake/main/ev/metadata/p2.parquet", FileSizeInBytes: 10},
		{SnapshotID: 6, StatisticsPath: "s3://lake/main/ev/metadata/p6.parquet", FileSizeInBytes: 10}}
	out, err := Build(h, 6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := out.Metadata
	if fmt.Sprint(md.Statistics) != fmt.Sprint([]iceberg.StatisticsFile{puffin(3), puffin(6)}) {
		t.Errorf("statistics %+v", md.Statistics)
	}
	if len(md.PartitionStatistics) != 1 || md.PartitionStatistics[0].SnapshotID != 6 {
		t.Errorf("partition statistics %+v", md.PartitionStatistics)
	}
	for _, want := range []string{`"statistics-path": "s3://lake/main/ev/metadata/6.stats"`, `"file-footer-size-in-bytes": 300`, `"ndv": "98"`,
		`"partition-statistics": [`} {
		if !bytes.Contains(out.MetadataJSON, []byte(want)) {
			t.Errorf("metadata.json lacks %s", want)
		}
	}
}
