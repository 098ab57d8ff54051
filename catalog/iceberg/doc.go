// Package iceberg models Apache Iceberg table metadata and writes it the way
// the table specification (format versions 2 and 3) requires: schemas and
// types with their JSON form, partition specs and transforms, table metadata
// JSON, single-value binary serialisation for bounds, and Avro manifests and
// manifest lists carrying field ids and the required key-value metadata.
//
// Every writer here is deterministic: the same input gives the same bytes, so
// callers can name outputs by a hash of their content. Avro container files
// are framed by this package (header metadata in sorted key order, a sync
// marker derived from the content) because a Go map or a random sync marker
// would make two runs differ; values are encoded with hamba/avro's Writer.
//
// Values travel as plain Go values chosen by type (see [AppendBinary]):
//
//	boolean                      bool
//	int, date                    int32 (date: days since 1970-01-01)
//	long, time                   int64 (time: microseconds since midnight)
//	timestamp, timestamptz       int64 microseconds since 1970-01-01 UTC
//	timestamp_ns, timestamptz_ns int64 nanoseconds since 1970-01-01 UTC
//	float, double                float32, float64
//	decimal(P,S)                 Decimal (unscaled value)
//	string                       string
//	uuid                         [16]byte
//	fixed(L), binary             []byte
package iceberg
