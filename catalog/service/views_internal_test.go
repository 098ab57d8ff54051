package service

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/views"
)

func testView(t *testing.T, props map[string]string, schema string, reprs ...views.Representation) *views.Metadata {
	t.Helper()
	var s views.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	md, err := views.New(views.Create{UUID: "6f1c1d4e-0000-4000-8000-000000000001", Location: "s3://lake/data/s/v", Properties: props, Schema: s,
		Version: views.Version{VersionID: 1, Representations: reprs, DefaultNamespace: []string{"s"}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func TestDuckLakeForm(t *testing.T) {
	const two = `{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"int"},{"id":2,"name":"we\"ird","required":false,"type":"string"}]}`
	for _, tt := range []struct {
		name                  string
		schema                string
		reprs                 []views.Representation
		dialect, sql, aliases string
	}{
		{"duckdb wins", two, []views.Representation{{Type: "sql", Dialect: "spark", SQL: "select 1"}, {Type: "sql", Dialect: "DuckDB", SQL: "SELECT 2"}},
			"DuckDB", "SELECT 2", `"id","we""ird"`},
		{"else the first", two, []views.Representation{{Type: "sql", Dialect: "trino", SQL: "select 3"}, {Type: "sql", Dialect: "spark", SQL: "select 4"}},
			"trino", "select 3", `"id","we""ird"`},
		// DuckDB writes '' for no aliases and cannot read NULL.
		{"no fields", `{"type":"struct","fields":[]}`, []views.Representation{{Type: "sql", Dialect: "duckdb", SQL: "SELECT 1"}}, "duckdb", "SELECT 1", ""},
	} {
		d, s, a := duckLakeForm(testView(t, nil, tt.schema, tt.reprs...))
		if d != tt.dialect || s != tt.sql || a != tt.aliases {
			t.Errorf("%s: duckLakeForm = %q %q %q, want %q %q %q", tt.name, d, s, a, tt.dialect, tt.sql, tt.aliases)
		}
	}
}

func TestMetadataLocation(t *testing.T) {
	md := testView(t, nil, `{"type":"struct","fields":[]}`, views.Representation{Type: "sql", Dialect: "x", SQL: "y"})
	if got := metadataLocation(md, 3, "u"); got != "s3://lake/data/s/v/metadata/00003-u.metadata.json" {
		t.Errorf("metadataLocation = %s", got)
	}
	md.Properties = map[string]string{views.PropMetadataPath: "file:/tmp/custom/"}
	if got := metadataLocation(md, 12, "u"); got != "file:/tmp/custom/00012-u.metadata.json" {
		t.Errorf("metadataLocation with write.metadata.path = %s", got)
	}
}

// TestSynthesizedMetadata: a view DuckDB made (no sidecar row) is served as
// a valid one-version view of its SQL; a sidecar row written for other SQL
// than the row now has is ignored; the comment tag is the comment property.
func TestSynthesizedMetadata(t *testing.T) {
	comment := "from DuckDB"
	v := View{View: ducklake.View{ID: 7, UUID: "6f1c1d4e-0000-4000-8000-000000000007",
		ViewDef: ducklake.ViewDef{Dialect: "duckdb", SQL: "SELECT a FROM {DUCKLAKE_CATALOG}.s.t WHERE (a > 0)", Comment: &comment},
		Created: time.UnixMilli(1_700_000_000_000)}, Location: "s3://lake/data/s/v"}
	md, loc, err := v.IcebergMetadata("s")
	if err != nil {
		t.Fatal(err)
	}
	if err := md.Validate(); err != nil {
		t.Fatalf("synthesized metadata does not validate: %v", err)
	}
	cur := md.Current()
	if r, _ := cur.SQL("duckdb"); r.SQL != "SELECT a FROM s.t WHERE (a > 0)" {
		t.Errorf("sql = %q", r.SQL)
	}
	if md.UUID != v.UUID || cur.TimestampMS != 1_700_000_000_000 || !slices.Equal(cur.DefaultNamespace, []string{"s"}) ||
		md.Properties["comment"] != comment || loc != "s3://lake/data/s/v/metadata/00000-"+v.UUID+".metadata.json" {
		t.Errorf("metadata = %+v at %s", md, loc)
	}
	if b, _ := json.Marshal(md.Schemas[0]); string(b) != `{"fields":[],"schema-id":0,"type":"struct"}` {
		t.Errorf("schema = %s", b)
	}

	// With a sidecar row: its metadata, unless the SQL moved on.
	stored := testView(t, map[string]string{"comment": "stale", "k": "v"}, `{"type":"struct","fields":[]}`,
		views.Representation{Type: "sql", Dialect: "spark", SQL: "select 1"})
	doc, _ := json.Marshal(stored)
	v = View{View: ducklake.View{UUID: stored.UUID, ViewDef: ducklake.ViewDef{Dialect: "spark", SQL: "select 1"},
		Metadata: &ducklake.ViewMetadata{Location: "s3://m/00004-x.metadata.json", Document: doc, Files: 4, SQL: "select 1"}}, Location: "s3://x"}
	md, loc, err = v.IcebergMetadata("s")
	if err != nil {
		t.Fatal(err)
	}
	if loc != v.View.Metadata.Location || md.Properties["k"] != "v" || md.Properties["comment"] != "" {
		t.Errorf("from the sidecar: %+v at %s (the comment tag is gone, so is the comment)", md, loc)
	}
	v.SQL = "SELECT 'changed by another writer'"
	if md, _, _ = v.IcebergMetadata("s"); md.Properties["k"] != "" || md.Current().Representations[0].SQL != v.SQL {
		t.Errorf("sidecar of other SQL was used: %+v", md)
	}
	v.SQL, v.View.Metadata.Document = "select 1", []byte(`{"view-uuid":1}`)
	if _, _, err := v.IcebergMetadata("s"); !errors.Is(err, views.ErrInvalid) {
		t.Errorf("a broken sidecar row: %v", err)
	}
}

func TestInvalidView(t *testing.T) {
	_, err := views.New(views.Create{}, time.Now())
	var e *Error
	if !errors.As(invalidView(err), &e) || e.Kind != ErrInvalidView || strings.HasPrefix(e.Message, "invalid view metadata") {
		t.Errorf("invalidView(%v) = %v", err, e)
	}
	other := errors.New("boom")
	if invalidView(other) != other {
		t.Error("invalidView changed an unrelated error")
	}
}

func TestNewUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		u := newUUID()
		if !re.MatchString(u) || seen[u] {
			t.Fatalf("newUUID = %s", u)
		}
		seen[u] = true
	}
}
