package ducklake

import (
	"strings"
	"time"
)

// Snapshot ranges: every versioned row carries Begin and End snapshot ids.
// End == 0 means the row is still current; 0 can never be a real end because
// an end is always greater than its begin, and begins start at 0.

// Metadata is the content of ducklake_metadata.
type Metadata struct {
	Version   string // "1.0"
	CreatedBy string
	DataPath  string // always ends in "/"
	Encrypted bool
	// Settings holds every row, the ones above included, in table order.
	Settings []Setting
}

// Setting is one ducklake_metadata row. Scope is "" (global), "schema" or
// "table"; ScopeID is the schema or table id for a scoped setting.
type Setting struct {
	Key, Value string
	Scope      string
	ScopeID    int64
}

// Snapshot is a ducklake_snapshot row with its ducklake_snapshot_changes row.
type Snapshot struct {
	ID            int64
	Time          time.Time
	SchemaVersion int64
	NextCatalogID int64
	NextFileID    int64

	Changes         string // changes_made, e.g. `created_table:"s"."t",inserted_into_table:3`
	Author          string
	CommitMessage   string
	CommitExtraInfo string
}

// Change is one entry of Snapshot.Changes.
type Change struct {
	Kind   string // created_schema, created_table, inserted_into_table, inlined_insert, …
	Target string // as written: a quoted name, a quoted schema.table, or an id
}

// ParseChanges splits a changes_made value. Names are SQL-quoted and may
// contain commas, so this is not a plain split.
func ParseChanges(s string) []Change {
	var out []Change
	for len(s) > 0 {
		i, quoted := 0, false
		for ; i < len(s); i++ {
			c := s[i]
			if c == '"' {
				quoted = !quoted // "" inside a name toggles twice: harmless
			} else if c == ',' && !quoted {
				break
			}
		}
		entry := s[:i]
		if kind, target, ok := strings.Cut(entry, ":"); ok {
			out = append(out, Change{Kind: kind, Target: target})
		} else if entry != "" {
			out = append(out, Change{Kind: entry})
		}
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// Schema is a ducklake_schema row.
type Schema struct {
	ID             int64
	UUID           string
	Begin, End     int64
	Name           string
	RawPath        string // as stored
	PathIsRelative bool
	Path           string // resolved against the catalog data path
}

// Table is a ducklake_table row.
type Table struct {
	ID             int64
	UUID           string
	Begin, End     int64
	SchemaID       int64
	Name           string
	RawPath        string // as stored
	PathIsRelative bool   // relative to the schema's path
	Path           string // resolved: where the table's files live
}

// Column is a ducklake_column row; Reader.Columns assembles them into Fields.
type Column struct {
	ID                  int64
	Begin, End          int64
	TableID             int64
	Order               int64
	Name                string
	Type                string // column_type as stored
	InitialDefault      *string
	DefaultValue        *string
	NullsAllowed        bool
	ParentColumn        int64 // 0: top level (column ids start at 1)
	DefaultValueType    string
	DefaultValueDialect string
}

// DataFile is a ducklake_data_file row visible at the snapshot it was read
// for, with its delete state at that snapshot.
type DataFile struct {
	ID             int64
	TableID        int64
	Begin, End     int64
	FileOrder      int64 // 0 when NULL (DuckDB leaves it NULL)
	RawPath        string
	PathIsRelative bool   // relative to the table's path
	Path           string // resolved
	Format         string // "parquet"
	RecordCount    int64
	FileSizeBytes  int64
	FooterSize     int64
	RowIDStart     int64
	PartitionID    int64 // 0: unpartitioned (partition ids start at 1)
	EncryptionKey  string
	MappingID      int64 // 0: none (mapping ids start at 1)
	PartialMax     int64 // 0: not a merged multi-snapshot file

	PartitionValues []FilePartitionValue // ordered by key index
	Delete          *DeleteFile          // the delete file visible at the snapshot, if any
	// InlinedDeletes lists row positions (0-based, within this file) that
	// DuckDB deleted without writing a delete file; they are in
	// ducklake_inlined_delete_<table_id>. Sorted ascending.
	InlinedDeletes []int64
}

// DeleteFile is a ducklake_delete_file row.
type DeleteFile struct {
	ID             int64
	TableID        int64
	Begin, End     int64
	DataFileID     int64
	RawPath        string
	PathIsRelative bool
	Path           string // resolved
	Format         string // "parquet" (positional deletes) or "puffin"
	DeleteCount    int64
	FileSizeBytes  int64
	FooterSize     int64
	EncryptionKey  string
	PartialMax     int64
}

// FileColumnStats is a ducklake_file_column_stats row. Min and Max are in the
// string encoding of data_types.md; nil means unknown.
type FileColumnStats struct {
	DataFileID      int64
	TableID         int64
	ColumnID        int64
	ColumnSizeBytes int64 // -1 when NULL
	ValueCount      int64 // -1 when NULL
	NullCount       int64 // -1 when NULL
	Min, Max        *string
	ContainsNaN     bool
	ExtraStats      string
}

// PartitionInfo is a table's partition spec (ducklake_partition_info with its
// ducklake_partition_column rows).
type PartitionInfo struct {
	ID         int64
	TableID    int64
	Begin, End int64
	Columns    []PartitionColumn // ordered by KeyIndex
}

// PartitionColumn is one partition key.
type PartitionColumn struct {
	KeyIndex  int64
	ColumnID  int64
	Transform string // identity, bucket(N), year, month, day, hour
}

// FilePartitionValue is a ducklake_file_partition_value row.
type FilePartitionValue struct {
	KeyIndex int64
	Value    string
	Null     bool
}

// Tag is a ducklake_tag row (object tags: schemas, tables, views).
type Tag struct {
	ObjectID   int64
	Begin, End int64
	Key, Value string
}

// ColumnTag is a ducklake_column_tag row.
type ColumnTag struct {
	TableID    int64
	ColumnID   int64
	Begin, End int64
	Key, Value string
}

// NameMapping maps Parquet field names to column ids for files written
// without field ids (ducklake_column_mapping + ducklake_name_mapping).
type NameMapping struct {
	ID      int64
	TableID int64
	Type    string // "map_by_name"
	Entries []NameMappingEntry
}

// NameMappingEntry is a ducklake_name_mapping row.
type NameMappingEntry struct {
	ColumnID      int64
	SourceName    string
	TargetFieldID int64
	ParentColumn  int64 // 0: top level
	IsPartition   bool
}
