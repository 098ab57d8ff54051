package eager_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/eager"
	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// call is one Handler invocation.
type call struct {
	watcher string
	id      int64
	at      time.Time
}

// calls collects Handler invocations of several watchers.
type calls struct {
	mu  sync.Mutex
	all []call
}

func (c *calls) handler(name string) eager.Handler {
	return func(_ context.Context, id int64) {
		at := time.Now()
		c.mu.Lock()
		c.all = append(c.all, call{name, id, at})
		c.mu.Unlock()
	}
}

func (c *calls) find(id int64) (call, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.all {
		if x.id == id {
			return x, true
		}
	}
	return call{}, false
}

func (c *calls) snapshot() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func checkNoLeaks(t *testing.T) {
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			buf := make([]byte, 1<<20)
			var leaked []string
			for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
				if strings.Contains(g, "/catalog/eager.") || strings.Contains(g, "/internal/pgnotify.") {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("leaked goroutines:\n%s", strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// catalog makes a database with catalogs in schemas and returns its DSN and
// a pool.
func catalog(t *testing.T, dataPath string, schemas ...string) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := pgtest.Database(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, s := range schemas {
		if _, err := ducklake.Init(context.Background(), pool, ducklake.InitOptions{DataPath: dataPath, Schema: s}); err != nil {
			t.Fatal(err)
		}
	}
	return dsn, pool
}

// start runs w until the returned stop is called (or t ends).
func start(t *testing.T, w *eager.Watcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Run = %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// addSnapshot commits a snapshot row the way a writer does (the trigger
// does not care who) and returns when the commit is acknowledged.
func addSnapshot(t *testing.T, conn *pgx.Conn, schema string, id int64) time.Time {
	t.Helper()
	_, err := conn.Exec(context.Background(), `INSERT INTO `+pgx.Identifier{schema, "ducklake_snapshot"}.Sanitize()+`
		SELECT $1, now(), schema_version, next_catalog_id, next_file_id FROM `+pgx.Identifier{schema, "ducklake_snapshot"}.Sanitize()+`
		WHERE snapshot_id = 0`, id)
	if err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(math.Ceil(p*float64(len(s))))-1]
}

func TestWatcherCatchUpAndNotify(t *testing.T) {
	checkNoLeaks(t)
	dsn, pool := catalog(t, "s3://lake/data/", "")
	conn := pgtest.Connect(t, dsn)
	var c calls
	start(t, &eager.Watcher{Pool: pool, Handler: c.handler("w")})
	// Catch-up on gaining leadership: the newest snapshot, 0 in a new catalog.
	waitFor(t, "catch-up call", func() bool { _, ok := c.find(0); return ok })

	const n = 100
	var lat []time.Duration
	for id := int64(1); id <= n; id++ {
		before := time.Now()
		addSnapshot(t, conn, "public", id)
		waitFor(t, "handler call", func() bool { _, ok := c.find(id); return ok })
		got, _ := c.find(id)
		lat = append(lat, got.at.Sub(before))
	}
	t.Logf("INSERT ducklake_snapshot → handler, %d commits: p50 %v, p99 %v, max %v",
		n, percentile(lat, 0.5), percentile(lat, 0.99), slices.Max(lat))
	var ids []int64
	for _, x := range c.snapshot() {
		ids = append(ids, x.id)
	}
	want := make([]int64, n+1)
	for i := range want {
		want[i] = int64(i)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("handler saw %v, want 0..%d in order", ids, n)
	}

	// A rolled-back snapshot is never announced.
	tx, err := conn.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `INSERT INTO ducklake_snapshot VALUES (5000, now(), 0, 1, 0)`); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(context.Background())
	addSnapshot(t, conn, "public", n+1)
	waitFor(t, "next commit", func() bool { _, ok := c.find(n + 1); return ok })
	if _, ok := c.find(5000); ok {
		t.Error("handler called for a rolled-back snapshot")
	}
}

// One leader per catalog: only it handles snapshots; when it stops, another
// takes over and catches up.
func TestWatcherSingleLeaderAndTakeover(t *testing.T) {
	checkNoLeaks(t)
	dsn, pool := catalog(t, "s3://lake/data/", "")
	conn := pgtest.Connect(t, dsn)
	var c calls
	fast := 10 * time.Millisecond
	stopA := start(t, &eager.Watcher{Pool: pool, Handler: c.handler("a"), RetryInterval: fast})
	waitFor(t, "a leads", func() bool { _, ok := c.find(0); return ok })
	start(t, &eager.Watcher{Pool: pool, Handler: c.handler("b"), RetryInterval: fast})
	time.Sleep(50 * time.Millisecond) // b tries for the lock a few times
	for id := int64(1); id <= 5; id++ {
		addSnapshot(t, conn, "public", id)
	}
	waitFor(t, "snapshot 5", func() bool { _, ok := c.find(5); return ok })
	for _, x := range c.snapshot() {
		if x.watcher != "a" {
			t.Fatalf("follower b handled snapshot %d", x.id)
		}
	}

	// Count a's calls before stopping it: b may take over and catch up
	// before stopA returns.
	mark := len(c.snapshot())
	stopA()
	// b catches up with the newest snapshot, then handles new ones.
	waitFor(t, "b's catch-up", func() bool {
		s := c.snapshot()
		return len(s) > mark && s[mark] == call{"b", 5, s[mark].at}
	})
	addSnapshot(t, conn, "public", 6)
	waitFor(t, "b handles snapshot 6", func() bool { x, ok := c.find(6); return ok && x.watcher == "b" })
}

// Observe runs in every process, with no election.
func TestObserveEveryProcess(t *testing.T) {
	checkNoLeaks(t)
	dsn, pool := catalog(t, "s3://lake/data/", "")
	conn := pgtest.Connect(t, dsn)
	var c calls
	var stops []func()
	for _, name := range []string{"p1", "p2"} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		w := &eager.Watcher{Pool: pool, Handler: c.handler(name)}
		go func() { done <- w.Observe(ctx) }()
		stops = append(stops, func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Observe = %v", err)
			}
		})
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	waitFor(t, "both catch up", func() bool { return len(c.snapshot()) == 2 })
	addSnapshot(t, conn, "public", 1)
	waitFor(t, "both see snapshot 1", func() bool {
		n := 0
		for _, x := range c.snapshot() {
			if x.id == 1 {
				n++
			}
		}
		return n == 2
	})
}

// Catalogs in several schemas of one database share the channel; each
// watcher handles its own.
func TestWatcherSchemas(t *testing.T) {
	checkNoLeaks(t)
	dsn, pool := catalog(t, "s3://lake/data/", "lake a", "b")
	conn := pgtest.Connect(t, dsn)
	var ca, cb calls
	start(t, &eager.Watcher{Pool: pool, Schema: "lake a", Handler: ca.handler("a")})
	start(t, &eager.Watcher{Pool: pool, Schema: "b", Handler: cb.handler("b")})
	waitFor(t, "catch-ups", func() bool {
		_, a := ca.find(0)
		_, b := cb.find(0)
		return a && b
	})
	addSnapshot(t, conn, "b", 1000)
	addSnapshot(t, conn, "lake a", 1)
	waitFor(t, "a's snapshot", func() bool { _, ok := ca.find(1); return ok })
	waitFor(t, "b's snapshot", func() bool { _, ok := cb.find(1000); return ok })
	// Notifications arrive in commit order, so b's came before a's.
	if _, ok := ca.find(1000); ok {
		t.Error("watcher of schema a handled b's snapshot")
	}
	if _, ok := cb.find(1); ok {
		t.Error("watcher of schema b handled a's snapshot")
	}
}

// After a reconnect the leader catches up on what it missed.
func TestWatcherReconnectCatchesUp(t *testing.T) {
	checkNoLeaks(t)
	dsn, pool := catalog(t, "s3://lake/data/", "")
	admin := pgtest.Connect(t, dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "eager-reconnect"
	connect := pgnotify.FromConfig(cfg)
	var blocked atomic.Bool
	var c calls
	start(t, &eager.Watcher{Pool: pool, Handler: c.handler("w"), Connect: func(ctx context.Context) (*pgx.Conn, error) {
		if blocked.Load() {
			return nil, errors.New("test: connections blocked")
		}
		return connect(ctx)
	}})
	waitFor(t, "catch-up", func() bool { _, ok := c.find(0); return ok })

	// End the listener's session — not the election's, which ran no
	// LISTEN — and keep it from coming back: snapshot 1 is announced to no
	// one.
	blocked.Store(true)
	var n int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE application_name = 'eager-reconnect' AND query LIKE 'LISTEN%'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d listener sessions (%v)", n, err)
	}
	addSnapshot(t, admin, "public", 1)
	time.Sleep(20 * time.Millisecond) // let a wrong delivery happen, if any could
	if _, ok := c.find(1); ok {
		t.Fatal("snapshot 1 delivered without a listener")
	}
	unblocked := time.Now()
	blocked.Store(false)
	waitFor(t, "catch-up with snapshot 1", func() bool { _, ok := c.find(1); return ok })
	if got, _ := c.find(1); got.at.Before(unblocked) {
		t.Error("snapshot 1 handled before the listener could reconnect")
	}
	if s := c.snapshot(); len(s) != 2 {
		t.Errorf("calls = %v, want the two catch-ups 0 and 1", s)
	}
}

// python returns the venv's interpreter, skipping (or failing under CI)
// without one.
func python(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DUCKICELAKE_PYTHON")
	if p == "" {
		p = filepath.Join("..", "..", ".venv", "bin", "python")
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Python venv at %s (scripts/venv.sh makes it)", p)
		}
		t.Skipf("no Python venv at %s; run scripts/venv.sh", p)
	}
	return p
}

// A real DuckDB INSERT fires the trigger without disturbing DuckDB, and the
// leader's handler gets the new snapshot.
func TestWatcherDuckDBInsert(t *testing.T) {
	checkNoLeaks(t)
	py := python(t)
	data := t.TempDir() + "/"
	dsn, pool := catalog(t, data, "")
	var c calls
	start(t, &eager.Watcher{Pool: pool, Handler: c.handler("w")})
	waitFor(t, "catch-up", func() bool { _, ok := c.find(0); return ok })

	for _, rows := range []int{3, 5000} { // inlined, then a Parquet file
		cmd := exec.Command(py, "testdata/duckdb_insert.py", dsn, data, strconv.Itoa(rows))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("duckdb_insert.py: %v\n%s", err, stderr.String())
		}
		var out struct {
			StartedAt   float64 `json:"started_at"`
			CommittedAt float64 `json:"committed_at"`
			Rows        int     `json:"rows"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("duckdb_insert.py: %v\n%s", err, stdout.String())
		}
		var newest int64
		if err := pool.QueryRow(context.Background(), "SELECT max(snapshot_id) FROM ducklake_snapshot").Scan(&newest); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "handler call for DuckDB's snapshot", func() bool { _, ok := c.find(newest); return ok })
		got, _ := c.find(newest)
		unix := func(f float64) time.Time { return time.Unix(0, int64(f*1e9)) }
		t.Logf("DuckDB INSERT of %d rows → snapshot %d: handler called %v after the INSERT was sent, %v after it returned (DuckDB returns after its commit; negative: the notification won)",
			rows, newest, got.at.Sub(unix(out.StartedAt)), got.at.Sub(unix(out.CommittedAt)))
		if out.Rows != 3 && out.Rows != 5003 {
			t.Errorf("DuckDB reads %d rows back", out.Rows)
		}
	}
	var files int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM ducklake_data_file").Scan(&files); err != nil || files == 0 {
		t.Errorf("DuckDB wrote %d data files (%v), want the 5000 rows in Parquet", files, err)
	}
	// DuckDB made snapshot 1 (CREATE TABLE) and 2 (INSERT), then 3: each announced.
	for id := int64(1); id <= 3; id++ {
		if _, ok := c.find(id); !ok {
			t.Errorf("snapshot %d not handled", id)
		}
	}
}
