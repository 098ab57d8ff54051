// Package model is governance's data: tags, object tags, masking and
// row-access policies, attachments, roles, role grants and object grants,
// as one immutable State with the indexes the planner needs, and the
// standard masking actions of the Iceberg read-restrictions proposal.
//
// Governance rows name DuckLake objects by their ids (schema_id, table_id,
// column_id), never by name: DuckLake keeps an object's id across renames
// (by DuckDB or by the catalog) and never reuses it, so a rename carries
// every tag, mask and grant, a drop leaves rows that name nothing live
// (purged by the store), and a table recreated under an old name has a new
// id and inherits nothing.
//
// model may import catalog/ducklake (for DuckLake types) and governance/
// sqltext; it does no I/O.
package model
