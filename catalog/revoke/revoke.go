package revoke

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/pgnotify"
)

// Channel is the NOTIFY channel of revocations. A payload is the vend id,
// a space and the credential's expiry in Unix seconds; a payload of a bare
// vend id (an operator's manual NOTIFY) makes every process reload the table.
const Channel = "duckicelake_revocation"

// Defaults of the Options fields.
const (
	DefaultGrace         = time.Minute
	DefaultSweepInterval = time.Minute
)

// MaxVendIDLen bounds a vend id; minted ones are 32 hex characters.
const MaxVendIDLen = 128

// ErrInvalidVendID is returned by Revoke for an empty or oversized vend id,
// or one with characters other than printable ASCII without spaces.
var ErrInvalidVendID = errors.New("revoke: invalid vend id")

// Options configures a Store.
type Options struct {
	// Schema is the Postgres schema of the catalog's sidecar tables; ""
	// means "public".
	Schema string
	// Grace keeps an entry this long past its credential's expiry, for
	// verifiers whose clocks run behind; 0 means DefaultGrace.
	Grace time.Duration
	// SweepInterval is how often expired entries are dropped from memory
	// and deleted from the table; 0 means DefaultSweepInterval.
	SweepInterval time.Duration
	// Connect opens the listener's dedicated connection; nil means
	// pgnotify.FromPool(pool).
	Connect pgnotify.ConnectFunc
	// Logger receives listener and sweep errors; nil is silent.
	Logger *zap.Logger
	// Now is the clock of the in-memory sweep; nil means time.Now.
	Now func() time.Time
}

// Store is a creds.Revocations backed by Postgres. Open one per process.
type Store struct {
	pool     *pgxpool.Pool
	table    string // quoted schema.duckicelake_revocation
	grace    time.Duration
	sweep    time.Duration
	now      func() time.Time
	log      *zap.Logger
	listener *pgnotify.Listener

	// entries maps vend id to expiry in Unix seconds. Readers load it
	// without locking; writers hold mu, copy, and store the copy.
	entries atomic.Pointer[map[string]int64]
	mu      sync.Mutex

	lastErr   atomic.Pointer[error]
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var _ creds.Revocations = (*Store)(nil)

// Open starts a Store: its listener connects, listens on Channel and loads
// the table, and Open returns once that first load is done and the Store is
// Synced, so a process never verifies credentials against an empty list.
// ctx bounds only this wait; the Store runs until Close.
func Open(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	schema := opts.Schema
	if schema == "" {
		schema = "public"
	}
	s := &Store{
		pool:  pool,
		table: pgx.Identifier{schema, "duckicelake_revocation"}.Sanitize(),
		grace: orDefault(opts.Grace, DefaultGrace),
		sweep: orDefault(opts.SweepInterval, DefaultSweepInterval),
		now:   opts.Now,
		log:   opts.Logger,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	empty := map[string]int64{}
	s.entries.Store(&empty)
	connect := opts.Connect
	if connect == nil {
		connect = pgnotify.FromPool(pool)
	}
	s.listener = &pgnotify.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			c, err := connect(ctx)
			if err != nil {
				s.setErr(err)
			}
			return c, err
		},
		OnReconnect: s.reload,
		Logger:      s.log,
	}
	s.listener.Handle(Channel, s.onNotify)

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.listener.Run(runCtx) //nolint:errcheck // returns runCtx's error at Close
	}()
	go func() {
		defer s.wg.Done()
		s.sweeper(runCtx)
	}()
	// Connected comes just after OnReconnect (the load) has returned:
	// waiting for it rather than for the load makes Synced hold on return.
	if err := s.listener.WaitConnected(ctx); err != nil {
		s.Close()
		if last := s.lastErr.Load(); last != nil {
			return nil, fmt.Errorf("revoke: open: %w (last error: %w)", err, *last)
		}
		return nil, fmt.Errorf("revoke: open: %w", err)
	}
	return s, nil
}

// Close stops the listener and the sweeper and waits for them. Revoked keeps
// answering from the last list.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.wg.Wait()
	})
	return nil
}

// Revoked reports whether vendID is on the list. It neither locks nor
// allocates.
func (s *Store) Revoked(vendID string) bool {
	_, ok := (*s.entries.Load())[vendID]
	return ok
}

// Len returns the number of entries in memory.
func (s *Store) Len() int { return len(*s.entries.Load()) }

// Synced reports whether the listener is connected and has loaded the
// table since it connected; while it is not, revocations made elsewhere
// are not seen yet.
func (s *Store) Synced() bool { return s.listener.Connected() }

// Revoke revokes vendID until expiresAt, the credential's expiry, for every
// process: one statement inserts the row (keeping the later expiry when the
// id is already revoked) and notifies Channel, so both happen or neither.
// This process sees the revocation when Revoke returns; others once the
// notification reaches them.
func (s *Store) Revoke(ctx context.Context, vendID string, expiresAt time.Time) error {
	if !validVendID(vendID) {
		return fmt.Errorf("%w: %q", ErrInvalidVendID, vendID)
	}
	var exp int64
	err := s.pool.QueryRow(ctx, `WITH r AS (
			INSERT INTO `+s.table+` AS t (vend_id, expires_at) VALUES ($1, $2)
			ON CONFLICT (vend_id) DO UPDATE SET expires_at = greatest(t.expires_at, excluded.expires_at)
			RETURNING vend_id, ceil(extract(epoch FROM expires_at))::bigint AS exp)
		SELECT exp, pg_notify($3, vend_id || ' ' || exp) FROM r`,
		vendID, expiresAt, Channel).Scan(&exp, nil)
	if err != nil {
		return fmt.Errorf("revoke %s: %w", vendID, err)
	}
	s.add(vendID, exp)
	return nil
}

// Sweep drops the entries whose credentials expired more than Grace ago
// from memory and deletes them from the table. It runs every SweepInterval
// by itself.
func (s *Store) Sweep(ctx context.Context) error {
	cutoff := s.now().Add(-s.grace).Unix()
	s.mu.Lock()
	cur := *s.entries.Load()
	var next map[string]int64
	for id, exp := range cur {
		if exp < cutoff {
			if next == nil {
				next = maps.Clone(cur)
			}
			delete(next, id)
		}
	}
	if next != nil {
		s.entries.Store(&next)
	}
	s.mu.Unlock()
	// Every process deletes: it is idempotent, indexed and rare, and needs
	// no leader.
	if _, err := s.pool.Exec(ctx, `DELETE FROM `+s.table+` WHERE expires_at < now() - make_interval(secs => $1)`,
		s.grace.Seconds()); err != nil {
		return fmt.Errorf("revoke: sweep: %w", err)
	}
	return nil
}

func (s *Store) sweeper(ctx context.Context) {
	t := time.NewTicker(s.sweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if err := s.Sweep(sctx); err != nil && ctx.Err() == nil {
				s.log.Warn("revoke: sweep failed", zap.Error(err))
			}
			cancel()
		}
	}
}

// reload replaces the list with the table's live rows. It holds mu through
// the query, so a Revoke that commits meanwhile adds its entry after the
// replacement rather than into a map about to be replaced; a revocation
// committed elsewhere after the query's snapshot arrives as a notification,
// since the listener listened before calling reload.
func (s *Store) reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.pool.Query(ctx, `SELECT vend_id, ceil(extract(epoch FROM expires_at))::bigint
		FROM `+s.table+` WHERE expires_at >= now() - make_interval(secs => $1)`, s.grace.Seconds())
	if err != nil {
		s.setErr(err)
		return fmt.Errorf("revoke: load: %w", err)
	}
	next := map[string]int64{}
	var id string
	var exp int64
	_, err = pgx.ForEachRow(rows, []any{&id, &exp}, func() error {
		next[id] = exp
		return nil
	})
	if err != nil {
		s.setErr(err)
		return fmt.Errorf("revoke: load: %w", err)
	}
	s.entries.Store(&next)
	return nil
}

func (s *Store) onNotify(ctx context.Context, n pgnotify.Notification) error {
	id, expText, ok := strings.Cut(n.Payload, " ")
	exp, err := strconv.ParseInt(expText, 10, 64)
	if !ok || err != nil || !validVendID(id) {
		// Not ours: someone revoked by hand. The table is the truth.
		s.log.Info("revoke: notification without expiry; reloading", zap.String("payload", n.Payload))
		return s.reload(ctx)
	}
	s.add(id, exp)
	return nil
}

func (s *Store) add(id string, exp int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.entries.Load()
	if old, ok := cur[id]; ok && old >= exp {
		return
	}
	next := make(map[string]int64, len(cur)+1)
	maps.Copy(next, cur)
	next[id] = exp
	s.entries.Store(&next)
}

func (s *Store) setErr(err error) { s.lastErr.Store(&err) }

func validVendID(id string) bool {
	if id == "" || len(id) > MaxVendIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
