// Package service is the Iceberg catalog as operations rather than HTTP:
// what a namespace, table or view change does to a DuckLake metastore, each
// change one snapshot transaction of catalog/ducklake, with the rules the
// catalog applies whatever transport asks (names, properties, the default
// schema). catalog/rest is its HTTP transport: it decodes a request, calls
// a method here and encodes the answer or maps the typed [*Error] to an
// Iceberg ErrorModel.
//
// Namespaces, table drops and renames, the name rules of tables and views
// and the snapshot commit ([Catalog.Commit]) live here; the create,
// register, view and Iceberg-commit routes of catalog/rest still drive
// catalog/ducklake, catalog/commit and catalog/materialize themselves
// through Commit, and move here route by route.
//
// It may import catalog/ducklake, catalog/commit, internal/objstore
// (locations), governance (the reserved masking-view names) and pgx; never
// catalog/rest or a transport.
package service
