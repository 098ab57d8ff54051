package eager

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/pgnotify"
)

// Channel is the channel the ducklake_snapshot trigger notifies; a payload
// is "<snapshot id> <schema>".
const Channel = "duckicelake_snapshot"

// Handler reacts to a committed snapshot. ctx ends when this process stops
// leading. It must be idempotent: catch-ups repeat ids.
type Handler func(ctx context.Context, snapshotID int64)

// LockKey is the advisory lock key of the eager leader of the catalog in
// schema ("" means "public"): one leader per catalog.
func LockKey(schema string) int64 {
	if schema == "" {
		schema = "public"
	}
	return pgnotify.LockKey("duckicelake eager " + schema)
}

// Watcher follows the snapshots of one catalog. Set the fields, then call
// Run (one leader per fleet handles them) or Observe (every process does).
type Watcher struct {
	// Pool runs the catch-up query (required).
	Pool *pgxpool.Pool
	// Schema is the catalog's Postgres schema; "" means "public".
	Schema string
	// Handler is called for each new snapshot while leading (required).
	Handler Handler
	// Connect opens the election's and the listener's dedicated
	// connections; nil means pgnotify.FromPool(Pool).
	Connect pgnotify.ConnectFunc
	// RetryInterval and HealthInterval tune the election (see
	// pgnotify.Elector); 0 means its defaults.
	RetryInterval, HealthInterval time.Duration
	// Logger receives leadership changes and connection errors; nil is
	// silent.
	Logger *zap.Logger
}

// Observe calls Handler like Run, but in this process whatever the others
// do, with no election: for per-process state such as a LoadTable cache
// that must learn of new snapshots (rest.Server.ObserveSnapshot). It
// returns ctx's error.
func (w *Watcher) Observe(ctx context.Context) error {
	s, connect, err := w.session()
	if err != nil {
		return err
	}
	l := &pgnotify.Listener{Connect: connect, OnReconnect: s.catchUp, Logger: s.log}
	l.Handle(Channel, s.notified)
	return l.Run(ctx)
}

// Run campaigns for the catalog's eager lock until ctx ends and, while
// leading, listens on Channel and calls Handler: once for the newest
// snapshot on every (re)connect, then for every snapshot the trigger
// announces. It returns ctx's error, or the error of the first election
// attempt (a bad DSN fails at once).
func (w *Watcher) Run(ctx context.Context) error {
	s, connect, err := w.session()
	if err != nil {
		return err
	}
	log := s.log
	lead, err := (&pgnotify.Elector{
		Connect:        connect,
		LockKey:        LockKey(s.schema),
		RetryInterval:  w.RetryInterval,
		HealthInterval: w.HealthInterval,
		Logger:         log,
	}).Elect(ctx)
	if err != nil {
		return fmt.Errorf("eager: %w", err)
	}
	defer lead.Close()
	for {
		term, err := lead.Term(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("eager: %w", err)
		}
		log.Info("eager: leading; listening for snapshots")
		l := &pgnotify.Listener{Connect: connect, OnReconnect: s.catchUp, Logger: log}
		l.Handle(Channel, s.notified)
		l.Run(term) //nolint:errcheck // returns when the term ends
	}
}

func (w *Watcher) session() (*session, pgnotify.ConnectFunc, error) {
	if w.Pool == nil || w.Handler == nil {
		return nil, nil, errors.New("eager: Watcher needs Pool and Handler")
	}
	schema := w.Schema
	if schema == "" {
		schema = "public"
	}
	connect := w.Connect
	if connect == nil {
		connect = pgnotify.FromPool(w.Pool)
	}
	log := w.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &session{
		pool:    w.Pool,
		query:   `SELECT max(snapshot_id) FROM ` + pgx.Identifier{schema, "ducklake_snapshot"}.Sanitize(),
		schema:  schema,
		handler: w.Handler,
		log:     log.With(zap.String("catalog_schema", schema)),
	}, connect, nil
}

type session struct {
	pool    *pgxpool.Pool
	query   string
	schema  string
	handler Handler
	log     *zap.Logger
}

func (s *session) catchUp(ctx context.Context) error {
	var id *int64
	if err := s.pool.QueryRow(ctx, s.query).Scan(&id); err != nil {
		return fmt.Errorf("eager: newest snapshot: %w", err)
	}
	if id != nil {
		s.handler(ctx, *id)
	}
	return nil
}

func (s *session) notified(ctx context.Context, n pgnotify.Notification) error {
	idText, schema, hasSchema := strings.Cut(n.Payload, " ")
	if hasSchema && schema != s.schema {
		return nil // another catalog in this database
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		s.log.Warn("eager: ignoring a malformed notification", zap.String("payload", n.Payload))
		return nil
	}
	s.handler(ctx, id)
	return nil
}
