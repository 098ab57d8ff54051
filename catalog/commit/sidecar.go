package commit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

// Sidecar tables: Iceberg table state DuckLake has no place for.
const (
	// propertyTable holds table properties by table id (also created by
	// the catalog's sidecar migration 1; the definition here is the same).
	propertyTable = "duckicelake_table_property"
	// partitionFieldTable holds every field of the partition spec an
	// Iceberg client set (field id, name, transform, source), versioned
	// like DuckLake rows, one row per field at spec_position; the spec
	// itself is a row of specTable with the same begin_snapshot. DuckLake's
	// partition keys lose the names and ids and have no truncate transform
	// (truncate values are derived from the files' statistics). Rows
	// without a specTable row (field_id NULL) are truncate fields written
	// before specTable existed; they are not served.
	partitionFieldTable = "duckicelake_table_partition_field"
	// specTable holds the client's spec id per version, the DuckLake
	// partition its keys went to, and the ids of the specs the catalog
	// serves beside it (see specVersion).
	specTable = "duckicelake_table_partition_spec"
	// sortOrderTable holds the sort order an Iceberg client set, versioned,
	// with its order id and the DuckLake sort written for it (none when it
	// has transforms DuckLake cannot sort by).
	sortOrderTable = "duckicelake_table_sort_order"
	// refTable holds tags and read-only branches other than main.
	refTable = "duckicelake_table_ref"
)

// Beginner opens transactions; *pgxpool.Pool satisfies it.
type Beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// EnsureSidecar creates the sidecar tables commits write when they do not
// exist. It is idempotent and safe to run from several processes at once.
func EnsureSidecar(ctx context.Context, db Beginner, schema string) error {
	if schema == "" {
		schema = ducklake.DefaultSchema
	}
	qs := pgx.Identifier{schema}.Sanitize()
	tx, err := db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("commit: create sidecar: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// CREATE TABLE IF NOT EXISTS races on the catalog's unique index.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('duckicelake commit sidecar ' || $1, 0))`, schema); err != nil {
		return fmt.Errorf("commit: create sidecar: %w", err)
	}
	for _, ddl := range []string{
		`CREATE TABLE IF NOT EXISTS ` + qs + `.` + propertyTable + ` (
			table_id bigint NOT NULL,
			key      text NOT NULL,
			value    text NOT NULL,
			PRIMARY KEY (table_id, key)
		)`,
		`CREATE TABLE IF NOT EXISTS ` + qs + `.` + partitionFieldTable + ` (
			table_id       bigint NOT NULL,
			begin_snapshot bigint NOT NULL,
			end_snapshot   bigint,
			spec_position  integer NOT NULL,
			column_id      bigint NOT NULL,
			transform      text NOT NULL,
			name           text NOT NULL,
			PRIMARY KEY (table_id, begin_snapshot, spec_position)
		)`,
		`ALTER TABLE ` + qs + `.` + partitionFieldTable + ` ADD COLUMN IF NOT EXISTS field_id integer`,
		`CREATE TABLE IF NOT EXISTS ` + qs + `.` + specTable + ` (
			table_id              bigint NOT NULL,
			begin_snapshot        bigint NOT NULL,
			end_snapshot          bigint,
			spec_id               integer NOT NULL,
			partition_id          bigint,
			plain_spec_id         integer NOT NULL,
			unpartitioned_spec_id integer NOT NULL,
			PRIMARY KEY (table_id, begin_snapshot)
		)`,
		`CREATE TABLE IF NOT EXISTS ` + qs + `.` + sortOrderTable + ` (
			table_id       bigint NOT NULL,
			begin_snapshot bigint NOT NULL,
			end_snapshot   bigint,
			order_id       integer NOT NULL,
			sort_id        bigint,
			fields         text NOT NULL,
			PRIMARY KEY (table_id, begin_snapshot)
		)`,
		`CREATE TABLE IF NOT EXISTS ` + qs + `.` + refTable + ` (
			table_id              bigint NOT NULL,
			name                  text NOT NULL,
			ref_type              text NOT NULL CHECK (ref_type IN ('branch', 'tag')),
			snapshot_id           bigint NOT NULL,
			max_ref_age_ms        bigint,
			max_snapshot_age_ms   bigint,
			min_snapshots_to_keep integer,
			PRIMARY KEY (table_id, name)
		)`,
	} {
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("commit: create sidecar: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: create sidecar: %w", err)
	}
	return nil
}
