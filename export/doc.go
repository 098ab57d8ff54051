// Package export enforces masking on the bytes: it writes pre-masked Parquet
// copies of governed tables, the shadow Iceberg metadata over them, and
// collects copies no credential can still read.
package export
