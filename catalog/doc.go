// Package catalog serves the Apache Iceberg REST catalog API over a DuckLake
// metastore in Postgres: it materialises DuckLake snapshots as Iceberg
// metadata, translates Iceberg commits into DuckLake rows, vends gateway
// credentials and signs S3 requests remotely.
package catalog
