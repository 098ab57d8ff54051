package catalog_test

import (
	"testing"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/testsupport/audittest"
)

// TestViewCrossNamespaceReads: a view's SQL may name a namespace other
// than its own only when the token storing it may read that namespace
// (issue 14: a writer of sales stored a view reading hr). Refusals are
// 403, audited; aliases, strings and comments that look like names are
// not namespaces.
func TestViewCrossNamespaceReads(t *testing.T) {
	audit := &audittest.Recorder{}
	env := newRestEnv(t, func(_ *rest.Config, d *rest.Deps) { d.Audit = audit })
	admin, writer := env.token("admin"), env.token("writer") // writer: ns:sales:rw
	for _, ns := range []string{"sales", "hr"} {
		if r := env.do("POST", "/v1/lake/namespaces", admin, map[string]any{"namespace": []string{ns}}); r.code != 200 {
			t.Fatalf("create namespace %s: %d %s", ns, r.code, r.body)
		}
	}
	schema := viewSchema("id")
	create := func(tok, name, sql string, defaultNS ...string) response {
		body := createViewBody(name, schema, nil, "spark", sql)
		if defaultNS != nil {
			body["view-version"].(map[string]any)["default-namespace"] = defaultNS
		}
		return env.do("POST", "/v1/lake/namespaces/sales/views", tok, body)
	}
	for i, tt := range []struct {
		name, sql string
		defaultNS []string
		code      int
	}{
		{"other namespace", "SELECT * FROM hr.emp", nil, 403},
		{"catalog-qualified", `select * from lake."hr".emp`, nil, 403},
		{"upper case", "SELECT * FROM HR.emp", nil, 403},
		{"spaces and a comment around the dot", "SELECT * FROM hr /* x */ . emp", nil, 403},
		{"in a join", "SELECT o.id FROM orders o JOIN hr.emp e ON o.id = e.id", nil, 403},
		{"in a subquery", "SELECT id FROM (SELECT id FROM hr.emp) x", nil, 403},
		{"default namespace", "SELECT * FROM emp", []string{"hr"}, 403},
		{"unlexable", "SELECT 'unterminated", nil, 400},
		{"own namespace", "SELECT * FROM sales.orders", nil, 200},
		{"alias", "SELECT o.id FROM orders o", nil, 200},
		{"string literal", "SELECT 'hr.emp' AS x FROM orders", nil, 200},
		{"comment", "SELECT id FROM orders -- hr.emp", nil, 200},
		{"no such namespace", "SELECT * FROM nowhere.t", nil, 200},
		{"trailing semicolon", "SELECT * FROM orders;", nil, 200},
	} {
		r := create(writer, "v"+itoa(int64(i)), tt.sql, tt.defaultNS...)
		if r.code != tt.code {
			t.Errorf("%s: %d %s; want %d", tt.name, r.code, r.body, tt.code)
		}
	}
	// A token that reads hr may store the view.
	if r := create(admin, "v_admin", "SELECT * FROM hr.emp"); r.code != 200 {
		t.Errorf("admin: %d %s", r.code, r.body)
	}
	// Replacing a view with SQL reading hr is refused as creating it is.
	r := create(writer, "v_replace", "SELECT * FROM orders")
	if r.code != 200 {
		t.Fatalf("create v_replace: %d %s", r.code, r.body)
	}
	uuid := decodeView(t, r).Metadata.UUID
	if r := env.do("POST", "/v1/lake/namespaces/sales/views/v_replace", writer, replaceViewBody(uuid, schema, "spark", "SELECT * FROM hr.emp")); r.code != 403 {
		t.Errorf("replace reading hr: %d %s", r.code, r.body)
	}
	if r := env.do("POST", "/v1/lake/namespaces/sales/views/v_replace", writer, replaceViewBody(uuid, schema, "spark", "SELECT id FROM sales.orders")); r.code != 200 {
		t.Errorf("replace within sales: %d %s", r.code, r.body)
	}

	denied := 0
	for _, ev := range audit.Events() {
		if ev.Decision == governance.OutcomeDeny && ev.Status == 403 && ev.Principal == "writer" && ev.Namespace == "sales" && ev.Reason != "" &&
			(ev.Action == "CreateView" || ev.Action == "ReplaceView") {
			denied++
		}
	}
	if denied != 8 {
		t.Errorf("%d view refusals audited; want 8: %+v", denied, audit.Events())
	}
}
