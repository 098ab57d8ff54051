package catalog_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// TestLoadTableGzip: a client that accepts gzip gets the cached answer
// compressed, decoding to the same bytes as the uncompressed one, under a
// weak ETag that revalidates either form; an answer built per request
// (vended credentials) is sent uncompressed.
func TestLoadTableGzip(t *testing.T) {
	env := newRestEnv(t)
	stmts := []string{"CREATE SCHEMA l.s", "CREATE TABLE l.s.a (x INTEGER, note VARCHAR)"}
	for i := range 10 {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO l.s.a VALUES (%d, 'n%d')", i, i))
	}
	env.duck(stmts...)
	tok := env.token("admin")
	const path = "/v1/lake/namespaces/s/tables/a"

	plain := env.do("GET", path, tok, nil, withHeader("Accept-Encoding", "identity"))
	if plain.code != 200 || plain.header.Get("Content-Encoding") != "" || plain.header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("identity: %d %v", plain.code, plain.header)
	}
	strong := plain.header.Get("ETag")
	// Set by hand, the header makes Go's client hand over the bytes as sent.
	gz := env.do("GET", path, tok, nil, withHeader("Accept-Encoding", "gzip, deflate"))
	if gz.code != 200 || gz.header.Get("Content-Encoding") != "gzip" || gz.header.Get("ETag") != "W/"+strong {
		t.Fatalf("gzip: %d %v", gz.code, gz.header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.body))
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(decoded, plain.body) {
		t.Fatalf("the gzip answer does not decode to the plain one (%v)", err)
	}
	if len(gz.body) >= len(plain.body) {
		t.Errorf("compressed %d bytes into %d", len(plain.body), len(gz.body))
	}
	for _, inm := range []string{strong, "W/" + strong} {
		for _, ae := range []string{"identity", "gzip"} {
			r := env.do("GET", path, tok, nil, withHeader("Accept-Encoding", ae), withHeader("If-None-Match", inm))
			if r.code != 304 {
				t.Errorf("If-None-Match %s with Accept-Encoding %s: %d", inm, ae, r.code)
			}
		}
	}
	// Go's own client asks for gzip and decodes it: the same metadata.
	auto := env.do("GET", path, tok, nil)
	if auto.code != 200 || !bytes.Equal(auto.body, plain.body) {
		t.Errorf("transparently decoded answer differs: %d", auto.code)
	}
	vended := env.do("GET", path, tok, nil, withHeader("Accept-Encoding", "gzip"),
		withHeader("X-Iceberg-Access-Delegation", "vended-credentials"))
	if vended.header.Get("Content-Encoding") != "" {
		t.Errorf("a per-request answer was compressed: %d %v", vended.code, vended.header)
	}
}

// TestRESTSeesDuckDBChanges: the catalog changes underneath the server
// between two requests (DuckDB commits directly to Postgres), and the next
// request after the snapshot TTL sees it.
func TestRESTSeesDuckDBChanges(t *testing.T) {
	var mat *countingMaterializer
	env := newRestEnv(t, func(_ *rest.Config, d *rest.Deps) { mat = d.Materializer.(*countingMaterializer) })
	env.duck("CREATE SCHEMA l.s", "CREATE TABLE l.s.a (x INTEGER)", "INSERT INTO l.s.a VALUES (1)", "CREATE TABLE l.s.b (x INTEGER)")
	tok := env.token("admin")
	const path = "/v1/lake/namespaces/s/tables/a"

	first := env.do("GET", path, tok, nil)
	if first.code != 200 {
		t.Fatalf("load: %d %s", first.code, first.body)
	}
	etag := first.header.Get("ETag")
	for i := 0; i < 20; i++ {
		r := env.do("GET", path, tok, nil)
		if r.code != 200 || r.header.Get("ETag") != etag || string(r.body) != string(first.body) {
			t.Fatalf("repeat load %d differs: %d %s", i, r.code, r.header.Get("ETag"))
		}
	}
	if n := mat.calls.Load(); n != 1 {
		t.Errorf("21 loads of an unchanged table materialised %d times, want 1", n)
	}
	if r := env.do("GET", path, tok, nil, withHeader("If-None-Match", etag)); r.code != 304 || len(r.body) != 0 || r.header.Get("ETag") != etag {
		t.Errorf("If-None-Match with the current ETag: %d %q", r.code, r.body)
	}
	if r := env.do("GET", path, tok, nil, withHeader("If-None-Match", `"other", W/`+strings.TrimPrefix(etag, "W/"))); r.code != 304 {
		t.Errorf("If-None-Match list with a weak match: %d", r.code)
	}
	if r := env.do("GET", path+"?snapshots=refs", tok, nil, withHeader("If-None-Match", etag)); r.code != 200 || r.header.Get("ETag") == etag {
		t.Errorf("snapshots=refs shares the ETag of snapshots=all: %d %s", r.code, r.header.Get("ETag"))
	}

	// A change to another table moves the catalog's snapshot but not this
	// table's metadata: same location, same ETag, same bytes.
	env.duck("INSERT INTO l.s.b VALUES (1)")
	time.Sleep(50 * time.Millisecond)
	if r := env.do("GET", path, tok, nil, withHeader("If-None-Match", etag)); r.code != 304 {
		t.Errorf("after a change to another table: %d, want 304", r.code)
	}

	// A change to this table: a new ETag and metadata location.
	env.duck("INSERT INTO l.s.a VALUES (2)")
	time.Sleep(50 * time.Millisecond)
	r := env.do("GET", path, tok, nil, withHeader("If-None-Match", etag))
	if r.code != 200 || r.header.Get("ETag") == etag {
		t.Fatalf("after an insert: %d ETag %s", r.code, r.header.Get("ETag"))
	}
	var a, b struct {
		Location string `json:"metadata-location"`
	}
	first.decode(t, &a)
	r.decode(t, &b)
	if a.Location == b.Location {
		t.Errorf("metadata location did not move after an insert: %s", a.Location)
	}
	// Time travel to the first state answers the first metadata.
	var snap int64
	if err := env.pool.QueryRow(t.Context(), `SELECT max(snapshot_id) FROM ducklake_snapshot`).Scan(&snap); err != nil {
		t.Fatal(err)
	}
	old := env.do("GET", fmt.Sprintf("%s?snapshot-id=%d", path, snap-1), tok, nil)
	var c struct {
		Location string `json:"metadata-location"`
	}
	old.decode(t, &c)
	if old.code != 200 || c.Location != a.Location {
		t.Errorf("time travel to %d: %d %s, want %s", snap-1, old.code, c.Location, a.Location)
	}

	// New and dropped tables appear and disappear.
	env.duck("CREATE TABLE l.s.c (x INTEGER)", "DROP TABLE l.s.b")
	time.Sleep(50 * time.Millisecond)
	var list struct {
		Identifiers []struct {
			Name string `json:"name"`
		} `json:"identifiers"`
	}
	env.do("GET", "/v1/lake/namespaces/s/tables", tok, nil).decode(t, &list)
	var names []string
	for _, id := range list.Identifiers {
		names = append(names, id.Name)
	}
	if !slices.Equal(names, []string{"a", "c"}) {
		t.Errorf("tables after DuckDB DDL = %v", names)
	}
	if r := env.do("GET", "/v1/lake/namespaces/s/tables/b", tok, nil); r.code != 404 || r.errType() != "NoSuchTableException" {
		t.Errorf("load of a table DuckDB dropped: %d %s", r.code, r.body)
	}
	// DuckDB renames a table the server has cached under its old name.
	env.do("GET", "/v1/lake/namespaces/s/tables/c", tok, nil)
	env.duck("ALTER TABLE l.s.c RENAME TO d")
	time.Sleep(50 * time.Millisecond)
	if r := env.do("GET", "/v1/lake/namespaces/s/tables/c", tok, nil); r.code != 404 {
		t.Errorf("load of a table DuckDB renamed away: %d", r.code)
	}
	if r := env.do("GET", "/v1/lake/namespaces/s/tables/d", tok, nil); r.code != 200 {
		t.Errorf("load of the renamed table: %d %s", r.code, r.body)
	}
}

// TestRESTConcurrentDuckDB: DuckDB runs DDL and inserts in a loop while
// clients hammer the read routes. Nothing may fail with a server error, and
// LoadTable of a table nobody touches never fails at all.
func TestRESTConcurrentDuckDB(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.s", "CREATE TABLE l.s.stable (x INTEGER)", "INSERT INTO l.s.stable VALUES (1)")
	tok := env.token("admin")

	done := make(chan struct{})
	var duckErr error
	var report struct {
		Ran    int      `json:"ran"`
		Errors []string `json:"errors"`
	}
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				duckErr = fmt.Errorf("%v", r)
			}
		}()
		testsupport.DuckDB(t, &report, env.dsn, restDataPath, "--loop", "25",
			"CREATE TABLE l.s.t{i} (x INTEGER, y VARCHAR)",
			"INSERT INTO l.s.t{i} VALUES ({i}, 'x')",
			"ALTER TABLE l.s.t{i} ADD COLUMN z INTEGER",
			"INSERT INTO l.s.stable VALUES ({i})",
			"ALTER TABLE l.s.t{i} RENAME TO u{i}",
			"DROP TABLE l.s.u{i}",
		)
	}()

	var (
		requests, serverErrors, stableFailures atomic.Int64
		mu                                     sync.Mutex
		samples                                []string
	)
	paths := []string{
		"/v1/lake/namespaces/s/tables/stable",
		"/v1/lake/namespaces/s/tables",
		"/v1/lake/namespaces/s",
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second}
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				path := paths[(w+i)%len(paths)]
				if i%4 == 3 {
					// A table DuckDB is creating, changing or dropping.
					path = fmt.Sprintf("/v1/lake/namespaces/s/tables/t%d", i%25)
				}
				req, _ := http.NewRequest("GET", env.url+path, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				if w%2 == 0 {
					req.Header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("%s: %v", path, err)
					return
				}
				var body json.RawMessage
				json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				requests.Add(1)
				time.Sleep(time.Millisecond) // the machine is shared
				bad := resp.StatusCode >= 500 || strings.HasSuffix(path, "/stable") && resp.StatusCode != 200 ||
					resp.StatusCode != 200 && resp.StatusCode != 404
				if resp.StatusCode >= 500 {
					serverErrors.Add(1)
				}
				if strings.HasSuffix(path, "/stable") && resp.StatusCode != 200 {
					stableFailures.Add(1)
				}
				if bad {
					mu.Lock()
					if len(samples) < 5 {
						samples = append(samples, fmt.Sprintf("%s: %d %s", path, resp.StatusCode, body))
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	<-done
	if duckErr != nil {
		t.Fatal(duckErr)
	}
	t.Logf("%d requests while DuckDB ran %d statements (%d DuckDB errors)", requests.Load(), report.Ran, len(report.Errors))
	if len(report.Errors) > 0 {
		t.Errorf("DuckDB failed while the catalog served reads: %v", report.Errors[:min(3, len(report.Errors))])
	}
	if serverErrors.Load() > 0 || stableFailures.Load() > 0 || len(samples) > 0 {
		t.Errorf("%d server errors, %d failed loads of the stable table; e.g. %v", serverErrors.Load(), stableFailures.Load(), samples)
	}
	if requests.Load() < 50 {
		t.Errorf("only %d requests ran during the DuckDB loop", requests.Load())
	}
}

// TestRESTDDLRacesDuckDB: the catalog's own DDL commits while DuckDB
// commits in a loop. Both must get through (losers retry), and the snapshot
// history must stay what DuckDB expects: consecutive ids, each with its
// changes row.
func TestRESTDDLRacesDuckDB(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.s", "CREATE TABLE l.s.t (x INTEGER)")
	tok := env.token("admin")

	done := make(chan struct{})
	var report struct {
		Ran    int      `json:"ran"`
		Errors []string `json:"errors"`
	}
	go func() {
		defer close(done)
		testsupport.DuckDB(t, &report, env.dsn, restDataPath, "--loop", "40", "INSERT INTO l.s.t VALUES ({i})")
	}()
	const n = 15
	for i := 0; i < n; i++ {
		r := env.do("POST", "/v1/lake/namespaces", tok, map[string]any{"namespace": []string{fmt.Sprintf("ns%02d", i)}})
		if r.code != 200 {
			t.Fatalf("create namespace %d while DuckDB commits: %d %s", i, r.code, r.body)
		}
		r = env.do("POST", "/v1/lake/namespaces/"+fmt.Sprintf("ns%02d", i)+"/properties", tok, map[string]any{"updates": map[string]string{"i": fmt.Sprint(i)}})
		if r.code != 200 {
			t.Fatalf("properties: %d %s", r.code, r.body)
		}
	}
	<-done
	if len(report.Errors) > 0 {
		t.Errorf("DuckDB lost commits to the catalog's DDL: %d errors, e.g. %s", len(report.Errors), report.Errors[0])
	}
	var snaps, changes, maxID int64
	if err := env.pool.QueryRow(t.Context(), `SELECT count(*), max(snapshot_id), (SELECT count(*) FROM ducklake_snapshot_changes) FROM ducklake_snapshot`).Scan(&snaps, &maxID, &changes); err != nil {
		t.Fatal(err)
	}
	if snaps != maxID+1 || changes != snaps {
		t.Errorf("%d snapshots up to id %d with %d changes rows: not consecutive", snaps, maxID, changes)
	}
	got := env.duck("SELECT count(*) FROM duckdb_schemas() WHERE database_name = 'l' AND schema_name LIKE 'ns%'", "SELECT count(*) FROM l.s.t")
	if s := flat(got[0]); !slices.Equal(s, []string{fmt.Sprint(n)}) {
		t.Errorf("DuckDB sees %v of the %d namespaces", s, n)
	}
	if s := flat(got[1]); !slices.Equal(s, []string{"40"}) {
		t.Errorf("DuckDB's own inserts: %v rows, want 40", s)
	}
}
