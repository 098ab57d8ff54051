package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// newCatalog is a Catalog over a new, empty DuckLake catalog in Postgres,
// with the snapshots it commits in *committed.
func newCatalog(t *testing.T) (c *service.Catalog, committed *[]int64) {
	t.Helper()
	dsn := pgtest.Database(t)
	if _, err := ducklake.Init(context.Background(), pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	committed = new([]int64)
	c = service.New(service.Config{DB: pgtest.Pool(t, dsn), DataPath: "s3://lake/data/",
		Committed: func(id int64) { *committed = append(*committed, id) }})
	return c, committed
}

func currentSnapshot(t *testing.T, c *service.Catalog) int64 {
	t.Helper()
	var id int64
	_, err := c.Commit(context.Background(), "probe", func(_ context.Context, _ pgx.Tx, head ducklake.Head, _ int64) (ducklake.Edit, error) {
		id = head.ID
		return ducklake.Edit{}, errProbe
	})
	if !errors.Is(err, errProbe) {
		t.Fatalf("probe commit: %v", err)
	}
	return id
}

var errProbe = errors.New("probe: no change")

func TestNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, committed := newCatalog(t)

	ns, err := c.CreateNamespace(ctx, "alice", "sales", map[string]string{"owner": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Properties["location"] != "s3://lake/data/sales/" || ns.Properties["owner"] != "alice" {
		t.Errorf("created %+v", ns)
	}
	if len(*committed) != 1 {
		t.Fatalf("Committed told of %v, want the create's snapshot", *committed)
	}
	ext, err := c.CreateNamespace(ctx, "alice", "ext", map[string]string{"location": "s3://other/place"})
	if err != nil || ext.Properties["location"] != "s3://other/place/" {
		t.Fatalf("create with a location: %+v, %v", ext, err)
	}

	snap := currentSnapshot(t, c)
	if snap != (*committed)[1] {
		t.Errorf("current snapshot %d, last committed %d", snap, (*committed)[1])
	}
	sc, err := c.NamespaceAt(ctx, snap, "sales")
	if err != nil {
		t.Fatal(err)
	}
	props, err := c.Properties(ctx, sc)
	if err != nil || props["owner"] != "alice" || props["location"] != "s3://lake/data/sales/" {
		t.Errorf("Properties = %v, %v", props, err)
	}
	if _, err := c.NamespaceAt(ctx, (*committed)[0]-1, "sales"); !errors.Is(err, service.ErrNoSuchNamespace) {
		t.Errorf("sales before its create: %v, want ErrNoSuchNamespace", err)
	}
	all, err := c.Namespaces(ctx, snap)
	if err != nil || len(all) != 3 { // main, sales, ext
		t.Errorf("Namespaces = %v, %v", all, err)
	}

	ch, err := c.UpdateProperties(ctx, "sales", []string{"owner", "absent"}, map[string]string{"tier": "gold"})
	if err != nil || len(ch.Updated) != 1 || len(ch.Removed) != 1 || len(ch.Missing) != 1 {
		t.Errorf("UpdateProperties = %+v, %v", ch, err)
	}

	for _, tc := range []struct {
		name string
		err  error
		kind error
	}{
		{"a second create of a name", second(c.CreateNamespace(ctx, "bob", "sales", nil)), service.ErrAlreadyExists},
		{"a relative location", second(c.CreateNamespace(ctx, "bob", "rel", map[string]string{"location": "rel/path"})), service.ErrInvalid},
		{"a masking-view name", second(c.CreateNamespace(ctx, "bob", "__mask_x", nil)), service.ErrInvalid},
		{"a NUL in a property", second(c.CreateNamespace(ctx, "bob", "nul", map[string]string{"k": "v\x00"})), service.ErrInvalid},
		{"dropping the default schema", c.DropNamespace(ctx, "bob", service.DefaultSchema), service.ErrInvalid},
		{"dropping a namespace that never was", c.DropNamespace(ctx, "bob", "nope"), service.ErrNoSuchNamespace},
		{"a key both updated and removed", second(c.UpdateProperties(ctx, "sales", []string{"k"}, map[string]string{"k": "v"})), service.ErrUnprocessable},
		{"moving a namespace's location", second(c.UpdateProperties(ctx, "sales", nil, map[string]string{"location": "s3://x/"})), service.ErrUnsupported},
		{"properties of a namespace that never was", second(c.UpdateProperties(ctx, "nope", nil, map[string]string{"k": "v"})), service.ErrNoSuchNamespace},
	} {
		if !errors.Is(tc.err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.kind)
		}
	}
	if len(*committed) != 2 {
		t.Errorf("refused changes committed snapshots: %v", *committed)
	}

	if err := c.DropNamespace(ctx, "alice", "ext"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NamespaceAt(ctx, (*committed)[2], "ext"); !errors.Is(err, service.ErrNoSuchNamespace) {
		t.Errorf("ext after its drop: %v", err)
	}
	if _, err := c.NamespaceAt(ctx, (*committed)[1], "ext"); err != nil {
		t.Errorf("ext before its drop (time travel): %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// createTable creates table ns.name through the Iceberg create path, as
// the REST create route does.
func createTable(t *testing.T, c *service.Catalog, commits *commit.Catalog, ns, name, location string) {
	t.Helper()
	req := &commit.CreateTableRequest{Name: name, Location: location, Schema: &iceberg.Schema{Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Required: true, Type: iceberg.Primitive(iceberg.TypeLong)}}}}
	_, err := c.Commit(context.Background(), "alice", func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		sc, err := c.LiveSchema(ctx, tx, ns, service.NoSuchNamespace(ns))
		if err != nil {
			return ducklake.Edit{}, err
		}
		snap := &commit.Snapshot{ID: next, Head: head.ID, SchemaVersion: head.SchemaVersion,
			NextCatalogID: head.NextCatalogID, NextFileID: head.NextFileID}
		if _, err := commits.CreateTable(ctx, tx, snap, commit.Namespace{ID: sc.ID, Name: ns, Path: sc.Path}, req); err != nil {
			return ducklake.Edit{}, err
		}
		return ducklake.Edit{Changes: snap.Changes(), CatalogIDs: snap.NextCatalogID - head.NextCatalogID}, nil
	})
	if err != nil {
		t.Fatalf("create %s.%s: %v", ns, name, err)
	}
}

func TestTableDropAndRename(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := pgtest.Database(t)
	if _, err := ducklake.Init(ctx, pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		t.Fatal(err)
	}
	commits := commit.New(commit.Config{MaxFormatVersion: 3})
	c := service.New(service.Config{DB: pgtest.Pool(t, dsn), DataPath: "s3://lake/data/", Commits: commits, CanPurge: true})
	for _, ns := range []string{"sales", "other"} {
		if _, err := c.CreateNamespace(ctx, "alice", ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	createTable(t, c, commits, "sales", "orders", "")
	createTable(t, c, commits, "sales", "taken", "")
	// (Tables sharing a prefix or without a directory of their own, which
	// a purge refuses, only DuckDB makes: test/catalog's purge tests.)
	createTable(t, c, commits, "sales", "nested", "")
	createTable(t, c, commits, "other", "keep", "")

	for _, tc := range []struct {
		name string
		err  error
		kind error
	}{
		{"a rename onto a live table", second(c.RenameTable(ctx, "bob", "sales", "orders", "sales", "taken")), service.ErrAlreadyExists},
		{"a rename to another namespace", second(c.RenameTable(ctx, "bob", "sales", "orders", "other", "orders")), service.ErrUnsupported},
		{"a rename into a namespace that never was", second(c.RenameTable(ctx, "bob", "sales", "orders", "nope", "orders")), service.ErrNoSuchNamespace},
		{"a rename of a table that never was", second(c.RenameTable(ctx, "bob", "sales", "ghost", "sales", "x")), service.ErrNoSuchTable},
		{"a rename to a masking-view name", second(c.RenameTable(ctx, "bob", "sales", "orders", "sales", "__mask_orders")), service.ErrInvalid},
		{"a drop of a table that never was", second(c.DropTable(ctx, "bob", "sales", "ghost", false)), service.ErrNoSuchTable},
	} {
		if !errors.Is(tc.err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.kind)
		}
	}

	snap, err := c.RenameTable(ctx, "alice", "sales", "orders", "sales", "orders2")
	if err != nil {
		t.Fatal(err)
	}
	renamed, err := c.DropTable(ctx, "alice", "sales", "orders2", false)
	if err != nil || renamed.Snapshot <= snap || renamed.Purge != (objstore.Location{}) {
		t.Fatalf("drop after rename: %+v, %v (rename at %d)", renamed, err, snap)
	}
	d, err := c.DropTable(ctx, "alice", "sales", "taken", true)
	if err != nil || d.Purge.String() != "s3://lake/data/sales/taken/" {
		t.Fatalf("purging drop: %+v (%s), %v", d, d.Purge, err)
	}
	if _, err := c.DropTable(ctx, "alice", "sales", "nested", false); err != nil {
		t.Fatal(err)
	}
	if err := c.DropNamespace(ctx, "alice", "sales"); err != nil {
		t.Errorf("sales, emptied: %v", err)
	}
	if err := c.DropNamespace(ctx, "alice", "other"); !errors.Is(err, service.ErrNotEmpty) {
		t.Errorf("other, holding keep: %v, want ErrNotEmpty", err)
	}
}
