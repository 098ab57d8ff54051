// Package sqlcheck validates policy bodies with DuckDB itself, when they
// are authored: a masking body is parsed and typed against its signature
// (and against the column types it will meet), a row-access body against
// the columns it reads, and a signature's type is canonicalised the way
// DuckDB's typeof spells it. A refusal carries DuckDB's own message.
//
// Bodies are scalar expressions. Beyond what DuckDB accepts, a body may not
// hold a subquery, a window, an aggregate or a function that reaches
// outside the row (settings, secrets, files, the catalog): masking views
// run in every reader's DuckDB and exports run in ours with the
// upstream's keys, so a body must not be able to read anything but the
// value it masks.
//
// The DuckDB here is embedded (github.com/duckdb/duckdb-go/v2, DuckDB
// 1.5.5), in memory, with external access disabled and its configuration
// locked; it holds no data and loads no extension.
//
// sqlcheck may import governance/sqltext and duckdb-go.
package sqlcheck
