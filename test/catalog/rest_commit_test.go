package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// createBody is a CreateTableRequest with PyIceberg's numbering (top level
// first), a partition spec and a sort order.
func createBody(name string) map[string]any {
	return map[string]any{
		"name": name,
		"schema": map[string]any{"type": "struct", "schema-id": 0, "fields": []any{
			map[string]any{"id": 1, "name": "id", "required": true, "type": "long"},
			map[string]any{"id": 2, "name": "s", "required": false, "type": map[string]any{"type": "struct", "fields": []any{
				map[string]any{"id": 4, "name": "a", "required": false, "type": "int"},
				map[string]any{"id": 5, "name": "b", "required": false, "type": "string"}}}},
			map[string]any{"id": 3, "name": "cat", "required": false, "type": "string"},
		}},
		"partition-spec": map[string]any{"spec-id": 0, "fields": []any{
			map[string]any{"source-id": 3, "field-id": 1000, "name": "cat", "transform": "identity"},
			map[string]any{"source-id": 3, "field-id": 1001, "name": "cat_trunc", "transform": "truncate[2]"},
		}},
		"write-order": map[string]any{"order-id": 1, "fields": []any{
			map[string]any{"source-id": 1, "transform": "identity", "direction": "desc", "null-order": "nulls-first"},
		}},
		"properties": map[string]string{"owner": "etl", "format-version": "2"},
	}
}

type loadResult struct {
	Location string          `json:"metadata-location"`
	Metadata json.RawMessage `json:"metadata"`
}

type tableMeta struct {
	FormatVersion int    `json:"format-version"`
	UUID          string `json:"table-uuid"`
	Location      string `json:"location"`
	LastColumnID  int    `json:"last-column-id"`
	CurrentSchema int    `json:"current-schema-id"`
	Schemas       []struct {
		ID     int `json:"schema-id"`
		Fields []struct {
			ID       int             `json:"id"`
			Name     string          `json:"name"`
			Required bool            `json:"required"`
			Type     json.RawMessage `json:"type"`
		} `json:"fields"`
	} `json:"schemas"`
	DefaultSpecID   int `json:"default-spec-id"`
	LastPartitionID int `json:"last-partition-id"`
	Specs           []struct {
		ID     int `json:"spec-id"`
		Fields []struct {
			Name      string `json:"name"`
			Transform string `json:"transform"`
			SourceID  int    `json:"source-id"`
		} `json:"fields"`
	} `json:"partition-specs"`
	DefaultSortOrderID int `json:"default-sort-order-id"`
	SortOrders         []struct {
		ID     int `json:"order-id"`
		Fields []struct {
			SourceID  int    `json:"source-id"`
			Direction string `json:"direction"`
			NullOrder string `json:"null-order"`
		} `json:"fields"`
	} `json:"sort-orders"`
	Refs map[string]struct {
		SnapshotID int64  `json:"snapshot-id"`
		Type       string `json:"type"`
	} `json:"refs"`
	Properties map[string]string `json:"properties"`
}

func (e *restEnv) meta(t *testing.T, tok, ns, table string) (loadResult, tableMeta) {
	t.Helper()
	var md tableMeta
	lr := e.metaInto(t, tok, ns, table, &md)
	return lr, md
}

// metaInto loads table ns.table as tok and decodes the metadata served
// into v.
func (e *restEnv) metaInto(t *testing.T, tok, ns, table string, v any) loadResult {
	t.Helper()
	r := e.do("GET", "/v1/lake/namespaces/"+ns+"/tables/"+table, tok, nil)
	if r.code != 200 {
		t.Fatalf("load %s.%s: %d %s", ns, table, r.code, r.body)
	}
	var lr loadResult
	r.decode(t, &lr)
	if err := json.Unmarshal(lr.Metadata, v); err != nil {
		t.Fatal(err)
	}
	return lr
}

func (e *restEnv) snapshotCount(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM ducklake_snapshot`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *restEnv) properties(t *testing.T, table string) map[string]string {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT p.key, p.value FROM duckicelake_table_property p
		JOIN ducklake_table t USING (table_id) WHERE t.table_name = $1 AND t.end_snapshot IS NULL`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// TestCommitCreateTable: POST …/tables creates the DuckLake rows DuckDB
// would (depth-first column ids, partition keys, sort expressions), keeps
// what DuckLake cannot (truncate, properties) in sidecars, answers what
// LoadTable answers, and DuckDB sees the table.
func TestCommitCreateTable(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.sales")
	tok := env.token("writer")
	r := env.do("POST", "/v1/lake/namespaces/sales/tables", tok, createBody("orders"))
	if r.code != 200 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	var created loadResult
	r.decode(t, &created)
	loaded, md := env.meta(t, tok, "sales", "orders")
	if created.Location != loaded.Location || string(created.Metadata) != string(loaded.Metadata) {
		t.Errorf("create answered %s, LoadTable %s", created.Location, loaded.Location)
	}
	fields := md.Schemas[len(md.Schemas)-1].Fields
	var got []string
	for _, f := range fields {
		got = append(got, fmt.Sprintf("%d:%s:%s", f.ID, f.Name, f.Type))
	}
	want := []string{`1:id:"long"`, `2:s:{"type":"struct","fields":[{"id":3,"name":"a","required":false,"type":"int"},{"id":4,"name":"b","required":false,"type":"string"}]}`, `5:cat:"string"`}
	if !slices.Equal(got, want) || !fields[0].Required || md.LastColumnID != 5 {
		t.Errorf("schema %v (last column %d), want %v", got, md.LastColumnID, want)
	}
	if md.Location != "s3://lake/data/sales/orders" || md.FormatVersion != 2 {
		t.Errorf("location %s, format %d", md.Location, md.FormatVersion)
	}
	// The spec as the client sent it (id 0, as Iceberg numbers a new
	// table's), its truncate field included; beside it an unpartitioned
	// spec and one without the truncate field.
	var specs []string
	for _, s := range md.Specs {
		specs = append(specs, fmt.Sprint(s.ID, s.Fields))
	}
	if md.DefaultSpecID != 0 || fmt.Sprint(specs) != "[1 [] 0 [{cat identity 5} {cat_trunc truncate[2] 5}] 2 [{cat identity 5}]]" {
		t.Errorf("default spec %d, specs %v", md.DefaultSpecID, specs)
	}
	desc := env.duck("SELECT column_name, column_type FROM (DESCRIBE l.sales.orders)")[0]
	if fmt.Sprint(desc) != "[[id BIGINT] [s STRUCT(a INTEGER, b VARCHAR)] [cat VARCHAR]]" {
		t.Errorf("DuckDB describes %v", desc)
	}
	var sortExpr, dir, nulls, trunc string
	if err := env.pool.QueryRow(context.Background(), `SELECT expression, sort_direction, null_order FROM ducklake_sort_expression`).Scan(&sortExpr, &dir, &nulls); err != nil {
		t.Fatal(err)
	}
	if sortExpr != "id" || dir != "DESC" || nulls != "NULLS_FIRST" {
		t.Errorf("sort expression %s %s %s", sortExpr, dir, nulls)
	}
	if err := env.pool.QueryRow(context.Background(), `SELECT string_agg(field_id || ' ' || transform || ' ' || column_id || ' ' || name, ',' ORDER BY spec_position)
		FROM duckicelake_table_partition_field WHERE end_snapshot IS NULL`).Scan(&trunc); err != nil || trunc != "1000 identity 5 cat,1001 truncate[2] 5 cat_trunc" {
		t.Errorf("partition fields in the sidecar: %q (%v)", trunc, err)
	}
	if p := env.properties(t, "orders"); fmt.Sprint(p) != "map[owner:etl]" {
		t.Errorf("properties %v", p)
	}
	// LoadTable serves the properties and the sort order back.
	if fmt.Sprint(md.Properties) != "map[owner:etl]" {
		t.Errorf("served properties %v", md.Properties)
	}
	var order string
	for _, o := range md.SortOrders {
		if o.ID == md.DefaultSortOrderID {
			order = fmt.Sprint(o.Fields)
		}
	}
	if order != "[{1 desc nulls-first}]" {
		t.Errorf("served default sort order %d: %q (%+v)", md.DefaultSortOrderID, order, md.SortOrders)
	}
	var changes string
	var version, prevVersion int64
	if err := env.pool.QueryRow(context.Background(), `SELECT c.changes_made, s.schema_version, (SELECT schema_version FROM ducklake_snapshot WHERE snapshot_id = s.snapshot_id - 1)
		FROM ducklake_snapshot s JOIN ducklake_snapshot_changes c USING (snapshot_id) ORDER BY snapshot_id DESC LIMIT 1`).Scan(&changes, &version, &prevVersion); err != nil {
		t.Fatal(err)
	}
	if changes != `created_table:"sales"."orders"` || version != prevVersion+1 {
		t.Errorf("snapshot changes %q, schema version %d after %d", changes, version, prevVersion)
	}

	for name, c := range map[string]struct {
		body    any
		code    int
		errType string
	}{
		"again":             {createBody("orders"), 409, "AlreadyExistsException"},
		"reserved property": {map[string]any{"name": "x", "schema": createBody("x")["schema"], "properties": map[string]string{"duckicelake.format-version": "3"}}, 403, "ForbiddenException"},
		"fixed column":      {map[string]any{"name": "x", "schema": map[string]any{"type": "struct", "fields": []any{map[string]any{"id": 1, "name": "f", "required": false, "type": "fixed[4]"}}}}, 406, "UnsupportedOperationException"},
		"void transform": {map[string]any{"name": "x", "schema": createBody("x")["schema"], "partition-spec": map[string]any{"fields": []any{
			map[string]any{"source-id": 1, "field-id": 1000, "name": "v", "transform": "void"}}}}, 406, "UnsupportedOperationException"},
		"location elsewhere": {map[string]any{"name": "x", "schema": createBody("x")["schema"], "location": "s3://lake/data/hr/x"}, 403, "ForbiddenException"},
		"format version 4":   {map[string]any{"name": "x", "schema": createBody("x")["schema"], "properties": map[string]string{"format-version": "4"}}, 406, "UnsupportedOperationException"},
		"format version 1":   {map[string]any{"name": "x", "schema": createBody("x")["schema"], "properties": map[string]string{"format-version": "1"}}, 406, "UnsupportedOperationException"},
		"no schema":          {map[string]any{"name": "x"}, 400, "BadRequestException"},
	} {
		r := env.do("POST", "/v1/lake/namespaces/sales/tables", tok, c.body)
		if r.code != c.code || r.errType() != c.errType {
			t.Errorf("%s: %d %s, want %d %s", name, r.code, r.body, c.code, c.errType)
		}
	}
	v3 := createBody("v3t")
	v3["properties"] = map[string]string{"format-version": "3"}
	if r := env.do("POST", "/v1/lake/namespaces/sales/tables", tok, v3); r.code != 200 {
		t.Errorf("create in format version 3: %d %s", r.code, r.body)
	} else if _, m := env.meta(t, tok, "sales", "v3t"); m.FormatVersion != 3 || fmt.Sprint(env.properties(t, "v3t")) != "map[duckicelake.format-version:3]" {
		t.Errorf("format version 3 table: served as %d, properties %v", m.FormatVersion, env.properties(t, "v3t"))
	}
	if r := env.do("POST", "/v1/lake/namespaces/sales/tables", env.token("reader"), createBody("y")); r.code != 403 {
		t.Errorf("create without write scope: %d", r.code)
	}
	// Staged: metadata only, nothing in DuckLake.
	before := env.snapshotCount(t)
	staged := createBody("later")
	staged["stage-create"] = true
	r = env.do("POST", "/v1/lake/namespaces/sales/tables", tok, staged)
	var st struct {
		Location *string   `json:"metadata-location"`
		Metadata tableMeta `json:"metadata"`
	}
	r.decode(t, &st)
	if r.code != 200 || st.Location != nil || st.Metadata.Location != "s3://lake/data/sales/later" || env.snapshotCount(t) != before {
		t.Errorf("staged create: %d %s", r.code, r.body)
	}
	staged["properties"] = map[string]string{"format-version": "3"}
	r = env.do("POST", "/v1/lake/namespaces/sales/tables", tok, staged)
	var st3 struct {
		Metadata struct {
			FormatVersion int    `json:"format-version"`
			NextRowID     *int64 `json:"next-row-id"`
		} `json:"metadata"`
	}
	r.decode(t, &st3)
	if st3.Metadata.FormatVersion != 3 || st3.Metadata.NextRowID == nil {
		t.Errorf("staged create in format version 3: %s", r.body)
	}
}

// commitBody is a CommitTableRequest.
func commitBody(reqs []map[string]any, updates ...map[string]any) map[string]any {
	if reqs == nil {
		reqs = []map[string]any{}
	}
	return map[string]any{"requirements": reqs, "updates": updates}
}

func setProps(kv ...string) map[string]any {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return map[string]any{"action": "set-properties", "updates": m}
}

// TestCommitRequirements: each assert-* is checked against the metadata
// LoadTable serves; a mismatch is 409 CommitFailedException and changes
// nothing. Updates DuckLake cannot hold answer 406, reserved properties 403.
func TestCommitRequirements(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.sales", "CREATE TABLE l.sales.orders (id BIGINT, v VARCHAR)",
		"INSERT INTO l.sales.orders SELECT i, 'x' FROM range(3) r(i)")
	tok := env.token("writer")
	_, md := env.meta(t, tok, "sales", "orders")
	main := md.Refs["main"].SnapshotID
	path := "/v1/lake/namespaces/sales/tables/orders"
	asserts := []struct {
		typ, key string
		good     any
		bad      any
	}{
		{"assert-table-uuid", "uuid", md.UUID, "00000000-0000-4000-8000-000000000000"},
		{"assert-ref-snapshot-id", "snapshot-id", main, main + 1000},
		{"assert-last-assigned-field-id", "last-assigned-field-id", md.LastColumnID, md.LastColumnID + 1},
		{"assert-current-schema-id", "current-schema-id", md.CurrentSchema, md.CurrentSchema + 1},
		{"assert-last-assigned-partition-id", "last-assigned-partition-id", md.LastPartitionID, md.LastPartitionID + 1},
		{"assert-default-spec-id", "default-spec-id", md.DefaultSpecID, md.DefaultSpecID + 1},
		{"assert-default-sort-order-id", "default-sort-order-id", md.DefaultSortOrderID, md.DefaultSortOrderID + 1},
	}
	for i, a := range asserts {
		req := func(v any) []map[string]any {
			m := map[string]any{"type": a.typ, a.key: v}
			if a.typ == "assert-ref-snapshot-id" {
				m["ref"] = "main"
			}
			return []map[string]any{m}
		}
		before := env.snapshotCount(t)
		r := env.do("POST", path, tok, commitBody(req(a.bad), setProps("k", "bad")))
		if r.code != 409 || r.errType() != "CommitFailedException" || env.snapshotCount(t) != before {
			t.Errorf("%s %v: %d %s", a.typ, a.bad, r.code, r.body)
		}
		r = env.do("POST", path, tok, commitBody(req(a.good), setProps("k", fmt.Sprint(i))))
		if r.code != 200 {
			t.Errorf("%s %v: %d %s", a.typ, a.good, r.code, r.body)
			continue
		}
		var resp loadResult
		r.decode(t, &resp)
		if resp.Location == "" || len(resp.Metadata) == 0 || env.snapshotCount(t) != before+1 {
			t.Errorf("%s: response %s", a.typ, r.body)
		}
	}
	if p := env.properties(t, "orders"); p["k"] != fmt.Sprint(len(asserts)-1) {
		t.Errorf("properties after the commits: %v", p)
	}
	if _, cur := env.meta(t, tok, "sales", "orders"); cur.Properties["k"] != fmt.Sprint(len(asserts)-1) {
		t.Errorf("served properties after the commits: %v", cur.Properties)
	}
	// A tag: created where main is, asserted, served, removed.
	tag := map[string]any{"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": main}
	if r := env.do("POST", path, tok, commitBody([]map[string]any{{"type": "assert-ref-snapshot-id", "ref": "v1", "snapshot-id": nil}}, tag)); r.code != 200 {
		t.Errorf("create tag: %d %s", r.code, r.body)
	}
	if _, cur := env.meta(t, tok, "sales", "orders"); cur.Refs["v1"].SnapshotID != main || cur.Refs["v1"].Type != "tag" {
		t.Errorf("refs after the tag: %+v", cur.Refs)
	}
	if r := env.do("POST", path, tok, commitBody([]map[string]any{{"type": "assert-ref-snapshot-id", "ref": "v1", "snapshot-id": nil}}, tag)); r.code != 409 {
		t.Errorf("create the tag again: %d %s", r.code, r.body)
	}
	if r := env.do("POST", path, tok, commitBody([]map[string]any{{"type": "assert-ref-snapshot-id", "ref": "v1", "snapshot-id": main}},
		map[string]any{"action": "remove-snapshot-ref", "ref-name": "v1"})); r.code != 200 {
		t.Errorf("remove tag: %d %s", r.code, r.body)
	}
	if _, cur := env.meta(t, tok, "sales", "orders"); len(cur.Refs) != 1 {
		t.Errorf("refs after removing the tag: %+v", cur.Refs)
	}
	// A property change is data-only: the schema version stays, and the
	// change names the table for DuckDB's conflict check (and the
	// materialiser's cache).
	var changes string
	var sameVersion bool
	if err := env.pool.QueryRow(context.Background(), `SELECT c.changes_made, s.schema_version = (SELECT schema_version FROM ducklake_snapshot WHERE snapshot_id = s.snapshot_id - 1)
		FROM ducklake_snapshot s JOIN ducklake_snapshot_changes c USING (snapshot_id) ORDER BY snapshot_id DESC LIMIT 1`).Scan(&changes, &sameVersion); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(changes, "altered_table:") || !sameVersion {
		t.Errorf("property commit: changes %q, same schema version %v", changes, sameVersion)
	}
	// A ref that must not exist yet.
	if r := env.do("POST", path, tok, commitBody([]map[string]any{{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": nil}}, setProps("k", "x"))); r.code != 409 {
		t.Errorf("main asserted absent: %d %s", r.code, r.body)
	}
	if r := env.do("POST", path, tok, commitBody([]map[string]any{{"type": "assert-create"}}, setProps("k", "x"))); r.code != 409 || r.errType() != "CommitFailedException" {
		t.Errorf("assert-create on an existing table: %d %s", r.code, r.body)
	}

	for name, c := range map[string]struct {
		update  map[string]any
		code    int
		errType string
	}{
		"reserved property": {setProps("duckicelake.format-version", "3"), 403, "ForbiddenException"},
		"remove reserved":   {map[string]any{"action": "remove-properties", "removals": []string{"duckicelake.x"}}, 403, "ForbiddenException"},
		// Only a governance administrator opts a table out of masking views
		// (this catalog runs no governance: nobody is one).
		"masking opt-out":        {setProps("duckicelake.masking-disabled", "true"), 403, "ForbiddenException"},
		"masking opt-out, case":  {setProps("DuckIceLake.Masking-Disabled", "true"), 403, "ForbiddenException"},
		"remove masking opt-out": {map[string]any{"action": "remove-properties", "removals": []string{"duckicelake.masking-disabled"}}, 403, "ForbiddenException"},
		"set-location":           {map[string]any{"action": "set-location", "location": "s3://lake/elsewhere"}, 406, "UnsupportedOperationException"},
		"remove current":         {map[string]any{"action": "remove-snapshots", "snapshot-ids": []int64{main}}, 400, "BadRequestException"},
		"upgrade to 4":           {map[string]any{"action": "upgrade-format-version", "format-version": 4}, 406, "UnsupportedOperationException"},
		"rollback main":          {map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": main - 1}, 406, "UnsupportedOperationException"},
		"unknown action":         {map[string]any{"action": "make-it-so"}, 400, "BadRequestException"},
		"void transform":         {map[string]any{"action": "add-spec", "spec": map[string]any{"fields": []any{map[string]any{"source-id": 1, "field-id": 1000, "name": "v", "transform": "void"}}}}, 406, "UnsupportedOperationException"},
		"manifest list outside":  {map[string]any{"action": "add-snapshot", "snapshot": map[string]any{"snapshot-id": 5, "timestamp-ms": 1, "manifest-list": "s3://lake/data/hr/x/snap.avro", "summary": map[string]string{"operation": "append"}}}, 403, "ForbiddenException"},
	} {
		before := env.snapshotCount(t)
		updates := []map[string]any{c.update}
		if c.update["action"] == "add-spec" {
			updates = append(updates, map[string]any{"action": "set-default-spec", "spec-id": -1})
		}
		if c.update["action"] == "add-snapshot" {
			updates = append(updates, map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 5})
		}
		r := env.do("POST", path, tok, map[string]any{"requirements": []any{}, "updates": updates})
		if r.code != c.code || r.errType() != c.errType || env.snapshotCount(t) != before {
			t.Errorf("%s: %d %s, want %d %s", name, r.code, r.body, c.code, c.errType)
		}
	}
	// Accepted no-ops.
	if r := env.do("POST", path, tok, commitBody(nil, map[string]any{"action": "assign-uuid", "uuid": md.UUID},
		map[string]any{"action": "upgrade-format-version", "format-version": 2},
		map[string]any{"action": "set-location", "location": md.Location + "/"},
		map[string]any{"action": "remove-statistics", "snapshot-id": main})); r.code != 200 {
		t.Errorf("no-op updates: %d %s", r.code, r.body)
	}
	// Format version 3: the sidecar property the materialiser serves the
	// table by; no way back.
	if r := env.do("POST", path, tok, commitBody(nil, map[string]any{"action": "upgrade-format-version", "format-version": 3})); r.code != 200 {
		t.Errorf("upgrade to 3: %d %s", r.code, r.body)
	}
	if _, md3 := env.meta(t, tok, "sales", "orders"); md3.FormatVersion != 3 || md3.UUID != md.UUID {
		t.Errorf("after the upgrade LoadTable serves format version %d", md3.FormatVersion)
	}
	if p := env.properties(t, "orders"); p["duckicelake.format-version"] != "3" {
		t.Errorf("properties after the upgrade: %v", p)
	}
	if r := env.do("POST", path, tok, commitBody(nil, map[string]any{"action": "upgrade-format-version", "format-version": 2})); r.code != 400 {
		t.Errorf("downgrade to 2: %d %s", r.code, r.body)
	}
	if r := env.do("POST", path, env.token("reader"), commitBody(nil, setProps("k", "r"))); r.code != 403 {
		t.Errorf("commit without write scope: %d", r.code)
	}
	if r := env.do("POST", "/v1/lake/namespaces/sales/tables/nope", tok, commitBody(nil, setProps("k", "r"))); r.code != 404 || r.errType() != "NoSuchTableException" {
		t.Errorf("commit to a missing table: %d %s", r.code, r.body)
	}
}

// TestCommitSchemaEvolution: add-schema + set-current-schema changes
// DuckLake's columns by field id — add, rename, promote, drop — in one
// snapshot with a new schema version; DuckDB sees the new columns and
// reads its old (inlined) rows under them.
func TestCommitSchemaEvolution(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.sales", "CREATE TABLE l.sales.orders (id INTEGER, v VARCHAR, gone DOUBLE)",
		"INSERT INTO l.sales.orders SELECT i, 'x' || i, i FROM range(5) r(i)")
	tok := env.token("writer")
	_, md := env.meta(t, tok, "sales", "orders")
	schema := map[string]any{"type": "struct", "schema-id": md.CurrentSchema + 1, "fields": []any{
		map[string]any{"id": 1, "name": "id", "required": false, "type": "long"},
		map[string]any{"id": 2, "name": "label", "required": false, "type": "string"},
		map[string]any{"id": 4, "name": "extra", "required": false, "type": "int"},
	}}
	body := commitBody([]map[string]any{{"type": "assert-current-schema-id", "current-schema-id": md.CurrentSchema},
		{"type": "assert-last-assigned-field-id", "last-assigned-field-id": md.LastColumnID}},
		map[string]any{"action": "add-schema", "schema": schema}, map[string]any{"action": "set-current-schema", "schema-id": -1})
	r := env.do("POST", "/v1/lake/namespaces/sales/tables/orders", tok, body)
	if r.code != 200 {
		t.Fatalf("schema change: %d %s", r.code, r.body)
	}
	_, md2 := env.meta(t, tok, "sales", "orders")
	var names []string
	for _, f := range md2.Schemas[len(md2.Schemas)-1].Fields {
		names = append(names, fmt.Sprintf("%d:%s:%s", f.ID, f.Name, f.Type))
	}
	if fmt.Sprint(names) != `[1:id:"long" 2:label:"string" 4:extra:"int"]` || md2.CurrentSchema == md.CurrentSchema {
		t.Errorf("schema after the change: %v (id %d, was %d)", names, md2.CurrentSchema, md.CurrentSchema)
	}
	rows := env.duck("SELECT column_name, column_type FROM (DESCRIBE l.sales.orders)", "SELECT sum(id), count(label), count(extra) FROM l.sales.orders")
	if fmt.Sprint(rows[0]) != "[[id BIGINT] [label VARCHAR] [extra INTEGER]]" || fmt.Sprint(rows[1]) != "[[10 5 0]]" {
		t.Errorf("DuckDB: %v %v", rows[0], rows[1])
	}
	// The same request again: the requirements no longer hold.
	if r := env.do("POST", "/v1/lake/namespaces/sales/tables/orders", tok, body); r.code != 409 {
		t.Errorf("stale schema change: %d %s", r.code, r.body)
	}
	for name, fields := range map[string][]any{
		"narrowing": {map[string]any{"id": 1, "name": "id", "required": false, "type": "int"}},
		"reused id": {map[string]any{"id": 1, "name": "id", "required": false, "type": "long"}, map[string]any{"id": 3, "name": "back", "required": false, "type": "double"}},
		"required":  {map[string]any{"id": 1, "name": "id", "required": true, "type": "long"}},
	} {
		_, cur := env.meta(t, tok, "sales", "orders")
		s := map[string]any{"type": "struct", "schema-id": cur.CurrentSchema + 1, "fields": fields}
		r := env.do("POST", "/v1/lake/namespaces/sales/tables/orders", tok, commitBody(nil,
			map[string]any{"action": "add-schema", "schema": s}, map[string]any{"action": "set-current-schema", "schema-id": -1}))
		if r.code != 400 {
			t.Errorf("%s: %d %s", name, r.code, r.body)
		}
	}
}

// TestCommitTransaction: POST /v1/{prefix}/transactions/commit changes
// several tables in one DuckLake snapshot, or none of them when one
// requirement fails.
func TestCommitTransaction(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.sales", "CREATE TABLE l.sales.a (id BIGINT)", "CREATE TABLE l.sales.b (id BIGINT)")
	tok := env.token("writer")
	_, ma := env.meta(t, tok, "sales", "a")
	_, mb := env.meta(t, tok, "sales", "b")
	addColumn := func(md tableMeta) []map[string]any {
		return []map[string]any{
			{"action": "add-schema", "schema": map[string]any{"type": "struct", "schema-id": md.CurrentSchema + 1, "fields": []any{
				map[string]any{"id": 1, "name": "id", "required": false, "type": "long"},
				map[string]any{"id": 2, "name": "added", "required": false, "type": "string"}}}},
			{"action": "set-current-schema", "schema-id": -1},
		}
	}
	change := func(table, uuid string, updates []map[string]any) map[string]any {
		return map[string]any{"identifier": map[string]any{"namespace": []string{"sales"}, "name": table},
			"requirements": []any{map[string]any{"type": "assert-table-uuid", "uuid": uuid}}, "updates": updates}
	}
	before := env.snapshotCount(t)
	r := env.do("POST", "/v1/lake/transactions/commit", tok, map[string]any{"table-changes": []any{
		change("a", ma.UUID, append(addColumn(ma), setProps("t", "1"))),
		change("b", "00000000-0000-4000-8000-000000000000", addColumn(mb)),
	}})
	if r.code != 409 || r.errType() != "CommitFailedException" {
		t.Fatalf("transaction with a failing requirement: %d %s", r.code, r.body)
	}
	if env.snapshotCount(t) != before || len(env.properties(t, "a")) != 0 {
		t.Errorf("the failed transaction left a snapshot or properties")
	}
	if cols := env.duck("SELECT count(*) FROM (DESCRIBE l.sales.a)")[0][0][0]; cols != float64(1) {
		t.Errorf("table a has %v columns after the failed transaction", cols)
	}

	r = env.do("POST", "/v1/lake/transactions/commit", tok, map[string]any{"table-changes": []any{
		change("a", ma.UUID, append(addColumn(ma), setProps("t", "1"))),
		change("b", mb.UUID, addColumn(mb)),
	}})
	if r.code != 204 {
		t.Fatalf("transaction: %d %s", r.code, r.body)
	}
	if env.snapshotCount(t) != before+1 {
		t.Errorf("the transaction made %d snapshots, want 1", env.snapshotCount(t)-before)
	}
	rows := env.duck("SELECT table_name, count(*) FROM duckdb_columns() WHERE database_name = 'l' AND schema_name = 'sales' GROUP BY ALL ORDER BY 1")
	if fmt.Sprint(rows[0]) != "[[a 2] [b 2]]" || env.properties(t, "a")["t"] != "1" {
		t.Errorf("after the transaction: columns %v, properties of a %v", rows[0], env.properties(t, "a"))
	}
	for name, body := range map[string]any{
		"no identifier": map[string]any{"table-changes": []any{map[string]any{"requirements": []any{}, "updates": []any{setProps("x", "y")}}}},
		"same table twice": map[string]any{"table-changes": []any{change("a", ma.UUID, []map[string]any{setProps("x", "1")}),
			change("a", ma.UUID, []map[string]any{setProps("x", "2")})}},
		"empty": map[string]any{"table-changes": []any{}},
	} {
		if r := env.do("POST", "/v1/lake/transactions/commit", tok, body); r.code != 400 {
			t.Errorf("%s: %d %s", name, r.code, r.body)
		}
	}
	other := map[string]any{"table-changes": []any{map[string]any{"identifier": map[string]any{"namespace": []string{"hr"}, "name": "x"},
		"requirements": []any{}, "updates": []any{setProps("x", "y")}}}}
	if r := env.do("POST", "/v1/lake/transactions/commit", tok, other); r.code != 403 {
		t.Errorf("a transaction touching a namespace without write scope: %d %s", r.code, r.body)
	}
}

// TestCommitMetadataLog: the metadata-log lists the metadata files the
// catalog wrote for the table's earlier versions (each one in storage),
// oldest first, at most write.metadata.previous-versions-max of them.
func TestCommitMetadataLog(t *testing.T) {
	st := requireStack(t, true)
	env := newRestEnv(t, withS3Materializer(st))
	ns := "sales"
	env.duck("CREATE SCHEMA l."+ns, "CREATE TABLE l."+ns+".ml (id INTEGER)")
	tok := env.token("writer")
	type logEntry struct {
		File string `json:"metadata-file"`
		TS   int64  `json:"timestamp-ms"`
	}
	load := func() (string, []logEntry, tableMeta) {
		lr, md := env.meta(t, tok, ns, "ml")
		var raw struct {
			Log         []logEntry `json:"metadata-log"`
			LastUpdated int64      `json:"last-updated-ms"`
		}
		if err := json.Unmarshal(lr.Metadata, &raw); err != nil {
			t.Fatal(err)
		}
		for i, e := range raw.Log {
			if i > 0 && e.TS < raw.Log[i-1].TS || e.TS > raw.LastUpdated {
				t.Errorf("metadata-log timestamps out of order: %+v (last updated %d)", raw.Log, raw.LastUpdated)
			}
		}
		return lr.Location, raw.Log, md
	}
	var written []string
	for i := range 3 {
		loc, _, md := load()
		written = append(written, loc)
		fields := []any{map[string]any{"id": 1, "name": "id", "required": false, "type": "int"}}
		for j := range i + 1 {
			fields = append(fields, map[string]any{"id": 2 + j, "name": fmt.Sprintf("c%d", j), "required": false, "type": "long"})
		}
		schema := map[string]any{"type": "struct", "schema-id": md.CurrentSchema + 1, "fields": fields}
		if r := env.do("POST", "/v1/lake/namespaces/"+ns+"/tables/ml", tok, commitBody(nil,
			map[string]any{"action": "add-schema", "schema": schema}, map[string]any{"action": "set-current-schema", "schema-id": -1})); r.code != 200 {
			t.Fatalf("schema change %d: %d %s", i, r.code, r.body)
		}
	}
	cur, log, _ := load()
	var got []string
	for _, e := range log {
		got = append(got, e.File)
		if _, err := st.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("lake"),
			Key: aws.String(strings.TrimPrefix(e.File, "s3://lake/"))}); err != nil {
			t.Errorf("logged metadata file %s: %v", e.File, err)
		}
	}
	if !slices.Equal(got, written) || slices.Contains(got, cur) {
		t.Errorf("metadata-log %q, want the earlier files %q (current %s)", got, written, cur)
	}
	if r := env.do("POST", "/v1/lake/namespaces/"+ns+"/tables/ml", tok, commitBody(nil, setProps("write.metadata.previous-versions-max", "2"))); r.code != 200 {
		t.Fatalf("set previous-versions-max: %d %s", r.code, r.body)
	}
	_, log, _ = load()
	if len(log) != 2 || log[1].File != cur {
		t.Errorf("with previous-versions-max 2: %+v, want 2 entries ending with %s", log, cur)
	}
}
