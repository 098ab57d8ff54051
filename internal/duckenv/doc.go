// Package duckenv opens the embedded DuckDB (github.com/duckdb/duckdb-go/v2,
// DuckDB 1.5.5) the way the server's own DuckDB work needs it — exports,
// seeding, the MCP executor: the pinned extensions (httpfs, ducklake,
// postgres) loaded from a configured directory with downloads off, an S3
// secret for one endpoint, and optionally locked down (no external access
// but the S3 endpoint, configuration locked).
//
// duckenv may import duckdb-go and governance/sqltext (for quoting).
package duckenv
