package catalog_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// testMaterializer is the real materialiser over the test catalog, writing
// its files to memory: enough for everything but clients that read them
// (see withS3Materializer).
func testMaterializer(t testing.TB, pool *pgxpool.Pool) *countingMaterializer {
	t.Helper()
	return newCounting(pool, objstore.NewMem())
}

func newCounting(pool *pgxpool.Pool, w objstore.Store) *countingMaterializer {
	// w also reads DuckLake's delete files, which the materialiser translates.
	m := materialize.NewMaterializer(materialize.Config{Source: materialize.NewPGSource(pool, ""), Writer: w, Options: materialize.Options{Objects: w}})
	return &countingMaterializer{m: rest.Materialized(m)}
}

// withS3Materializer stores the materialised files in the stack's bucket
// with its root keys, where clients reading through the gateway find them.
func withS3Materializer(st s3Stack) restOption {
	return func(_ *rest.Config, d *rest.Deps) {
		pool := d.DB.(*pgxpool.Pool)
		d.Materializer = newCounting(pool, objstore.NewS3(st.root()))
	}
}

// countingMaterializer counts the calls that reach the materialiser.
type countingMaterializer struct {
	m     rest.Materializer
	calls atomic.Int64
}

func (c *countingMaterializer) Materialize(ctx context.Context, t ducklake.Table, snap int64) (rest.Metadata, error) {
	c.calls.Add(1)
	return c.m.Materialize(ctx, t, snap)
}
