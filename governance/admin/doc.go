// Package admin is governance authoring: the seeds' REST API's requests
// (tags, object tags, masking and row-access policies, attachments, roles,
// role grants, object grants), validated — names resolved against the live
// DuckLake catalog, bodies parsed and typed by DuckDB (governance/
// sqlcheck), one mask per column, no attachment the resolver would ignore,
// nothing deleted while still referenced — and written through
// governance/store as one audited change each.
//
// The HTTP transport lives in catalog/rest; this package speaks in Go
// values and typed errors (*Error with a Kind the transport maps to a
// status).
//
// admin may import the governance packages and catalog/ducklake.
package admin
