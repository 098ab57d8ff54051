package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/catalog/views"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// newViewCatalog is a Catalog over a new DuckLake catalog with namespaces
// sales and other, table sales.orders, and objects as its object store.
func newViewCatalog(t *testing.T, objects objstore.Store) *service.Catalog {
	t.Helper()
	dsn := pgtest.Database(t)
	if _, err := ducklake.Init(context.Background(), pgtest.Connect(t, dsn), ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		t.Fatal(err)
	}
	commits := commit.New(commit.Config{Objects: objects, MaxFormatVersion: 3})
	c := service.New(service.Config{DB: pgtest.Pool(t, dsn), DataPath: "s3://lake/data/", Commits: commits, Objects: objects})
	for _, ns := range []string{"sales", "other"} {
		if _, err := c.CreateNamespace(context.Background(), "alice", ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	createTable(t, c, "sales", "orders")
	return c
}

// newView is a request for view name selecting sql, with one int column.
func newView(t *testing.T, name, sql string) service.CreateView {
	t.Helper()
	var sc views.Schema
	if err := json.Unmarshal([]byte(`{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"int"}]}`), &sc); err != nil {
		t.Fatal(err)
	}
	return service.CreateView{Name: name, Schema: &sc, Properties: map[string]string{"comment": "first"},
		ViewVersion: &views.Version{VersionID: 1, Representations: []views.Representation{{Type: "sql", Dialect: "duckdb", SQL: sql}},
			DefaultNamespace: []string{"sales"}}}
}

func TestViews(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objects := objstore.NewMem()
	c := newViewCatalog(t, objects)

	md, loc, err := c.CreateView(ctx, "alice", "sales", newView(t, "recent", "SELECT id FROM sales.orders"))
	if err != nil {
		t.Fatal(err)
	}
	if md.Location != "s3://lake/data/sales/recent" || !strings.HasPrefix(loc, "s3://lake/data/sales/recent/metadata/00001-") ||
		md.Properties["comment"] != "first" {
		t.Errorf("created %+v at %s", md, loc)
	}
	if doc, ok := objects.Object(loc); !ok || !json.Valid(doc) {
		t.Errorf("no metadata file at %s (%q)", loc, doc)
	}
	names, err := c.ViewNames(ctx, "sales")
	if err != nil || len(names) != 1 || names[0] != "recent" {
		t.Errorf("ViewNames = %v, %v", names, err)
	}

	// Load: the sidecar's metadata, at the file the create wrote.
	v, err := c.LookupView(ctx, "sales", "recent")
	if err == nil {
		var got *views.Metadata
		var at string
		got, at, err = v.IcebergMetadata("sales")
		if err == nil && (got.UUID != md.UUID || at != loc) {
			t.Errorf("loaded %s at %s, want %s at %s", got.UUID, at, md.UUID, loc)
		}
	}
	if err != nil {
		t.Fatal(err)
	}

	// Replace: a property change writes the second file; a wrong UUID
	// requirement is a conflict, an empty commit loads the view.
	replaced, rloc, err := c.ReplaceView(ctx, "bob", "sales", "recent", service.ViewCommit{
		Requirements: []service.ViewRequirement{{Type: "assert-view-uuid", UUID: md.UUID}},
		Updates:      []views.Update{{Action: "set-properties", Updates: map[string]string{"comment": "second"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if replaced.Properties["comment"] != "second" || !strings.HasPrefix(rloc, "s3://lake/data/sales/recent/metadata/00002-") {
		t.Errorf("replaced %+v at %s", replaced.Properties, rloc)
	}
	same, sloc, err := c.ReplaceView(ctx, "bob", "sales", "recent", service.ViewCommit{Updates: []views.Update{}})
	if err != nil || sloc != rloc || same.Properties["comment"] != "second" {
		t.Errorf("empty commit: %v at %s, %v", same, sloc, err)
	}

	for _, tc := range []struct {
		name string
		err  error
		kind error
	}{
		{"a view in a namespace that never was", third(c.CreateView(ctx, "bob", "nope", newView(t, "v", "SELECT 1"))), service.ErrNoSuchNamespace},
		{"a view named as a table", third(c.CreateView(ctx, "bob", "sales", newView(t, "orders", "SELECT 1"))), service.ErrAlreadyExists},
		{"a view named as a view", third(c.CreateView(ctx, "bob", "sales", newView(t, "recent", "SELECT 1"))), service.ErrAlreadyExists},
		{"a view without a schema", third(c.CreateView(ctx, "bob", "sales", service.CreateView{Name: "v"})), service.ErrInvalid},
		{"a view with a masking-view name", third(c.CreateView(ctx, "bob", "sales", newView(t, "__mask_v", "SELECT 1"))), service.ErrInvalid},
		{"a view with no SQL", third(c.CreateView(ctx, "bob", "sales", func() service.CreateView {
			req := newView(t, "v", "")
			req.ViewVersion.Representations = nil
			return req
		}())), service.ErrInvalidView},
		{"a commit without updates", third(c.ReplaceView(ctx, "bob", "sales", "recent", service.ViewCommit{})), service.ErrInvalid},
		{"an unknown requirement", third(c.ReplaceView(ctx, "bob", "sales", "recent", service.ViewCommit{
			Requirements: []service.ViewRequirement{{Type: "assert-table-uuid"}}, Updates: []views.Update{}})), service.ErrInvalid},
		{"another view's UUID", third(c.ReplaceView(ctx, "bob", "sales", "recent", service.ViewCommit{
			Requirements: []service.ViewRequirement{{Type: "assert-view-uuid", UUID: "x"}}, Updates: []views.Update{}})), service.ErrConflict},
		{"a bad update", third(c.ReplaceView(ctx, "bob", "sales", "recent", service.ViewCommit{
			Updates: []views.Update{{Action: "set-current-view-version", VersionID: new(int)}}})), service.ErrInvalidView},
		{"a commit to a view that never was", third(c.ReplaceView(ctx, "bob", "sales", "ghost", service.ViewCommit{Updates: []views.Update{}})), service.ErrNoSuchView},
		{"a rename onto a table", second(c.RenameView(ctx, "bob", "sales", "recent", "sales", "orders")), service.ErrAlreadyExists},
		{"a rename into a namespace that never was", second(c.RenameView(ctx, "bob", "sales", "recent", "nope", "recent")), service.ErrNoSuchNamespace},
		{"a rename of a view that never was", second(c.RenameView(ctx, "bob", "sales", "ghost", "other", "ghost")), service.ErrNoSuchView},
		{"a drop of a view that never was", second(c.DropView(ctx, "bob", "sales", "ghost")), service.ErrNoSuchView},
		{"views of a namespace that never was", second(c.ViewNames(ctx, "nope")), service.ErrNoSuchNamespace},
	} {
		if !errors.Is(tc.err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.kind)
		}
	}
	// The refusals' words are what Iceberg's clients and tests expect.
	if _, _, err := c.CreateView(ctx, "bob", "sales", newView(t, "orders", "SELECT 1")); err == nil || err.Error() != "Table with same name already exists: sales.orders" {
		t.Errorf("view over a table: %v", err)
	}
	if _, err := c.RenameView(ctx, "bob", "sales", "recent", "sales", "orders"); err == nil || err.Error() != "Cannot rename sales.recent to sales.orders. Table already exists" {
		t.Errorf("rename onto a table: %v", err)
	}

	// Rename to another namespace: the view keeps its id and metadata.
	if _, err := c.RenameView(ctx, "alice", "sales", "recent", "other", "moved"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LookupView(ctx, "sales", "recent"); !errors.Is(err, service.ErrNoSuchView) || err.Error() != "View does not exist: sales.recent" {
		t.Errorf("old name after the rename: %v", err)
	}
	moved, err := c.LookupView(ctx, "other", "moved")
	if err != nil || moved.ID != v.ID {
		t.Fatalf("moved view: %+v, %v (was id %d)", moved, err, v.ID)
	}
	if _, err := c.DropView(ctx, "alice", "other", "moved"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LookupView(ctx, "other", "moved"); !errors.Is(err, service.ErrNoSuchView) {
		t.Errorf("after the drop: %v", err)
	}

	// Register the dropped view again from the file the replace wrote: it
	// keeps its UUID, continues its numbering, and registers only once.
	snap := currentSnapshot(t, c)
	sales, err := c.NamespaceAt(ctx, snap, "sales")
	if err != nil {
		t.Fatal(err)
	}
	reg, regLoc, err := c.RegisterView(ctx, "alice", snap, sales, "again", rloc)
	if err != nil {
		t.Fatal(err)
	}
	if reg.UUID != md.UUID || regLoc != rloc || reg.Properties["comment"] != "second" {
		t.Errorf("registered %s at %s", reg.UUID, regLoc)
	}
	if _, nloc, err := c.ReplaceView(ctx, "alice", "sales", "again", service.ViewCommit{
		Updates: []views.Update{{Action: "remove-properties", Removals: []string{"comment"}}}}); err != nil || !strings.Contains(nloc, "/00003-") {
		t.Errorf("commit to the registered view: %s, %v", nloc, err)
	}
	snap = currentSnapshot(t, c)
	objects.Set("s3://lake/data/sales/junk.metadata.json", []byte(`{"not":"a view"}`))
	for _, tc := range []struct {
		name, name2, loc string
		kind             error
	}{
		{"the same file twice", "twice", rloc, service.ErrAlreadyExists},
		{"a name a table has", "orders", rloc, service.ErrAlreadyExists},
		{"a file that is not there", "v", "s3://lake/data/sales/none.metadata.json", service.ErrInvalid},
		{"a file that is no view", "v", "s3://lake/data/sales/junk.metadata.json", service.ErrInvalid},
		{"a table's file", "v", "s3://lake/data/sales/orders/metadata/x.metadata.json", service.ErrForbidden},
	} {
		if _, _, err := c.RegisterView(ctx, "bob", snap, sales, tc.name2, tc.loc); !errors.Is(err, tc.kind) {
			t.Errorf("register %s: %v, want %v", tc.name, err, tc.kind)
		}
	}
	// catalog/commit's refusal, as a service kind (CommitError).
	if _, _, err := c.RegisterView(ctx, "bob", snap, sales, "v", "s3://elsewhere/x.metadata.json"); !errors.Is(err, service.ErrForbidden) {
		t.Errorf("register a file outside the namespace: %v, want ErrForbidden", err)
	}
}

// TestViewsWithoutObjects: without an object store views keep their
// metadata in Postgres only, and none is registered.
func TestViewsWithoutObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newViewCatalog(t, nil)
	if _, _, err := c.CreateView(ctx, "alice", "sales", newView(t, "recent", "SELECT 1")); err != nil {
		t.Fatal(err)
	}
	snap := currentSnapshot(t, c)
	sales, err := c.NamespaceAt(ctx, snap, "sales")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.RegisterView(ctx, "alice", snap, sales, "v", "s3://lake/data/sales/v.metadata.json"); !errors.Is(err, service.ErrUnsupported) {
		t.Errorf("register without an object store: %v, want ErrUnsupported", err)
	}
}

func third[A, B any](_ A, _ B, err error) error { return err }
