package pgnotify

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConnectFunc opens a new connection owned by its caller.
type ConnectFunc func(ctx context.Context) (*pgx.Conn, error)

// FromPool connects with pool's connection settings but outside the pool: a
// connection held for the life of the process would shrink the pool, and a
// reconnect would wait for a busy pool to free a slot. The pool's
// BeforeConnect and AfterConnect hooks do not run.
func FromPool(pool *pgxpool.Pool) ConnectFunc {
	return FromConfig(pool.Config().ConnConfig)
}

// FromConfig connects with cfg, which must come from pgx.ParseConfig.
func FromConfig(cfg *pgx.ConnConfig) ConnectFunc {
	cfg = cfg.Copy()
	return func(ctx context.Context) (*pgx.Conn, error) {
		return pgx.ConnectConfig(ctx, cfg.Copy())
	}
}
