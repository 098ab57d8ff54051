package engine

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/tableindex"
)

// TestTableBinding: a credential bound to a table is honoured only on keys
// the live index gives to that table (UUID) under the name it was vended
// for; after a drop, a rename or a new table on the same path it is
// refused, before governance decides anything. A staged create's
// credential may use unclaimed keys until a table of its UUID exists. An
// index older than the vend is refreshed first.
func TestTableBinding(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	cid := ev.ids["customers"].TableID
	const (
		u1, u2, staged = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"
		dir            = "data/analytics/customers/"
	)
	tbl := func(id int64, uuid, name, prefix string) tableindex.Table {
		return tableindex.Table{ID: id, UUID: uuid, Namespace: "analytics", Name: name, Bucket: "lake", Prefix: prefix}
	}
	// The catalog as the test sets it, at snapshots above the test lake's
	// own (the engine asks the index for those in the background).
	var mu sync.Mutex
	src := tableindex.Source{Snapshot: 1000}
	live := &tableindex.Live{Load: func(context.Context, int64) (tableindex.Source, error) {
		mu.Lock()
		defer mu.Unlock()
		return src, nil
	}}
	set := func(snap int64, tables ...tableindex.Table) {
		mu.Lock()
		defer mu.Unlock()
		src = tableindex.Source{Snapshot: snap, Tables: tables}
	}
	at := func(snap int64, tables ...tableindex.Table) {
		t.Helper()
		set(snap, tables...)
		if _, err := live.Refresh(ctx, snap); err != nil {
			t.Fatal(err)
		}
	}
	prefix := objstore.MustParse("s3://lake/data/__masked__/")
	eng, err := New(ctx, Config{Store: ev.lake.Store, Index: live, ExportPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	bound := func(b creds.TableBinding) *governance.Principal {
		return &governance.Principal{ID: "bob", Table: b}
	}
	loaded := creds.TableBinding{UUID: u1, Namespace: "analytics", Name: "customers", Snapshot: 1}
	stagedB := creds.TableBinding{UUID: staged, Namespace: "analytics", Name: "fresh", Snapshot: 1, Staged: true}
	export := func(id int64) string {
		return prefix.Key() + "t" + strconv.FormatInt(id, 10) + "/0123456789abcdef/data/x.parquet"
	}
	live1 := tbl(cid, u1, "customers", dir)
	// A table of the test lake's DuckLake catalog, as a staged create that
	// was committed: the index (the test's) no longer lists it, as after a
	// drop.
	var committedUUID string
	if err := ev.lake.Pool.QueryRow(ctx, `SELECT table_uuid::text FROM ducklake_table WHERE table_id = $1`, cid).Scan(&committedUUID); err != nil {
		t.Fatal(err)
	}
	stagedDropped := creds.TableBinding{UUID: committedUUID, Namespace: "analytics", Name: "fresh", Snapshot: 1, Staged: true}
	tests := []struct {
		name    string
		index   []tableindex.Table // the catalog now, at snapshot 2
		p       *governance.Principal
		a       governance.Action
		key     string
		stale   bool // refused by the binding
		allowed bool
	}{
		{"live table: read", []tableindex.Table{live1}, bound(loaded), governance.ActionReadObject, dir + "data/f.parquet", false, true},
		{"live table: write", []tableindex.Table{live1}, bound(loaded), governance.ActionWriteObject, dir + "data/g.parquet", false, true},
		{"live table: list its directory", []tableindex.Table{live1}, bound(loaded), governance.ActionListObjects, dir, false, true},
		{"live table: head bucket", []tableindex.Table{live1}, bound(loaded), governance.ActionReadBucket, "", false, true},
		{"live table: list above it", []tableindex.Table{live1}, bound(loaded), governance.ActionListObjects, "data/analytics/", true, false},
		// Iceberg's client-side purge: the client reads and deletes what
		// the dropped table left; it never writes there again.
		{"dropped: read", nil, bound(loaded), governance.ActionReadObject, dir + "data/f.parquet", false, true},
		{"dropped: delete", nil, bound(loaded), governance.ActionDeleteObject, dir + "data/f.parquet", false, true},
		{"dropped: write", nil, bound(loaded), governance.ActionWriteObject, dir + "data/g.parquet", true, false},
		{"dropped: list", nil, bound(loaded), governance.ActionListObjects, dir, false, true},
		{"dropped: head bucket", nil, bound(loaded), governance.ActionReadBucket, "", true, false},
		{"new table on the old path", []tableindex.Table{tbl(900, u2, "customers", dir)}, bound(loaded), governance.ActionReadObject, dir + "x", true, false},
		{"new table inside the old path", []tableindex.Table{tbl(900, u2, "sub", dir+"sub/")}, bound(loaded), governance.ActionWriteObject, dir + "sub/x", true, false},
		{"renamed", []tableindex.Table{tbl(cid, u1, "clients", dir)}, bound(loaded), governance.ActionReadObject, dir + "x", true, false},
		{"renamed: head bucket", []tableindex.Table{tbl(cid, u1, "clients", dir)}, bound(loaded), governance.ActionReadBucket, "", true, false},
		{"unbound credential after the drop", nil, &governance.Principal{ID: "bob"}, governance.ActionReadObject, dir + "x", false, true},
		{"staged: before the commit", nil, bound(stagedB), governance.ActionWriteObject, "data/analytics/fresh/data/a.parquet", false, true},
		{"staged: committed", []tableindex.Table{tbl(901, staged, "fresh", "data/analytics/fresh/")}, bound(stagedB), governance.ActionWriteObject,
			"data/analytics/fresh/data/a.parquet", false, true},
		{"staged: another table took the path", []tableindex.Table{tbl(902, u2, "fresh", "data/analytics/fresh/")}, bound(stagedB), governance.ActionWriteObject,
			"data/analytics/fresh/data/a.parquet", true, false},
		{"staged: committed elsewhere", []tableindex.Table{tbl(901, staged, "fresh", "data/analytics/fresh-1/")}, bound(stagedB), governance.ActionWriteObject,
			"data/analytics/fresh/data/a.parquet", true, false},
		{"staged: committed, not in the current index", nil, bound(stagedDropped), governance.ActionWriteObject,
			"data/analytics/fresh/data/a.parquet", true, false},
		{"staged: committed, then renamed", []tableindex.Table{tbl(901, staged, "stale", "data/analytics/fresh/")}, bound(stagedB), governance.ActionReadObject,
			"data/analytics/fresh/data/a.parquet", true, false},
		// The masked copy's key names the table by id: the binding holds
		// while that id is the bound table's (governance then decides
		// whose copy it is), and not once the id is another's or gone.
		{"masked copy of the bound table", []tableindex.Table{live1}, bound(loaded), governance.ActionReadObject, export(cid), false, false},
		{"masked copy after the drop", nil, bound(loaded), governance.ActionReadObject, export(cid), true, false},
		{"masked copy of another table", []tableindex.Table{live1, tbl(900, u2, "other", "data/analytics/other/")}, bound(loaded), governance.ActionReadObject,
			export(900), true, false},
		{"masked copy: bad key", []tableindex.Table{live1}, bound(loaded), governance.ActionReadObject, prefix.Key() + "junk", true, false},
	}
	snap := int64(1000)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap++
			at(snap, tt.index...)
			r := governance.ObjectResource([]byte("lake"), []byte(tt.key))
			if tt.a == governance.ActionReadBucket {
				r = governance.ObjectResource([]byte("lake"), nil)
			}
			d, err := eng.Authorize(ctx, tt.p, tt.a, &r)
			if err != nil {
				t.Fatal(err)
			}
			if stale := d.Reason == reasonBindingStale; stale != tt.stale || d.Allow != tt.allowed {
				t.Errorf("%s %q = %+v, want allow=%v stale=%v", tt.a, tt.key, d, tt.allowed, tt.stale)
			}
		})
	}

	t.Run("index older than the vend is refreshed", func(t *testing.T) {
		at(5000) // the index knows no table
		set(5001, live1)
		b := loaded
		b.Snapshot = 5001
		r := governance.ObjectResource([]byte("lake"), []byte(dir+"x"))
		d, err := eng.Authorize(ctx, bound(b), governance.ActionReadObject, &r)
		if err != nil || !d.Allow {
			t.Fatalf("= %+v, %v; want allowed once the index covers snapshot 5001", d, err)
		}
		if got := live.Index().Snapshot(); got != 5001 {
			t.Errorf("index at %d, want 5001", got)
		}
	})

	t.Run("no index fails closed", func(t *testing.T) {
		noIndex, err := New(ctx, Config{Store: ev.lake.Store})
		if err != nil {
			t.Fatal(err)
		}
		r := governance.ObjectResource([]byte("lake"), []byte(dir+"x"))
		for name, az := range map[string]governance.Authorizer{"engine": noIndex, "scope only": governance.ScopeOnly{}} {
			d, err := az.Authorize(ctx, bound(loaded), governance.ActionReadObject, &r)
			if err != nil || d.Allow || d.Reason != governance.ReasonBindingUnchecked {
				t.Errorf("%s: %+v, %v; want denied: %s", name, d, err, governance.ReasonBindingUnchecked)
			}
		}
	})
}
