// Package pgaccess governs DuckLake-direct access: DuckDB clients that
// ATTACH the DuckLake catalog in Postgres themselves instead of going
// through the Iceberg REST API.
//
// It owns the Postgres side of a DuckLake-direct vend:
//
//   - per-vend reader roles: a fresh LOGIN role per vend (random password
//     stored only as a SCRAM verifier, VALID UNTIL the credential's
//     expiry, read-only, member of the catalog's reader group), recorded
//     in duckicelake_reader_role with the tables it may see;
//   - row-level security on every ducklake_* table, armed idempotently
//     under an advisory lock and re-armed when a process finds it missing
//     or finds a ducklake_* table it has not covered (a DuckDB upgrade):
//     a reader sees only the catalog rows of the tables its vend listed,
//     and the file rows (data and delete files, statistics) only of those
//     whose bytes it may read; tables that would bypass the policy
//     (inlined rows, snapshot change lists, files scheduled for deletion)
//     and every duckicelake_* table are never granted, and a ducklake_*
//     table this build cannot classify fails the vend closed;
//   - the sweep that drops expired reader roles and ends their sessions;
//   - the reader's DSN and the ATTACH statement the client runs.
//
// What a principal may see is decided by the caller (catalog/rest, from
// governance plans): this package only records and enforces it. It may
// import pgx, zap, governance/sqltext and internal/duckenv (the one ATTACH
// builder); nothing of catalog/ or gateway/.
package pgaccess
