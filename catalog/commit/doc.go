// Package commit translates Iceberg table commits into DuckLake catalog rows.
//
// An Iceberg REST client (PyIceberg, iceberg-go, Spark…) creates tables and
// commits table updates: it writes data files and Avro manifests itself and
// asks the catalog to make them part of the table. Here the catalog is a
// DuckLake catalog in Postgres, so a commit becomes the rows DuckDB's
// ducklake extension would have written for the same change: columns,
// partition and sort settings, data and delete files with their statistics
// and partition values, all in the one Postgres transaction and DuckLake
// snapshot the caller provides (see [Snapshot]). DuckDB clients read the
// result with a plain ATTACH; the Iceberg view of it is produced by
// catalog/materialize, so the Iceberg snapshot id of a commit is the DuckLake
// snapshot id it got, not the one the client proposed.
//
// Requirements (assert-*) are checked against the table's Iceberg metadata
// as materialised at the head snapshot; a mismatch is an [ErrConflict]. What
// DuckLake cannot hold is refused with [ErrUnsupported] and a reason, never
// accepted and dropped.
package commit
