package export

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/admin"
	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// dirPutter writes local locations: the test catalog's data path is a
// directory.
type dirPutter struct{}

func (dirPutter) Put(_ context.Context, loc objstore.Location, body []byte) error {
	if err := os.MkdirAll(filepath.Dir(loc.Path()), 0o755); err != nil {
		return err
	}
	return os.WriteFile(loc.Path(), body, 0o644)
}

type env struct {
	lake *govtest.Lake
	x    *Exporter
	data string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	l := govtest.New(t, govtest.Customers...)
	l.Exec(t, "INSERT INTO lake.analytics.customers VALUES (3, 'carol@work.net', 'EU', 900), (4, 'dave@example.com', 'US', 3100)",
		// The rows so far into a Parquet file; later small inserts stay
		// inlined: both kinds of source.
		"CALL ducklake_flush_inlined_data('lake')")
	md, err := l.Store.Reader().Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x, err := New(Config{DuckDB: l.Duck, Alias: "lake", PG: l.Pool, DataPath: md.DataPath, Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return &env{lake: l, x: x, data: md.DataPath}
}

// governed authors the seeds' mask and an EU-only row filter, and plans
// customers for bob.
// admin is the governance admin service on the env's lake, and the author
// its changes are made as.
func (ev *env) admin(t *testing.T) (*admin.Service, admin.Author) {
	t.Helper()
	check := govtest.SQLCheck(t)
	return admin.New(ev.lake.Store, check), admin.Author{Principal: governance.Principal{ID: "admin"}}
}

func (ev *env) planFor(t *testing.T, fileLayer bool) (*plan.Table, plan.Plan) {
	t.Helper()
	ctx := context.Background()
	svc, a := ev.admin(t)
	for _, err := range []error{
		svc.PutMaskingPolicy(ctx, a, admin.MaskingPolicy{Name: "mask_email", Signature: "(val VARCHAR)", Body: "left(val, 2) || '***'", FileLayer: fileLayer}),
		svc.PutAttachment(ctx, a, admin.Attachment{PolicyKind: "masking", PolicyName: "mask_email", TargetKind: "column", Schema: "analytics", Object: "customers", Column: "email"}),
		svc.PutRowAccessPolicy(ctx, a, admin.RowAccessPolicy{Name: "eu_only", Body: "country = 'EU'"}),
		svc.PutAttachment(ctx, a, admin.Attachment{PolicyKind: "row-access", PolicyName: "eu_only", TargetKind: "table", Schema: "analytics", Object: "customers"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := ev.lake.Store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := ev.lake.Store.Reader()
	snap, _ := r.CurrentSnapshot(ctx)
	tb, err := r.TableByName(ctx, snap.ID, "analytics", "customers")
	if err != nil {
		t.Fatal(err)
	}
	fields, err := r.Columns(ctx, snap.ID, tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	pt := plan.TableOf("analytics", tb, fields)
	return pt, plan.Build(st, plan.Principal{Roles: model.NewRoleSet([]string{"actor:human"})}, pt, plan.Options{})
}

// clockedManager starts a Manager (debounce 1h) on a pinned clock, closed
// when the test ends; pastGrace moves the clock past the grace period.
func (ev *env) clockedManager(t *testing.T) (m *Manager, pastGrace func()) {
	now := time.Now()
	ev.x.cfg.Now = func() time.Time { return now }
	m = ev.manager(time.Hour)
	t.Cleanup(m.Close)
	return m, func() { now = now.Add(ev.x.cfg.Grace + time.Minute) }
}

// manager is a Manager over ev's exporter and catalog, writing shadow
// metadata to local files, with the debounce given.
func (ev *env) manager(debounce time.Duration) *Manager {
	return NewManager(ManagerConfig{Exporter: ev.x, Source: materialize.NewPGSource(ev.lake.Pool, ""), Store: dirPutter{}, Debounce: debounce})
}

func (ev *env) snapshot(t *testing.T) int64 {
	t.Helper()
	s, err := ev.lake.Store.Reader().CurrentSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// emails reads the email column of every masked copy, sorted.
func emails(t *testing.T, db *sql.DB, e *Export) []string {
	t.Helper()
	var out []string
	for _, f := range e.Files {
		rows, err := db.Query("SELECT email FROM read_parquet(?)", f.Location)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s sql.NullString
			rows.Scan(&s)
			out = append(out, s.String)
		}
		rows.Close()
	}
	slices.Sort(out)
	return out
}

func TestBuildMasksFiltersAndIsIncremental(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	tb, pl := ev.planFor(t, true)
	if pl.Tier != plan.TierAirtight {
		t.Fatalf("tier %s", pl.Tier)
	}
	snap := ev.snapshot(t)
	e, err := ev.x.Build(ctx, tb, &pl, snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := emails(t, ev.lake.Duck, e); !slices.Equal(got, []string{"al***", "ca***"}) {
		t.Fatalf("masked EU emails = %v", got)
	}
	// No raw value anywhere in the statistics, and the field ids stamped.
	for _, f := range e.Files {
		for col, st := range f.Stats {
			for _, v := range []*string{st.Min, st.Max} {
				if v != nil && strings.Contains(*v, "@") {
					t.Errorf("%s stats of %s hold a raw value: %q", col, f.Location, *v)
				}
			}
		}
		var id sql.NullInt64
		if err := ev.lake.Duck.QueryRow("SELECT field_id FROM parquet_schema(?) WHERE name = 'email'", f.Location).Scan(&id); err != nil || id.Int64 != 2 {
			t.Errorf("field id of email in %s = %v, %v", f.Location, id, err)
		}
		if !strings.HasPrefix(f.Location, e.Root.String()) || !strings.Contains(f.Location, "/__masked__/") {
			t.Errorf("copy %s outside the export root %s", f.Location, e.Root)
		}
	}
	first := map[string]string{}
	for _, f := range e.Files {
		first[f.Source] = f.Location
	}

	// One more row: one new source, the old copies kept.
	ev.lake.Exec(t, "INSERT INTO lake.analytics.customers VALUES (5, 'erin@work.net', 'EU', 2600)")
	e2, err := ev.x.Build(ctx, tb, &pl, ev.snapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, f := range e2.Files {
		if first[f.Source] == f.Location {
			kept++
		}
	}
	if kept == 0 || len(e2.Files) != len(e.Files)+1 {
		t.Errorf("after a 1-row insert: %d files, %d kept of %d", len(e2.Files), kept, len(e.Files))
	}
	if got := emails(t, ev.lake.Duck, e2); !slices.Equal(got, []string{"al***", "ca***", "er***"}) {
		t.Errorf("after the insert: %v", got)
	}
	// A delete: deleted rows are gone from the copy.
	ev.lake.Exec(t, "DELETE FROM lake.analytics.customers WHERE id = 1")
	e3, err := ev.x.Build(ctx, tb, &pl, ev.snapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := emails(t, ev.lake.Duck, e3); !slices.Equal(got, []string{"ca***", "er***"}) {
		t.Errorf("after the delete: %v", got)
	}
	cur, ok, err := ev.x.Current(ctx, tb.TableID, pl.Signature)
	if err != nil || !ok || cur.Snapshot != e3.Snapshot || len(cur.Files) != len(e3.Files) {
		t.Errorf("Current = %+v, %v, %v", cur, ok, err)
	}
	var retired int
	ev.lake.Pool.QueryRow(ctx, "SELECT count(*) FROM duckicelake_export_retired").Scan(&retired)
	if retired == 0 {
		t.Error("no copy was retired after the delete replaced one")
	}
}

func TestShadowMetadataReadsMaskedRows(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	tb, pl := ev.planFor(t, true)
	snap := ev.snapshot(t)
	e, err := ev.x.Build(ctx, tb, &pl, snap)
	if err != nil {
		t.Fatal(err)
	}
	h, err := materialize.NewPGSource(ev.lake.Pool, "").History(ctx, tb.TableID, snap)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ev.x.Shadow(ctx, e, tb, h, dirPutter{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.MetadataLocation, e.Root.String()) {
		t.Fatalf("shadow metadata at %s", out.MetadataLocation)
	}
	if s := out.Metadata.CurrentSnapshot(); s == nil || s.SnapshotID != snap {
		t.Fatalf("shadow snapshot = %+v, want id %d", s, snap)
	}
	if strings.Contains(string(out.MetadataJSON), "@") {
		t.Error("the shadow metadata holds a raw value")
	}
	// iceberg-go, an independent reader, scans the masked rows.
	tbl, err := table.NewFromLocation(ctx, table.Identifier{"analytics", "customers"}, out.MetadataLocation,
		icebergio.LoadFSFunc(nil, out.MetadataLocation), nil)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var got []string
	col := at.Column(at.Schema().FieldIndices("email")[0])
	for _, c := range col.Data().Chunks() {
		s := c.(*array.String)
		for i := range s.Len() {
			got = append(got, s.Value(i))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"al***", "ca***"}) {
		t.Errorf("iceberg-go reads %v", got)
	}
	_ = ducklake.ErrNotFound
}

// TestManagerRefreshesOnCommit: the lazy path builds the export before
// answering; a commit to the table then refreshes it (debounced), with
// the shadow metadata at the new snapshot.
func TestManagerRefreshesOnCommit(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	tb, pl := ev.planFor(t, true)
	m := ev.manager(50 * time.Millisecond)
	defer m.Close()
	e, err := m.Ensure(ctx, tb, &pl, ev.snapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	if e.MetadataLocation == "" {
		t.Fatal("Ensure answered without the shadow metadata")
	}
	again, err := m.Ensure(ctx, tb, &pl, ev.snapshot(t))
	if err != nil || again.MetadataLocation != e.MetadataLocation {
		t.Fatalf("a second Ensure rebuilt: %v, %v", again, err)
	}
	hooked := make(chan *Export, 4)
	m.OnRefresh(func(_ context.Context, ht *plan.Table, hp *plan.Plan, he *Export) {
		if ht.TableID == tb.TableID && hp.Signature == pl.Signature {
			hooked <- he
		}
	})
	ev.lake.Exec(t, "INSERT INTO lake.analytics.customers VALUES (9, 'ivan@work.net', 'EU', 100)")
	snap := ev.snapshot(t)
	m.Observe(snap, []int64{tb.TableID})
	// The refresh hook is told of the refreshed export, files and all.
	select {
	case he := <-hooked:
		if he.Snapshot != snap || !slices.Contains(emails(t, ev.lake.Duck, he), "iv***") {
			t.Errorf("refresh hook got the export at snapshot %d (want %d): %v", he.Snapshot, snap, emails(t, ev.lake.Duck, he))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the refresh hook was not called after the commit")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		cur, ok, err := ev.x.Current(ctx, tb.TableID, pl.Signature)
		if err != nil {
			t.Fatal(err)
		}
		if ok && cur.Snapshot == snap && cur.MetadataLocation != "" {
			if got := emails(t, ev.lake.Duck, cur); !slices.Contains(got, "iv***") {
				t.Errorf("refreshed export = %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the export was not refreshed after the commit")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRuntimeFailingBodyFailsClosed: a mask that binds on its signature's
// type but fails on the table's values (a cast every email refuses) makes
// no masked copy — Ensure fails, nothing becomes current, so the airtight
// tier serves nothing rather than anything raw — and the error names the
// file and table but not the value DuckDB choked on.
func TestRuntimeFailingBodyFailsClosed(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	svc, a := ev.admin(t)
	for _, err := range []error{
		svc.PutMaskingPolicy(ctx, a, admin.MaskingPolicy{Name: "bad_cast", Signature: "(val VARCHAR)",
			Body: "CAST(CAST(val AS INTEGER) AS VARCHAR)", FileLayer: true}),
		svc.PutAttachment(ctx, a, admin.Attachment{PolicyKind: "masking", PolicyName: "bad_cast", TargetKind: "column",
			Schema: "analytics", Object: "customers", Column: "email"}),
	} {
		if err != nil {
			t.Fatalf("authoring accepted what binds: %v", err)
		}
	}
	st, err := ev.lake.Store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := ev.lake.Store.Reader()
	snap := ev.snapshot(t)
	tb, err := r.TableByName(ctx, snap, "analytics", "customers")
	if err != nil {
		t.Fatal(err)
	}
	fields, err := r.Columns(ctx, snap, tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	pt := plan.TableOf("analytics", tb, fields)
	pl := plan.Build(st, plan.Principal{Roles: model.NewRoleSet(nil)}, pt, plan.Options{})
	if pl.Tier != plan.TierAirtight {
		t.Fatalf("tier = %v, want airtight", pl.Tier)
	}
	m := ev.manager(time.Hour)
	defer m.Close()
	e, err := m.Ensure(ctx, pt, &pl, snap)
	if err == nil {
		t.Fatalf("Ensure built a copy with a body that fails on every row: %+v", e)
	}
	var ce *CopyError
	if !errors.As(err, &ce) || ce.Table != "customers" || ce.Source == "" {
		t.Fatalf("Ensure = %v, want a CopyError naming the table and file", err)
	}
	for _, leak := range []string{"alice@example.com", "bob@personal.io", "carol@work.net", "dave@example.com"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("the error shows the cleartext %q: %v", leak, err)
		}
	}
	if cur, ok, err := ev.x.Current(ctx, pt.TableID, pl.Signature); err != nil || ok {
		t.Fatalf("after the failed build, Current = %+v, %v, %v; want none", cur, ok, err)
	}
}

func TestElideLiterals(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Conversion Error: Could not convert string 'alice@example.com' to INT32", "Conversion Error: Could not convert string '…' to INT32"},
		{"a 'it''s' b 'c'", "a '…' b '…'"},
		{"open 'never closed", "open '…'"},
		{"nothing quoted", "nothing quoted"},
		{"", ""},
	} {
		if got := ElideLiterals(tt.in); got != tt.want {
			t.Errorf("ElideLiterals(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
