package catalog_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/views"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// viewResult is a LoadViewResult.
type viewResult struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         views.Metadata    `json:"metadata"`
	Config           map[string]string `json:"config"`
}

func decodeView(t *testing.T, r response) viewResult {
	t.Helper()
	var v viewResult
	r.decode(t, &v)
	if err := v.Metadata.Validate(); err != nil {
		t.Errorf("served metadata does not validate: %v\n%s", err, r.body)
	}
	return v
}

// viewSchema is a view schema of the given (int) field names.
func viewSchema(names ...string) map[string]any {
	fields := make([]map[string]any, len(names))
	for i, n := range names {
		typ := "int"
		if n == "label" || n == "v" {
			typ = "string"
		}
		fields[i] = map[string]any{"id": i + 1, "name": n, "required": false, "type": typ}
	}
	return map[string]any{"type": "struct", "schema-id": 7, "fields": fields}
}

// viewVersion is a view version of the given dialect/SQL pairs.
func viewVersion(schemaID int, reprs ...string) map[string]any {
	var rs []map[string]any
	for i := 0; i+1 < len(reprs); i += 2 {
		rs = append(rs, map[string]any{"type": "sql", "dialect": reprs[i], "sql": reprs[i+1]})
	}
	return map[string]any{"version-id": 1, "schema-id": schemaID, "timestamp-ms": 1_700_000_000_000,
		"summary": map[string]string{"engine-name": "test"}, "representations": rs, "default-namespace": []string{"sales"}}
}

func createViewBody(name string, schema map[string]any, props map[string]string, reprs ...string) map[string]any {
	return map[string]any{"name": name, "schema": schema, "view-version": viewVersion(0, reprs...), "properties": props}
}

// replaceViewBody is what Iceberg's Java client sends to replace a view:
// the new schema, a version on it, made current.
func replaceViewBody(uuid string, schema map[string]any, reprs ...string) map[string]any {
	v := viewVersion(-1, reprs...)
	v["version-id"] = 2
	v["summary"] = map[string]string{"operation": "replace"}
	return map[string]any{
		"requirements": []map[string]any{{"type": "assert-view-uuid", "uuid": uuid}},
		"updates": []map[string]any{
			{"action": "add-schema", "schema": schema},
			{"action": "add-view-version", "view-version": v},
			{"action": "set-current-view-version", "view-version-id": -1},
		},
	}
}

func propsBody(set map[string]string, remove ...string) map[string]any {
	u := []map[string]any{}
	if set != nil {
		u = append(u, map[string]any{"action": "set-properties", "updates": set})
	}
	if remove != nil {
		u = append(u, map[string]any{"action": "remove-properties", "removals": remove})
	}
	return map[string]any{"updates": u}
}

// TestRESTViews walks the view routes in order against a catalog DuckDB
// filled, with views DuckDB made beside those made over REST, and checks
// with DuckDB that each change landed as DuckDB would have written it:
// DuckDB lists, describes and queries the views Iceberg clients made.
func TestRESTViews(t *testing.T) {
	env := salesEnv(t,
		"CREATE VIEW l.sales.big AS SELECT id FROM l.sales.orders WHERE id > 1",
		"USE l.sales",
		"CREATE VIEW aliased (x) AS SELECT id FROM orders",
		"COMMENT ON VIEW l.sales.aliased IS 'made by DuckDB'",
		"CREATE SCHEMA l.hr",
	)
	tok := env.tokens()
	// What earlier steps learnt, for later ones.
	var (
		v1       viewResult // sales.v1 as created
		bigUUID  string
		snapshot func() string
	)
	snapshot = func() string {
		var changes string
		if err := env.pool.QueryRow(t.Context(), `SELECT changes_made FROM ducklake_snapshot_changes ORDER BY snapshot_id DESC LIMIT 1`).Scan(&changes); err != nil {
			t.Fatal(err)
		}
		return changes
	}
	viewID := func(ns, name string) int64 {
		var id int64
		if err := env.pool.QueryRow(t.Context(), `SELECT v.view_id FROM ducklake_view v JOIN ducklake_schema s USING (schema_id)
			WHERE s.schema_name = $1 AND v.view_name = $2 AND v.end_snapshot IS NULL AND s.end_snapshot IS NULL`, ns, name).Scan(&id); err != nil {
			t.Fatalf("view %s.%s: %v", ns, name, err)
		}
		return id
	}
	idents := func(want ...string) func(*testing.T, response) {
		return func(t *testing.T, r response) {
			if got := r.identifiers(t); !slices.Equal(got, want) {
				t.Errorf("views = %v, want %v", got, want)
			}
		}
	}
	message := func(want string) func(*testing.T, response) {
		return func(t *testing.T, r response) {
			var e struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			r.decode(t, &e)
			if !strings.HasPrefix(e.Error.Message, want) {
				t.Errorf("message = %q, want it to start with %q", e.Error.Message, want)
			}
		}
	}
	rename := func(srcNS, src, dstNS, dst string) map[string]any {
		return map[string]any{
			"source":      map[string]any{"namespace": []string{srcNS}, "name": src},
			"destination": map[string]any{"namespace": []string{dstNS}, "name": dst},
		}
	}
	// duckRows checks what DuckDB answers to one query.
	duckRows := func(query string, want ...string) func(*testing.T) {
		return func(t *testing.T) {
			t.Helper()
			if got := flat(env.duck(query)[0]); !slices.Equal(got, want) {
				t.Errorf("DuckDB %s = %v, want %v", query, got, want)
			}
		}
	}
	lastChange := func(want func() string) func(*testing.T) {
		return func(t *testing.T) {
			t.Helper()
			if got, w := snapshot(), want(); got != w {
				t.Errorf("snapshot changes = %q, want %q", got, w)
			}
		}
	}

	type step struct {
		name    string
		method  string
		path    string
		token   string
		body    any // or func() any, evaluated when the step runs
		code    int
		errType string
		check   func(*testing.T, response)
		after   []func(*testing.T)
	}
	steps := []step{
		{name: "config lists the view routes", method: "GET", path: "/v1/config", code: 200, check: func(t *testing.T, r response) {
			var c struct {
				Endpoints []string `json:"endpoints"`
			}
			r.decode(t, &c)
			for _, e := range []string{"GET /v1/{prefix}/namespaces/{namespace}/views", "POST /v1/{prefix}/namespaces/{namespace}/views",
				"GET /v1/{prefix}/namespaces/{namespace}/views/{view}", "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
				"POST /v1/{prefix}/namespaces/{namespace}/views/{view}", "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
				"POST /v1/{prefix}/views/rename"} {
				if !slices.Contains(c.Endpoints, e) {
					t.Errorf("endpoints lack %s", e)
				}
			}
		}},

		// DuckDB's views, as Iceberg clients see them.
		{name: "list DuckDB's views", method: "GET", path: "/v1/lake/namespaces/sales/views", token: tok["reader"], code: 200, check: idents("sales.aliased", "sales.big")},
		{name: "list one page", method: "GET", path: "/v1/lake/namespaces/sales/views?pageToken=&pageSize=1", token: tok["reader"], code: 200, check: idents("sales.aliased")},
		{name: "list an empty namespace", method: "GET", path: "/v1/lake/namespaces/hr/views", token: tok["admin"], code: 200, check: idents()},
		{name: "list without scope", method: "GET", path: "/v1/lake/namespaces/sales/views", token: tok["stranger"], code: 403, errType: "ForbiddenException"},
		{name: "list a missing namespace", method: "GET", path: "/v1/lake/namespaces/nope/views", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "load DuckDB's view", method: "GET", path: "/v1/lake/namespaces/sales/views/big", token: tok["reader"], code: 200, check: func(t *testing.T, r response) {
			v := decodeView(t, r)
			md := v.Metadata
			cur := md.Current()
			bigUUID = md.UUID
			if md.Location != "s3://lake/data/sales/big" || !strings.HasPrefix(v.MetadataLocation, "s3://lake/data/sales/big/metadata/00000-") ||
				len(md.Versions) != 1 || len(md.VersionLog) != 1 || !slices.Equal(cur.DefaultNamespace, []string{"sales"}) {
				t.Errorf("metadata = %s", r.body)
			}
			if rep, ok := cur.SQL("duckdb"); !ok || rep.SQL != "SELECT id FROM sales.orders WHERE (id > 1)" {
				t.Errorf("duckdb representation = %+v (the {DUCKLAKE_CATALOG} qualifier must go)", cur.Representations)
			}
			if n := md.Schema(cur.SchemaID).FieldNames(); len(n) != 0 {
				t.Errorf("fields = %v, want none (DuckLake does not know a view's types)", n)
			}
			var uuid string
			if err := env.pool.QueryRow(t.Context(), `SELECT view_uuid::text FROM ducklake_view WHERE view_name = 'big'`).Scan(&uuid); err != nil || uuid != md.UUID {
				t.Errorf("view-uuid %s, DuckLake's %s (%v)", md.UUID, uuid, err)
			}
		}},
		{name: "load DuckDB's view with a comment", method: "GET", path: "/v1/lake/namespaces/sales/views/aliased", token: tok["reader"], code: 200, check: func(t *testing.T, r response) {
			md := decodeView(t, r).Metadata
			if md.Properties["comment"] != "made by DuckDB" {
				t.Errorf("properties = %v", md.Properties)
			}
			if rep, _ := md.Current().SQL("duckdb"); rep.SQL != "SELECT id FROM orders" {
				t.Errorf("sql = %q", rep.SQL)
			}
		}},
		{name: "view exists", method: "HEAD", path: "/v1/lake/namespaces/sales/views/big", token: tok["reader"], code: 204},
		{name: "view does not exist", method: "HEAD", path: "/v1/lake/namespaces/sales/views/nope", token: tok["reader"], code: 404},
		{name: "a table is not a view", method: "HEAD", path: "/v1/lake/namespaces/sales/views/orders", token: tok["reader"], code: 404},
		{name: "load a table as a view", method: "GET", path: "/v1/lake/namespaces/sales/views/orders", token: tok["reader"], code: 404, errType: "NoSuchViewException",
			check: message("View does not exist: sales.orders")},
		{name: "load a view in a missing namespace", method: "GET", path: "/v1/lake/namespaces/nope/views/v", token: tok["admin"], code: 404, errType: "NoSuchViewException",
			check: message("View does not exist: nope.v")},
		{name: "load a view as a table", method: "GET", path: "/v1/lake/namespaces/sales/tables/big", token: tok["reader"], code: 404, errType: "NoSuchTableException"},
		{name: "load a view without scope", method: "GET", path: "/v1/lake/namespaces/sales/views/big", token: tok["stranger"], code: 403, errType: "ForbiddenException"},

		// Create.
		{name: "create a view", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: createViewBody("v1", viewSchema("id", "label"), map[string]string{"comment": "from REST", "owner": "ann"},
				"spark", "select id, v from sales.orders", "duckdb", "SELECT id, v FROM sales.orders ORDER BY id"),
			code: 200, check: func(t *testing.T, r response) {
				v1 = decodeView(t, r)
				md := v1.Metadata
				cur := md.Current()
				if md.FormatVersion != 1 || md.Location != "s3://lake/data/sales/v1" || md.CurrentVersionID != 1 || cur.SchemaID != 0 ||
					md.Schemas[0].ID != 0 || !slices.Equal(md.VersionLog, []views.LogEntry{{TimestampMS: 1_700_000_000_000, VersionID: 1}}) ||
					md.Properties["owner"] != "ann" || !strings.HasPrefix(v1.MetadataLocation, "s3://lake/data/sales/v1/metadata/00001-") {
					t.Errorf("created = %s", r.body)
				}
			},
			after: []func(*testing.T){
				lastChange(func() string { return `created_view:"sales"."v1"` }),
				func(t *testing.T) {
					var uuid, dialect, sql, aliases string
					if err := env.pool.QueryRow(t.Context(), `SELECT view_uuid::text, dialect, sql, column_aliases FROM ducklake_view WHERE view_name = 'v1' AND end_snapshot IS NULL`).
						Scan(&uuid, &dialect, &sql, &aliases); err != nil {
						t.Fatal(err)
					}
					if uuid != v1.Metadata.UUID || dialect != "duckdb" || sql != "SELECT id, v FROM sales.orders ORDER BY id" || aliases != `"id","label"` {
						t.Errorf("ducklake_view row = %s %s %q %q", uuid, dialect, sql, aliases)
					}
				},
				// The schema's names are DuckDB's column names; the comment is DuckDB's.
				duckRows("SELECT label FROM l.sales.v1", "a", "b"),
				duckRows("SELECT comment FROM duckdb_views() WHERE database_name = 'l' AND view_name = 'v1'", "from REST"),
			}},
		{name: "create it again", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: createViewBody("v1", viewSchema("id"), nil, "spark", "select 1"), code: 409, errType: "AlreadyExistsException",
			check: message("View already exists: sales.v1")},
		{name: "create over a table", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: createViewBody("orders", viewSchema("id"), nil, "spark", "select 1"), code: 409, errType: "AlreadyExistsException",
			check: message("Table with same name already exists: sales.orders")},
		{name: "create over DuckDB's view", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: createViewBody("big", viewSchema("id"), nil, "spark", "select 1"), code: 409, errType: "AlreadyExistsException"},
		{name: "create in a missing namespace", method: "POST", path: "/v1/lake/namespaces/nope/views", token: tok["admin"],
			body: createViewBody("v", viewSchema("id"), nil, "spark", "select 1"), code: 404, errType: "NoSuchNamespaceException"},
		{name: "create without write scope", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["reader"],
			body: createViewBody("v9", viewSchema("id"), nil, "spark", "select 1"), code: 403, errType: "ForbiddenException"},
		{name: "create without a schema", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: map[string]any{"name": "v9", "view-version": viewVersion(0, "spark", "select 1")}, code: 400, errType: "BadRequestException"},
		{name: "create with two queries for one dialect", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: createViewBody("v9", viewSchema("id"), nil, "trino", "select 1", "TRINO", "select 2"), code: 400, errType: "IllegalArgumentException",
			check: message("Invalid view version: Cannot add multiple queries for dialect trino")},
		{name: "create without representations", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: createViewBody("v9", viewSchema("id"), nil), code: 400, errType: "IllegalArgumentException"},
		{name: "create with a bad name", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: createViewBody("a/b", viewSchema("id"), nil, "spark", "select 1"), code: 400, errType: "BadRequestException"},
		{name: "create a spark-only view at a chosen location", method: "POST", path: "/v1/lake/namespaces/sales/views", token: tok["writer"],
			body: map[string]any{"name": "sv", "location": "s3://elsewhere/sv", "schema": viewSchema("id"),
				"view-version": viewVersion(0, "spark", "select id from sales.orders where id = 2"),
				"properties":   map[string]string{"write.metadata.path": "s3://meta/sv"}},
			code: 200, check: func(t *testing.T, r response) {
				v := decodeView(t, r)
				if v.Metadata.Location != "s3://elsewhere/sv" || !strings.HasPrefix(v.MetadataLocation, "s3://meta/sv/00001-") {
					t.Errorf("created = %s", r.body)
				}
			},
			// DuckLake records the SQL's real dialect; DuckDB runs it as its own.
			after: []func(*testing.T){
				func(t *testing.T) {
					var dialect, sql string
					if err := env.pool.QueryRow(t.Context(), `SELECT dialect, sql FROM ducklake_view WHERE view_name = 'sv'`).Scan(&dialect, &sql); err != nil ||
						dialect != "spark" || sql != "select id from sales.orders where id = 2" {
						t.Errorf("ducklake_view sv = %s %q (%v)", dialect, sql, err)
					}
				},
				duckRows("SELECT id FROM l.sales.sv", "2"),
			}},
		{name: "list with the new views", method: "GET", path: "/v1/lake/namespaces/sales/views", token: tok["reader"], code: 200,
			check: idents("sales.aliased", "sales.big", "sales.sv", "sales.v1")},
		{name: "the table list has no views", method: "GET", path: "/v1/lake/namespaces/sales/tables", token: tok["reader"], code: 200,
			check: func(t *testing.T, r response) {
				if strings.Contains(string(r.body), "v1") || strings.Contains(string(r.body), "big") {
					t.Errorf("tables = %s", r.body)
				}
			}},

		// Replace (commit).
		{name: "replace the view", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["writer"],
			body: func() any {
				return replaceViewBody(v1.Metadata.UUID, viewSchema("id", "v"),
					"duckdb", "SELECT id * 10 AS id, v FROM sales.orders ORDER BY id", "spark", "select id * 10, v from sales.orders")
			},
			code: 200, check: func(t *testing.T, r response) {
				v := decodeView(t, r)
				md := v.Metadata
				if md.CurrentVersionID != 2 || md.Current().SchemaID != 1 || len(md.Schemas) != 2 || len(md.VersionLog) != 2 ||
					md.UUID != v1.Metadata.UUID || md.Properties["owner"] != "ann" || !strings.HasPrefix(v.MetadataLocation, "s3://lake/data/sales/v1/metadata/00002-") {
					t.Errorf("replaced = %s", r.body)
				}
			},
			after: []func(*testing.T){
				lastChange(func() string { return fmt.Sprintf("altered_view:%d", viewID("sales", "v1")) }),
				duckRows("SELECT id, v FROM l.sales.v1", "10,a", "20,b"),
				func(t *testing.T) {
					var n int
					env.pool.QueryRow(t.Context(), `SELECT count(*) FROM ducklake_view WHERE view_name = 'v1'`).Scan(&n)
					if n != 2 {
						t.Errorf("%d ducklake_view rows for v1, want the old one ended and a new one", n)
					}
				},
			}},
		{name: "replace with a stale uuid", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["writer"],
			body: replaceViewBody("00000000-0000-4000-8000-000000000000", viewSchema("id"), "spark", "select 1"), code: 409, errType: "CommitFailedException"},
		{name: "replace dropping a dialect", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["writer"],
			body: func() any { return replaceViewBody(v1.Metadata.UUID, viewSchema("id"), "duckdb", "SELECT 1 AS id") }, code: 400, errType: "IllegalArgumentException"},
		{name: "replace a missing view", method: "POST", path: "/v1/lake/namespaces/sales/views/nope", token: tok["writer"],
			body: replaceViewBody("00000000-0000-4000-8000-000000000000", viewSchema("id"), "spark", "select 1"), code: 404, errType: "NoSuchViewException",
			check: message("View does not exist: sales.nope")},
		{name: "replace with a table update", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["writer"],
			body: map[string]any{"updates": []map[string]any{{"action": "add-snapshot"}}}, code: 400, errType: "IllegalArgumentException"},
		{name: "replace with a table requirement", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["writer"],
			body: map[string]any{"requirements": []map[string]any{{"type": "assert-create"}}, "updates": []any{}}, code: 400, errType: "BadRequestException"},
		{name: "replace without write scope", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["reader"],
			body: propsBody(map[string]string{"k": "v"}), code: 403, errType: "ForbiddenException"},
		{name: "set properties and the comment", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["writer"],
			body: propsBody(map[string]string{"comment": "changed", "k": "v"}, "owner"), code: 200, check: func(t *testing.T, r response) {
				md := decodeView(t, r).Metadata
				if md.Properties["k"] != "v" || md.Properties["owner"] != "" || md.Properties["comment"] != "changed" || len(md.Versions) != 2 {
					t.Errorf("properties = %v", md.Properties)
				}
			},
			after: []func(*testing.T){duckRows("SELECT comment FROM duckdb_views() WHERE database_name = 'l' AND view_name = 'v1'", "changed")}},
		{name: "remove the comment", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["writer"],
			body: propsBody(nil, "comment"), code: 200,
			after: []func(*testing.T){duckRows("SELECT comment IS NULL FROM duckdb_views() WHERE database_name = 'l' AND view_name = 'v1'", "true")}},
		{name: "an empty commit", method: "POST", path: "/v1/lake/namespaces/sales/views/v1", token: tok["writer"],
			body: map[string]any{"updates": []any{}}, code: 200, check: func(t *testing.T, r response) {
				if md := decodeView(t, r).Metadata; md.CurrentVersionID != 2 {
					t.Errorf("metadata = %s", r.body)
				}
			}},
		{name: "commit to DuckDB's view", method: "POST", path: "/v1/lake/namespaces/sales/views/big", token: tok["writer"],
			body: func() any {
				b := propsBody(map[string]string{"owner": "bob"})
				b["requirements"] = []map[string]any{{"type": "assert-view-uuid", "uuid": bigUUID}}
				return b
			}, code: 200, check: func(t *testing.T, r response) {
				v := decodeView(t, r)
				if v.Metadata.Properties["owner"] != "bob" || v.Metadata.UUID != bigUUID || !strings.HasPrefix(v.MetadataLocation, "s3://lake/data/sales/big/metadata/00001-") {
					t.Errorf("metadata = %s", r.body)
				}
			},
			after: []func(*testing.T){
				duckRows("SELECT id FROM l.sales.big", "2"),
				// DuckDB's SQL stays as DuckDB wrote it.
				func(t *testing.T) {
					var sql string
					var rows int
					if err := env.pool.QueryRow(t.Context(), `SELECT max(sql), count(*) FROM ducklake_view WHERE view_name = 'big'`).Scan(&sql, &rows); err != nil ||
						rows != 1 || !strings.Contains(sql, "{DUCKLAKE_CATALOG}") {
						t.Errorf("ducklake_view big: %d rows, sql %q (%v)", rows, sql, err)
					}
				},
			}},
		{name: "load it again", method: "GET", path: "/v1/lake/namespaces/sales/views/big", token: tok["reader"], code: 200, check: func(t *testing.T, r response) {
			if md := decodeView(t, r).Metadata; md.Properties["owner"] != "bob" {
				t.Errorf("properties = %v", md.Properties)
			}
		}},

		// Rename.
		{name: "rename", method: "POST", path: "/v1/lake/views/rename", token: tok["writer"], body: rename("sales", "v1", "sales", "v1r"), code: 204,
			after: []func(*testing.T){
				lastChange(func() string { return `created_view:"sales"."v1r"` }),
				duckRows("SELECT id FROM l.sales.v1r", "10", "20"),
			}},
		{name: "the old name is gone", method: "HEAD", path: "/v1/lake/namespaces/sales/views/v1", token: tok["reader"], code: 404},
		{name: "the metadata did not change", method: "GET", path: "/v1/lake/namespaces/sales/views/v1r", token: tok["reader"], code: 200, check: func(t *testing.T, r response) {
			if md := decodeView(t, r).Metadata; md.UUID != v1.Metadata.UUID || md.CurrentVersionID != 2 || md.Properties["k"] != "v" {
				t.Errorf("metadata = %s", r.body)
			}
		}},
		{name: "rename onto a table", method: "POST", path: "/v1/lake/views/rename", token: tok["writer"], body: rename("sales", "v1r", "sales", "orders"),
			code: 409, errType: "AlreadyExistsException", check: message("Cannot rename sales.v1r to sales.orders. Table already exists")},
		{name: "rename onto a view", method: "POST", path: "/v1/lake/views/rename", token: tok["writer"], body: rename("sales", "v1r", "sales", "big"),
			code: 409, errType: "AlreadyExistsException", check: message("Cannot rename sales.v1r to sales.big. View already exists")},
		{name: "rename a table onto a view", method: "POST", path: "/v1/lake/tables/rename", token: tok["writer"], body: rename("sales", "orders", "sales", "big"),
			code: 409, errType: "AlreadyExistsException", check: message("Cannot rename sales.orders to sales.big. View already exists")},
		{name: "rename a missing view", method: "POST", path: "/v1/lake/views/rename", token: tok["writer"], body: rename("sales", "nope", "sales", "x"),
			code: 404, errType: "NoSuchViewException"},
		{name: "rename a table as a view", method: "POST", path: "/v1/lake/views/rename", token: tok["writer"], body: rename("sales", "orders", "sales", "x"),
			code: 404, errType: "NoSuchViewException"},
		{name: "rename into a missing namespace", method: "POST", path: "/v1/lake/views/rename", token: tok["admin"], body: rename("sales", "v1r", "nope", "x"),
			code: 404, errType: "NoSuchNamespaceException", check: message("Namespace does not exist: nope")},
		{name: "rename into a namespace without scope", method: "POST", path: "/v1/lake/views/rename", token: tok["writer"], body: rename("sales", "v1r", "hr", "x"),
			code: 403, errType: "ForbiddenException"},
		{name: "rename into another namespace", method: "POST", path: "/v1/lake/views/rename", token: tok["admin"], body: rename("sales", "v1r", "hr", "moved"),
			code: 204, after: []func(*testing.T){duckRows("SELECT count(*) FROM l.hr.moved", "2")}},
		{name: "GET on the rename route", method: "GET", path: "/v1/lake/views/rename", token: tok["admin"], code: 405},

		// Drop.
		{name: "a namespace with a view is not empty", method: "DELETE", path: "/v1/lake/namespaces/hr", token: tok["admin"], code: 409, errType: "NamespaceNotEmptyException"},
		{name: "drop", method: "DELETE", path: "/v1/lake/namespaces/hr/views/moved", token: tok["admin"], code: 204,
			after: []func(*testing.T){
				lastChange(func() string {
					var id int64
					env.pool.QueryRow(t.Context(), `SELECT max(view_id) FROM ducklake_view WHERE view_name = 'moved'`).Scan(&id)
					return fmt.Sprintf("dropped_view:%d", id)
				}),
				duckRows("SELECT count(*) FROM duckdb_views() WHERE database_name = 'l' AND view_name = 'moved'", "0"),
				func(t *testing.T) {
					var n int
					env.pool.QueryRow(t.Context(), `SELECT count(*) FROM `+"duckicelake_view_metadata"+` m JOIN ducklake_view v USING (view_id) WHERE v.view_name = 'moved'`).Scan(&n)
					if n != 0 {
						t.Errorf("the dropped view's metadata is still there")
					}
				},
			}},
		{name: "drop it again", method: "DELETE", path: "/v1/lake/namespaces/hr/views/moved", token: tok["admin"], code: 404, errType: "NoSuchViewException"},
		{name: "drop a table as a view", method: "DELETE", path: "/v1/lake/namespaces/sales/views/orders", token: tok["admin"], code: 404, errType: "NoSuchViewException"},
		{name: "drop without scope", method: "DELETE", path: "/v1/lake/namespaces/sales/views/big", token: tok["reader"], code: 403, errType: "ForbiddenException"},
		{name: "drop DuckDB's view", method: "DELETE", path: "/v1/lake/namespaces/sales/views/aliased", token: tok["writer"], code: 204},
		{name: "the namespace is empty again", method: "DELETE", path: "/v1/lake/namespaces/hr", token: tok["admin"], code: 204},
		{name: "list after the drops", method: "GET", path: "/v1/lake/namespaces/sales/views", token: tok["reader"], code: 200, check: idents("sales.big", "sales.sv")},
		{name: "PATCH a view", method: "PATCH", path: "/v1/lake/namespaces/sales/views/big", token: tok["admin"], code: 405},
		{name: "below a view", method: "GET", path: "/v1/lake/namespaces/sales/views/big/x", token: tok["admin"], code: 404},
	}
	for _, st := range steps {
		body := st.body
		if f, ok := body.(func() any); ok {
			body = f()
		}
		r := env.do(st.method, st.path, st.token, body)
		if r.code != st.code {
			t.Fatalf("%s: %s %s = %d, want %d: %s", st.name, st.method, st.path, r.code, st.code, r.body)
		}
		if st.errType != "" && r.errType() != st.errType {
			t.Errorf("%s: error type %q, want %q: %s", st.name, r.errType(), st.errType, r.body)
		}
		if st.check != nil {
			t.Run(st.name, func(t *testing.T) { st.check(t, r) })
		}
		for _, f := range st.after {
			t.Run(st.name, f)
		}
	}

	// DuckDB replaces a view Iceberg made: a new view (new id and UUID), so
	// its Iceberg metadata is made from DuckLake again.
	env.duck("CREATE OR REPLACE VIEW l.sales.sv AS SELECT 42 AS answer")
	r := env.do("GET", "/v1/lake/namespaces/sales/views/sv", tok["reader"], nil)
	if r.code != 200 {
		t.Fatalf("load sv after DuckDB replaced it: %d %s", r.code, r.body)
	}
	md := decodeView(t, r).Metadata
	if rep, _ := md.Current().SQL("duckdb"); rep.SQL != "SELECT 42 AS answer" || len(md.Versions) != 1 || md.Location != "s3://lake/data/sales/sv" {
		t.Errorf("sv after DuckDB's CREATE OR REPLACE = %s", r.body)
	}
}

// TestRESTViewsConcurrentCommits: commits built on the same version all
// land, one after another, as the catalog re-applies each to the view as
// it is (what Iceberg's kit calls server-side retry), and none is lost.
func TestRESTViewsConcurrentCommits(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.s")
	tok := env.token("admin")
	r := env.do("POST", "/v1/lake/namespaces/s/views", tok,
		createViewBody("v", viewSchema("id"), map[string]string{"replace.drop-dialect.allowed": "true"}, "duckdb", "SELECT 0 AS id"))
	if r.code != 200 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	uuid := decodeView(t, r).Metadata.UUID
	const n = 6
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			b := replaceViewBody(uuid, viewSchema("id"), "duckdb", fmt.Sprintf("SELECT %d AS id", i+1))
			codes[i] = env.do("POST", "/v1/lake/namespaces/s/views/v", tok, b).code
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("commit %d: %d", i, c)
		}
	}
	md := decodeView(t, env.do("GET", "/v1/lake/namespaces/s/views/v", tok, nil)).Metadata
	if len(md.Versions) != n+1 || len(md.VersionLog) != n+1 || md.CurrentVersionID != n+1 || len(md.Schemas) != 1 {
		t.Errorf("after %d concurrent commits: %d versions, %d log entries, current %d, %d schemas", n, len(md.Versions), len(md.VersionLog), md.CurrentVersionID, len(md.Schemas))
	}
	// DuckDB runs the version that is current.
	rep, _ := md.Current().SQL("duckdb")
	want := strings.TrimPrefix(strings.TrimSuffix(rep.SQL, " AS id"), "SELECT ")
	if got := flat(env.duck("SELECT id FROM l.s.v")[0]); !slices.Equal(got, []string{want}) {
		t.Errorf("DuckDB runs %v, the current version is %q", got, rep.SQL)
	}
}

// TestPyIcebergViews: PyIceberg 0.12's view API (create, list, exists,
// load, drop) against the catalog, on a view DuckDB made and one it makes;
// DuckDB then queries PyIceberg's view.
func TestPyIcebergViews(t *testing.T) {
	env := salesEnv(t, "CREATE VIEW l.sales.recent AS SELECT id FROM l.sales.orders WHERE id >= 2")
	type described struct {
		UUID             string            `json:"uuid"`
		Location         string            `json:"location"`
		Current          int               `json:"current"`
		Versions         int               `json:"versions"`
		Log              []int             `json:"log"`
		Fields           []string          `json:"fields"`
		Representations  map[string]string `json:"representations"`
		DefaultNamespace []string          `json:"default_namespace"`
		Properties       map[string]string `json:"properties"`
	}
	var got struct {
		ExistsBefore    bool      `json:"exists_before"`
		Created         described `json:"created"`
		CreateAgain     string    `json:"create_again"`
		CreateOverTable string    `json:"create_over_table"`
		ExistsAfter     bool      `json:"exists_after"`
		List            []string  `json:"list"`
		ListMissingNS   string    `json:"list_missing_namespace"`
		Loaded          described `json:"loaded"`
		DuckDBView      described `json:"duckdb_view"`
		LoadMissing     string    `json:"load_missing"`
		LoadTable       string    `json:"load_table_as_view"`
		TableExists     bool      `json:"table_exists_for_view"`
		ExistsAfterDrop bool      `json:"exists_after_drop"`
		DropMissing     string    `json:"drop_missing"`
		ListAfterDrop   []string  `json:"list_after_drop"`
	}
	testsupport.RunPython(t, &got, "rest_views_pyiceberg.py", env.url, "admin:admin-pw", "sales", "recent")
	check := func(name string, ok bool, v any) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %+v", name, v)
		}
	}
	check("exists before", !got.ExistsBefore, got.ExistsBefore)
	check("created", got.Created.Current == 1 && got.Created.Versions == 1 && slices.Equal(got.Created.Fields, []string{"id", "label"}) &&
		got.Created.Location == "s3://lake/data/sales/py_view" && got.Created.Properties["owner"] == "py" &&
		got.Created.Representations["spark"] == "select id, v from sales.orders", got.Created)
	check("create again", got.CreateAgain == "ViewAlreadyExistsError", got.CreateAgain)
	check("create over a table", got.CreateOverTable == "ViewAlreadyExistsError", got.CreateOverTable)
	check("exists after", got.ExistsAfter, got.ExistsAfter)
	check("list", slices.Equal(got.List, []string{"sales.py_view", "sales.recent"}), got.List)
	check("list missing namespace", got.ListMissingNS == "NoSuchNamespaceError", got.ListMissingNS)
	check("loaded", got.Loaded.UUID == got.Created.UUID && got.Loaded.Representations["duckdb"] == "SELECT id, v FROM sales.orders", got.Loaded)
	check("DuckDB's view", got.DuckDBView.Representations["duckdb"] == "SELECT id FROM sales.orders WHERE (id >= 2)" &&
		len(got.DuckDBView.Fields) == 0 && slices.Equal(got.DuckDBView.DefaultNamespace, []string{"sales"}) && got.DuckDBView.UUID != "", got.DuckDBView)
	check("load missing", got.LoadMissing == "NoSuchViewError", got.LoadMissing)
	check("load a table as a view", got.LoadTable == "NoSuchViewError", got.LoadTable)
	check("a view is not a table", !got.TableExists, got.TableExists)
	check("exists after drop", !got.ExistsAfterDrop, got.ExistsAfterDrop)
	check("drop missing", got.DropMissing == "NoSuchViewError", got.DropMissing)
	check("list after drop", slices.Equal(got.ListAfterDrop, []string{"sales.py_view", "sales.recent"}), got.ListAfterDrop)

	// DuckDB queries the view PyIceberg made, under the schema's names.
	if rows := flat(env.duck("SELECT id, label FROM l.sales.py_view ORDER BY id")[0]); !slices.Equal(rows, []string{"1,a", "2,b"}) {
		t.Errorf("DuckDB py_view = %v", rows)
	}
}
