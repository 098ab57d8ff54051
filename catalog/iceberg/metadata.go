package iceberg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Snapshot operations (summary "operation").
const (
	OpAppend    = "append"
	OpReplace   = "replace"
	OpOverwrite = "overwrite"
	OpDelete    = "delete"
)

// MainBranch is the name of the branch the current snapshot lives on.
const MainBranch = "main"

// TableMetadata is the content of a metadata.json file (format v2, with the
// v3 fields a v3 table needs). Optional fields are omitted when empty.
type TableMetadata struct {
	FormatVersion      int                    `json:"format-version"`
	TableUUID          string                 `json:"table-uuid"`
	Location           string                 `json:"location"`
	LastSequenceNumber int64                  `json:"last-sequence-number"`
	LastUpdatedMS      int64                  `json:"last-updated-ms"`
	LastColumnID       int                    `json:"last-column-id"`
	Schemas            []*Schema              `json:"schemas"`
	CurrentSchemaID    int                    `json:"current-schema-id"`
	PartitionSpecs     []PartitionSpec        `json:"partition-specs"`
	DefaultSpecID      int                    `json:"default-spec-id"`
	LastPartitionID    int                    `json:"last-partition-id"`
	Properties         map[string]string      `json:"properties,omitempty"`
	CurrentSnapshotID  *int64                 `json:"current-snapshot-id,omitempty"`
	Snapshots          []Snapshot             `json:"snapshots"`
	SnapshotLog        []SnapshotLogEntry     `json:"snapshot-log"`
	MetadataLog        []MetadataLogEntry     `json:"metadata-log"`
	SortOrders         []SortOrder            `json:"sort-orders"`
	DefaultSortOrderID int                    `json:"default-sort-order-id"`
	Refs               map[string]SnapshotRef `json:"refs,omitempty"`
	NextRowID          *int64                 `json:"next-row-id,omitempty"` // v3
	// Statistics and PartitionStatistics are the statistics files engines
	// registered (Trino's and Spark's ANALYZE), at most one of each kind
	// per snapshot.
	Statistics          []StatisticsFile          `json:"statistics,omitempty"`
	PartitionStatistics []PartitionStatisticsFile `json:"partition-statistics,omitempty"`
}

// StatisticsFile is one entry of TableMetadata.Statistics: a Puffin file
// of statistics (NDV sketches) about a snapshot.
type StatisticsFile struct {
	SnapshotID            int64          `json:"snapshot-id"`
	StatisticsPath        string         `json:"statistics-path"`
	FileSizeInBytes       int64          `json:"file-size-in-bytes"`
	FileFooterSizeInBytes int64          `json:"file-footer-size-in-bytes"`
	KeyMetadata           string         `json:"key-metadata,omitempty"`
	BlobMetadata          []BlobMetadata `json:"blob-metadata"`
}

// BlobMetadata describes one blob of a statistics file.
type BlobMetadata struct {
	Type           string            `json:"type"`
	SnapshotID     int64             `json:"snapshot-id"`
	SequenceNumber int64             `json:"sequence-number"`
	Fields         []int             `json:"fields"`
	Properties     map[string]string `json:"properties,omitempty"`
}

// PartitionStatisticsFile is one entry of
// TableMetadata.PartitionStatistics.
type PartitionStatisticsFile struct {
	SnapshotID      int64  `json:"snapshot-id"`
	StatisticsPath  string `json:"statistics-path"`
	FileSizeInBytes int64  `json:"file-size-in-bytes"`
}

// Snapshot is one entry of TableMetadata.Snapshots.
type Snapshot struct {
	SnapshotID       int64             `json:"snapshot-id"`
	ParentSnapshotID *int64            `json:"parent-snapshot-id,omitempty"`
	SequenceNumber   int64             `json:"sequence-number"`
	TimestampMS      int64             `json:"timestamp-ms"`
	ManifestList     string            `json:"manifest-list"`
	Summary          map[string]string `json:"summary"` // includes "operation"
	SchemaID         *int              `json:"schema-id,omitempty"`
	FirstRowID       *int64            `json:"first-row-id,omitempty"` // v3
	AddedRows        *int64            `json:"added-rows,omitempty"`   // v3
}

// SnapshotLogEntry records when a snapshot became current.
type SnapshotLogEntry struct {
	SnapshotID  int64 `json:"snapshot-id"`
	TimestampMS int64 `json:"timestamp-ms"`
}

// MetadataLogEntry records an earlier metadata file.
type MetadataLogEntry struct {
	MetadataFile string `json:"metadata-file"`
	TimestampMS  int64  `json:"timestamp-ms"`
}

// SortOrder is a table sort order; the unsorted order has id 0 and no fields.
type SortOrder struct {
	OrderID int         `json:"order-id"`
	Fields  []SortField `json:"fields"`
}

// SortField is one field of a sort order.
type SortField struct {
	Transform Transform `json:"transform"`
	SourceID  int       `json:"source-id"`
	Direction string    `json:"direction"`  // asc, desc
	NullOrder string    `json:"null-order"` // nulls-first, nulls-last
}

// SnapshotRef is a branch or tag.
type SnapshotRef struct {
	SnapshotID         int64  `json:"snapshot-id"`
	Type               string `json:"type"` // branch, tag
	MinSnapshotsToKeep *int   `json:"min-snapshots-to-keep,omitempty"`
	MaxSnapshotAgeMS   *int64 `json:"max-snapshot-age-ms,omitempty"`
	MaxRefAgeMS        *int64 `json:"max-ref-age-ms,omitempty"`
}

// Unsorted is the sort order of a table without one.
var Unsorted = SortOrder{OrderID: 0, Fields: []SortField{}}

// ErrInvalidMetadata reports table metadata that breaks a rule of the spec.
var ErrInvalidMetadata = errors.New("iceberg: invalid table metadata")

// Validate checks the cross-references a reader relies on: the current
// schema, default spec and sort order exist, snapshots name known schemas,
// the current snapshot exists and matches refs.main, sequence numbers do not
// exceed last-sequence-number, types are allowed in the format version.
func (md *TableMetadata) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidMetadata, fmt.Sprintf(format, args...))
	}
	if md.FormatVersion < 2 || md.FormatVersion > 3 {
		return bad("format version %d (only 2 and 3 are written)", md.FormatVersion)
	}
	schemas := map[int]bool{}
	for _, s := range md.Schemas {
		if schemas[s.ID] {
			return bad("schema id %d twice", s.ID)
		}
		schemas[s.ID] = true
		if v := s.AsStruct().MinFormatVersion(); v > md.FormatVersion {
			return bad("schema %d needs format version %d", s.ID, v)
		}
		if s.HighestFieldID() > md.LastColumnID {
			return bad("schema %d has field id %d > last-column-id %d", s.ID, s.HighestFieldID(), md.LastColumnID)
		}
	}
	if !schemas[md.CurrentSchemaID] {
		return bad("current schema %d is not listed", md.CurrentSchemaID)
	}
	specs := map[int]bool{}
	for _, s := range md.PartitionSpecs {
		specs[s.ID] = true
		for _, f := range s.Fields {
			if f.FieldID > md.LastPartitionID {
				return bad("partition field id %d > last-partition-id %d", f.FieldID, md.LastPartitionID)
			}
		}
	}
	if !specs[md.DefaultSpecID] {
		return bad("default spec %d is not listed", md.DefaultSpecID)
	}
	sorted := false
	for _, o := range md.SortOrders {
		sorted = sorted || o.OrderID == md.DefaultSortOrderID
	}
	if !sorted {
		return bad("default sort order %d is not listed", md.DefaultSortOrderID)
	}
	snaps := map[int64]bool{}
	for _, s := range md.Snapshots {
		if snaps[s.SnapshotID] {
			return bad("snapshot %d twice", s.SnapshotID)
		}
		snaps[s.SnapshotID] = true
		if s.SequenceNumber > md.LastSequenceNumber {
			return bad("snapshot %d has sequence number %d > last-sequence-number %d", s.SnapshotID, s.SequenceNumber, md.LastSequenceNumber)
		}
		if s.SchemaID != nil && !schemas[*s.SchemaID] {
			return bad("snapshot %d names unknown schema %d", s.SnapshotID, *s.SchemaID)
		}
		if s.Summary["operation"] == "" {
			return bad("snapshot %d has no operation", s.SnapshotID)
		}
	}
	for _, f := range md.Statistics {
		if !snaps[f.SnapshotID] {
			return bad("statistics file %s is of snapshot %d, which is not listed", f.StatisticsPath, f.SnapshotID)
		}
	}
	for _, f := range md.PartitionStatistics {
		if !snaps[f.SnapshotID] {
			return bad("partition statistics file %s is of snapshot %d, which is not listed", f.StatisticsPath, f.SnapshotID)
		}
	}
	main, hasMain := md.Refs[MainBranch]
	switch {
	case md.CurrentSnapshotID == nil && hasMain:
		return bad("refs.main without a current snapshot")
	case md.CurrentSnapshotID != nil && !snaps[*md.CurrentSnapshotID]:
		return bad("current snapshot %d is not listed", *md.CurrentSnapshotID)
	case md.CurrentSnapshotID != nil && (!hasMain || main.SnapshotID != *md.CurrentSnapshotID):
		return bad("refs.main does not point at the current snapshot")
	}
	return nil
}

// MarshalJSON writes the metadata with empty lists as [] rather than null,
// which some readers reject.
func (md TableMetadata) MarshalJSON() ([]byte, error) {
	type plain TableMetadata
	if md.Schemas == nil {
		md.Schemas = []*Schema{}
	}
	if md.PartitionSpecs == nil {
		md.PartitionSpecs = []PartitionSpec{}
	}
	if md.Snapshots == nil {
		md.Snapshots = []Snapshot{}
	}
	if md.SnapshotLog == nil {
		md.SnapshotLog = []SnapshotLogEntry{}
	}
	if md.MetadataLog == nil {
		md.MetadataLog = []MetadataLogEntry{}
	}
	if md.SortOrders == nil {
		md.SortOrders = []SortOrder{Unsorted}
	}
	return json.Marshal(plain(md))
}

// MarshalIndent returns the metadata JSON, two-space indented with a final
// newline: stable bytes for the same metadata (map keys are sorted).
func (md *TableMetadata) MarshalIndent() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(*md); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// CurrentSnapshot returns the current snapshot, or nil.
func (md *TableMetadata) CurrentSnapshot() *Snapshot {
	if md.CurrentSnapshotID == nil {
		return nil
	}
	return md.SnapshotByID(*md.CurrentSnapshotID)
}

// SnapshotByID returns snapshot id, or nil.
func (md *TableMetadata) SnapshotByID(id int64) *Snapshot {
	for i := range md.Snapshots {
		if md.Snapshots[i].SnapshotID == id {
			return &md.Snapshots[i]
		}
	}
	return nil
}

// SchemaByID returns schema id, or nil.
func (md *TableMetadata) SchemaByID(id int) *Schema {
	for _, s := range md.Schemas {
		if s.ID == id {
			return s
		}
	}
	return nil
}
