package ducklake_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

// commitEdit commits one change through the Writer and returns its
// snapshot id, failing the test on error.
func commitEdit(t *testing.T, w *ducklake.Writer, do func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error)) int64 {
	t.Helper()
	id, err := w.Commit(context.Background(), "test", do)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return id
}

// changesOf reads the ducklake_snapshot_changes entry of snapshot id.
func changesOf(t *testing.T, q ducklake.Querier, id int64) string {
	t.Helper()
	var c string
	if err := q.QueryRow(context.Background(), `SELECT changes_made FROM ducklake_snapshot_changes WHERE snapshot_id = $1`, id).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCatalogSchemas: a schema is created with its properties and the
// snapshot bookkeeping DuckDB writes, cannot be created twice, refuses to
// drop while a view lives in it, and drops (properties and all) once
// empty; property changes report what they did and make no snapshot.
func TestCatalogSchemas(t *testing.T) {
	ctx := context.Background()
	conn := lakeConn(t)
	w, c := ducklake.NewWriter(conn, ""), ducklake.NewCatalog("", "s3://lake/data/")

	create := func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		return c.CreateSchema(ctx, tx, head, next, ducklake.NewSchema{Name: `s"1`, Path: `s"1/`, PathIsRelative: true,
			Properties: map[string]string{"owner": "ann"}})
	}
	snap := commitEdit(t, w, create)
	if got := changesOf(t, conn, snap); got != `created_schema:"s""1"` {
		t.Errorf("changes = %q", got)
	}
	sc, err := c.LiveSchema(ctx, conn, `s"1`)
	if err != nil || sc.Path != `s3://lake/data/s"1/` || sc.RawPath != `s"1/` || !sc.PathIsRelative || sc.Begin != snap {
		t.Fatalf("LiveSchema = %+v, %v", sc, err)
	}
	if scs, err := c.SchemasAt(ctx, conn, snap-1, ""); err != nil || len(scs) != 1 || scs[0].Name != "main" {
		t.Errorf("SchemasAt before = %+v, %v", scs, err)
	}
	if scs, err := c.SchemasAt(ctx, conn, snap, ""); err != nil || len(scs) != 2 || scs[0].Name != "main" || scs[1].ID != sc.ID {
		t.Errorf("SchemasAt after = %+v, %v", scs, err)
	}
	var head ducklake.Head
	if err := conn.QueryRow(ctx, `SELECT schema_version, next_catalog_id FROM ducklake_snapshot WHERE snapshot_id = $1`, snap).
		Scan(&head.SchemaVersion, &head.NextCatalogID); err != nil || head.SchemaVersion != 1 || head.NextCatalogID != sc.ID+1 {
		t.Errorf("snapshot row = %+v, %v", head, err)
	}
	if props, err := c.SchemaProperties(ctx, conn, sc.ID); err != nil || len(props) != 1 || props["owner"] != "ann" {
		t.Errorf("SchemaProperties = %v, %v", props, err)
	}
	var ee *ducklake.ExistsError
	if _, err := w.Commit(ctx, "", create); !errors.As(err, &ee) || ee.Kind != ducklake.ObjectSchema || ee.Name != `s"1` {
		t.Errorf("second create = %v, want *ExistsError", err)
	}

	ch, err := c.SetSchemaProperties(ctx, conn, `s"1`, []string{"owner", "gone", "gone"}, map[string]string{"team": "x"})
	if err != nil || !slices.Equal(ch.Updated, []string{"team"}) || !slices.Equal(ch.Removed, []string{"owner"}) || !slices.Equal(ch.Missing, []string{"gone"}) {
		t.Errorf("SetSchemaProperties = %+v, %v", ch, err)
	}
	if _, err := c.SetSchemaProperties(ctx, conn, "nope", nil, map[string]string{"k": "v"}); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("SetSchemaProperties of a missing schema = %v", err)
	}
	if _, err := c.LiveSchema(ctx, conn, "nope"); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("LiveSchema of a missing schema = %v", err)
	}

	view := commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		_, ed, err := c.CreateView(ctx, tx, head, next, ducklake.NewView{Schema: sc, Name: "v", UUID: "6f1c1d4e-0000-4000-8000-000000000007",
			ViewDef: ducklake.ViewDef{Dialect: "duckdb", SQL: "SELECT 1"}, Metadata: ducklake.ViewMetadata{Location: "s3://m/1.json", Document: []byte(`{}`), Files: 1, SQL: "SELECT 1"}})
		return ed, err
	})
	drop := func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		return c.DropSchema(ctx, tx, next, `s"1`)
	}
	var ne *ducklake.NotEmptyError
	if _, err := w.Commit(ctx, "", drop); !errors.As(err, &ne) || ne.Views != 1 || ne.Tables != 0 {
		t.Errorf("drop of a schema with a view = %v, want *NotEmptyError", err)
	}
	commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		v, err := c.LiveView(ctx, tx, `s"1`, "v")
		if err != nil {
			return ducklake.Edit{}, err
		}
		return c.DropView(ctx, tx, next, v, "v")
	})
	dropped := commitEdit(t, w, drop)
	if got := changesOf(t, conn, dropped); got != "dropped_schema:"+itoa(sc.ID) {
		t.Errorf("changes = %q", got)
	}
	if _, err := c.LiveSchema(ctx, conn, `s"1`); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("dropped schema: %v", err)
	}
	if scs, err := c.SchemasAt(ctx, conn, view, `s"1`); err != nil || len(scs) != 1 {
		t.Errorf("the schema at an older snapshot = %+v, %v", scs, err)
	}
	if props, err := c.SchemaProperties(ctx, conn, sc.ID); err != nil || len(props) != 0 {
		t.Errorf("properties of a dropped schema = %v, %v", props, err)
	}
	if _, err := w.Commit(ctx, "", drop); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("second drop = %v, want ErrNotFound", err)
	}
}

// TestCatalogViews: a view's row, comment tag and sidecar row are written
// together; a replace makes a new row only when the SQL changes and moves
// the comment tag; a rename keeps the id and UUID under the new name; a
// drop ends the row and tags and forgets the sidecar.
func TestCatalogViews(t *testing.T) {
	ctx := context.Background()
	conn := lakeConn(t)
	w, c := ducklake.NewWriter(conn, ""), ducklake.NewCatalog("", "s3://lake/data/")
	for _, name := range []string{"a", "b"} {
		commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
			return c.CreateSchema(ctx, tx, head, next, ducklake.NewSchema{Name: name, Path: name + "/", PathIsRelative: true})
		})
	}
	a, err := c.LiveSchema(ctx, conn, "a")
	if err != nil {
		t.Fatal(err)
	}
	comment := "first"
	var id int64
	created := commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		var ed ducklake.Edit
		var err error
		id, ed, err = c.CreateView(ctx, tx, head, next, ducklake.NewView{Schema: a, Name: "v", UUID: "6f1c1d4e-0000-4000-8000-000000000007",
			ViewDef:  ducklake.ViewDef{Dialect: "duckdb", SQL: "SELECT 1 AS x", Aliases: `"x"`, Comment: &comment},
			Metadata: ducklake.ViewMetadata{Location: "s3://m/00001-f.metadata.json", Document: []byte(`{"k":1}`), Files: 1, SQL: "SELECT 1 AS x"}})
		return ed, err
	})
	if got := changesOf(t, conn, created); got != `created_view:"a"."v"` {
		t.Errorf("changes = %q", got)
	}
	v, err := c.LiveView(ctx, conn, "a", "v")
	if err != nil || v.ID != id || v.SchemaID != a.ID || v.SQL != "SELECT 1 AS x" || v.Aliases != `"x"` || v.Comment == nil || *v.Comment != "first" ||
		v.SchemaPath != "s3://lake/data/a/" || v.Created.IsZero() || v.Metadata == nil || v.Metadata.Files != 1 || string(v.Metadata.Document) != `{"k":1}` {
		t.Fatalf("LiveView = %+v (%+v), %v", v, v.Metadata, err)
	}
	if kind, err := c.NameKind(ctx, conn, a.ID, "v"); err != nil || kind != ducklake.ObjectView {
		t.Errorf("NameKind = %v, %v", kind, err)
	}
	if names, err := c.ViewNames(ctx, conn, "a"); err != nil || !slices.Equal(names, []string{"v"}) {
		t.Errorf("ViewNames = %v, %v", names, err)
	}
	if _, err := c.ViewNames(ctx, conn, "nope"); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("ViewNames of a missing schema = %v", err)
	}
	if name, found, err := c.ViewByUUID(ctx, conn, v.UUID); err != nil || !found || name != "a.v" {
		t.Errorf("ViewByUUID = %q %v %v", name, found, err)
	}

	rows := func() int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM ducklake_view WHERE view_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	replace := func(def ducklake.ViewDef, files int) {
		t.Helper()
		commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
			v, err := c.LiveView(ctx, tx, "a", "v")
			if err != nil {
				return ducklake.Edit{}, err
			}
			return c.ReplaceView(ctx, tx, next, v, "v", def, ducklake.ViewMetadata{Location: "s3://m/n.json", Document: []byte(`{}`), Files: files, SQL: def.SQL})
		})
	}
	// Only the comment changes: the row stays.
	replace(ducklake.ViewDef{Dialect: "duckdb", SQL: "SELECT 1 AS x", Aliases: `"x"`}, 2)
	if v, err = c.LiveView(ctx, conn, "a", "v"); err != nil || v.Comment != nil || rows() != 1 || v.Metadata.Files != 2 {
		t.Errorf("after a comment removal: %+v, %d rows, %v", v, rows(), err)
	}
	second := "second"
	replace(ducklake.ViewDef{Dialect: "duckdb", SQL: "SELECT 2 AS x", Aliases: `"x"`, Comment: &second}, 3)
	if v, err = c.LiveView(ctx, conn, "a", "v"); err != nil || v.SQL != "SELECT 2 AS x" || v.ID != id || *v.Comment != "second" || rows() != 2 {
		t.Errorf("after a new SQL: %+v, %d rows, %v", v, rows(), err)
	}

	b, err := c.LiveSchema(ctx, conn, "b")
	if err != nil {
		t.Fatal(err)
	}
	renamed := commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		return c.RenameView(ctx, tx, next, v, "v", b, "w")
	})
	if got := changesOf(t, conn, renamed); got != `created_view:"b"."w"` {
		t.Errorf("changes = %q", got)
	}
	if _, err := c.LiveView(ctx, conn, "a", "v"); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("the old name: %v", err)
	}
	w2, err := c.LiveView(ctx, conn, "b", "w")
	if err != nil || w2.ID != id || w2.UUID != v.UUID || w2.SQL != "SELECT 2 AS x" || w2.Comment == nil || w2.Metadata == nil {
		t.Errorf("renamed view = %+v, %v", w2, err)
	}

	dropped := commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		return c.DropView(ctx, tx, next, w2, "w")
	})
	if got := changesOf(t, conn, dropped); got != "dropped_view:"+itoa(id) {
		t.Errorf("changes = %q", got)
	}
	var liveRows, liveTags, sidecar int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM ducklake_view WHERE view_id = $1 AND end_snapshot IS NULL),
		(SELECT count(*) FROM ducklake_tag WHERE object_id = $1 AND end_snapshot IS NULL),
		(SELECT count(*) FROM duckicelake_view_metadata WHERE view_id = $1)`, id).Scan(&liveRows, &liveTags, &sidecar); err != nil {
		t.Fatal(err)
	}
	if liveRows+liveTags+sidecar != 0 {
		t.Errorf("after the drop: %d live rows, %d live tags, %d sidecar rows", liveRows, liveTags, sidecar)
	}
}

func itoa(n int64) string {
	return strconv.FormatInt(n, 10)
}

// TestCatalogTables: a rename keeps the table's id, UUID and path under
// the new name and records a schema version for it; a drop ends every row
// DuckDB's DROP TABLE ends; the paths a purge must spare are every other
// live table's, resolved.
func TestCatalogTables(t *testing.T) {
	ctx := context.Background()
	conn := lakeConn(t)
	if _, err := conn.Exec(ctx, `UPDATE ducklake_snapshot SET next_catalog_id = 3 WHERE snapshot_id = 0;
		INSERT INTO ducklake_table VALUES
			(1, '00000000-0000-0000-0000-000000000001', 0, NULL, 0, 't', 't/', true),
			(2, gen_random_uuid(), 0, NULL, 0, 'x', 's3://other/x/', false);
		INSERT INTO ducklake_column (column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name, column_type, nulls_allowed)
			VALUES (1, 0, NULL, 1, 1, 'a', 'int32', true);
		INSERT INTO ducklake_tag VALUES (1, 0, NULL, 'comment', 'c')`); err != nil {
		t.Fatal(err)
	}
	w, c := ducklake.NewWriter(conn, ""), ducklake.NewCatalog("", "s3://lake/data/")
	main, err := c.LiveSchema(ctx, conn, "main")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := c.LiveTable(ctx, conn, main.ID, main.Path, "t")
	if err != nil || tb.ID != 1 || tb.Path != "s3://lake/data/main/t/" || tb.RawPath != "t/" || !tb.PathIsRelative || tb.UUID != "00000000-0000-0000-0000-000000000001" {
		t.Fatalf("LiveTable = %+v, %v", tb, err)
	}
	if _, err := c.LiveTable(ctx, conn, main.ID, main.Path, "nope"); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("LiveTable of a missing table = %v", err)
	}
	if paths, err := c.LiveTablePaths(ctx, conn, tb.ID); err != nil || len(paths) != 1 ||
		paths[0] != (ducklake.TablePath{Schema: "main", Name: "x", Path: "s3://other/x/"}) {
		t.Errorf("LiveTablePaths = %+v, %v", paths, err)
	}

	renamed := commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		return c.RenameTable(ctx, tx, head, next, "main", tb, "u")
	})
	if got := changesOf(t, conn, renamed); got != `created_table:"main"."u"` {
		t.Errorf("changes = %q", got)
	}
	var version int64
	if err := conn.QueryRow(ctx, `SELECT schema_version FROM ducklake_schema_versions WHERE begin_snapshot = $1 AND table_id = 1`, renamed).Scan(&version); err != nil || version != 1 {
		t.Errorf("schema version = %d, %v", version, err)
	}
	u, err := c.LiveTable(ctx, conn, main.ID, main.Path, "u")
	if err != nil || u.ID != tb.ID || u.UUID != tb.UUID || u.Path != tb.Path || u.Begin != renamed {
		t.Errorf("renamed = %+v, %v", u, err)
	}
	if names, err := c.TableNames(ctx, conn, renamed, main.ID); err != nil || !slices.Contains(names, "u") || slices.Contains(names, "t") {
		t.Errorf("TableNames now = %v, %v", names, err)
	}
	if names, err := c.TableNames(ctx, conn, 0, main.ID); err != nil || !slices.Contains(names, "t") {
		t.Errorf("TableNames at 0 = %v, %v", names, err)
	}

	dropped := commitEdit(t, w, func(ctx context.Context, tx pgx.Tx, _ ducklake.Head, next int64) (ducklake.Edit, error) {
		return c.DropTable(ctx, tx, next, u)
	})
	if got := changesOf(t, conn, dropped); got != "dropped_table:1" {
		t.Errorf("changes = %q", got)
	}
	var live int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM ducklake_table WHERE table_id = 1 AND end_snapshot IS NULL)
		+ (SELECT count(*) FROM ducklake_column WHERE table_id = 1 AND end_snapshot IS NULL)
		+ (SELECT count(*) FROM ducklake_tag WHERE object_id = 1 AND end_snapshot IS NULL)`).Scan(&live); err != nil || live != 0 {
		t.Errorf("live rows after the drop = %d, %v", live, err)
	}
	if kind, err := c.NameKind(ctx, conn, main.ID, "u"); err != nil || kind != 0 {
		t.Errorf("NameKind after the drop = %v, %v", kind, err)
	}
}

func TestSnapshotRangeAndTablesFlagged(t *testing.T) {
	ctx := context.Background()
	conn := lakeConn(t)
	r, c := ducklake.NewReader(conn, ""), ducklake.NewCatalog("", "s3://lake/data/")
	newest, oldest, err := r.SnapshotRange(ctx)
	if err != nil || newest != 0 || oldest != 0 {
		t.Fatalf("a new catalog's range = %d..%d, %v", oldest, newest, err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO ducklake_snapshot (snapshot_id, snapshot_time, schema_version, next_catalog_id, next_file_id) VALUES (1, now(), 0, 1, 0), (2, now(), 0, 1, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM ducklake_snapshot WHERE snapshot_id = 0`); err != nil { // expired, as ducklake_expire_snapshots does
		t.Fatal(err)
	}
	if newest, oldest, err = r.SnapshotRange(ctx); err != nil || newest != 2 || oldest != 1 {
		t.Errorf("range = %d..%d, %v; want 1..2", oldest, newest, err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO duckicelake_table_property (table_id, key, value) VALUES
		(1, 'k', 'true'), (2, 'k', ' TRUE '), (3, 'k', 'false'), (4, 'other', 'true'), (5, 'k', 'yes')`); err != nil {
		t.Fatal(err)
	}
	on, err := c.TablesFlagged(ctx, conn, []int64{1, 2, 3, 4, 5, 6}, "k")
	if err != nil || len(on) != 2 || !on[1] || !on[2] {
		t.Errorf("TablesFlagged = %v, %v; want tables 1 and 2", on, err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM ducklake_snapshot`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.SnapshotRange(ctx); !errors.Is(err, ducklake.ErrNotCatalog) {
		t.Errorf("an empty ducklake_snapshot: %v, want ErrNotCatalog", err)
	}
}
