package pgnotify_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// recorder collects notifications and counts OnReconnect calls.
type recorder struct {
	mu         sync.Mutex
	got        []pgnotify.Notification
	reconnects atomic.Int32
}

func (r *recorder) handle(_ context.Context, n pgnotify.Notification) error {
	r.mu.Lock()
	r.got = append(r.got, n)
	r.mu.Unlock()
	return nil
}

func (r *recorder) onReconnect(context.Context) error {
	r.reconnects.Add(1)
	return nil
}

func (r *recorder) payloads(channel string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.got {
		if n.Channel == channel {
			out = append(out, n.Payload)
		}
	}
	return out
}

func (r *recorder) has(channel, payload string) bool {
	for _, p := range r.payloads(channel) {
		if p == payload {
			return true
		}
	}
	return false
}

func TestListenerDelivers(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	var rec recorder
	l := &pgnotify.Listener{Connect: connectAs(t, dsn, "deliver", nil), OnReconnect: rec.onReconnect}
	// Channel names are identifiers: quoting keeps case and spaces.
	for _, ch := range []string{"plain", "Mixed Case", `quote"d`} {
		l.Handle(ch, rec.handle)
	}
	testsupport.Start(t, "Run", l.Run)
	testsupport.WaitFor(t, "connected", l.Connected)
	if n := rec.reconnects.Load(); n != 1 {
		t.Fatalf("OnReconnect called %d times on the first connect, want 1", n)
	}

	const n = 200
	for i := range n {
		notify(t, admin, "plain", fmt.Sprint(i))
	}
	notify(t, admin, "Mixed Case", "m")
	notify(t, admin, `quote"d`, "q")
	notify(t, admin, "mixed case", "not ours") // another channel
	testsupport.WaitFor(t, "all notifications", func() bool {
		return len(rec.payloads("plain")) == n && rec.has("Mixed Case", "m") && rec.has(`quote"d`, "q")
	})
	for i, p := range rec.payloads("plain") {
		if p != fmt.Sprint(i) {
			t.Fatalf("notification %d has payload %q: out of order", i, p)
		}
	}
	rec.mu.Lock()
	for _, got := range rec.got {
		if got.Channel == "mixed case" {
			t.Errorf("delivered a notification of an unhandled channel: %+v", got)
		}
		if got.PID == 0 {
			t.Errorf("notification without sender pid: %+v", got)
		}
	}
	rec.mu.Unlock()

	// A notification in a transaction arrives only on commit.
	tx, err := admin.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), "SELECT pg_notify('plain', 'in tx')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "committed notification", func() bool { return rec.has("plain", "in tx") })
}

func TestListenerReconnectsAfterTerminate(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	var rec recorder
	l := &pgnotify.Listener{
		Connect:     connectAs(t, dsn, "terminate", nil),
		OnReconnect: rec.onReconnect,
		MinBackoff:  10 * time.Millisecond,
	}
	l.Handle("ch", rec.handle)
	testsupport.Start(t, "Run", l.Run)
	testsupport.WaitFor(t, "connected", l.Connected)
	notify(t, admin, "ch", "before")
	testsupport.WaitFor(t, "first notification", func() bool { return rec.has("ch", "before") })

	for round := 2; round <= 4; round++ {
		if n := terminate(t, admin, "terminate"); n != 1 {
			t.Fatalf("terminated %d backends, want 1", n)
		}
		testsupport.WaitFor(t, "OnReconnect after terminate", func() bool { return rec.reconnects.Load() == int32(round) })
		testsupport.WaitFor(t, "connected again", l.Connected)
		payload := fmt.Sprint("after ", round)
		notify(t, admin, "ch", payload)
		testsupport.WaitFor(t, "notification after reconnect", func() bool { return rec.has("ch", payload) })
	}
	if n := backends(t, admin, "terminate"); n != 1 {
		t.Errorf("%d listener backends, want 1", n)
	}
}

// A handler error means the caller's state may be stale: the listener
// reconnects, and OnReconnect re-syncs.
func TestListenerHandlerErrorResyncs(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	var rec recorder
	l := &pgnotify.Listener{Connect: connectAs(t, dsn, "handler-error", nil), OnReconnect: rec.onReconnect, MinBackoff: 10 * time.Millisecond}
	l.Handle("ch", func(ctx context.Context, n pgnotify.Notification) error {
		rec.handle(ctx, n)
		if n.Payload == "fail" {
			return errors.New("cannot apply")
		}
		return nil
	})
	testsupport.Start(t, "Run", l.Run)
	testsupport.WaitFor(t, "connected", l.Connected)
	notify(t, admin, "ch", "fail")
	testsupport.WaitFor(t, "resync", func() bool { return rec.reconnects.Load() == 2 })
	notify(t, admin, "ch", "ok")
	testsupport.WaitFor(t, "delivery after resync", func() bool { return rec.has("ch", "ok") })
}

func TestListenerRetriesFailedSync(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	var rec recorder
	var calls atomic.Int32
	l := &pgnotify.Listener{
		Connect: connectAs(t, dsn, "sync-fails", nil),
		OnReconnect: func(context.Context) error {
			if calls.Add(1) <= 3 {
				return errors.New("database not ready")
			}
			return nil
		},
		MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond,
	}
	l.Handle("ch", rec.handle)
	testsupport.Start(t, "Run", l.Run)
	testsupport.WaitFor(t, "connected after failed syncs", l.Connected)
	if n := calls.Load(); n != 4 {
		t.Errorf("OnReconnect called %d times, want 4", n)
	}
	notify(t, admin, "ch", "x")
	testsupport.WaitFor(t, "delivery", func() bool { return rec.has("ch", "x") })
	testsupport.WaitFor(t, "failed sessions closed", func() bool { return backends(t, admin, "sync-fails") == 1 })
}

// A network that drops traffic without closing anything is noticed by the
// health check, and the listener reconnects.
func TestListenerNoticesSilentPartition(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	p := relayTo(t, dsn)
	var rec recorder
	l := &pgnotify.Listener{
		Connect:        connectAs(t, dsn, "partition", p),
		OnReconnect:    rec.onReconnect,
		HealthInterval: 100 * time.Millisecond,
		MinBackoff:     10 * time.Millisecond,
	}
	l.Handle("ch", rec.handle)
	testsupport.Start(t, "Run", l.Run)
	testsupport.WaitFor(t, "connected", l.Connected)
	time.Sleep(350 * time.Millisecond) // a few health checks pass on a good connection
	if n := rec.reconnects.Load(); n != 1 {
		t.Fatalf("reconnected %d times on a healthy connection", n-1)
	}
	p.Freeze()
	testsupport.WaitFor(t, "reconnect after partition", func() bool { return rec.reconnects.Load() == 2 })
	testsupport.WaitFor(t, "connected", l.Connected)
	notify(t, admin, "ch", "after")
	testsupport.WaitFor(t, "delivery after partition", func() bool { return rec.has("ch", "after") })
}

func TestListenerCancel(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, _ := pgDSN(t)
	t.Run("while connected", func(t *testing.T) {
		l := &pgnotify.Listener{Connect: connectAs(t, dsn, "cancel", nil)}
		l.Handle("ch", func(context.Context, pgnotify.Notification) error { return nil })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Run(ctx) }()
		testsupport.WaitFor(t, "connected", l.Connected)
		if err := l.Run(ctx); !errors.Is(err, pgnotify.ErrRunning) {
			t.Errorf("second Run = %v, want ErrRunning", err)
		}
		start := time.Now()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Run took %v to return after cancel", d)
		}
		if l.Connected() {
			t.Error("Connected after Run returned")
		}
	})
	t.Run("while reconnecting", func(t *testing.T) {
		var attempts atomic.Int32
		l := &pgnotify.Listener{
			Connect: func(ctx context.Context) (*pgx.Conn, error) {
				attempts.Add(1)
				return nil, errors.New("server down")
			},
			MinBackoff: time.Hour,
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Run(ctx) }()
		testsupport.WaitFor(t, "a connect attempt", func() bool { return attempts.Load() == 1 })
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not return during backoff")
		}
	})
}

// WaitConnected returns once the Listener is Connected, which is only after
// OnReconnect has returned, and waits again after the connection is lost.
func TestListenerWaitConnected(t *testing.T) {
	testsupport.CheckNoLeaks(t, "internal/pgnotify")
	dsn, admin := pgDSN(t)
	// Each sync holds until the test releases it.
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var syncs atomic.Int32
	l := &pgnotify.Listener{
		Connect:    connectAs(t, dsn, "wait-connected", nil),
		MinBackoff: 10 * time.Millisecond,
		OnReconnect: func(ctx context.Context) error {
			if n := int(syncs.Add(1)); n <= len(gates) {
				<-gates[n-1]
			}
			return nil
		},
	}
	l.Handle("ch", func(context.Context, pgnotify.Notification) error { return nil })
	testsupport.Start(t, "Run", l.Run)
	for i, gate := range gates {
		testsupport.WaitFor(t, "a sync to start", func() bool { return int(syncs.Load()) == i+1 })
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := l.WaitConnected(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || l.Connected() {
			t.Fatalf("sync %d: WaitConnected while OnReconnect runs = %v, Connected %v", i+1, err, l.Connected())
		}
		close(gate)
		ctx, cancel = context.WithTimeout(context.Background(), testsupport.WaitTimeout)
		err = l.WaitConnected(ctx)
		cancel()
		if err != nil || !l.Connected() {
			t.Fatalf("sync %d: WaitConnected after OnReconnect = %v, Connected %v", i+1, err, l.Connected())
		}
		if i == 0 {
			if n := terminate(t, admin, "wait-connected"); n != 1 {
				t.Fatalf("terminated %d backends", n)
			}
		}
	}
}
