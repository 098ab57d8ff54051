package catalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

type registerReport struct {
	MetadataLocation string `json:"metadata_location"`
	// foreign
	ForeignRows            int               `json:"foreign_rows"`
	ForeignFieldIDs        [][]any           `json:"foreign_field_ids"`
	RegisteredIDs          [][]any           `json:"registered_field_ids"`
	Location               string            `json:"registered_location"`
	Properties             map[string]string `json:"properties"`
	Spec                   [][]any           `json:"spec"`
	SortOrder              [][]any           `json:"sort_order"`
	FormatVersion          int               `json:"format_version"`
	RowsAfterAppend        int               `json:"rows_after_append"`
	DuckAfterAppend        bool              `json:"duckdb_equal_after_append"`
	RegisteredEqual        bool              `json:"registered_rows_equal"`
	DuckDBEqual            bool              `json:"duckdb_rows_equal"`
	UUIDKept               bool              `json:"uuid_kept"`
	Rows                   int               `json:"rows"`
	RegisterExisting       string            `json:"register_existing"`
	RegisterSameTwice      string            `json:"register_same_table_twice"`
	ExpiredVersions        int               `json:"expired_versions"`
	RowsAfterCleanup       bool              `json:"rows_after_cleanup_equal"`
	DuckDBRowsAfterCleanup bool              `json:"duckdb_rows_after_cleanup_equal"`
}

func pyRegister(t *testing.T, env *restEnv, scenario, ns string) registerReport {
	t.Helper()
	var raw json.RawMessage
	testsupport.RunPython(t, &raw, "rest_register.py", scenario, env.url, "writer-"+ns+":pw", env.dsn, restDataPath, ns)
	t.Logf("rest_register.py %s: %s", scenario, raw)
	var got registerReport
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("rest_register.py %s: bad report: %v\n%s", scenario, err, raw)
	}
	return got
}

// TestRegisterForeignTable: a table PyIceberg wrote with a catalog of its
// own (every metadata file, manifest and data file its own) is registered
// under the namespace's location: its schema keeps PyIceberg's field ids,
// its partitioning, sort order, properties, format version and UUID carry
// over, PyIceberg and DuckDB read exactly the rows PyIceberg's own catalog
// has (a copy-on-write delete's removed file included), and the table
// takes appends through the catalog afterwards.
func TestRegisterForeignTable(t *testing.T) {
	ns := "rg" + randomHex(4)
	env := writeEnv(t, ns)
	got := pyRegister(t, env, "foreign", ns)
	if !got.RegisteredEqual || !got.DuckDBEqual || got.ForeignRows != 7 {
		t.Errorf("rows: registered equal %v, DuckDB equal %v, foreign %d rows (want 7)", got.RegisteredEqual, got.DuckDBEqual, got.ForeignRows)
	}
	if fmt.Sprint(got.RegisteredIDs) != fmt.Sprint(got.ForeignFieldIDs) {
		t.Errorf("field ids: registered %v, PyIceberg's %v", got.RegisteredIDs, got.ForeignFieldIDs)
	}
	// PyIceberg numbers the top level first: the struct's fields come after
	// name and cat, where DuckDB would number them depth first.
	if fmt.Sprint(got.RegisteredIDs) != "[[1 id] [2 s] [5 s.a] [6 s.b] [3 name] [4 cat]]" {
		t.Errorf("registered field ids %v", got.RegisteredIDs)
	}
	if got.Location != restDataPath+ns+"/ext" || got.Properties["owner"] != "registrar" || !got.UUIDKept || got.FormatVersion != 2 {
		t.Errorf("location %s, properties %v, UUID kept %v, format version %d", got.Location, got.Properties, got.UUIDKept, got.FormatVersion)
	}
	if fmt.Sprint(got.Spec) != "[[4 identity cat]]" || len(got.SortOrder) != 1 || fmt.Sprint(got.SortOrder[0][:2]) != "[1 identity]" {
		t.Errorf("spec %v, sort order %v", got.Spec, got.SortOrder)
	}
	if got.RowsAfterAppend != 9 || !got.DuckAfterAppend {
		t.Errorf("after an append: %d rows (want 9), DuckDB equal %v", got.RowsAfterAppend, got.DuckAfterAppend)
	}
	// The DuckLake rows: the live files only (the delete rewrote one file
	// of partition a), with their partition values and statistics.
	rows := env.duck(`SELECT count(*), count(DISTINCT partition_id) FROM __ducklake_metadata_l.ducklake_data_file f
		JOIN __ducklake_metadata_l.ducklake_table t USING (table_id)
		WHERE t.table_name = 'ext' AND t.end_snapshot IS NULL AND f.end_snapshot IS NULL`,
		`SELECT count(*) FROM __ducklake_metadata_l.ducklake_file_column_stats s
		JOIN __ducklake_metadata_l.ducklake_table t USING (table_id) WHERE t.table_name = 'ext' AND t.end_snapshot IS NULL`)
	if fmt.Sprint(rows[0]) != "[[3 1]]" {
		t.Errorf("live data files, partitions: %v (want 3 files: a rewritten, b, c; one partitioning)", rows[0])
	}
	if fmt.Sprint(rows[1]) == "[[0]]" {
		t.Error("no column statistics were imported from the manifests")
	}
}

// TestRegisterRoundTrip: a table made through the catalog, dropped without
// purge, is registered again from the metadata location it had; its rows
// come back for PyIceberg and DuckDB; the name or the same table a second
// time is refused with 409.
func TestRegisterRoundTrip(t *testing.T) {
	ns := "rr" + randomHex(4)
	env := writeEnv(t, ns)
	got := pyRegister(t, env, "roundtrip", ns)
	if got.Rows != 10 || !got.RegisteredEqual || !got.DuckDBEqual || !got.UUIDKept {
		t.Errorf("round trip: %d rows, registered equal %v, DuckDB equal %v, UUID kept %v", got.Rows, got.RegisteredEqual, got.DuckDBEqual, got.UUIDKept)
	}
	if got.ExpiredVersions < 3 || !got.RowsAfterCleanup || !got.DuckDBRowsAfterCleanup {
		t.Errorf("after expiring the dropped table's %d snapshots and cleaning up: rows equal in PyIceberg %v, DuckDB %v",
			got.ExpiredVersions, got.RowsAfterCleanup, got.DuckDBRowsAfterCleanup)
	}
	if !strings.Contains(got.RegisterExisting, "Table already exists: "+ns+".rt") {
		t.Errorf("registering an existing name: %s", got.RegisterExisting)
	}
	if !strings.Contains(got.RegisterSameTwice, "is registered as "+ns+".rt") {
		t.Errorf("registering the same table under a second name: %s", got.RegisterSameTwice)
	}
}

// TestRegisterErrors: what the register routes refuse, each with an
// Iceberg ErrorModel of the right type, and the config advertising them.
func TestRegisterErrors(t *testing.T) {
	ns := "re" + randomHex(4)
	env := writeEnv(t, ns)
	st := requireStack(t, true)
	tok := clientToken(t, env, "writer-"+ns, "pw")
	admin := env.token("admin")
	env.duck("CREATE TABLE l."+ns+".t (x INTEGER)", "CREATE VIEW l."+ns+".v AS SELECT 1 AS x", "CREATE SCHEMA l.other"+ns)
	put := func(key, body string) {
		t.Helper()
		if _, err := st.root().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String(key),
			Body: bytes.NewReader([]byte(body))}); err != nil {
			t.Fatal(err)
		}
	}
	base := "data/" + ns + "/junk/metadata/"
	put(base+"garbage.metadata.json", "this is not JSON")
	put(base+"v1.metadata.json", `{"format-version":1,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"s3://lake/data/`+ns+`/junk","last-updated-ms":1,"last-column-id":1,"schema":{"type":"struct","fields":[]},"schemas":[{"type":"struct","schema-id":0,"fields":[]}],"partition-spec":[],"properties":{}}`)
	put(base+"bad-ref.metadata.json", `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"s3://lake/data/`+ns+`/junk","last-sequence-number":0,"last-updated-ms":1,"last-column-id":1,"current-schema-id":3,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":false,"type":"int"}]}],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}]}`)
	put(base+"elsewhere.metadata.json", `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"s3://lake/data/other`+ns+`/junk","last-sequence-number":0,"last-updated-ms":1,"last-column-id":1,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":false,"type":"int"}]}],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}]}`)
	loc := "s3://lake/" + base
	reg := func(name, location string) map[string]any {
		return map[string]any{"name": name, "metadata-location": location}
	}
	path := "/v1/lake/namespaces/" + ns + "/register"
	for _, tt := range []struct {
		name, path, token string
		body              any
		code              int
		errType, message  string
	}{
		{"missing file", path, tok, reg("n1", loc+"nope.metadata.json"), 400, "BadRequestException", "does not exist"},
		{"not JSON", path, tok, reg("n1", loc+"garbage.metadata.json"), 400, "BadRequestException", "not Iceberg table metadata"},
		{"invalid metadata", path, tok, reg("n1", loc+"bad-ref.metadata.json"), 400, "BadRequestException", "current schema 3"},
		{"format version 1", path, tok, reg("n1", loc+"v1.metadata.json"), 406, "UnsupportedOperationException", "format version 1"},
		{"table location outside the namespace", path, tok, reg("n1", loc+"elsewhere.metadata.json"), 403, "ForbiddenException", "not inside its namespace"},
		{"file outside the namespace", path, admin, reg("n1", "s3://lake/data/other"+ns+"/x.metadata.json"), 403, "ForbiddenException", "not inside the location of namespace"},
		{"file climbing out of the namespace", path, tok, reg("n1", "s3://lake/data/"+ns+"/../other"+ns+"/x.metadata.json"), 403, "ForbiddenException", "not inside"},
		{"no metadata location", path, tok, map[string]any{"name": "n1"}, 400, "BadRequestException", "metadata-location"},
		{"name of a table", path, tok, reg("t", loc+"nope.metadata.json"), 409, "AlreadyExistsException", "Table already exists: " + ns + ".t"},
		{"name of a view", path, tok, reg("v", loc+"nope.metadata.json"), 409, "AlreadyExistsException", "View with same name already exists: " + ns + ".v"},
		{"overwrite a table", path, tok, map[string]any{"name": "t", "metadata-location": loc + "nope.metadata.json", "overwrite": true}, 406, "UnsupportedOperationException", "drop the table first"},
		{"overwrite a view", path, tok, map[string]any{"name": "v", "metadata-location": loc + "nope.metadata.json", "overwrite": true}, 409, "AlreadyExistsException", "View with same name"},
		{"missing namespace", "/v1/lake/namespaces/nope" + ns + "/register", admin, reg("n1", loc+"nope.metadata.json"), 404, "NoSuchNamespaceException", "Namespace does not exist"},
		{"another namespace's scope", "/v1/lake/namespaces/other" + ns + "/register", tok, reg("n1", loc+"nope.metadata.json"), 403, "ForbiddenException", "no write access"},
		{"view: missing file", path + "-view", tok, reg("n1", loc+"nope.metadata.json"), 400, "BadRequestException", "does not exist"},
		{"view: not view metadata", path + "-view", tok, reg("n1", loc+"bad-ref.metadata.json"), 400, "BadRequestException", "view metadata file"},
		{"view: name of a table", path + "-view", tok, reg("t", loc+"nope.metadata.json"), 409, "AlreadyExistsException", "Table with same name already exists: " + ns + ".t"},
		{"view: name of a view", path + "-view", tok, reg("v", loc+"nope.metadata.json"), 409, "AlreadyExistsException", "View already exists: " + ns + ".v"},
		{"view: missing namespace", "/v1/lake/namespaces/nope" + ns + "/register-view", admin, reg("n1", loc+"nope.metadata.json"), 404, "NoSuchNamespaceException", "Namespace does not exist"},
		{"view: file outside the namespace", path + "-view", tok, reg("n1", "s3://lake/data/other"+ns+"/x.metadata.json"), 403, "ForbiddenException", "not inside"},
	} {
		r := env.do("POST", tt.path, tt.token, tt.body)
		if r.code != tt.code || r.errType() != tt.errType || !strings.Contains(string(r.body), tt.message) {
			t.Errorf("%s: %d %s; want %d %s containing %q", tt.name, r.code, r.body, tt.code, tt.errType, tt.message)
		}
	}
	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	env.do("GET", "/v1/config", "", nil).decode(t, &cfg)
	for _, e := range []string{"POST /v1/{prefix}/namespaces/{namespace}/register", "POST /v1/{prefix}/namespaces/{namespace}/register-view"} {
		if !slices.Contains(cfg.Endpoints, e) {
			t.Errorf("config does not advertise %s: %v", e, cfg.Endpoints)
		}
	}
}

// TestRegisterView: a view made over REST has its metadata file at the
// location the catalog reports; dropped, it is registered again from that
// file with its versions, schemas and properties, and DuckDB queries it.
func TestRegisterView(t *testing.T) {
	ns := "rv" + randomHex(4)
	env := writeEnv(t, ns)
	st := requireStack(t, true)
	tok := clientToken(t, env, "writer-"+ns, "pw")
	env.duck("CREATE TABLE l."+ns+".orders (id INTEGER, v VARCHAR)", "INSERT INTO l."+ns+".orders VALUES (1, 'a'), (2, 'b')")
	views := "/v1/lake/namespaces/" + ns + "/views"
	body := createViewBody("v1", viewSchema("id"), map[string]string{"comment": "registered", "gc.enabled": "false"},
		"duckdb", "SELECT id FROM "+ns+".orders", "spark", "SELECT id FROM "+ns+".orders")
	r := env.do("POST", views, tok, body)
	if r.code != 200 {
		t.Fatalf("create view: %d %s", r.code, r.body)
	}
	created := decodeView(t, r)
	// A second version, so the file holds some history.
	r = env.do("POST", views+"/v1", tok, replaceViewBody(created.Metadata.UUID, viewSchema("id"),
		"duckdb", "SELECT id FROM "+ns+".orders WHERE id > 1", "spark", "SELECT id FROM "+ns+".orders WHERE id > 1"))
	if r.code != 200 {
		t.Fatalf("replace view: %d %s", r.code, r.body)
	}
	replaced := decodeView(t, r)
	key, ok := strings.CutPrefix(replaced.MetadataLocation, "s3://lake/")
	if !ok || !strings.HasPrefix(key, "data/"+ns+"/v1/metadata/00002-") {
		t.Fatalf("metadata location %s", replaced.MetadataLocation)
	}
	for _, loc := range []string{created.MetadataLocation, replaced.MetadataLocation} {
		if err := st.get(t, st.root(), strings.TrimPrefix(loc, "s3://lake/")); err != nil {
			t.Errorf("metadata file %s: %v", loc, err)
		}
	}
	if r := env.do("DELETE", views+"/v1", tok, nil); r.code != 204 {
		t.Fatalf("drop view: %d %s", r.code, r.body)
	}
	r = env.do("POST", "/v1/lake/namespaces/"+ns+"/register-view", tok, map[string]any{"name": "v2", "metadata-location": replaced.MetadataLocation})
	if r.code != 200 {
		t.Fatalf("register view: %d %s", r.code, r.body)
	}
	registered := decodeView(t, r)
	loaded := decodeView(t, env.do("GET", views+"/v2", tok, nil))
	for _, v := range []viewResult{registered, loaded} {
		if v.MetadataLocation != replaced.MetadataLocation || v.Metadata.UUID != replaced.Metadata.UUID ||
			len(v.Metadata.Versions) != 2 || v.Metadata.CurrentVersionID != replaced.Metadata.CurrentVersionID ||
			v.Metadata.Properties["comment"] != "registered" || v.Metadata.Properties["gc.enabled"] != "false" ||
			len(v.Metadata.Schemas) != len(replaced.Metadata.Schemas) {
			t.Errorf("registered view: %+v\nwant the metadata of %+v", v, replaced)
		}
	}
	out := env.duck("SELECT * FROM l."+ns+".v2", "SELECT comment FROM duckdb_views() WHERE view_name = 'v2'")
	if fmt.Sprint(out[0]) != "[[2]]" || fmt.Sprint(out[1]) != "[[registered]]" {
		t.Errorf("DuckDB reads the registered view: %v", out)
	}
	// Its next version continues the file numbering.
	r = env.do("POST", views+"/v2", tok, propsBody(map[string]string{"k": "v"}))
	if r.code != 200 || !strings.Contains(decodeView(t, r).MetadataLocation, "/metadata/00003-") {
		t.Errorf("commit to the registered view: %d %s", r.code, r.body)
	}
	// Registering it again: the name is taken.
	r = env.do("POST", "/v1/lake/namespaces/"+ns+"/register-view", tok, map[string]any{"name": "v2", "metadata-location": replaced.MetadataLocation})
	if r.code != 409 || !strings.Contains(string(r.body), "View already exists: "+ns+".v2") {
		t.Errorf("register an existing view: %d %s", r.code, r.body)
	}
	// Under a second name it is the same view (its UUID) a second time.
	r = env.do("POST", "/v1/lake/namespaces/"+ns+"/register-view", tok, map[string]any{"name": "v3", "metadata-location": replaced.MetadataLocation})
	if r.code != 409 || r.errType() != "AlreadyExistsException" || !strings.Contains(string(r.body), "is registered as "+ns+".v2") {
		t.Errorf("register the view under a second name: %d %s", r.code, r.body)
	}
}
