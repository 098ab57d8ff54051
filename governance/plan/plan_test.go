package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance/model"
)

var (
	varchar = ducklake.Type{Kind: ducklake.KindVarchar}
	int32T  = ducklake.Type{Kind: ducklake.KindInt32}
	int64T  = ducklake.Type{Kind: ducklake.KindInt64}
)

// customers is the seeds' analytics.customers.
func customers() *Table {
	return &Table{SchemaID: 1, TableID: 10, Namespace: "analytics", Name: "customers", Columns: []Column{
		{ID: 1, Name: "id", Type: int64T},
		{ID: 2, Name: "email", Type: varchar, Nullable: true},
		{ID: 3, Name: "country", Type: varchar, Nullable: true},
		{ID: 4, Name: "mrr", Type: int32T, Nullable: true},
	}}
}

// seedState is the seeds' README example: pii.email on customers.email,
// mask_email bypassed by pii_reader, granted to alice.
func seedState() *model.State {
	return &model.State{
		Version:    1,
		Tags:       []model.Tag{{TagRef: model.TagRef{Namespace: "pii", Name: "email"}}},
		ObjectTags: []model.ObjectTag{{Object: model.ObjectRef{Kind: model.ObjectColumn, SchemaID: 1, TableID: 10, ColumnID: 2}, Tag: model.TagRef{Namespace: "pii", Name: "email"}}},
		Masks: []model.MaskingPolicy{{Name: "mask_email", Signature: "(val VARCHAR)", Param: "val", ArgType: "VARCHAR",
			Body: "left(val, 2) || '***'", UnmaskedRoles: []string{"pii_reader"}}},
		Attachments: []model.Attachment{{Kind: model.PolicyMasking, Policy: "mask_email", Target: model.TargetTag, Tag: model.TagRef{Namespace: "pii", Name: "email"}}},
		Roles:       []model.Role{{Name: "pii_reader"}},
		RoleGrants:  []model.RoleGrant{{Role: "pii_reader", Principal: "alice"}},
	}
}

func rolesOf(st *model.State, principal string, extra ...string) model.RoleSet {
	return model.NewRoleSet(st.GrantedRoles(principal), extra, []string{"actor:human", "channel:rest"})
}

func TestSeedsExample(t *testing.T) {
	st := seedState().Index()
	bob := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	if !bob.Visible || len(bob.Masks) != 1 || bob.Masks[0].Column != "email" || bob.Tier != TierCooperative {
		t.Fatalf("bob's plan = %+v", bob)
	}
	wantView := `SELECT "id", CAST((left(("email"), 2) || '***') AS VARCHAR) AS "email", "country", "mrr" FROM "analytics"."customers"`
	if bob.ViewSQL != wantView {
		t.Errorf("view SQL\n got %s\nwant %s", bob.ViewSQL, wantView)
	}
	if bob.Signature == "" || len(bob.PolicyIDs) != 1 || bob.PolicyIDs[0] != "masking:mask_email" {
		t.Errorf("signature %q, policies %v", bob.Signature, bob.PolicyIDs)
	}
	alice := Build(st, Principal{Roles: rolesOf(st, "alice")}, customers(), Options{})
	if !alice.Visible || alice.Governed() || alice.Tier != TierNone || alice.Signature != "" || alice.ViewSQL != "" {
		t.Errorf("alice's plan = %+v", alice)
	}
	// A second masked principal shares bob's signature: same views.
	carol := Build(st, Principal{Roles: rolesOf(st, "carol", "analyst")}, customers(), Options{})
	if carol.Signature != bob.Signature {
		t.Errorf("same shape, different signatures: %s %s", carol.Signature, bob.Signature)
	}
}

func TestRowFiltersCompose(t *testing.T) {
	st := seedState()
	st.RowPolicies = []model.RowPolicy{
		{Name: "min_mrr", Body: "mrr >= 2000", Columns: []string{"mrr"}},
		{Name: "eu_only", Body: "country = 'EU'", Columns: []string{"country"}, UnmaskedRoles: []string{"global"}},
	}
	st.Attachments = append(st.Attachments,
		model.Attachment{Kind: model.PolicyRowAccess, Policy: "min_mrr", Target: model.TargetTable, Object: model.ObjectRef{Kind: model.ObjectTable, SchemaID: 1, TableID: 10}},
		model.Attachment{Kind: model.PolicyRowAccess, Policy: "eu_only", Target: model.TargetTable, Object: model.ObjectRef{Kind: model.ObjectTable, SchemaID: 1, TableID: 10}},
	)
	st.Index()
	bob := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	want := `SELECT "id", CAST((left(("email"), 2) || '***') AS VARCHAR) AS "email", "country", "mrr" FROM (SELECT * FROM "analytics"."customers" WHERE (("country") = 'EU') AND (("mrr") >= 2000)) AS "customers"`
	if bob.ViewSQL != want {
		t.Errorf("view SQL\n got %s\nwant %s", bob.ViewSQL, want)
	}
	if len(bob.RowFilters) != 2 || bob.RowFilters[0].Policy != "eu_only" {
		t.Errorf("filters not in policy-name order: %+v", bob.RowFilters)
	}
	// Bypass is per policy: global skips eu_only but keeps min_mrr and the
	// mask.
	g := Build(st, Principal{Roles: rolesOf(st, "gina", "global")}, customers(), Options{})
	if len(g.RowFilters) != 1 || g.RowFilters[0].Policy != "min_mrr" || len(g.Masks) != 1 {
		t.Errorf("global's plan = %+v", g)
	}
	// A filter rotates the signature.
	plain := Build(seedState().Index(), Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	if plain.Signature == bob.Signature {
		t.Error("adding filters kept the signature")
	}
}

func TestRenameCarries(t *testing.T) {
	st := seedState()
	st.RowPolicies = []model.RowPolicy{{Name: "eu_only", Body: "country = 'EU'", Columns: []string{"country"}}}
	st.Attachments = append(st.Attachments, model.Attachment{Kind: model.PolicyRowAccess, Policy: "eu_only", Target: model.TargetTable,
		Object: model.ObjectRef{Kind: model.ObjectTable, SchemaID: 1, TableID: 10}, Bindings: map[string]int64{"country": 3}})
	st.Index()
	tb := customers()
	tb.Name = "clients"         // table renamed: same id
	tb.Columns[1].Name = "mail" // tagged column renamed: same id
	tb.Columns[2].Name = "region"
	p := Build(st, Principal{Roles: rolesOf(st, "bob")}, tb, Options{})
	if len(p.Masks) != 1 || p.Masks[0].Column != "mail" {
		t.Fatalf("mask lost on rename: %+v", p)
	}
	if len(p.RowFilters) != 1 || !strings.Contains(p.Filter, `("region") = 'EU'`) || len(p.Issues) > 0 {
		t.Fatalf("filter lost on rename: %+v", p)
	}
	if !strings.Contains(p.ViewSQL, `"analytics"."clients"`) {
		t.Errorf("view does not read the renamed table: %s", p.ViewSQL)
	}
	// A table recreated under the old name has a new id: nothing applies.
	fresh := customers()
	fresh.TableID = 99
	if q := Build(st, Principal{Roles: rolesOf(st, "bob")}, fresh, Options{}); q.Governed() {
		t.Errorf("a new table inherited policies: %+v", q)
	}
}

func TestAllowlist(t *testing.T) {
	st := seedState()
	st.Roles = append(st.Roles, model.Role{Name: "analysts"})
	st.RoleGrants = append(st.RoleGrants, model.RoleGrant{Role: "analysts", Principal: "ann"})
	st.ObjectGrants = []model.ObjectGrant{{Object: model.ObjectRef{Kind: model.ObjectTable, SchemaID: 1, TableID: 10}, Privilege: model.PrivilegeSelect, Role: "analysts"}}
	st.Index()
	if p := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{}); p.Visible || p.Governed() {
		t.Errorf("bob sees an allowlisted table: %+v", p)
	}
	if p := Build(st, Principal{Roles: rolesOf(st, "ann")}, customers(), Options{}); !p.Visible || len(p.Masks) != 1 {
		t.Errorf("ann's plan = %+v", p)
	}
	// A schema grant allowlists every table of the schema.
	st2 := seedState()
	st2.ObjectGrants = []model.ObjectGrant{{Object: model.ObjectRef{Kind: model.ObjectSchema, SchemaID: 1}, Privilege: model.PrivilegeSelect, Role: "pii_reader"}}
	st2.Index()
	other := &Table{SchemaID: 1, TableID: 11, Namespace: "analytics", Name: "orders", Columns: []Column{{ID: 1, Name: "id", Type: int64T}}}
	if p := Build(st2, Principal{Roles: rolesOf(st2, "bob")}, other, Options{}); p.Visible {
		t.Error("schema grant does not allowlist its tables")
	}
	if p := Build(st2, Principal{Roles: rolesOf(st2, "alice")}, other, Options{}); !p.Visible {
		t.Error("alice holds the schema grant")
	}
}

func TestTagCascadeAndTypes(t *testing.T) {
	st := seedState()
	// The tag on the whole schema: the VARCHAR mask reaches every VARCHAR
	// column, no other.
	st.ObjectTags = []model.ObjectTag{{Object: model.ObjectRef{Kind: model.ObjectSchema, SchemaID: 1}, Tag: model.TagRef{Namespace: "pii", Name: "email"}}}
	st.Index()
	p := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	var cols []string
	for _, m := range p.Masks {
		cols = append(cols, m.Column)
	}
	if strings.Join(cols, ",") != "email,country" {
		t.Errorf("masked columns = %v, want email,country", cols)
	}
}

// Tags accumulate down the cascade: a schema's tag, a table's and a
// column's each bring their masks to the columns they fit, all at once.
func TestTagCascadeAccumulates(t *testing.T) {
	st := seedState()
	tag := func(ns, name string) model.TagRef { return model.TagRef{Namespace: ns, Name: name} }
	st.Tags = append(st.Tags, model.Tag{TagRef: tag("fin", "money")}, model.Tag{TagRef: tag("ids", "key")})
	st.Masks = append(st.Masks,
		model.MaskingPolicy{Name: "mask_int", Signature: "(val INTEGER)", Param: "val", ArgType: "INTEGER", Body: "0"},
		model.MaskingPolicy{Name: "mask_id", Signature: "(val BIGINT)", Param: "val", ArgType: "BIGINT", Body: "-1"})
	st.Attachments = append(st.Attachments,
		model.Attachment{Kind: model.PolicyMasking, Policy: "mask_int", Target: model.TargetTag, Tag: tag("fin", "money")},
		model.Attachment{Kind: model.PolicyMasking, Policy: "mask_id", Target: model.TargetTag, Tag: tag("ids", "key")})
	st.ObjectTags = []model.ObjectTag{
		{Object: model.ObjectRef{Kind: model.ObjectSchema, SchemaID: 1}, Tag: tag("pii", "email")},
		{Object: model.ObjectRef{Kind: model.ObjectTable, SchemaID: 1, TableID: 10}, Tag: tag("fin", "money")},
		{Object: model.ObjectRef{Kind: model.ObjectColumn, SchemaID: 1, TableID: 10, ColumnID: 1}, Tag: tag("ids", "key")},
	}
	st.Index()
	p := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	got := map[string]string{}
	for _, m := range p.Masks {
		got[m.Column] = m.Policy
	}
	want := map[string]string{"id": "mask_id", "email": "mask_email", "country": "mask_email", "mrr": "mask_int"}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(p.Issues) != 0 {
		t.Errorf("masks = %v (issues %+v), want %v", got, p.Issues, want)
	}
}

func TestOneMaskPerColumn(t *testing.T) {
	st := seedState()
	st.Masks = append(st.Masks, model.MaskingPolicy{Name: "a_null", Action: model.ActionReplaceWithNull})
	st.Attachments = append(st.Attachments, model.Attachment{Kind: model.PolicyMasking, Policy: "a_null", Target: model.TargetColumn,
		Object: model.ObjectRef{Kind: model.ObjectColumn, SchemaID: 1, TableID: 10, ColumnID: 2}})
	st.Index()
	p := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	if len(p.Masks) != 1 || p.Masks[0].Policy != "a_null" || len(p.Issues) != 1 {
		t.Errorf("two masks on a column: %+v", p)
	}
}

func TestIssues(t *testing.T) {
	st := seedState()
	st.RowPolicies = []model.RowPolicy{{Name: "by_region", Body: "region = 'EU'", Columns: []string{"region"}}}
	st.Attachments = append(st.Attachments, model.Attachment{Kind: model.PolicyRowAccess, Policy: "by_region", Target: model.TargetTable,
		Object: model.ObjectRef{Kind: model.ObjectTable, SchemaID: 1, TableID: 10}})
	st.Masks = append(st.Masks, model.MaskingPolicy{Name: "mask_int", Signature: "(val INTEGER)", Param: "val", ArgType: "INTEGER", Body: "0"})
	st.Attachments = append(st.Attachments, model.Attachment{Kind: model.PolicyMasking, Policy: "mask_int", Target: model.TargetColumn,
		Object: model.ObjectRef{Kind: model.ObjectColumn, SchemaID: 1, TableID: 10, ColumnID: 1}}) // id is BIGINT now
	st.Index()
	p := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	if len(p.Issues) != 2 {
		t.Fatalf("issues = %+v", p.Issues)
	}
	for _, is := range p.Issues {
		if strings.Contains(is.Reason, "EU") || strings.Contains(is.Reason, "alice") {
			t.Errorf("issue leaks a value: %q", is.Reason)
		}
	}
}

func TestAgentAirtight(t *testing.T) {
	st := seedState()
	st.Masks[0].UnmaskedRoles = []string{"actor:human"}
	st.Index()
	human := Build(st, Principal{Roles: model.NewRoleSet([]string{"actor:human", "channel:rest"})}, customers(), Options{AgentAirtight: true})
	if human.Governed() {
		t.Errorf("a human is masked by an actor:human bypass: %+v", human)
	}
	agent := Build(st, Principal{Roles: model.NewRoleSet([]string{"actor:agent", "channel:mcp"}), Agent: true}, customers(), Options{AgentAirtight: true})
	if len(agent.Masks) != 1 || agent.Tier != TierAirtight {
		t.Errorf("agent's plan = %+v", agent)
	}
	coop := Build(st, Principal{Roles: model.NewRoleSet([]string{"actor:agent"}), Agent: true}, customers(), Options{})
	if coop.Tier != TierCooperative {
		t.Errorf("agent tier with the opt-out = %s", coop.Tier)
	}
	st.Masks[0].FileLayer = true
	st.Index()
	if p := Build(st, Principal{Roles: model.NewRoleSet([]string{"actor:agent"})}, customers(), Options{}); p.Tier != TierAirtight {
		t.Errorf("file-layer mask tier = %s", p.Tier)
	}
}

func TestInjectionShapedNames(t *testing.T) {
	st := seedState().Index()
	tb := customers()
	tb.Namespace = `an"; DROP SCHEMA x; --`
	tb.Name = `cu"stomers`
	tb.Columns[1].Name = `e"mail`
	p := Build(st, Principal{Roles: rolesOf(st, "bob")}, tb, Options{})
	for _, want := range []string{`"an""; DROP SCHEMA x; --"."cu""stomers"`, `left(("e""mail"), 2)`, `AS "e""mail"`} {
		if !strings.Contains(p.ViewSQL, want) {
			t.Errorf("view SQL %s lacks %s", p.ViewSQL, want)
		}
	}
}

func TestStandardActionExprs(t *testing.T) {
	st := seedState()
	st.Masks[0] = model.MaskingPolicy{Name: "mask_email", Action: model.ActionShowLast4, UnmaskedRoles: []string{"pii_reader"}}
	st.Index()
	p := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	if len(p.Masks) != 1 || p.Masks[0].Action != model.ActionShowLast4 || !strings.Contains(p.Masks[0].Expr, `right("email", 4)`) {
		t.Errorf("plan = %+v", p)
	}
}

func FuzzBuild(f *testing.F) {
	f.Add("left(val, 2) || '***'", "country = 'EU'", "country", "email", "analytics")
	f.Add("val", "x) OR (1=1", "x", `a"b`, `s;--`)
	f.Fuzz(func(t *testing.T, maskBody, rowBody, rowCol, colName, ns string) {
		st := seedState()
		st.Masks[0].Body = maskBody
		st.RowPolicies = []model.RowPolicy{{Name: "r", Body: rowBody, Columns: []string{rowCol}}}
		st.Attachments = append(st.Attachments, model.Attachment{Kind: model.PolicyRowAccess, Policy: "r", Target: model.TargetTable,
			Object: model.ObjectRef{Kind: model.ObjectTable, SchemaID: 1, TableID: 10}})
		st.Index()
		tb := customers()
		if strings.IndexByte(colName, 0) >= 0 || strings.IndexByte(ns, 0) >= 0 || strings.IndexByte(rowCol, 0) >= 0 {
			return // Postgres text cannot hold NUL: no DuckLake name has one
		}
		tb.Columns[1].Name = colName
		tb.Columns[2].Name = rowCol
		tb.Namespace = ns
		p := Build(st, Principal{Roles: rolesOf(st, "bob")}, tb, Options{})
		if !p.Visible {
			t.Fatal("not allowlisted, not visible")
		}
		if p.Governed() != (p.ViewSQL != "") || p.Governed() != (p.Signature != "") {
			t.Fatalf("inconsistent plan %+v", p)
		}
		if p.ViewSQL != "" {
			// Whatever the names and bodies, the view is one statement.
			if _, err := lexView(p.ViewSQL); err != nil {
				t.Fatalf("view SQL %q: %v", p.ViewSQL, err)
			}
		}
	})
}
