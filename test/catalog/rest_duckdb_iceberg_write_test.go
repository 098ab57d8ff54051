package catalog_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// TestDuckDBIcebergWrite: DuckDB 1.5's iceberg extension, attached to the
// catalog with vended credentials, creates a namespace and a table and
// inserts twice; DuckDB's iceberg and ducklake extensions and PyIceberg
// then read identical rows, also after a DELETE and an UPDATE (see below).
func TestDuckDBIcebergWrite(t *testing.T) {
	ns := "di" + randomHex(4)
	st := requireStack(t, true)
	env := newRestEnv(t, withS3Materializer(st), withOwnGateway(t, st, false), func(c *rest.Config, d *rest.Deps) {
		c.Clients = append(slices.Clone(c.Clients), rest.Client{ID: "writer-" + ns, Secret: "pw", Scopes: []string{"ns:" + ns + ":rw"}})
		d.Objects = objstore.NewS3(st.root())
	})
	duckDBThroughGateway(t, env, st, "duckdb-reader", ns, creds.Read|creds.List)
	var got struct {
		Ops []struct {
			Op    string `json:"op"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"ops"`
		Reads []struct {
			Step        string              `json:"step"`
			Table       string              `json:"table"`
			Rows        map[string][]string `json:"rows"`
			Columns     []string            `json:"columns"`
			LakeColumns []string            `json:"ducklake_columns"`
			Errors      any                 `json:"errors"`
		} `json:"reads"`
	}
	testsupport.RunPython(t, &got, "rest_duckdb_iceberg_write.py", env.url, "nsadmin:nsadmin-pw", env.dsn, restDataPath, ns)
	ops := map[string]string{}
	for _, o := range got.Ops {
		ops[o.Op] = "ok"
		if !o.OK {
			ops[o.Op] = o.Error
		}
	}
	for _, op := range []string{"create schema", "create table", "insert 1", "insert 2", "create table as"} {
		if ops[op] != "ok" {
			t.Errorf("%s through DuckDB's iceberg extension: %s", op, ops[op])
		}
	}
	// DuckDB 1.5.5 deletes (and updates: delete + insert) with one
	// position delete file that has neither referenced_data_file nor
	// file_path bounds; the catalog reads its file_path column to find the
	// data file. The UPDATE deletes from the data file the DELETE already
	// has a delete file for, so the catalog merges the two into one
	// (DuckLake keeps one delete file per data file).
	for _, op := range []string{"delete", "update"} {
		if ops[op] != "ok" {
			t.Errorf("%s through DuckDB's iceberg extension: %s", op, ops[op])
		}
	}
	want := map[string]int{"insert 1": 50, "insert 2": 120, "delete": 110, "update": 110, "create table as": 20}
	columns := map[string][]string{"t": {"id", "name", "amount", "d", "ts", "price", "flag"}, "c": {"id", "name"}}
	steps := map[string]bool{}
	for _, r := range got.Reads {
		steps[r.Step] = true
		if r.Errors != nil {
			t.Errorf("%s: read errors %v", r.Step, r.Errors)
		}
		ice := r.Rows["iceberg"]
		if len(ice) != want[r.Step] {
			t.Errorf("%s: DuckDB's iceberg extension reads %d rows, want %d", r.Step, len(ice), want[r.Step])
		}
		for _, who := range []string{"ducklake", "pyiceberg"} {
			if !slices.Equal(r.Rows[who], ice) {
				t.Errorf("%s: %s reads %d rows, DuckDB's iceberg extension %d, not the same rows", r.Step, who, len(r.Rows[who]), len(ice))
			}
		}
		if !slices.Equal(r.Columns, columns[r.Table]) || !slices.Equal(r.LakeColumns, columns[r.Table]) {
			t.Errorf("%s: columns iceberg %v, ducklake %v, want %v", r.Step, r.Columns, r.LakeColumns, columns[r.Table])
		}
		if r.Step == "update" {
			var n int
			for _, row := range ice {
				if strings.Contains(row, "|upd|") {
					n++
				}
			}
			if n != 10 {
				t.Errorf("update: %d rows with name upd, want 10", n)
			}
		}
	}
	for step := range want {
		if !steps[step] {
			t.Errorf("no read after %s", step)
		}
	}
}
