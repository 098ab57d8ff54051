package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/service"
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
