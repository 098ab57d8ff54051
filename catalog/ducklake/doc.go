// Package ducklake reads and initialises a DuckLake catalog (format 1.0, what
// DuckDB 1.5.x writes) stored in PostgreSQL, over pgx.
//
// [Init] creates the catalog exactly as DuckDB's ducklake extension creates it
// on its first ATTACH — the same 28 tables, the same constraints, the same
// initial snapshot, schema and metadata rows — so DuckDB clients attach it
// unchanged. It also applies duckicelake's own sidecar tables (duckicelake_*)
// through versioned, idempotent migrations. An existing catalog of another
// format version is refused with [ErrUnsupportedVersion].
//
// [Reader] answers "what did the lake look like at snapshot N": schemas,
// tables, columns with parsed [Type]s, data and delete files with resolved
// paths, per-file column statistics, partitions, tags, name mappings and
// inlined rows (small inserts DuckDB keeps in Postgres instead of Parquet).
// Visibility follows the specification: a row with begin_snapshot <= N and
// (end_snapshot IS NULL OR end_snapshot > N) exists at snapshot N.
//
// [Writer] commits one change as one DuckLake snapshot, the snapshot
// transaction protocol in one place; [Catalog] holds the statements of
// those changes and of the reads they build on — create, drop and rename
// schemas, views and tables, namespace properties, view metadata — so the
// catalog's transports hold no SQL. They fail with [ErrNotFound],
// [*ExistsError] or [*NotEmptyError] for callers to branch on.
//
// The server never runs DuckDB; everything here is plain SQL on the
// ducklake_* tables as described in the DuckLake specification.
package ducklake
