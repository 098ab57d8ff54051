// Package materialize turns DuckLake snapshots into Apache Iceberg metadata:
// for a table as of a DuckLake snapshot, a metadata.json (format v2, or v3
// with deletion vectors and row lineage: see Options) whose
// history has one Iceberg snapshot per DuckLake snapshot that changed the
// table's files (same ids, sequence number = snapshot id), each with a
// manifest list, data manifests and position-delete manifests.
//
// DuckLake data files and positional delete files are referenced where they
// are. Rows and deletions DuckDB keeps in Postgres (data inlining) are
// written to Parquet under <table>/__inlined__/, so Iceberg readers see every
// row. Statistics become Iceberg metrics and bounds; partition values are
// translated (DuckLake's calendar year/month/day/hour into Iceberg's counts
// since the epoch; buckets passed through where DuckDB hashes like Iceberg).
//
// Outputs are immutable and content-addressed: the same history gives the
// same bytes, and generated files are named by snapshot id and a hash of
// their content. [Materializer] writes each once through an objstore.Store
// and caches results in a bounded LRU with one build per key at a time.
package materialize
