package plan

import (
	"database/sql"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/duckicelake/duckicelake/governance/model"
)

// TestViewSQLRunsInDuckDB executes generated view SQL in real DuckDB over
// the seeds' customers: bob reads masked rows filtered on raw values.
func TestViewSQLRunsInDuckDB(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE SCHEMA analytics`,
		`CREATE TABLE analytics.customers (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER)`,
		`INSERT INTO analytics.customers VALUES (1, 'alice@example.com', 'EU', 2400), (2, 'bob@personal.io', 'US', 1800),
			(3, 'carol@work.net', 'EU', 900), (4, NULL, 'EU', 3000)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	st := seedState()
	st.RowPolicies = []model.RowPolicy{
		{Name: "eu_only", Body: "country = 'EU'", Columns: []string{"country"}},
		// Filters see raw values: carol's address is masked in the output
		// but still matches here.
		{Name: "work_or_rich", Body: "email LIKE '%@work.net' OR mrr >= 2000", Columns: []string{"email", "mrr"}},
	}
	for _, n := range []string{"eu_only", "work_or_rich"} {
		st.Attachments = append(st.Attachments, model.Attachment{Kind: model.PolicyRowAccess, Policy: n, Target: model.TargetTable,
			Object: model.ObjectRef{Kind: model.ObjectTable, SchemaID: 1, TableID: 10}})
	}
	st.Index()
	p := Build(st, Principal{Roles: rolesOf(st, "bob")}, customers(), Options{})
	rows, err := db.Query(p.ViewSQL + ` ORDER BY id`)
	if err != nil {
		t.Fatalf("%s: %v", p.ViewSQL, err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id int64
		var email sql.NullString
		var country string
		var mrr int
		if err := rows.Scan(&id, &email, &country, &mrr); err != nil {
			t.Fatal(err)
		}
		got = append(got, email.String)
	}
	want := []string{"al***", "ca***", ""}
	if len(got) != len(want) {
		t.Fatalf("bob reads %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %q, want %q", i, got[i], want[i])
		}
	}
}
