package eager_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/eager"
	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/testsupport"
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

// catalog makes a database with catalogs in schemas and returns its DSN and
// a pool.
func catalog(t *testing.T, dataPath string, schemas ...string) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := pgtest.Database(t)
	pool := pgtest.Pool(t, dsn)
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
	return testsupport.Start(t, "Run", w.Run)
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
	testsupport.CheckNoLeaks(t, "catalog/eager", "internal/pgnotify")
	dsn, pool := catalog(t, "s3://lake/data/", "")
	conn := pgtest.Connect(t, dsn)
	var c calls
	start(t, &eager.Watcher{Pool: pool, Handler: c.handler("w")})
	// Catch-up on gaining leadership: the newest snapshot, 0 in a new catalog.
	testsupport.WaitFor(t, "catch-up call", func() bool { _, ok := c.find(0); return ok })

	const n = 100
	var lat []time.Duration
	for id := int64(1); id <= n; id++ {
		before := time.Now()
		addSnapshot(t, conn, "public", id)
		testsupport.WaitFor(t, "handler call", func() bool { _, ok := c.find(id); return ok })
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
	testsupport.WaitFor(t, "next commit", func() bool { _, ok := c.find(n + 1); return ok })
	if _, ok := c.find(5000); ok {
		t.Error("handler called for a rolled-back snapshot")
	}
}

// One leader per catalog: only it handles snapshots; when it stops, another
// takes over and catches up.
func TestWatcherSingleLeaderAndTakeover(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/eager", "internal/pgnotify")
	dsn, pool := catalog(t, "s3://lake/data/", "")
	conn := pgtest.Connect(t, dsn)
	var c calls
	fast := 10 * time.Millisecond
	stopA := start(t, &eager.Watcher{Pool: pool, Handler: c.handler("a"), RetryInterval: fast})
	testsupport.WaitFor(t, "a leads", func() bool { _, ok := c.find(0); return ok })
	start(t, &eager.Watcher{Pool: pool, Handler: c.handler("b"), RetryInterval: fast})
	time.Sleep(50 * time.Millisecond) // b tries for the lock a few times
	for id := int64(1); id <= 5; id++ {
		addSnapshot(t, conn, "public", id)
	}
	testsupport.WaitFor(t, "snapshot 5", func() bool { _, ok := c.find(5); return ok })
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
	testsupport.WaitFor(t, "b's catch-up", func() bool {
		s := c.snapshot()
		return len(s) > mark && s[mark] == call{"b", 5, s[mark].at}
	})
	addSnapshot(t, conn, "public", 6)
	testsupport.WaitFor(t, "b handles snapshot 6", func() bool { x, ok := c.find(6); return ok && x.watcher == "b" })
}

// Observe runs in every process, with no election.
func TestObserveEveryProcess(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/eager", "internal/pgnotify")
	dsn, pool := catalog(t, "s3://lake/data/", "")
	conn := pgtest.Connect(t, dsn)
	var c calls
	for _, name := range []string{"p1", "p2"} {
		w := &eager.Watcher{Pool: pool, Handler: c.handler(name)}
		testsupport.Start(t, "Observe", w.Observe)
	}
	testsupport.WaitFor(t, "both catch up", func() bool { return len(c.snapshot()) == 2 })
	addSnapshot(t, conn, "public", 1)
	testsupport.WaitFor(t, "both see snapshot 1", func() bool {
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
	testsupport.CheckNoLeaks(t, "catalog/eager", "internal/pgnotify")
	dsn, pool := catalog(t, "s3://lake/data/", "lake a", "b")
	conn := pgtest.Connect(t, dsn)
	var ca, cb calls
	start(t, &eager.Watcher{Pool: pool, Schema: "lake a", Handler: ca.handler("a")})
	start(t, &eager.Watcher{Pool: pool, Schema: "b", Handler: cb.handler("b")})
	testsupport.WaitFor(t, "catch-ups", func() bool {
		_, a := ca.find(0)
		_, b := cb.find(0)
		return a && b
	})
	addSnapshot(t, conn, "b", 1000)
	addSnapshot(t, conn, "lake a", 1)
	testsupport.WaitFor(t, "a's snapshot", func() bool { _, ok := ca.find(1); return ok })
	testsupport.WaitFor(t, "b's snapshot", func() bool { _, ok := cb.find(1000); return ok })
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
	testsupport.CheckNoLeaks(t, "catalog/eager", "internal/pgnotify")
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
	testsupport.WaitFor(t, "catch-up", func() bool { _, ok := c.find(0); return ok })

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
	testsupport.WaitFor(t, "catch-up with snapshot 1", func() bool { _, ok := c.find(1); return ok })
	if got, _ := c.find(1); got.at.Before(unblocked) {
		t.Error("snapshot 1 handled before the listener could reconnect")
	}
	if s := c.snapshot(); len(s) != 2 {
		t.Errorf("calls = %v, want the two catch-ups 0 and 1", s)
	}
}

// A real DuckDB INSERT fires the trigger without disturbing DuckDB, and the
// leader's handler gets the new snapshot.
func TestWatcherDuckDBInsert(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/eager", "internal/pgnotify")
	testsupport.Python(t)
	data := t.TempDir() + "/"
	dsn, pool := catalog(t, data, "")
	var c calls
	start(t, &eager.Watcher{Pool: pool, Handler: c.handler("w")})
	testsupport.WaitFor(t, "catch-up", func() bool { _, ok := c.find(0); return ok })

	for _, rows := range []int{3, 5000} { // inlined, then a Parquet file
		var out struct {
			StartedAt   float64 `json:"started_at"`
			CommittedAt float64 `json:"committed_at"`
			Rows        int     `json:"rows"`
		}
		testsupport.RunPython(t, &out, "testdata/duckdb_insert.py", dsn, data, strconv.Itoa(rows))
		var newest int64
		if err := pool.QueryRow(context.Background(), "SELECT max(snapshot_id) FROM ducklake_snapshot").Scan(&newest); err != nil {
			t.Fatal(err)
		}
		testsupport.WaitFor(t, "handler call for DuckDB's snapshot", func() bool { _, ok := c.find(newest); return ok })
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
