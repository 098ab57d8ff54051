package materialize

import (
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
