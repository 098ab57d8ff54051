// Package export enforces masking on the bytes: for a table and a plan
// signature that the airtight tier needs, it keeps a current-state masked
// copy of the table — deletes applied, row filters applied, masks applied,
// inlined rows included, Iceberg field ids stamped, statistics of the
// masked data only — under <data path>__masked__/t<table id>/<signature>/,
// and the shadow Iceberg metadata over that copy that masked principals
// load instead of the base table's.
//
// A copy is one masked Parquet file per base file (and one for the table's
// inlined rows), written by an embedded DuckDB that reads the base table
// through the ducklake extension at one snapshot, one file at a time
// (DuckLake prunes the scan to that file). DuckLake only ever removes rows
// from a data file, so a base file whose live row count has not changed
// since the last build still has the same rows and keeps its masked copy:
// a 1-row INSERT into a 1M-row table writes one small file, not the table.
// Copies no build uses any more are retired, and deleted once no
// credential that could read them can still be valid (Collect, run by
// serve's sweep every minute); so are the exports of a table the catalog
// no longer has, whoever dropped it, and a purge deletes them at once
// (DropTable). Collect deletes nothing outside the export prefix.
//
// Nothing here serves bytes. The catalog serves the shadow metadata and
// vends credentials for the export prefix only; the gateway refuses the
// base files to the masked principal (governance/engine).
//
// export may import catalog/ducklake, catalog/materialize, governance/plan,
// governance/sqltext, internal/objstore and internal/duckenv.
package export
