// Package service is the Iceberg catalog as operations rather than HTTP:
// what a namespace, table or view change does to a DuckLake metastore, each
// change one snapshot transaction of catalog/ducklake, with the rules the
// catalog applies whatever transport asks (names, properties, the default
// schema). catalog/rest is its HTTP transport: it decodes a request, calls
// a method here and encodes the answer or maps the typed [*Error] to an
// Iceberg ErrorModel.
//
// Here: namespaces; tables — load (with their Iceberg metadata from a
// [Materializer]), create, staged create, register, drop, rename; Iceberg
// commits over one or many tables ([Catalog.CommitTables]); views — list,
// load, create, replace, drop, rename, register, with their metadata files
// in the object store; the name rules of tables and views; and the
// snapshot commit ([Catalog.Commit]) every change goes through.
//
// It may import catalog/refusal, catalog/ducklake, catalog/commit,
// catalog/iceberg, catalog/materialize, catalog/views, internal/objstore
// (locations, view metadata files), governance (the reserved masking-view
// names) and pgx; never catalog/rest or a transport.
package service
