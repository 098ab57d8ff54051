package commit

// Sidecar tables: Iceberg table state DuckLake has no place for. The
// catalog's sidecar migrations (catalog/ducklake) create them.
const (
	// propertyTable holds table properties by table id.
	propertyTable = "duckicelake_table_property"
	// partitionFieldTable holds every field of the partition spec an
	// Iceberg client set (field id, name, transform, source), versioned
	// like DuckLake rows, one row per field at spec_position; the spec
	// itself is a row of specTable with the same begin_snapshot. DuckLake's
	// partition keys lose the names and ids and have no truncate transform
	// (truncate values are derived from the files' statistics). Rows
	// without a specTable row (field_id NULL) are truncate fields written
	// before specTable existed; they are not served.
	partitionFieldTable = "duckicelake_table_partition_field"
	// specTable holds the client's spec id per version, the DuckLake
	// partition its keys went to, and the ids of the specs the catalog
	// serves beside it (see specVersion).
	specTable = "duckicelake_table_partition_spec"
	// sortOrderTable holds the sort order an Iceberg client set, versioned,
	// with its order id and the DuckLake sort written for it (none when it
	// has transforms DuckLake cannot sort by).
	sortOrderTable = "duckicelake_table_sort_order"
	// refTable holds tags and read-only branches other than main.
	refTable = "duckicelake_table_ref"
)
