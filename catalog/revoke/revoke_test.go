package revoke_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/revoke"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// catalogDB makes a database with an initialised catalog in schema and
// returns its DSN and a pool on it.
func catalogDB(t *testing.T, schema string) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := pgtest.Database(t)
	pool := pgtest.Pool(t, dsn)
	if _, err := ducklake.Init(context.Background(), pool, ducklake.InitOptions{DataPath: "s3://lake/data/", Schema: schema}); err != nil {
		t.Fatal(err)
	}
	return dsn, pool
}

func open(t *testing.T, pool *pgxpool.Pool, opts revoke.Options) *revoke.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := revoke.Open(ctx, pool, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// gatedConnect connects with application_name app unless blocked is set.
func gatedConnect(t *testing.T, dsn, app string, blocked *atomic.Bool) pgnotify.ConnectFunc {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	connect := pgnotify.FromConfig(cfg)
	return func(ctx context.Context) (*pgx.Conn, error) {
		if blocked != nil && blocked.Load() {
			return nil, errors.New("test: connections blocked")
		}
		return connect(ctx)
	}
}

func vendID(i int) string { return fmt.Sprintf("%032x", i) }

func TestRevokePropagates(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/revoke", "internal/pgnotify")
	_, pool := catalogDB(t, "")
	a := open(t, pool, revoke.Options{})
	b := open(t, pool, revoke.Options{})
	exp := time.Now().Add(time.Hour).Truncate(time.Second)

	for i := range 20 {
		id := vendID(i)
		start := time.Now()
		if err := a.Revoke(context.Background(), id, exp); err != nil {
			t.Fatal(err)
		}
		if !a.Revoked(id) {
			t.Fatalf("the revoking process does not see %s at once", id)
		}
		testsupport.WaitFor(t, "the other process to see "+id, func() bool { return b.Revoked(id) })
		if i == 0 {
			t.Logf("revocation reached the other process in %v", time.Since(start))
		}
	}
	if a.Revoked(vendID(99)) || b.Revoked(vendID(99)) {
		t.Error("an id never revoked is revoked")
	}

	// Revoking again keeps the later expiry, in the table and in memory.
	if err := b.Revoke(context.Background(), vendID(0), exp.Add(-30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var got time.Time
	if err := pool.QueryRow(context.Background(), `SELECT expires_at FROM duckicelake_revocation WHERE vend_id = $1`, vendID(0)).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(exp) {
		t.Errorf("expires_at = %v, want the later %v", got, exp)
	}
	if a.Len() != 20 || b.Len() != 20 {
		t.Errorf("Len = %d, %d, want 20", a.Len(), b.Len())
	}
	// A store opened later loads what is there.
	c := open(t, pool, revoke.Options{})
	if c.Len() != 20 || !c.Revoked(vendID(7)) {
		t.Errorf("new store loaded %d entries", c.Len())
	}
}

func TestRevokeSeenAfterReconnect(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/revoke", "internal/pgnotify")
	dsn, pool := catalogDB(t, "")
	admin := pgtest.Connect(t, dsn)
	a := open(t, pool, revoke.Options{})
	var blocked atomic.Bool
	b := open(t, pool, revoke.Options{Connect: gatedConnect(t, dsn, "revoke-b", &blocked)})
	if !b.Synced() {
		t.Fatal("not synced after Open")
	}

	// Cut b off: its listener's backend dies and it cannot reconnect.
	blocked.Store(true)
	var n int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE application_name = 'revoke-b'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d backends (%v)", n, err)
	}
	testsupport.WaitFor(t, "b to notice", func() bool { return !b.Synced() })

	id := vendID(1)
	if err := a.Revoke(context.Background(), id, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Its notification went to no one in b; b has no way to know yet.
	if b.Revoked(id) {
		t.Fatal("b saw a revocation without a connection")
	}
	blocked.Store(false)
	testsupport.WaitFor(t, "b to reload after reconnecting", func() bool { return b.Revoked(id) })
	if !b.Synced() {
		t.Error("not synced after reload")
	}
	// And notifications flow again.
	if err := a.Revoke(context.Background(), vendID(2), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "notification after reconnect", func() bool { return b.Revoked(vendID(2)) })
}

// An operator may revoke with plain SQL and a bare-id NOTIFY: every process
// reloads the table.
func TestRevokeByHand(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/revoke", "internal/pgnotify")
	_, pool := catalogDB(t, "lake meta")
	s := open(t, pool, revoke.Options{Schema: "lake meta"})
	_, err := pool.Exec(context.Background(), `INSERT INTO "lake meta".duckicelake_revocation VALUES ('by-hand', now() + interval '1 hour');
		NOTIFY duckicelake_revocation, 'by-hand'`)
	if err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "reload on a bare-id notification", func() bool { return s.Revoked("by-hand") })
}

func TestRevokeSweeps(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/revoke", "internal/pgnotify")
	_, pool := catalogDB(t, "")
	var now atomic.Int64
	now.Store(time.Now().Unix())
	s := open(t, pool, revoke.Options{
		SweepInterval: 10 * time.Millisecond,
		Now:           func() time.Time { return time.Unix(now.Load(), 0) },
	})
	ctx := context.Background()
	base := time.Now()
	for id, exp := range map[string]time.Time{
		"long-expired": base.Add(-2 * time.Minute), // past the grace already
		"soon":         base.Add(time.Minute),
		"later":        base.Add(time.Hour),
	} {
		if err := s.Revoke(ctx, id, exp); err != nil {
			t.Fatal(err)
		}
	}
	rowsLeft := func() int {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM duckicelake_revocation").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testsupport.WaitFor(t, "sweep of the expired entry", func() bool { return !s.Revoked("long-expired") && rowsLeft() == 2 })
	if !s.Revoked("soon") || !s.Revoked("later") {
		t.Fatal("sweep dropped live entries")
	}
	// Three minutes on, "soon" is past its grace in memory (the table is
	// swept on the server's clock, which has not moved).
	now.Add(int64((3 * time.Minute).Seconds()))
	testsupport.WaitFor(t, "memory sweep", func() bool { return !s.Revoked("soon") })
	if !s.Revoked("later") || s.Len() != 1 {
		t.Errorf("Len = %d after sweep, want 1", s.Len())
	}
}

func TestRevokeInvalid(t *testing.T) {
	_, pool := catalogDB(t, "")
	s := open(t, pool, revoke.Options{})
	for _, id := range []string{"", "has space", "tab\t", "ü", strings.Repeat("a", revoke.MaxVendIDLen+1)} {
		if err := s.Revoke(context.Background(), id, time.Now().Add(time.Hour)); !errors.Is(err, revoke.ErrInvalidVendID) {
			t.Errorf("Revoke(%q) = %v, want ErrInvalidVendID", id, err)
		}
	}
}

func TestOpenFails(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/revoke", "internal/pgnotify")
	t.Run("no sidecar table", func(t *testing.T) {
		pool := pgtest.Pool(t, pgtest.Database(t))
		// The deadline must outlast a first connection on a loaded CI
		// machine (one took >500ms), or the error names the connect, not
		// the missing table this case is about.
		if err := pool.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := revoke.Open(ctx, pool, revoke.Options{})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "duckicelake_revocation") {
			t.Errorf("Open = %v, want a deadline error naming the missing table", err)
		}
	})
	t.Run("cannot connect", func(t *testing.T) {
		dsn, pool := catalogDB(t, "")
		var blocked atomic.Bool
		blocked.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := revoke.Open(ctx, pool, revoke.Options{Connect: gatedConnect(t, dsn, "x", &blocked)})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connections blocked") {
			t.Errorf("Open = %v", err)
		}
	})
}

// The keyring consults the store: a credential revoked by one process fails
// verification in another.
func TestKeyringRevocation(t *testing.T) {
	testsupport.CheckNoLeaks(t, "catalog/revoke", "internal/pgnotify")
	_, pool := catalogDB(t, "")
	catalog := open(t, pool, revoke.Options{})
	gateway := open(t, pool, revoke.Options{})
	kr, err := creds.NewKeyring(creds.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	kr.Revocations = gateway
	m, err := kr.Mint(creds.Claims{Principal: "alice", Grants: []creds.Grant{{Bucket: "lake", Prefix: "t/", Access: creds.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := kr.Verify(m.AccessKeyID, m.SessionToken, time.Now()); err != nil {
		t.Fatalf("Verify before revocation: %v", err)
	}
	if err := catalog.Revoke(context.Background(), m.VendID, m.Expiry); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "the gateway to refuse the credential", func() bool {
		_, _, err := kr.Verify(m.AccessKeyID, m.SessionToken, time.Now())
		return errors.Is(err, creds.ErrRevoked)
	})
}
