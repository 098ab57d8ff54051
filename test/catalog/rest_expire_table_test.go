package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// history is the part of a table's served metadata expiry changes.
type history struct {
	Current   int64 `json:"current-snapshot-id"`
	Snapshots []struct {
		ID     int64  `json:"snapshot-id"`
		Parent *int64 `json:"parent-snapshot-id"`
	} `json:"snapshots"`
	Log []struct {
		ID int64 `json:"snapshot-id"`
	} `json:"snapshot-log"`
	Refs map[string]struct {
		SnapshotID int64 `json:"snapshot-id"`
	} `json:"refs"`
}

func (h history) ids() []int64 {
	var out []int64
	for _, s := range h.Snapshots {
		out = append(out, s.ID)
	}
	return out
}

func (h history) logIDs() []int64 {
	var out []int64
	for _, s := range h.Log {
		out = append(out, s.ID)
	}
	return out
}

func loadHistory(t *testing.T, env *restEnv, tok, ns, table string) history {
	t.Helper()
	var h history
	env.metaInto(t, tok, ns, table, &h)
	return h
}

// duckRead is DuckDB's answer to one query: its rows, or its error.
type duckRead struct {
	Rows string
	Err  string
}

// duckReads runs queries with one DuckDB session (rest_duckdb_reads.py)
// and reports each one's rows (rendered) or the error DuckDB raised.
func duckReads(t *testing.T, env *restEnv, queries ...string) []duckRead {
	t.Helper()
	var res []struct {
		Rows  json.RawMessage `json:"rows"`
		Error string          `json:"error"`
	}
	testsupport.RunPython(t, &res, "rest_duckdb_reads.py", append([]string{env.dsn, restDataPath}, queries...)...)
	if len(res) != len(queries) {
		t.Fatalf("%d answers to %d queries", len(res), len(queries))
	}
	out := make([]duckRead, len(res))
	for i, r := range res {
		out[i] = duckRead{Rows: string(r.Rows), Err: r.Error}
	}
	return out
}

// TestRemoveSnapshotsForOneTable (issue 15 item 6): remove-snapshots of
// Iceberg snapshots whose stretch of DuckLake snapshots also changed
// another table — DuckDB inserted into o in between, and once into both
// in one transaction — expires them for table e alone. e's served history
// lists them no more (snapshots, snapshot-log, main), o's is untouched;
// DuckDB reads e at its current and every retained snapshot as before, o
// at every snapshot as before, and time travel to a snapshot expired for e
// reads e as of its last retained snapshot before it (all in one DuckDB
// session, which caches a catalog per schema version); the data file and
// the delete file only the expired
// snapshots saw are scheduled for deletion (rows gone) and
// ducklake_cleanup_old_files deletes them from S3, while every file a
// retained snapshot sees is kept; PyIceberg reads the same rows as DuckDB.
// DuckDB's own catalog-wide expiry afterwards leaves e intact.
func TestRemoveSnapshotsForOneTable(t *testing.T) {
	ns := "rt" + randomHex(4)
	env := writeEnv(t, ns)
	st := requireStack(t, true)
	ctx := context.Background()
	e, o := "l."+ns+".e", "l."+ns+".o"
	env.duck("CALL l.set_option('data_inlining_row_limit', 0)", "CREATE TABLE "+e+" (id BIGINT)", "CREATE TABLE "+o+" (id BIGINT)")
	head := func() int64 {
		var id int64
		if err := env.pool.QueryRow(ctx, `SELECT max(snapshot_id) FROM ducklake_snapshot`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	step := func(stmts ...string) int64 {
		env.duck(stmts...)
		return head()
	}
	s0 := head()                                                       // both tables, empty
	sA := step("INSERT INTO " + e + " SELECT range FROM range(1, 11)") // file A
	sO1 := step("INSERT INTO " + o + " VALUES (1)")
	sB := step("INSERT INTO " + e + " SELECT range FROM range(11, 21)") // file B
	sC := step("DELETE FROM " + e + " WHERE id <= 10")                  // A ends
	sF := step("INSERT INTO " + e + " SELECT range FROM range(40, 50)") // file F
	sG := step("DELETE FROM " + e + " WHERE id = 40")                   // delete file DF of F
	sO2 := step("INSERT INTO " + o + " VALUES (2)")
	sH := step("DELETE FROM " + e + " WHERE id >= 40") // F ends
	sEO := step("BEGIN", "INSERT INTO "+e+" SELECT range FROM range(21, 26)", "INSERT INTO "+o+" VALUES (3)", "COMMIT")
	sE := step("INSERT INTO " + e + " SELECT range FROM range(31, 36)")

	var eID int64
	if err := env.pool.QueryRow(ctx, `SELECT table_id FROM ducklake_table WHERE table_name = 'e' AND end_snapshot IS NULL`).Scan(&eID); err != nil {
		t.Fatal(err)
	}
	type file struct {
		name       string
		begin, end int64
	}
	files := func(tbl string) map[string]file {
		rows, err := env.pool.Query(ctx, `SELECT path, begin_snapshot, coalesce(end_snapshot, 0) FROM `+tbl+` WHERE table_id = $1`, eID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]file{}
		for rows.Next() {
			var f file
			if err := rows.Scan(&f.name, &f.begin, &f.end); err != nil {
				t.Fatal(err)
			}
			out[path.Base(f.name)] = f
		}
		return out
	}
	find := func(fs map[string]file, begin, end int64) string {
		for n, f := range fs {
			if f.begin == begin && f.end == end {
				return n
			}
		}
		t.Fatalf("no file [%d, %d) in %v", begin, end, fs)
		return ""
	}
	data, deletes := files("ducklake_data_file"), files("ducklake_delete_file")
	fileA, fileB, fileF := find(data, sA, sC), find(data, sB, 0), find(data, sF, sH)
	fileDF := find(deletes, sG, 0) // DuckDB leaves it to end with F

	tok := env.token("admin")
	before := loadHistory(t, env, tok, ns, "e")
	if want := []int64{sA, sB, sC, sF, sG, sH, sEO, sE}; !slices.Equal(before.ids(), want) {
		t.Fatalf("e's Iceberg snapshots before the expiry: %v, want %v", before.ids(), want)
	}
	oBefore := loadHistory(t, env, tok, ns, "o")

	all := []int64{s0, sA, sO1, sB, sC, sF, sG, sO2, sH, sEO, sE}
	queries := func() []string {
		var q []string
		for _, s := range all {
			q = append(q, fmt.Sprintf("SELECT id FROM %s AT (VERSION => %d) ORDER BY id", e, s),
				fmt.Sprintf("SELECT id FROM %s AT (VERSION => %d) ORDER BY id", o, s))
		}
		return append(q, "SELECT id FROM "+e+" ORDER BY id", "SELECT id FROM "+o+" ORDER BY id")
	}()
	duckBefore := duckReads(t, env, queries...)
	for i, r := range duckBefore {
		if r.Err != "" {
			t.Fatalf("before the expiry, %s: %s", queries[i], r.Err)
		}
	}

	remove := func(ids ...int64) {
		t.Helper()
		r := env.do("POST", "/v1/lake/namespaces/"+ns+"/tables/e", tok, map[string]any{"requirements": []any{},
			"updates": []any{map[string]any{"action": "remove-snapshots", "snapshot-ids": ids}}})
		if r.code != 200 {
			t.Fatalf("remove-snapshots %v: %d %s", ids, r.code, r.body)
		}
	}
	// check compares what every reader sees with what it saw before, for
	// e's retained Iceberg snapshots retained and its DuckLake snapshots
	// gone.
	check := func(retained, gone []int64) {
		t.Helper()
		h := loadHistory(t, env, tok, ns, "e")
		if !slices.Equal(h.ids(), retained) || !slices.Equal(h.logIDs(), retained) {
			t.Errorf("e's snapshots %v, snapshot-log %v; want %v", h.ids(), h.logIDs(), retained)
		}
		if h.Current != sE || h.Refs["main"].SnapshotID != sE {
			t.Errorf("e's current snapshot %d, main %d; want %d", h.Current, h.Refs["main"].SnapshotID, sE)
		}
		for _, s := range h.Snapshots {
			if s.Parent != nil && !slices.Contains(retained, *s.Parent) {
				t.Errorf("snapshot %d's parent %d is not listed", s.ID, *s.Parent)
			}
		}
		if o := loadHistory(t, env, tok, ns, "o"); !slices.Equal(o.ids(), oBefore.ids()) || !slices.Equal(o.logIDs(), oBefore.logIDs()) {
			t.Errorf("o's snapshots %v (log %v), were %v", o.ids(), o.logIDs(), oBefore.ids())
		}
		after := duckReads(t, env, queries...)
		for i, q := range queries {
			s := int64(0)
			if n := i / 2; n < len(all) {
				s = all[n]
			}
			switch {
			case strings.Contains(q, e+" AT") && slices.Contains(gone, s):
				// Time travel to a snapshot expired for e alone reads e
				// as of its last retained snapshot before it.
				j := i/2 - 1
				for slices.Contains(gone, all[j]) {
					j--
				}
				if after[i] != duckBefore[2*j] {
					t.Errorf("%s: %+v, want e's rows at retained snapshot %d: %+v", q, after[i], all[j], duckBefore[2*j])
				}
			case after[i] != duckBefore[i]:
				t.Errorf("%s: %+v, was %+v", q, after[i], duckBefore[i])
			}
		}
		var py expireRead
		pyExpire(t, env, ns, &py, "read")
		if !py.Equal || py.PyIceberg != 20 || !slices.Equal(py.Snapshots, retained) {
			t.Errorf("PyIceberg: %d rows (DuckDB %d, equal %v), snapshots %v; want 20 equal rows", py.PyIceberg, py.DuckDB, py.Equal, py.Snapshots)
		}
	}
	scheduledFiles := func() []string {
		var out []string
		for _, p := range scheduled(t, env) {
			if !strings.HasSuffix(p, ".avro") {
				out = append(out, path.Base(p))
			}
		}
		slices.Sort(out)
		return out
	}

	// sA and sB: their stretch [sA, sC) holds sO1. File A (sA to sC) only
	// they saw; B lives on.
	remove(sA, sB)
	check([]int64{sC, sF, sG, sH, sEO, sE}, []int64{sA, sO1, sB})
	if got := scheduledFiles(); !slices.Equal(got, []string{fileA}) {
		t.Errorf("scheduled for deletion: %v, want [%s]", got, fileA)
	}
	if fs := files("ducklake_data_file"); fs[fileA] != (file{}) || fs[fileB] == (file{}) {
		t.Errorf("data files after the expiry: %v (A %s gone, B %s kept)", fs, fileA, fileB)
	}

	// sF and sG (their stretch [sF, sH) holds sO2) and sEO, which changed
	// o too: F (sF to sH) and its delete file only they saw; the file sEO
	// added lives on. sH, which only ended F, has no change left to show
	// (nor would it after a catalog-wide expiry): e's state there is sC's.
	remove(sF, sG, sEO)
	check([]int64{sC, sE}, []int64{sA, sO1, sB, sF, sG, sO2, sEO})
	want := []string{fileA, fileF, fileDF}
	slices.Sort(want)
	if got := scheduledFiles(); !slices.Equal(got, want) {
		t.Errorf("scheduled for deletion: %v, want %v", got, want)
	}
	if fs := files("ducklake_delete_file"); len(fs) != 0 {
		t.Errorf("delete files of e after the expiry: %v, want none", fs)
	}
	if fs := files("ducklake_data_file"); len(fs) != 3 || fs[fileB] == (file{}) {
		t.Errorf("data files of e after the expiry: %v, want B and the two inserts'", fs)
	}

	abs := func(name string) string {
		for _, p := range scheduled(t, env) {
			if path.Base(p) == name {
				return p
			}
		}
		t.Fatalf("%s is not scheduled", name)
		return ""
	}
	locs := []string{abs(fileA), abs(fileF), abs(fileDF)}
	for _, loc := range locs {
		if !objectExists(t, st, loc) {
			t.Fatalf("%s is gone before the cleanup", loc)
		}
	}
	env.duck("CALL ducklake_cleanup_old_files('l', cleanup_all => true)")
	for _, loc := range locs {
		if objectExists(t, st, loc) {
			t.Errorf("%s is still in S3 after ducklake_cleanup_old_files", loc)
		}
	}

	// DuckDB's catalog-wide expiry of every snapshot but the current one
	// (its own statements, which know nothing of the sidecar) keeps e
	// whole: its rows, and what LoadTable serves after the next snapshot.
	kept := head() // the one snapshot DuckDB keeps, which e's files clamp onto
	env.duck("SELECT count(*) FROM ducklake_expire_snapshots('l', older_than => now())")
	env.duck("INSERT INTO " + o + " VALUES (4)")
	var py expireRead
	pyExpire(t, env, ns, &py, "read")
	if !py.Equal || py.PyIceberg != 20 || !slices.Equal(py.Snapshots, []int64{kept}) {
		t.Errorf("after DuckDB's expiry: PyIceberg %d rows (DuckDB %d, equal %v), snapshots %v; want 20 equal rows at [%d]",
			py.PyIceberg, py.DuckDB, py.Equal, py.Snapshots, kept)
	}
	if cur := duckReads(t, env, "SELECT id FROM "+e+" ORDER BY id")[0]; cur != duckBefore[len(duckBefore)-2] {
		t.Errorf("e after DuckDB's expiry: %+v, was %+v", cur, duckBefore[len(duckBefore)-2])
	}
}
