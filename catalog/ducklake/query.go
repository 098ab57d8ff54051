package ducklake

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Collect runs sql with args on q and collects its rows with to. Both the
// query's and the rows' errors begin with what ("read tables: …"), so a
// caller reads one query in one statement.
func Collect[T any](ctx context.Context, q Querier, what, sql string, args []any, to pgx.RowToFunc[T]) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, to)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// Each runs sql with args on q and calls fn after scanning each row into
// dest; errors begin with what, as Collect's do.
func Each(ctx context.Context, q Querier, what, sql string, args []any, dest []any, fn func() error) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, err := pgx.ForEachRow(rows, dest, fn); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
