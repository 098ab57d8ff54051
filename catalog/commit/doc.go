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
//
// The translation:
//
//	create table             ducklake_table, ducklake_column (ids depth first from 1, as DuckDB
//	                         numbers them), schema version, created_table:"ns"."t"
//	add-snapshot             the client's manifests added by the snapshot: ADDED data files →
//	                         ducklake_data_file (+ file column stats from the metrics, partition
//	                         values, row ids from ducklake_table_stats), DELETED → end_snapshot
//	                         (and of their delete files); inserted_into_table / deleted_from_table
//	                         (compacted_table for replace); the client's manifest list and the
//	                         manifests the snapshot added → ducklake_files_scheduled_for_deletion
//	                         (nothing references them: the served metadata is materialize's);
//	                         the files it records are taken off that schedule
//	position delete file     ducklake_delete_file of its one data file (referenced_data_file or
//	                         equal file_path bounds); one naming several data files is split and
//	                         one for a data file with a delete file merged into new files (the
//	                         client's then → ducklake_files_scheduled_for_deletion, in the commit's
//	                         transaction)
//	equality delete file     no DuckLake file: per live data file it applies to by Iceberg's
//	                         sequence-number rule (all but those the same snapshot adds) and
//	                         partition scope (same DuckLake partition and values; an
//	                         unpartitioned delete: every file), the positions of rows equal on the
//	                         equality_ids (NULL = NULL; read with an embedded DuckDB) → position
//	                         deletes as above (merged with the file's, written beside the
//	                         client's); the client's file → ducklake_files_scheduled_for_deletion.
//	                         Truncate-scoped, nested keys, tables with inlined rows, name-mapped
//	                         data files → 406; equality ids naming no column, key columns the
//	                         file lacks or of another type, an unreadable file → 400
//	add-schema + current     columns diffed by field id: add, drop, rename, int→long, float→double,
//	                         decimal widening, optional; new rows for changed columns; altered_table;
//	                         docs → ducklake_column_tag "comment" (DuckDB's COMMENT ON COLUMN)
//	add-spec + default       ducklake_partition_info/_column: identity, bucket(N) (kinds DuckDB hashes
//	                         as Iceberg), year/month/day/hour (+ the coarser calendar keys DuckLake
//	                         needs), a new partition only when the keys change; the client's spec
//	                         (id, field ids, names, truncate[W] fields) → sidecar
//	                         duckicelake_table_partition_spec/_field, served back as set, with a spec
//	                         without truncate fields (files whose truncate value their statistics
//	                         cannot give) and an unpartitioned one (inlined rows) listed beside it;
//	                         void and timestamptz calendar fields → 501
//	add-sort-order + default ducklake_sort_info/_expression for plain columns (none for an order with
//	                         transforms: DuckDB writes unsorted rather than misordered files); the
//	                         client's order (id, transforms) → sidecar duckicelake_table_sort_order
//	set/remove-properties    sidecar duckicelake_table_property; duckicelake.* → 403
//	set-snapshot-ref         main: the snapshot just added (others → 501); tags and branches at
//	                         existing snapshots → sidecar duckicelake_table_ref; branch writes → 501
//	upgrade-format-version   sidecar duckicelake.format-version up to Config.MaxFormatVersion
//	assign-uuid              accepted (the same UUID)
//	set/remove-(partition-)  sidecar duckicelake_table_statistics: the StatisticsFile or
//	statistics               PartitionStatisticsFile as committed, per snapshot and kind (snapshot-id
//	                         the DuckLake id of a snapshot this commit adds); a snapshot that is not the
//	                         table's → 400, a statistics-path outside the table location → 403 (the
//	                         rule of every file a client names). Removed with their snapshot
//	                         (remove-snapshots, or any expiry our expiry sweeps after) and with the
//	                         table (drop)
//	remove-snapshots         the DuckLake snapshots from each id up to the table's next Iceberg
//	                         snapshot expire as ducklake_expire_snapshots does (rows only they see
//	                         deleted, files → ducklake_files_scheduled_for_deletion) when they
//	                         changed only this table; a stretch with a snapshot that also changed
//	                         another table expires for this table alone (expire_table.go): sidecar
//	                         duckicelake_table_expired_snapshot (left out of its served history), a
//	                         gap in its ducklake_table rows (DuckDB's time travel there: no such
//	                         table), its files no retained snapshot sees → scheduled, rows deleted;
//	                         altered_table; unknown ids ignored, refs left dangling removed
//	                         (Iceberg's semantics); the current snapshot → 400
//	set-location             accepted when unchanged, else 501 (a location objstore.Parse refuses: 400)
//	register table           a create from a metadata file (current schema with its field ids,
//	                         default spec and sort order, properties, format version, UUID,
//	                         location) + the current snapshot's live data and position delete files
//	                         as one add-snapshot (inserted_into_table); files under another
//	                         partition spec than the default, equality deletes → 501; files,
//	                         manifests outside the table location → 403; a live table with the
//	                         same UUID → 409. The Iceberg snapshot history is not carried over.
//	                         A dropped table at the same path gives its rows of these files up
//	                         (DuckLake would delete them when its snapshots expire)
//
// Files scheduled for deletion — by commits, expiries and DuckDB — are
// deleted by [Catalog.CleanupScheduled] after a grace (serve runs it every
// minute), within the data path or a table's location only and never while
// a table records them.
//
// A new table's location never overlaps a live table's, of any namespace
// (403 when the client chose it; a default path a renamed table still holds
// becomes name-<uuid8>/): vended credentials, gateway grants and purge all
// work by location, so an overlap would read or delete another table's
// files.
//
// Locations (see locations.go): a table location the client gives must be
// one objstore.Parse takes (else 400) within its namespace's location (else
// 403); every file a client names — metadata file, manifest list,
// manifest, data and delete file — must be within its table's location (or
// for a metadata file to register, its namespace's, outside every live
// table's), else it is refused as outside it (403) whatever the reason,
// dot segments included. All of it is decided before the catalog reads
// anything with its root credentials (CommitDir before ReadManifests,
// MetadataFile before the metadata file is read), so no refusal depends on
// what object storage holds. commit imports objstore, ducklake, iceberg and
// materialize; catalog/rest imports commit.
package commit
