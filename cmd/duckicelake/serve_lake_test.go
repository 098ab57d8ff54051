package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
	"sync"
)

// runningServe is serve running in this process until stop is called or
// the test ends.
type runningServe struct {
	gateway, admin string // http://127.0.0.1:port
	stdout, stderr *testsupport.SyncBuffer
	stop           func() // cancels serve's context and waits, failing the test unless it exits 0
}

// startServe runs serve with env and args (listeners on port 0) until
// rs.stop is called or t ends, failing t if it does not exit cleanly.
func startServe(t *testing.T, env map[string]string, args ...string) *runningServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rs := &runningServe{stdout: &testsupport.SyncBuffer{}, stderr: &testsupport.SyncBuffer{}}
	addrs := make(chan [2]net.Addr, 1)
	done := make(chan int, 1)
	go func() {
		done <- serve(ctx, append([]string{"-gateway.listen", "127.0.0.1:0", "-catalog.listen", "127.0.0.1:0"}, args...),
			rs.stdout, rs.stderr, testsupport.LookupEnv(env), func(s3, admin net.Addr) { addrs <- [2]net.Addr{s3, admin} })
	}()
	select {
	case a := <-addrs:
		rs.gateway, rs.admin = "http://"+a[0].String(), "http://"+a[1].String()
	case code := <-done:
		cancel()
		t.Fatalf("serve exited %d: %s%s", code, rs.stdout.String(), rs.stderr.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("serve did not start")
	}
	rs.stop = sync.OnceFunc(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, rs.stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	t.Cleanup(rs.stop)
	return rs
}

// token obtains a catalog access token for client id:secret.
func (rs *runningServe) token(t *testing.T, id, secret string) string {
	t.Helper()
	resp, err := http.PostForm(rs.admin+"/v1/oauth/tokens", url.Values{
		"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != 200 || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

// metric reads a counter or gauge without labels from /metrics.
func (rs *runningServe) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(rs.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// loadedTable is the part of a LoadTable answer the tests look at.
type loadedTable struct {
	MetadataLocation string `json:"metadata-location"`
	Metadata         struct {
		FormatVersion     int    `json:"format-version"`
		CurrentSnapshotID *int64 `json:"current-snapshot-id"`
		NextRowID         *int64 `json:"next-row-id"`
		Snapshots         []struct {
			SnapshotID int64             `json:"snapshot-id"`
			Summary    map[string]string `json:"summary"`
		} `json:"snapshots"`
	} `json:"metadata"`
}

func (rs *runningServe) loadTable(t *testing.T, token, ns, table string) loadedTable {
	t.Helper()
	req, _ := http.NewRequest("GET", rs.admin+"/v1/lake/namespaces/"+ns+"/tables/"+table, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var lt loadedTable
	if resp.StatusCode != 200 || json.Unmarshal(body, &lt) != nil {
		t.Fatalf("LoadTable %s.%s: %d %s", ns, table, resp.StatusCode, body)
	}
	return lt
}

// runPython runs testdata/lake.py and decodes what it prints into out.
func runPython(t *testing.T, out any, args ...string) {
	t.Helper()
	testsupport.RunPython(t, out, filepath.Join("testdata", "lake.py"), args...)
}

// TestServeLakeMaterializes: serve's catalog on a DuckLake that a real
// DuckDB writes to a real S3 backend. A commit to another table neither
// rebuilds a table's metadata nor changes what LoadTable answers for it; a
// table whose duckicelake.format-version is 3 is served as format version 3
// with deletion vectors made from DuckDB's delete files in S3, and PyIceberg
// reads it through the catalog and the gateway exactly as DuckDB does.
func TestServeLakeMaterializes(t *testing.T) {
	testsupport.Python(t)
	s3 := testsupport.NewVersitygw(t, testsupport.VersitygwOptions{Buckets: []string{"lake"}})
	dsn := pgtest.Database(t)
	const dataPath = "s3://lake/data/"
	initCatalog(t, dsn, dataPath)
	env := catalogEnv(t, dsn)
	env["DUCKICELAKE_UPSTREAM_ENDPOINT"] = s3.Endpoint
	env["DUCKICELAKE_UPSTREAM_ACCESS_KEY"] = s3.AccessKey
	env["DUCKICELAKE_UPSTREAM_SECRET_KEY"] = s3.SecretKey
	// Without the eager path every build is a LoadTable's.
	rs := startServe(t, env, "-catalog.eager=false")
	// pgtest's DSN is libpq key=value, the form DuckDB's ATTACH takes.
	duck := func(sql ...string) [][][]any {
		t.Helper()
		var out [][][]any
		runPython(t, &out, append([]string{"duckdb", dsn, dataPath, s3.Endpoint, s3.AccessKey, s3.SecretKey}, sql...)...)
		return out
	}
	duck("CREATE TABLE l.a (id BIGINT, v VARCHAR)",
		"INSERT INTO l.a SELECT i, 'v' || i FROM range(3000) r(i)",
		"DELETE FROM l.a WHERE id % 3 = 0",
		"CREATE TABLE l.b (id INTEGER)")
	tok := rs.token(t, "etl", "etl-secret")
	const builds = "duckicelake_catalog_materializations_total"

	a1 := rs.loadTable(t, tok, "main", "a")
	if a1.Metadata.FormatVersion != 2 || a1.Metadata.CurrentSnapshotID == nil {
		t.Fatalf("a: format version %d, current snapshot %v", a1.Metadata.FormatVersion, a1.Metadata.CurrentSnapshotID)
	}
	if b := rs.loadTable(t, tok, "main", "b"); b.Metadata.CurrentSnapshotID != nil {
		t.Fatalf("b has a snapshot before its first insert: %d", *b.Metadata.CurrentSnapshotID)
	}
	built := rs.metric(t, builds)
	if built != 2 {
		t.Fatalf("%v builds after LoadTable of a and b", built)
	}

	// A commit to b: LoadTable of b sees it (after catalog.snapshot_ttl),
	// with one build; a is answered as before without one.
	duck("INSERT INTO l.b VALUES (1)")
	testsupport.WaitFor(t, "b's insert", func() bool {
		b := rs.loadTable(t, tok, "main", "b")
		return b.Metadata.CurrentSnapshotID != nil
	})
	if got := rs.metric(t, builds); got != built+1 {
		t.Fatalf("%v builds after b's commit and its LoadTable, want %v", got, built+1)
	}
	a2 := rs.loadTable(t, tok, "main", "a")
	if a2.MetadataLocation != a1.MetadataLocation || *a2.Metadata.CurrentSnapshotID != *a1.Metadata.CurrentSnapshotID {
		t.Errorf("after a commit to b, a is %s at %d; before %s at %d", a2.MetadataLocation, *a2.Metadata.CurrentSnapshotID,
			a1.MetadataLocation, *a1.Metadata.CurrentSnapshotID)
	}
	if got := rs.metric(t, builds); got != built+1 {
		t.Errorf("LoadTable of a after a commit to b built: %v builds, want %v", got, built+1)
	}

	// Format version 3, as upgrade-format-version leaves a table: the
	// sidecar property, in a commit of its own.
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `INSERT INTO duckicelake_table_property (table_id, key, value)
		SELECT table_id, $1, '3' FROM ducklake_table WHERE table_name = 'a' AND end_snapshot IS NULL`, materialize.FormatVersionProperty); err != nil {
		t.Fatal(err)
	}
	duck("INSERT INTO l.b VALUES (2)")
	var a3 loadedTable
	testsupport.WaitFor(t, "a in format version 3", func() bool {
		a3 = rs.loadTable(t, tok, "main", "a")
		return a3.Metadata.FormatVersion == 3
	})
	if a3.Metadata.NextRowID == nil || *a3.Metadata.CurrentSnapshotID != *a1.Metadata.CurrentSnapshotID {
		t.Errorf("a in v3: next-row-id %v, current snapshot %d (v2: %d)", a3.Metadata.NextRowID, *a3.Metadata.CurrentSnapshotID, *a1.Metadata.CurrentSnapshotID)
	}
	dvs := 0
	for _, s := range a3.Metadata.Snapshots {
		n, _ := strconv.Atoi(s.Summary["added-dvs"])
		dvs += n
	}
	if dvs == 0 {
		t.Errorf("a in v3 has no deletion vectors: %+v", a3.Metadata.Snapshots)
	}

	truth := duck("SELECT id FROM l.a ORDER BY id")[0]
	want := make([]int64, len(truth))
	for i, row := range truth {
		want[i] = int64(row[0].(float64))
	}
	var read struct {
		FormatVersion int      `json:"format_version"`
		Endpoint      string   `json:"endpoint"`
		IDs           []int64  `json:"ids"`
		DeleteFormats []string `json:"delete_formats"`
	}
	runPython(t, &read, "pyiceberg", rs.admin, "etl:etl-secret", "main", "a")
	if read.FormatVersion != 3 || read.Endpoint != rs.gateway || !slices.Equal(read.IDs, want) {
		t.Errorf("PyIceberg: format version %d, endpoint %s, %d ids; DuckDB %d ids (%v…)", read.FormatVersion, read.Endpoint,
			len(read.IDs), len(want), want[:min(5, len(want))])
	}
	if !slices.Equal(read.DeleteFormats, []string{"FileFormat.PUFFIN"}) {
		t.Errorf("PyIceberg plans delete files of formats %v, want deletion vectors (Puffin)", read.DeleteFormats)
	}
	if len(want) != 2000 {
		t.Errorf("DuckDB reads %d rows of a, want 2000", len(want))
	}
}
