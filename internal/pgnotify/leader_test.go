package pgnotify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

func elect(t *testing.T, e *pgnotify.Elector) *pgnotify.Leadership {
	t.Helper()
	l, err := e.Elect(context.Background())
	if err != nil {
		t.Fatalf("Elect: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func leaders(ls ...*pgnotify.Leadership) (n int, which *pgnotify.Leadership) {
	for _, l := range ls {
		if l.Leading() {
			n++
			which = l
		}
	}
	return n, which
}

// lockHolders counts the sessions holding the advisory lock key, as the
// server sees them.
func lockHolders(t *testing.T, admin *pgx.Conn, key int64) int {
	t.Helper()
	var n int
	// A bigint key is stored as classid (high half) and objid (low half).
	err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND classid::bigint = ($1::bigint >> 32) & 4294967295 AND objid::bigint = $1::bigint & 4294967295`, key).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func termOf(t *testing.T, l *pgnotify.Leadership) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	term, err := l.Term(ctx)
	if err != nil {
		t.Fatalf("Term: %v", err)
	}
	return term
}

func TestElectExactlyOneLeader(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	key := pgnotify.LockKey("test one leader")
	var ls []*pgnotify.Leadership
	for _, app := range []string{"elect-a", "elect-b", "elect-c"} {
		ls = append(ls, elect(t, &pgnotify.Elector{Connect: connectAs(t, dsn, app, nil), LockKey: key, RetryInterval: 10 * time.Millisecond}))
	}
	testsupport.WaitFor(t, "a leader", func() bool { n, _ := leaders(ls...); return n == 1 })
	// Followers keep retrying; leadership stays put and single.
	deadline := time.Now().Add(300 * time.Millisecond)
	_, first := leaders(ls...)
	for time.Now().Before(deadline) {
		if n, l := leaders(ls...); n != 1 || l != first {
			t.Fatalf("%d leaders (leader changed: %v)", n, l != first)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := lockHolders(t, admin, key); n != 1 {
		t.Errorf("%d sessions hold the lock, want 1", n)
	}
	// Another key is another election.
	other := elect(t, &pgnotify.Elector{Connect: connectAs(t, dsn, "elect-other", nil), LockKey: pgnotify.LockKey("test other")})
	if !other.Leading() {
		t.Error("the only candidate for another key does not lead after Elect's first attempt")
	}
}

func TestElectTakeoverOnTerminate(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	key := pgnotify.LockKey("test takeover")
	// a wins the free lock on Elect's first attempt; after losing it, it
	// waits an hour, so the takeover below can only be b's.
	a := elect(t, &pgnotify.Elector{Connect: connectAs(t, dsn, "takeover-a", nil), LockKey: key, RetryInterval: time.Hour})
	if !a.Leading() {
		t.Fatal("a does not lead")
	}
	b := elect(t, &pgnotify.Elector{Connect: connectAs(t, dsn, "takeover-b", nil), LockKey: key, RetryInterval: 10 * time.Millisecond})
	aTerm := termOf(t, a)
	changed := b.Changed()
	time.Sleep(50 * time.Millisecond) // b retries a few times and fails
	if b.Leading() {
		t.Fatal("b leads while a holds the lock")
	}
	select {
	case <-changed:
		t.Fatal("b reported a change while following")
	default:
	}

	if n := terminate(t, admin, "takeover-a"); n != 1 {
		t.Fatalf("terminated %d backends", n)
	}
	select {
	case <-aTerm.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a's term did not end when its connection died")
	}
	if cause := context.Cause(aTerm); !errors.Is(cause, pgnotify.ErrLeadershipLost) {
		t.Errorf("a's term ended with %v, want ErrLeadershipLost", cause)
	}
	if a.Leading() {
		t.Error("a still leads")
	}
	bTerm := termOf(t, b)
	<-changed
	if n := lockHolders(t, admin, key); n != 1 {
		t.Errorf("%d sessions hold the lock", n)
	}

	// a follows now: its Term waits.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.Term(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a.Term = %v, want DeadlineExceeded", err)
	}

	// Close hands the lock on at once and ends the term with ErrClosed.
	c := elect(t, &pgnotify.Elector{Connect: connectAs(t, dsn, "takeover-c", nil), LockKey: key, RetryInterval: 10 * time.Millisecond})
	b.Close()
	if cause := context.Cause(bTerm); !errors.Is(cause, pgnotify.ErrClosed) {
		t.Errorf("b's term ended with %v, want ErrClosed", cause)
	}
	if _, err := b.Term(context.Background()); !errors.Is(err, pgnotify.ErrClosed) {
		t.Errorf("Term after Close = %v, want ErrClosed", err)
	}
	termOf(t, c)
	testsupport.WaitFor(t, "b's session gone", func() bool { return backends(t, admin, "takeover-b") == 0 })
}

// A leader cut off by a silent partition steps down within its health
// interval, and the server ends its orphaned session, freeing the lock for
// another process, within the idle timeout.
func TestElectPartition(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	p := relayTo(t, dsn)
	key := pgnotify.LockKey("test partition")
	a := elect(t, &pgnotify.Elector{Connect: connectAs(t, dsn, "partition-a", p), LockKey: key,
		HealthInterval: 100 * time.Millisecond, RetryInterval: time.Hour})
	aTerm := termOf(t, a)
	b := elect(t, &pgnotify.Elector{Connect: connectAs(t, dsn, "partition-b", nil), LockKey: key, RetryInterval: 10 * time.Millisecond})

	start := time.Now()
	p.Freeze()
	select {
	case <-aTerm.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("partitioned leader did not step down")
	}
	stepDown := time.Since(start)
	termOf(t, b)
	takeover := time.Since(start)
	t.Logf("partitioned leader stepped down after %v; the other took over after %v", stepDown, takeover)
	if takeover < stepDown {
		t.Errorf("takeover (%v) before the old leader stepped down (%v)", takeover, stepDown)
	}
	if n := lockHolders(t, admin, key); n != 1 {
		t.Errorf("%d sessions hold the lock", n)
	}
}

func TestElectErrors(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, _ := pgDSN(t)
	t.Run("connect fails", func(t *testing.T) {
		e := &pgnotify.Elector{Connect: func(context.Context) (*pgx.Conn, error) { return nil, errors.New("no route") }}
		if l, err := e.Elect(context.Background()); err == nil {
			l.Close()
			t.Fatal("Elect succeeded without a connection")
		}
	})
	t.Run("context ends campaign", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		l, err := (&pgnotify.Elector{Connect: connectAs(t, dsn, "ctx-end", nil), LockKey: 1}).Elect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		term := termOf(t, l)
		cancel()
		select {
		case <-l.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("campaign did not end with its context")
		}
		if !errors.Is(context.Cause(term), pgnotify.ErrClosed) {
			t.Errorf("term cause = %v", context.Cause(term))
		}
		if l.Leading() {
			t.Error("leading after the campaign ended")
		}
		l.Close() // idempotent
	})
}

func TestLockKeyStable(t *testing.T) {
	// Fleets of different builds must agree on the key.
	if got, want := pgnotify.LockKey("duckicelake eager public"), pgnotify.LockKey("duckicelake eager public"); got != want {
		t.Fatal("LockKey not deterministic")
	}
	if got := pgnotify.LockKey(""); got != -3750763034362895579 {
		t.Errorf("LockKey(\"\") = %d, want the FNV-1a offset basis", got)
	}
	if pgnotify.LockKey("a") == pgnotify.LockKey("b") {
		t.Error("LockKey collides on a and b")
	}
}
