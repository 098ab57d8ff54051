package pgnotify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/defaults"
)

// Defaults of the Listener's and Elector's tuning fields.
const (
	DefaultMinBackoff     = 100 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
	DefaultHealthInterval = 15 * time.Second
)

// ErrRunning is returned by Run on a Listener that is already running.
var ErrRunning = errors.New("pgnotify: listener already running")

// Notification is one NOTIFY received by a Listener.
type Notification struct {
	Channel string
	Payload string
	PID     uint32 // backend process id of the notifying session
}

// Handler handles a notification. Returning an error says the caller's
// state may no longer match the database: the Listener then drops its
// connection and reconnects, and OnReconnect re-syncs.
type Handler func(ctx context.Context, n Notification) error

// Listener LISTENs on a set of channels over one dedicated connection and
// calls each channel's handler for every notification, in order, on the
// goroutine running Run. Register handlers, then call Run.
type Listener struct {
	// Connect opens the dedicated connection (required), e.g. FromPool(pool).
	Connect ConnectFunc
	// OnReconnect, if set, is called after every connect — the first one
	// too — once all channels are listened to and before any notification
	// is delivered: load or re-load here whatever notifications keep up to
	// date, since those sent while disconnected are lost. An error drops
	// the connection and the Listener tries again after a backoff.
	OnReconnect func(ctx context.Context) error
	// Logger receives connection losses and handler errors; nil is silent.
	Logger *zap.Logger
	// MinBackoff and MaxBackoff bound the wait before a reconnect, which
	// doubles after each failure and resets once a connection is synced;
	// 0 means DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// HealthInterval is how long the connection may stay quiet before a
	// ping checks it, so a silently dropped network is noticed; 0 means
	// DefaultHealthInterval.
	HealthInterval time.Duration

	mu        sync.Mutex
	handlers  map[string]Handler
	running   bool
	connected atomic.Bool
	up        chan struct{} // closed while connected, replaced when the connection is lost; under mu
}

// Handle registers h for channel, replacing an earlier handler. It must be
// called before Run.
func (l *Listener) Handle(channel string, h Handler) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running {
		panic("pgnotify: Handle called on a running Listener")
	}
	if l.handlers == nil {
		l.handlers = make(map[string]Handler)
	}
	l.handlers[channel] = h
}

// Connected reports whether the Listener is listening and synced: connected,
// subscribed, and past OnReconnect.
func (l *Listener) Connected() bool { return l.connected.Load() }

// WaitConnected waits until the Listener is Connected, or ctx ends. It is
// how a caller learns that what its OnReconnect loaded is being kept up to
// date: anything OnReconnect itself signals comes just before the
// Listener counts as connected.
func (l *Listener) WaitConnected(ctx context.Context) error {
	l.mu.Lock()
	up := l.upLocked()
	l.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Listener) upLocked() chan struct{} {
	if l.up == nil {
		l.up = make(chan struct{})
		if l.connected.Load() {
			close(l.up)
		}
	}
	return l.up
}

// setConnected records the connection state for Connected and
// WaitConnected.
func (l *Listener) setConnected(connected bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.connected.Load() == connected {
		return
	}
	up := l.upLocked()
	l.connected.Store(connected)
	if connected {
		close(up)
	} else {
		l.up = make(chan struct{})
	}
}

// Run listens until ctx ends, reconnecting with backoff whenever the
// connection is lost, and returns ctx's error. All goroutines it starts
// have ended when it returns.
func (l *Listener) Run(ctx context.Context) error {
	if l.Connect == nil {
		return errors.New("pgnotify: Listener.Connect is nil")
	}
	l.mu.Lock()
	if l.running {
		l.mu.Unlock()
		return ErrRunning
	}
	l.running = true
	handlers := maps.Clone(l.handlers)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.running = false
		l.mu.Unlock()
	}()

	log := l.Logger
	if log == nil {
		log = zap.NewNop()
	}
	b := backoff{min: defaults.Positive(l.MinBackoff, DefaultMinBackoff), max: defaults.Positive(l.MaxBackoff, DefaultMaxBackoff)}
	for {
		err := l.session(ctx, handlers, &b)
		l.setConnected(false)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d := b.next()
		log.Warn("pgnotify: listener disconnected; reconnecting", zap.Error(err), zap.Duration("after", d))
		if !sleep(ctx, d) {
			return ctx.Err()
		}
	}
}

// session connects, listens, syncs and delivers notifications until the
// connection fails or ctx ends; it always returns a non-nil error.
func (l *Listener) session(ctx context.Context, handlers map[string]Handler, b *backoff) error {
	conn, err := l.Connect(ctx)
	if err != nil {
		return err
	}
	defer closeConn(conn)
	// Sorted, so that a log of LISTENs reads the same on every reconnect.
	for _, ch := range slices.Sorted(maps.Keys(handlers)) {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("pgnotify: listen %s: %w", ch, err)
		}
	}
	if l.OnReconnect != nil {
		if err := l.OnReconnect(ctx); err != nil {
			return fmt.Errorf("pgnotify: on reconnect: %w", err)
		}
	}
	l.setConnected(true)
	b.reset()
	health := defaults.Positive(l.HealthInterval, DefaultHealthInterval)
	for {
		n, err := waitNotification(ctx, conn, health)
		if err != nil {
			return err
		}
		if n == nil {
			continue
		}
		h := handlers[n.Channel]
		if h == nil {
			continue
		}
		if err := h(ctx, Notification{Channel: n.Channel, Payload: n.Payload, PID: n.PID}); err != nil {
			return fmt.Errorf("pgnotify: handler for %s: %w", n.Channel, err)
		}
	}
}

// waitNotification waits for a notification for up to health. When none
// came it pings the connection and returns (nil, nil) if it is alive: a
// dropped network without a reset would otherwise leave the wait hanging.
func waitNotification(ctx context.Context, conn *pgx.Conn, health time.Duration) (*pgconn.Notification, error) {
	wctx, cancel := context.WithTimeout(ctx, health)
	n, err := conn.WaitForNotification(wctx)
	cancel()
	switch {
	case err == nil:
		return n, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case !pgconn.Timeout(err):
		return nil, fmt.Errorf("pgnotify: wait: %w", err)
	}
	// A timed-out wait leaves the connection usable: pgconn keeps it open
	// on a read deadline and clears the deadline afterwards.
	pctx, cancel := context.WithTimeout(ctx, health)
	defer cancel()
	if err := conn.Ping(pctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("pgnotify: health check: %w", err)
	}
	return nil, nil
}

// closeTimeout bounds the goodbye to a server that may be gone.
const closeTimeout = time.Second

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	conn.Close(ctx) //nolint:errcheck // the connection is discarded either way
}
