package views

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The schemas of Iceberg's ViewCatalogTests: SCHEMA (id 5, fields 3 and 4)
// and OTHER_SCHEMA (id 7, field 1).
const (
	schemaJSON      = `{"type":"struct","schema-id":5,"fields":[{"id":3,"name":"id","required":true,"type":"int","doc":"unique ID"},{"id":4,"name":"data","required":true,"type":"string"}]}`
	otherSchemaJSON = `{"type":"struct","schema-id":7,"fields":[{"id":1,"name":"some_id","required":true,"type":"int"}]}`
)

var now = time.UnixMilli(1_700_000_000_000)

func schema(t *testing.T, j string) Schema {
	t.Helper()
	var s Schema
	if err := json.Unmarshal([]byte(j), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func version(id, schemaID int, ts int64, reprs ...Representation) Version {
	return Version{VersionID: id, SchemaID: schemaID, TimestampMS: ts, Summary: map[string]string{"operation": "create"},
		Representations: reprs, DefaultNamespace: []string{"ns"}}
}

func sql(dialect, q string) Representation {
	return Representation{Type: "sql", SQL: q, Dialect: dialect}
}

func newView(t *testing.T, props map[string]string, reprs ...Representation) *Metadata {
	t.Helper()
	md, err := New(Create{UUID: "u-1", Location: "s3://lake/data/ns/view", Properties: props,
		Schema: schema(t, schemaJSON), Version: version(1, -1, 111, reprs...)}, now)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func intp(i int) *int { return &i }

func TestNew(t *testing.T) {
	md := newView(t, map[string]string{"prop1": "val1"}, sql("spark", "select * from ns.tbl"), sql("trino", "select 1"))
	if md.FormatVersion != 1 || md.UUID != "u-1" || md.CurrentVersionID != 1 {
		t.Errorf("metadata = %+v", md)
	}
	// The schema gets id 0 whatever it came with, and the version its id.
	if len(md.Schemas) != 1 || md.Schemas[0].ID != 0 || md.Current().SchemaID != 0 {
		t.Errorf("schemas = %+v, current = %+v", md.Schemas, md.Current())
	}
	if want := []LogEntry{{TimestampMS: 111, VersionID: 1}}; !slices.Equal(md.VersionLog, want) {
		t.Errorf("version-log = %v, want %v", md.VersionLog, want)
	}
	if md.Properties["prop1"] != "val1" {
		t.Errorf("properties = %v", md.Properties)
	}
	if got := md.Schemas[0].FieldNames(); !slices.Equal(got, []string{"id", "data"}) {
		t.Errorf("field names = %v", got)
	}
	if r, ok := md.Current().SQL("TRINO"); !ok || r.SQL != "select 1" {
		t.Errorf("SQL(TRINO) = %v, %v", r, ok)
	}

	for _, tt := range []struct {
		name string
		c    Create
		want string
	}{
		{"no uuid", Create{Location: "l", Schema: schema(t, schemaJSON), Version: version(1, 0, 1, sql("a", "b"))}, "uuid"},
		{"no location", Create{UUID: "u", Schema: schema(t, schemaJSON), Version: version(1, 0, 1, sql("a", "b"))}, "location"},
		{"no representations", Create{UUID: "u", Location: "l", Schema: schema(t, schemaJSON), Version: version(1, 0, 1)}, "no representations"},
		{"dialect twice", Create{UUID: "u", Location: "l", Schema: schema(t, schemaJSON), Version: version(1, 0, 1, sql("trino", "a"), sql("Trino", "b"))},
			"Cannot add multiple queries for dialect trino"},
		{"no default namespace", Create{UUID: "u", Location: "l", Schema: schema(t, schemaJSON),
			Version: Version{VersionID: 1, Representations: []Representation{sql("a", "b")}}}, "default-namespace"},
	} {
		_, err := New(tt.c, now)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrInvalid with %q", tt.name, err, tt.want)
		}
	}
}

// TestApply replays the update sequences Iceberg's Java client sends.
func TestApply(t *testing.T) {
	spark := sql("spark", "select * from ns.tbl")
	trino := sql("trino", "select * from ns.tbl")
	replace := func(t *testing.T, schemaJ string, ts int64, reprs ...Representation) []Update {
		s := schema(t, schemaJ)
		v := version(2, -1, ts, reprs...)
		v.Summary = map[string]string{"operation": "replace"}
		return []Update{{Action: "add-schema", Schema: &s}, {Action: "add-view-version", ViewVersion: &v},
			{Action: "set-current-view-version", VersionID: intp(-1)}}
	}
	tests := []struct {
		name    string
		base    func(t *testing.T) *Metadata
		updates func(t *testing.T) []Update
		err     string
		check   func(t *testing.T, md *Metadata)
	}{{
		name: "replace with a new schema",
		base: func(t *testing.T) *Metadata {
			return newView(t, map[string]string{PropDropDialectAllowed: "true"}, trino, spark)
		},
		updates: func(t *testing.T) []Update { return replace(t, otherSchemaJSON, 222, trino) },
		check: func(t *testing.T, md *Metadata) {
			cur := md.Current()
			if md.CurrentVersionID != 2 || cur.SchemaID != 1 || len(md.Schemas) != 2 || len(md.Versions) != 2 {
				t.Errorf("current %d (schema %d), %d schemas, %d versions", md.CurrentVersionID, cur.SchemaID, len(md.Schemas), len(md.Versions))
			}
			if want := []LogEntry{{111, 1}, {222, 2}}; !slices.Equal(md.VersionLog, want) {
				t.Errorf("version-log = %v, want %v", md.VersionLog, want)
			}
		},
	}, {
		// ViewCatalogTests.concurrentReplaceViewVersion: the second commit
		// was built on version 1 and lands on version 2.
		name: "retry after a concurrent replace",
		base: func(t *testing.T) *Metadata {
			md := newView(t, map[string]string{PropDropDialectAllowed: "true"}, trino)
			md, err := md.Apply(replace(t, otherSchemaJSON, 222, sql("spark", "select count(some_id) from ns.tbl")), now)
			if err != nil {
				t.Fatal(err)
			}
			return md
		},
		// Built on version 1 with SCHEMA, which already existed then: no
		// add-schema, the version names schema 0.
		updates: func(t *testing.T) []Update {
			v := version(2, 0, 333, sql("trino", "select count(id) from ns.tbl"))
			return []Update{{Action: "add-view-version", ViewVersion: &v}, {Action: "set-current-view-version", VersionID: intp(-1)}}
		},
		check: func(t *testing.T, md *Metadata) {
			if md.CurrentVersionID != 3 || md.Current().SchemaID != 0 || len(md.Versions) != 3 {
				t.Errorf("current %d schema %d, %d versions", md.CurrentVersionID, md.Current().SchemaID, len(md.Versions))
			}
			if md.Version(2).Representations[0].Dialect != "spark" {
				t.Errorf("version 2 = %+v", md.Version(2))
			}
		},
	}, {
		name: "a known schema is reused",
		base: func(t *testing.T) *Metadata { return newView(t, nil, spark) },
		updates: func(t *testing.T) []Update {
			return replace(t, strings.Replace(schemaJSON, `"schema-id":5`, `"schema-id":9,"identifier-field-ids":[]`, 1), 222,
				sql("spark", "select 2"))
		},
		check: func(t *testing.T, md *Metadata) {
			if len(md.Schemas) != 1 || md.Current().SchemaID != 0 || md.CurrentVersionID != 2 {
				t.Errorf("schemas %d, current %+v", len(md.Schemas), md.Current())
			}
		},
	}, {
		name: "rolling back to an identical version reuses it and logs it now",
		base: func(t *testing.T) *Metadata {
			md := newView(t, nil, spark)
			md, err := md.Apply(replace(t, schemaJSON, 222, sql("spark", "select 2")), now)
			if err != nil {
				t.Fatal(err)
			}
			return md
		},
		updates: func(t *testing.T) []Update {
			v := version(7, 0, 999, spark)
			return []Update{{Action: "add-view-version", ViewVersion: &v}, {Action: "set-current-view-version", VersionID: intp(1)}}
		},
		check: func(t *testing.T, md *Metadata) {
			if md.CurrentVersionID != 1 || len(md.Versions) != 2 {
				t.Errorf("current %d, %d versions", md.CurrentVersionID, len(md.Versions))
			}
			if last := md.VersionLog[len(md.VersionLog)-1]; last != (LogEntry{now.UnixMilli(), 1}) {
				t.Errorf("last log entry = %v", last)
			}
		},
	}, {
		name: "properties and location",
		base: func(t *testing.T) *Metadata { return newView(t, map[string]string{"a": "1", "b": "2"}, spark) },
		updates: func(t *testing.T) []Update {
			loc := "s3://elsewhere/v"
			return []Update{{Action: "set-properties", Updates: map[string]string{"c": "3", "a": "9"}},
				{Action: "remove-properties", Removals: []string{"b", "missing"}},
				{Action: "set-location", Location: &loc},
				{Action: "assign-uuid", UUID: "u-1"},
				{Action: "upgrade-format-version", FormatVersion: 1}}
		},
		check: func(t *testing.T, md *Metadata) {
			if md.Properties["a"] != "9" || md.Properties["c"] != "3" || len(md.Properties) != 2 || md.Location != "s3://elsewhere/v" {
				t.Errorf("properties %v, location %s", md.Properties, md.Location)
			}
			if len(md.VersionLog) != 1 || len(md.Versions) != 1 {
				t.Errorf("log %v, %d versions", md.VersionLog, len(md.Versions))
			}
		},
	}, {
		name: "history is trimmed to version.history.num-entries",
		base: func(t *testing.T) *Metadata {
			md := newView(t, map[string]string{PropHistorySize: "2"}, spark)
			for i := range 3 {
				var err error
				if md, err = md.Apply(replace(t, schemaJSON, int64(200+i), sql("spark", "select "+string(rune('a'+i)))), now); err != nil {
					t.Fatal(err)
				}
			}
			return md
		},
		updates: func(t *testing.T) []Update { return replace(t, schemaJSON, 300, sql("spark", "select z")) },
		check: func(t *testing.T, md *Metadata) {
			var ids []int
			for _, v := range md.Versions {
				ids = append(ids, v.VersionID)
			}
			if !slices.Equal(ids, []int{4, 5}) || md.CurrentVersionID != 5 {
				t.Errorf("versions %v, current %d", ids, md.CurrentVersionID)
			}
			if want := []LogEntry{{202, 4}, {300, 5}}; !slices.Equal(md.VersionLog, want) {
				t.Errorf("version-log = %v, want %v", md.VersionLog, want)
			}
		},
	},
		{name: "dropping a dialect", base: func(t *testing.T) *Metadata { return newView(t, nil, trino, spark) },
			updates: func(t *testing.T) []Update { return replace(t, schemaJSON, 2, trino) }, err: "loss of view dialects"},
		{name: "two queries for one dialect", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update { return replace(t, schemaJSON, 2, trino, sql("TRINO", "x")) },
			err:     "Cannot add multiple queries for dialect trino"},
		{name: "another uuid", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update { return []Update{{Action: "assign-uuid", UUID: "u-2"}} }, err: "reassign uuid"},
		{name: "format version 2", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update { return []Update{{Action: "upgrade-format-version", FormatVersion: 2}} },
			err:     "Unsupported format version: 2"},
		{name: "unknown current version", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update {
				return []Update{{Action: "set-current-view-version", VersionID: intp(4)}}
			}, err: "unknown version: 4"},
		{name: "last added version without one", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update {
				return []Update{{Action: "set-current-view-version", VersionID: intp(-1)}}
			}, err: "no current version id has been set"},
		{name: "last added schema without one", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update {
				v := version(2, -1, 1, sql("trino", "select 2"))
				return []Update{{Action: "add-view-version", ViewVersion: &v}}
			}, err: "no schema has been added"},
		{name: "unknown schema", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update {
				v := version(2, 3, 1, sql("trino", "select 2"))
				return []Update{{Action: "add-view-version", ViewVersion: &v}}
			}, err: "unknown schema: 3"},
		{name: "bad history size", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update {
				return []Update{{Action: "set-properties", Updates: map[string]string{PropHistorySize: "0"}}}
			}, err: "must be positive"},
		{name: "a table update", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update { return []Update{{Action: "add-snapshot"}} }, err: `"add-snapshot" is not a view update`},
		{name: "no action", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update { return []Update{{}} }, err: "needs an action"},
		{name: "set-location without one", base: func(t *testing.T) *Metadata { return newView(t, nil, trino) },
			updates: func(t *testing.T) []Update { return []Update{{Action: "set-location"}} }, err: "Invalid location"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base(t)
			before, _ := json.Marshal(base)
			md, err := base.Apply(tt.updates(t), now)
			if after, _ := json.Marshal(base); string(after) != string(before) {
				t.Errorf("Apply changed its receiver:\n%s\n%s", before, after)
			}
			if tt.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want ErrInvalid with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := md.Validate(); err != nil {
				t.Errorf("result does not validate: %v", err)
			}
			tt.check(t, md)
		})
	}
}

// TestJSON: a document survives a round trip, schemas keep what the
// catalog does not model, and the spec's required fields are always
// written.
func TestJSON(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("testdata", "spec-example.json"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	if md.Current().VersionID != 2 || *md.Current().DefaultCatalog != "prod" || md.Properties["comment"] != "Daily event counts" {
		t.Errorf("parsed %+v", md)
	}
	out, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(doc, &a)
	json.Unmarshal(out, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("round trip changed the document:\n%s\n%s", ja, jb)
	}

	s := schema(t, `{"type":"struct","schema-id":3,"fields":[{"id":1,"name":"x","required":false,"type":"int","initial-default":7}]}`)
	got, _ := json.Marshal(s)
	if !strings.Contains(string(got), `"initial-default":7`) || !strings.Contains(string(got), `"schema-id":3`) {
		t.Errorf("schema = %s", got)
	}

	empty, _ := json.Marshal(Metadata{})
	for _, k := range []string{`"versions":[]`, `"version-log":[]`, `"schemas":[]`} {
		if !strings.Contains(string(empty), k) {
			t.Errorf("%s lacks %s", empty, k)
		}
	}
	v, _ := json.Marshal(Version{})
	if !strings.Contains(string(v), `"summary":{}`) || !strings.Contains(string(v), `"default-namespace":[]`) {
		t.Errorf("version = %s", v)
	}

	for _, bad := range []string{
		`{"type":"list","fields":[]}`,
		`{"type":"struct"}`,
		`{"type":"struct","fields":[{"name":"x","type":"int"}]}`,
		`{"type":"struct","fields":{}}`,
		`[]`,
		`null`,
	} {
		var s Schema
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("schema %s accepted", bad)
		}
	}
	for _, bad := range []string{`{"type":"sql","sql":"x"}`, `{"type":"sql","dialect":"x"}`, `{"type":"substrait","plan":"…"}`, `{"type":"sql","sql":"x","dialect":""}`} {
		var r Representation
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("representation %s accepted", bad)
		}
	}
	for name, mutate := range map[string]func(m map[string]any){
		"format version 2":      func(m map[string]any) { m["format-version"] = 2 },
		"no uuid":               func(m map[string]any) { delete(m, "view-uuid") },
		"unknown current":       func(m map[string]any) { m["current-version-id"] = 9 },
		"no versions":           func(m map[string]any) { m["versions"] = []any{} },
		"version of no schema":  func(m map[string]any) { m["schemas"] = []any{} },
		"duplicate schema":      func(m map[string]any) { m["schemas"] = append(m["schemas"].([]any), m["schemas"].([]any)[0]) },
		"not a metadata object": func(m map[string]any) { m["versions"] = "x" },
	} {
		var m map[string]any
		json.Unmarshal(doc, &m)
		mutate(m)
		b, _ := json.Marshal(m)
		if _, err := Parse(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Parse = %v, want ErrInvalid", name, err)
		}
	}
}

func TestSchemaSameAs(t *testing.T) {
	a := schema(t, schemaJSON)
	for _, tt := range []struct {
		other string
		same  bool
	}{
		{strings.Replace(schemaJSON, `"schema-id":5`, `"schema-id":0`, 1), true},
		{strings.Replace(schemaJSON, `"schema-id":5,`, ``, 1), true},
		{strings.Replace(schemaJSON, `"schema-id":5`, `"identifier-field-ids":[]`, 1), true},
		{`{"fields":[{"id":3,"name":"id","required":true,"type":"int","doc":"unique ID"},{"type":"string","id":4,"name":"data","required":true}],"type":"struct"}`, true},
		{strings.Replace(schemaJSON, `"schema-id":5`, `"identifier-field-ids":[3]`, 1), false},
		{strings.Replace(schemaJSON, `"unique ID"`, `"another doc"`, 1), false},
		{otherSchemaJSON, false},
	} {
		b := schema(t, tt.other)
		if got := a.SameAs(&b); got != tt.same {
			t.Errorf("SameAs(%s) = %v, want %v", tt.other, got, tt.same)
		}
	}
}

func FuzzParse(f *testing.F) {
	doc, err := os.ReadFile(filepath.Join("testdata", "spec-example.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(doc)
	f.Add([]byte(`{"view-uuid":"u","format-version":1,"location":"l","current-version-id":1,"versions":[{"version-id":1,"schema-id":0,"timestamp-ms":1,"summary":{},"representations":[{"type":"sql","sql":"s","dialect":"d"}],"default-namespace":[]}],"version-log":[],"schemas":[{"type":"struct","schema-id":0,"fields":[]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := Parse(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(md)
		if err != nil {
			t.Fatalf("marshal a parsed document: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("a written document does not parse: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(again)
		if string(out) != string(out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
		// Any valid document takes a property update.
		if _, err := md.Apply([]Update{{Action: "set-properties", Updates: map[string]string{"k": "v"}}}, now); err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("Apply: %v", err)
		}
	})
}
