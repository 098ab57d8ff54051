package ducklake_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/duckicelake/duckicelake/governance/govtest"
)

// TestColumnsOfMatchesColumns: the batched read gives every table the
// fields the one-table read does (nested types included), and nothing for
// a table not live at the snapshot.
func TestColumnsOfMatchesColumns(t *testing.T) {
	l := govtest.New(t, append(govtest.Customers,
		"CREATE TABLE lake.analytics.nested (id BIGINT, tags VARCHAR[], s STRUCT(a INTEGER, b MAP(VARCHAR, DOUBLE)))",
		"CREATE TABLE lake.analytics.gone (x INTEGER)", "DROP TABLE lake.analytics.gone")...)
	ctx := context.Background()
	r := l.Store.Reader()
	snap, err := r.CurrentSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, name := range []string{"customers", "orders", "nested"} {
		tb, err := r.TableByName(ctx, snap.ID, "analytics", name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tb.ID)
	}
	got, err := r.ColumnsOf(ctx, snap.ID, append(ids, 1<<40))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) {
		t.Fatalf("ColumnsOf gave %d tables, want %d", len(got), len(ids))
	}
	for _, id := range ids {
		want, err := r.Columns(ctx, snap.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[id], want) {
			t.Errorf("table %d: ColumnsOf = %+v, Columns = %+v", id, got[id], want)
		}
	}
}
