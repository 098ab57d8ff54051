package plan

import (
	"encoding/json"
	"testing"

	"github.com/duckicelake/duckicelake/governance/model"
)

func TestReadRestrictions(t *testing.T) {
	tb := customers()
	tests := []struct {
		filter string
		want   string // the required-row-filter JSON; "" when untranslatable (false)
	}{
		{`("country") = 'EU'`, `{"term":"country","type":"eq","value":"EU"}`},
		{`("country") = 'EU' AND ("mrr") >= 2000`, `{"left":{"term":"country","type":"eq","value":"EU"},"right":{"term":"mrr","type":"gt-eq","value":2000},"type":"and"}`},
		{`NOT (("mrr") < -5 OR ("email") IS NULL)`, `{"child":{"left":{"term":"mrr","type":"lt","value":-5},"right":{"term":"email","type":"is-null"},"type":"or"},"type":"not"}`},
		{`"country" IN ('EU', 'US')`, `{"term":"country","type":"in","values":["EU","US"]}`},
		{`country NOT IN ('APAC')`, `{"term":"country","type":"not-in","values":["APAC"]}`},
		{`email LIKE 'bob%'`, `{"term":"email","type":"starts-with","value":"bob"}`},
		{`email IS NOT NULL`, `{"term":"email","type":"not-null"}`},
		{`country <> 'it''s'`, `{"term":"country","type":"not-eq","value":"it's"}`},
		// Untranslatable: functions, column-to-column, infix LIKE, unknown
		// columns.
		{`lower(country) = 'eu'`, ``},
		{`mrr > id`, ``},
		{`email LIKE '%@work.net'`, ``},
		{`region = 'EU'`, ``},
		{`country = 'EU' OR`, ``},
	}
	for _, tt := range tests {
		pl := Plan{Visible: true, RowFilters: []RowFilter{{Policy: "p", Expr: tt.filter}}}
		rr, exact := pl.ReadRestrictions(tb)
		want := tt.want
		if want == "" {
			want = "false"
		}
		if string(rr.RowFilter) != want || exact != (tt.want != "") {
			t.Errorf("%s: %s exact=%v, want %s", tt.filter, rr.RowFilter, exact, want)
		}
	}
	// Masks: a standard action as itself, a SQL body as the action that
	// reveals nothing.
	pl := Plan{Visible: true, Masks: []Mask{
		{Column: "email", ColumnID: 2, Policy: "m", Action: model.ActionShowLast4},
		{Column: "country", ColumnID: 3, Policy: "sql"},
		{Column: "id", ColumnID: 1, Policy: "sql2"},
	}}
	rr, exact := pl.ReadRestrictions(tb)
	got, _ := json.Marshal(rr.ColumnProjections)
	if string(got) != `[{"field-id":2,"action":"show-last-4"},{"field-id":3,"action":"replace-with-null"},{"field-id":1,"action":"mask-to-fixed-value"}]` || exact {
		t.Errorf("projections %s exact=%v", got, exact)
	}
	if rr, _ := (&Plan{Visible: true}).ReadRestrictions(tb); rr != nil {
		t.Error("an ungoverned plan has restrictions")
	}
}

func FuzzTranslate(f *testing.F) {
	for _, s := range []string{`("country") = 'EU'`, `NOT (a OR b)`, `x IN (1, 2`, `((((`} {
		f.Add(s)
	}
	cols := map[string]*Column{"country": {ID: 3, Name: "country"}, "mrr": {ID: 4, Name: "mrr"}}
	f.Fuzz(func(t *testing.T, s string) {
		e, ok := translate(s, cols)
		if ok {
			if _, err := json.Marshal(e); err != nil {
				t.Fatalf("%q: %v", s, err)
			}
		}
	})
}
