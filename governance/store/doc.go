// Package store keeps governance in Postgres, beside the DuckLake catalog
// it governs: the duckicelake_gov_* sidecar tables (migration 6 of
// catalog/ducklake) and the audit trail, duckicelake_audit.
//
// Every change runs in one transaction that also bumps the governance
// version, records the change in the audit trail with its author and
// notifies channel duckicelake_governance, so every process reloads the
// State it enforces (Load) within moments and the record of who changed
// what is written before the change is acknowledged.
//
// Rows name DuckLake objects by id. Resolve turns names into ids at the
// catalog's current snapshot; Purge deletes rows whose object was dropped.
//
// store may import catalog/ducklake, governance, governance/model and
// internal/defaults, and pgx.
package store
