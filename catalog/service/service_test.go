package service_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
		Commits: commit.New(commit.Config{MaxFormatVersion: 3}), Committed: func(id int64) { *committed = append(*committed, id) }})
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

// createTable creates table ns.name through the Iceberg create path.
func createTable(t *testing.T, c *service.Catalog, ns, name string) {
	t.Helper()
	if err := c.CreateTable(context.Background(), "alice", ns, tableRequest(name)); err != nil {
		t.Fatalf("create %s.%s: %v", ns, name, err)
	}
}

func tableRequest(name string) *commit.CreateTableRequest {
	return &commit.CreateTableRequest{Name: name, Schema: &iceberg.Schema{Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Required: true, Type: iceberg.Primitive(iceberg.TypeLong)}}}}
}

func TestCreateAndStage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, committed := newCatalog(t)
	if _, err := c.CreateNamespace(ctx, "alice", "sales", nil); err != nil {
		t.Fatal(err)
	}
	createTable(t, c, "sales", "orders")
	snap := (*committed)[len(*committed)-1]
	if tb, err := c.TableAt(ctx, snap, "sales", "orders"); err != nil || tb.Path != "s3://lake/data/sales/orders/" {
		t.Errorf("TableAt = %+v, %v", tb, err)
	}
	createTable(t, c, "sales", "a_first")
	sc, err := c.NamespaceAt(ctx, (*committed)[len(*committed)-1], "sales")
	if err != nil {
		t.Fatal(err)
	}
	if names, err := c.TableNames(ctx, (*committed)[len(*committed)-1], sc); err != nil || !slices.Equal(names, []string{"a_first", "orders"}) {
		t.Errorf("TableNames = %v, %v", names, err)
	}
	if names, err := c.TableNames(ctx, snap, sc); err != nil || !slices.Equal(names, []string{"orders"}) {
		t.Errorf("TableNames before a_first = %v, %v", names, err)
	}
	md, err := c.StageTable(ctx, snap, "sales", tableRequest("staged"), time.Now())
	if err != nil || md == nil || md.Location != "s3://lake/data/sales/staged" {
		t.Errorf("StageTable = %+v, %v", md, err)
	}
	if _, err := c.TableAt(ctx, currentSnapshot(t, c), "sales", "staged"); !errors.Is(err, service.ErrNoSuchTable) {
		t.Errorf("a staged table exists: %v", err)
	}
	noSchema := tableRequest("x")
	noSchema.Schema = nil
	for _, tc := range []struct {
		name string
		err  error
		kind error
	}{
		{"a second create", c.CreateTable(ctx, "bob", "sales", tableRequest("orders")), service.ErrAlreadyExists},
		{"a create in a namespace that never was", c.CreateTable(ctx, "bob", "nope", tableRequest("t")), service.ErrNoSuchNamespace},
		{"a create without a schema", c.CreateTable(ctx, "bob", "sales", noSchema), service.ErrInvalid},
		{"a create of a masking-view name", c.CreateTable(ctx, "bob", "sales", tableRequest("__mask_t")), service.ErrInvalid},
		{"staging a live table's name", second(c.StageTable(ctx, snap, "sales", tableRequest("orders"), time.Now())), service.ErrAlreadyExists},
		{"staging in a namespace that never was", second(c.StageTable(ctx, snap, "nope", tableRequest("t"), time.Now())), service.ErrNoSuchNamespace},
		{"a table that never was", second(c.TableAt(ctx, snap, "sales", "ghost")), service.ErrNoSuchTable},
	} {
		if !errors.Is(tc.err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.kind)
		}
	}
}

func TestCommitError(t *testing.T) {
	for _, tc := range []struct{ commit, service error }{
		{commit.ErrConflict, service.ErrConflict},
		{commit.ErrExists, service.ErrAlreadyExists},
		{commit.ErrNotFound, service.ErrNoSuchTable},
		{commit.ErrForbidden, service.ErrForbidden},
		{commit.ErrUnsupported, service.ErrUnsupported},
		{commit.ErrInvalid, service.ErrInvalid},
	} {
		err := service.CommitError(fmt.Errorf("wrapped: %w", &commit.Error{Kind: tc.commit, Message: "why"}))
		var se *service.Error
		if !errors.As(err, &se) || se.Kind != tc.service || se.Message != "why" {
			t.Errorf("%v: %v, want %v", tc.commit, err, tc.service)
		}
	}
	other := errors.New("not a refusal")
	if err := service.CommitError(other); err != other {
		t.Errorf("an error that is no refusal became %v", err)
	}
	if service.CommitError(nil) != nil {
		t.Error("nil became an error")
	}
}

func TestTableDropAndRename(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := pgtest.Database(t)
	if _, err := ducklake.Init(ctx, pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		t.Fatal(err)
	}
	c := service.New(service.Config{DB: pgtest.Pool(t, dsn), DataPath: "s3://lake/data/",
		Commits: commit.New(commit.Config{MaxFormatVersion: 3}), CanPurge: true})
	for _, ns := range []string{"sales", "other"} {
		if _, err := c.CreateNamespace(ctx, "alice", ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	createTable(t, c, "sales", "orders")
	createTable(t, c, "sales", "taken")
	// (Tables sharing a prefix or without a directory of their own, which
	// a purge refuses, only DuckDB makes: test/catalog's purge tests.)
	createTable(t, c, "sales", "nested")
	createTable(t, c, "other", "keep")

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
