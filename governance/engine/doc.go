// Package engine is the governance Authorizer: the one instance serve
// builds and hands to the gateway and to every catalog route.
//
// For each request it resolves the principal's roles (its OAuth client's
// configured roles, the role grants, the synthetic actor:/channel: roles),
// finds the table the request is about (by name for catalog routes; by key
// through the key → table index for S3 requests, copy sources, batch
// deletes and list prefixes), plans that table for those roles
// (governance/plan) and decides: an allowlisted table is invisible to the
// ungranted, on every path; agents are read-only. Plans are cached per
// (roles, table) and decisions per (principal, table, action), both
// invalidated when the governance version moves (NOTIFY) or the catalog's
// schema changes; a cache hit allocates nothing.
//
// A credential bound to a table (creds.TableBinding, what the catalog
// vends) is checked before anything else on every S3 request: the key must
// belong, in the live index, to the table of the binding's UUID under the
// binding's name (a masked copy's key: that table's id), else the request
// is refused as a dropped or renamed table's; an index older than the vend
// is refreshed to it first; without an index a bound credential is refused.
//
// Every error denies. The cooperative tier's fail-open posture is the
// caller's to choose (it calls Plan and decides what to do with an error);
// nothing here answers an error with an allow.
//
// engine may import the governance packages, catalog/ducklake,
// internal/tableindex and internal/defaults.
package engine
