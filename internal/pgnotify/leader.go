package pgnotify

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/defaults"
)

// Defaults of the Elector's tuning fields.
const (
	DefaultRetryInterval        = 2 * time.Second
	DefaultLeaderHealthInterval = 5 * time.Second
)

var (
	// ErrLeadershipLost is the cause of a term's context when the leader's
	// connection was lost.
	ErrLeadershipLost = errors.New("pgnotify: leadership lost")
	// ErrClosed is returned by Term, and is the cause of a term's context,
	// once the campaign has ended (Close, or Elect's context done).
	ErrClosed = errors.New("pgnotify: election closed")
)

// LockKey derives an advisory lock key from a name, so that each kind of
// leader (and each catalog) can name its own lock. Advisory locks are per
// database.
func LockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// Elector campaigns for a session advisory lock. Set the fields, then call
// Elect.
type Elector struct {
	// Connect opens the dedicated connection that tries for and then holds
	// the lock (required).
	Connect ConnectFunc
	// LockKey is the pg_try_advisory_lock(bigint) key.
	LockKey int64
	// RetryInterval is how often a follower tries for the lock, and the wait
	// before reconnecting after a failure; 0 means DefaultRetryInterval.
	RetryInterval time.Duration
	// HealthInterval is how long a leader's connection may stay quiet
	// before a ping checks it; it bounds how late a leader notices a
	// silently dropped network. 0 means DefaultLeaderHealthInterval.
	HealthInterval time.Duration
	// Logger receives gains, losses and connection errors; nil is silent.
	Logger *zap.Logger
}

// Elect campaigns for lockKey over a connection made with pool's settings
// (see FromPool), with the Elector's defaults.
func Elect(ctx context.Context, pool *pgxpool.Pool, lockKey int64) (*Leadership, error) {
	e := &Elector{Connect: FromPool(pool), LockKey: lockKey}
	return e.Elect(ctx)
}

// Elect makes a first attempt at the lock before it returns — so a wrong
// DSN or an unreachable server fails here, and a lone candidate leads as
// soon as Elect returns — then campaigns in the background until ctx ends or
// the Leadership is closed.
func (e *Elector) Elect(ctx context.Context) (*Leadership, error) {
	if e.Connect == nil {
		return nil, errors.New("pgnotify: Elector.Connect is nil")
	}
	log := e.Logger
	if log == nil {
		log = zap.NewNop()
	}
	cctx, cancel := context.WithCancelCause(ctx)
	l := &Leadership{
		e:       *e,
		log:     log.With(zap.Int64("lock_key", e.LockKey)),
		ctx:     cctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	conn, err := e.Connect(ctx)
	if err != nil {
		cancel(err)
		return nil, fmt.Errorf("pgnotify: elect: %w", err)
	}
	got, err := l.tryLock(ctx, conn)
	if err != nil {
		closeConn(conn)
		cancel(err)
		return nil, fmt.Errorf("pgnotify: elect: %w", err)
	}
	if got {
		l.gain()
	}
	go l.campaign(conn, got)
	return l, nil
}

// Leadership is one process's campaign: it is either leading or following,
// and it reports every change. Safe for concurrent use.
type Leadership struct {
	e      Elector
	log    *zap.Logger
	ctx    context.Context // the campaign's
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the campaign goroutine has ended

	mu       sync.Mutex
	term     context.Context // non-nil while leading
	endTerm  context.CancelCauseFunc
	stopTerm func() bool
	changed  chan struct{} // closed and replaced on every change
}

// Leading reports whether this process holds the lock now.
func (l *Leadership) Leading() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term != nil
}

// Term waits until this process leads and returns a context that is done
// when the leadership ends; its cause is ErrLeadershipLost or ErrClosed.
// Leader work runs under that context and stops when it is done:
//
//	for {
//		term, err := lead.Term(ctx)
//		if err != nil {
//			return err
//		}
//		work(term) // returns once term is done
//	}
//
// Term returns ctx's error when ctx ends first, and ErrClosed once the
// campaign has ended.
func (l *Leadership) Term(ctx context.Context) (context.Context, error) {
	for {
		l.mu.Lock()
		term, changed := l.term, l.changed
		l.mu.Unlock()
		if term != nil && term.Err() == nil {
			return term, nil
		}
		select {
		case <-changed:
		case <-l.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Changed returns a channel closed at the next gain or loss of leadership;
// call it again after each change.
func (l *Leadership) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Done is closed when the campaign has ended and its connection is closed.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Close ends the campaign: a leader's term ends, its connection closes and
// the lock passes to another process. It returns once the campaign's
// goroutine has ended.
func (l *Leadership) Close() error {
	l.cancel(ErrClosed)
	<-l.done
	return nil
}

// tryLock tries for the lock once. On success it also has the server end
// the session once it has been idle for a few health intervals: a leader
// pings every HealthInterval, so only an orphaned session goes quiet that
// long, one whose client vanished behind a network partition. Without the
// timeout such a session would keep the lock until the server's TCP
// keepalive gives up, hours by default, and no one would lead meanwhile.
// Servers before PostgreSQL 14 lack the setting.
func (l *Leadership) tryLock(ctx context.Context, conn *pgx.Conn) (bool, error) {
	idle := 3*defaults.Positive(l.e.HealthInterval, DefaultLeaderHealthInterval) + time.Second
	var got bool
	err := conn.QueryRow(ctx, `SELECT got, CASE WHEN got AND current_setting('server_version_num')::int >= 140000
			THEN set_config('idle_session_timeout', $2, false) END
		FROM (SELECT pg_try_advisory_lock($1) AS got) AS try`,
		l.e.LockKey, fmt.Sprintf("%dms", idle.Milliseconds())).Scan(&got, nil)
	if err != nil {
		return false, fmt.Errorf("try advisory lock: %w", err)
	}
	return got, nil
}

// gain starts a term. The term's context is not derived from the
// campaign's, so that its cause is always ErrLeadershipLost or ErrClosed.
func (l *Leadership) gain() {
	term, end := context.WithCancelCause(context.WithoutCancel(l.ctx))
	stop := context.AfterFunc(l.ctx, func() { end(ErrClosed) })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.term, l.endTerm, l.stopTerm = term, end, stop
	l.broadcastLocked()
	l.log.Info("pgnotify: leadership gained")
}

func (l *Leadership) lose(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopTerm()
	l.endTerm(cause)
	l.term, l.endTerm, l.stopTerm = nil, nil, nil
	l.broadcastLocked()
}

func (l *Leadership) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// campaign runs until the campaign's context ends, holding the lock while
// it has it and trying for it every RetryInterval while it has not.
func (l *Leadership) campaign(conn *pgx.Conn, leading bool) {
	defer close(l.done)
	ctx := l.ctx
	retry := defaults.Positive(l.e.RetryInterval, DefaultRetryInterval)
	for {
		if leading {
			err := l.hold(ctx, conn)
			// Closing the connection releases the lock if the server still
			// has the session; a lost session released it already.
			closeConn(conn)
			conn = nil
			if ctx.Err() != nil {
				l.lose(ErrClosed)
				l.log.Info("pgnotify: leadership released")
				return
			}
			l.lose(ErrLeadershipLost)
			l.log.Warn("pgnotify: leadership lost", zap.Error(err))
			leading = false
		}
		// Also after a loss: the others get their chance, and a flapping
		// connection does not spin.
		if !sleep(ctx, retry) {
			if conn != nil {
				closeConn(conn)
			}
			return
		}
		if conn == nil {
			var err error
			if conn, err = l.e.Connect(ctx); err != nil {
				conn = nil
				if ctx.Err() == nil {
					l.log.Warn("pgnotify: elector cannot connect", zap.Error(err))
				}
				continue
			}
		}
		got, err := l.tryLock(ctx, conn)
		if err != nil {
			closeConn(conn)
			conn = nil
			if ctx.Err() == nil {
				l.log.Warn("pgnotify: elector lost its connection", zap.Error(err))
			}
			continue
		}
		if got {
			l.gain()
			leading = true
		}
	}
}

// hold keeps watching the leader's connection until it fails or ctx ends.
// The connection listens to nothing, so the wait returns only when the
// server sends something unsolicited, which for an idle session means it
// is being terminated, or when the connection breaks.
func (l *Leadership) hold(ctx context.Context, conn *pgx.Conn) error {
	health := defaults.Positive(l.e.HealthInterval, DefaultLeaderHealthInterval)
	for {
		if _, err := waitNotification(ctx, conn, health); err != nil {
			return err
		}
	}
}
