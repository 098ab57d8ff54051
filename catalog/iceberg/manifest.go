package iceberg

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/hamba/avro/v2"
)

// ManifestContent says what a manifest tracks.
type ManifestContent int

// Manifest contents.
const (
	ManifestData    ManifestContent = 0
	ManifestDeletes ManifestContent = 1
)

func (c ManifestContent) String() string {
	if c == ManifestDeletes {
		return "deletes"
	}
	return "data"
}

// FileContent says what a data file holds.
type FileContent int

// File contents.
const (
	ContentData            FileContent = 0
	ContentPositionDeletes FileContent = 1
	ContentEqualityDeletes FileContent = 2
)

// File formats (data_file.file_format).
const (
	FormatParquet = "PARQUET"
	FormatAvro    = "AVRO"
	FormatPuffin  = "PUFFIN"
)

// Reserved field ids of position delete files.
const (
	PositionDeleteFilePathID = 2147483546
	PositionDeletePosID      = 2147483545
)

// EntryStatus is a manifest entry's status.
type EntryStatus int

// Entry statuses.
const (
	StatusExisting EntryStatus = 0
	StatusAdded    EntryStatus = 1
	StatusDeleted  EntryStatus = 2
)

// DataFile is the data_file struct of a manifest entry. Metric maps are
// keyed by field id; nil maps and slices are written as null.
type DataFile struct {
	Content            FileContent
	Path               string
	Format             string // FormatParquet, …
	Partition          []any  // one value per partition field, nil for null
	RecordCount        int64
	FileSizeBytes      int64
	ColumnSizes        map[int]int64
	ValueCounts        map[int]int64
	NullValueCounts    map[int]int64
	NaNValueCounts     map[int]int64
	LowerBounds        map[int][]byte
	UpperBounds        map[int][]byte
	KeyMetadata        []byte
	SplitOffsets       []int64
	EqualityIDs        []int
	SortOrderID        *int
	ReferencedDataFile string // "" for null
	FirstRowID         *int64 // v3
	// ContentOffset and ContentSizeInBytes locate a deletion vector's blob
	// in its Puffin file (v3; nil for other files).
	ContentOffset      *int64
	ContentSizeInBytes *int64
}

// ManifestEntry is one entry of a manifest. Nil snapshot and sequence
// numbers are inherited from the manifest list (only for added entries).
type ManifestEntry struct {
	Status             EntryStatus
	SnapshotID         *int64
	SequenceNumber     *int64
	FileSequenceNumber *int64
	File               *DataFile
}

// ManifestInfo describes a manifest being written: the key-value metadata
// and the partition tuple's type come from it.
type ManifestInfo struct {
	FormatVersion int // 2 or 3
	Content       ManifestContent
	Schema        *Schema
	Spec          PartitionSpec
}

// FieldSummary summarises one partition field over a manifest's entries.
type FieldSummary struct {
	ContainsNull bool
	ContainsNaN  *bool
	LowerBound   []byte
	UpperBound   []byte
}

// ManifestFile is a manifest list entry.
type ManifestFile struct {
	Path               string
	Length             int64
	PartitionSpecID    int
	Content            ManifestContent
	SequenceNumber     int64
	MinSequenceNumber  int64
	AddedSnapshotID    int64
	AddedFilesCount    int32
	ExistingFilesCount int32
	DeletedFilesCount  int32
	AddedRowsCount     int64
	ExistingRowsCount  int64
	DeletedRowsCount   int64
	Partitions         []FieldSummary
	KeyMetadata        []byte
	FirstRowID         *int64 // v3
}

func mapType(keyID, valueID int, value TypeID) string {
	return `{"type":"array","logicalType":"map","items":` + avroRecord(fmt.Sprintf("k%d_v%d", keyID, valueID), []avroField{
		{name: "key", id: keyID, typ: `"int"`},
		{name: "value", id: valueID, typ: strconv.Quote(map[TypeID]string{TypeLong: "long", TypeBinary: "bytes"}[value])},
	}) + `}`
}

// ManifestSchema returns the Avro schema of manifest entries whose
// partition tuple has type partition (a struct), for format version 2 or 3.
func ManifestSchema(formatVersion int, partition Type) (string, error) {
	var s avroSchemas
	part, err := s.of(partition, "r102")
	if err != nil {
		return "", fmt.Errorf("partition type: %w", err)
	}
	fields := []avroField{
		{name: "content", id: 134, typ: `"int"`},
		{name: "file_path", id: 100, typ: `"string"`},
		{name: "file_format", id: 101, typ: `"string"`},
		{name: "partition", id: 102, typ: part},
		{name: "record_count", id: 103, typ: `"long"`},
		{name: "file_size_in_bytes", id: 104, typ: `"long"`},
		{name: "column_sizes", id: 108, typ: mapType(117, 118, TypeLong), optional: true},
		{name: "value_counts", id: 109, typ: mapType(119, 120, TypeLong), optional: true},
		{name: "null_value_counts", id: 110, typ: mapType(121, 122, TypeLong), optional: true},
		{name: "nan_value_counts", id: 137, typ: mapType(138, 139, TypeLong), optional: true},
		{name: "lower_bounds", id: 125, typ: mapType(126, 127, TypeBinary), optional: true},
		{name: "upper_bounds", id: 128, typ: mapType(129, 130, TypeBinary), optional: true},
		{name: "key_metadata", id: 131, typ: `"bytes"`, optional: true},
		{name: "split_offsets", id: 132, typ: `{"type":"array","items":"long","element-id":133}`, optional: true},
		{name: "equality_ids", id: 135, typ: `{"type":"array","items":"int","element-id":136}`, optional: true},
		{name: "sort_order_id", id: 140, typ: `"int"`, optional: true},
	}
	if formatVersion >= 3 {
		fields = append(fields, avroField{name: "first_row_id", id: 142, typ: `"long"`, optional: true})
	}
	fields = append(fields, avroField{name: "referenced_data_file", id: 143, typ: `"string"`, optional: true})
	if formatVersion >= 3 {
		fields = append(fields,
			avroField{name: "content_offset", id: 144, typ: `"long"`, optional: true},
			avroField{name: "content_size_in_bytes", id: 145, typ: `"long"`, optional: true})
	}
	entry := avroRecord("manifest_entry", []avroField{
		{name: "status", id: 0, typ: `"int"`},
		{name: "snapshot_id", id: 1, typ: `"long"`, optional: true},
		{name: "sequence_number", id: 3, typ: `"long"`, optional: true},
		{name: "file_sequence_number", id: 4, typ: `"long"`, optional: true},
		{name: "data_file", id: 2, typ: avroRecord("r2", fields)},
	})
	return entry, nil
}

// ManifestListSchema returns the Avro schema of manifest list entries.
func ManifestListSchema(formatVersion int) string {
	summary := avroRecord("r508", []avroField{
		{name: "contains_null", id: 509, typ: `"boolean"`},
		{name: "contains_nan", id: 518, typ: `"boolean"`, optional: true},
		{name: "lower_bound", id: 510, typ: `"bytes"`, optional: true},
		{name: "upper_bound", id: 511, typ: `"bytes"`, optional: true},
	})
	fields := []avroField{
		{name: "manifest_path", id: 500, typ: `"string"`},
		{name: "manifest_length", id: 501, typ: `"long"`},
		{name: "partition_spec_id", id: 502, typ: `"int"`},
		{name: "content", id: 517, typ: `"int"`},
		{name: "sequence_number", id: 515, typ: `"long"`},
		{name: "min_sequence_number", id: 516, typ: `"long"`},
		{name: "added_snapshot_id", id: 503, typ: `"long"`},
		{name: "added_files_count", id: 504, typ: `"int"`},
		{name: "existing_files_count", id: 505, typ: `"int"`},
		{name: "deleted_files_count", id: 506, typ: `"int"`},
		{name: "added_rows_count", id: 512, typ: `"long"`},
		{name: "existing_rows_count", id: 513, typ: `"long"`},
		{name: "deleted_rows_count", id: 514, typ: `"long"`},
		{name: "partitions", id: 507, typ: `{"type":"array","items":` + summary + `,"element-id":508}`, optional: true},
		{name: "key_metadata", id: 519, typ: `"bytes"`, optional: true},
	}
	if formatVersion >= 3 {
		fields = append(fields, avroField{name: "first_row_id", id: 520, typ: `"long"`, optional: true})
	}
	return avroRecord("manifest_file", fields)
}

// ManifestWriter encodes manifests of one shape (format version, content,
// schema, spec). It keeps its buffers between manifests, so reuse one per
// shape; it is not safe for concurrent use.
type ManifestWriter struct {
	info     ManifestInfo
	partType Type
	schema   string
	meta     map[string]string
	w        *avro.Writer
	fw       *avro.Writer
	// encoded remembers each data_file's encoding: a file carried from
	// manifest to manifest (merges, rewrites) is encoded once.
	encoded map[*DataFile][]byte
}

// NewManifestWriter prepares to write manifests described by info.
func NewManifestWriter(info ManifestInfo) (*ManifestWriter, error) {
	if info.FormatVersion < 2 || info.FormatVersion > 3 {
		return nil, fmt.Errorf("iceberg: manifests of format version %d are not written", info.FormatVersion)
	}
	pt, err := info.Spec.PartitionType(info.Schema)
	if err != nil {
		return nil, err
	}
	schema, err := ManifestSchema(info.FormatVersion, pt)
	if err != nil {
		return nil, err
	}
	schemaJSON, err := info.Schema.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return &ManifestWriter{
		info:     info,
		partType: pt,
		schema:   schema,
		meta: map[string]string{
			"schema":            string(schemaJSON),
			"schema-id":         strconv.Itoa(info.Schema.ID),
			"partition-spec":    string(info.Spec.FieldsJSON()),
			"partition-spec-id": strconv.Itoa(info.Spec.ID),
			"format-version":    strconv.Itoa(info.FormatVersion),
			"content":           info.Content.String(),
		},
		w:       avro.NewWriter(nil, 64<<10),
		fw:      avro.NewWriter(nil, 1024),
		encoded: map[*DataFile][]byte{},
	}, nil
}

// PartitionType is the struct type of the partition tuples this writer takes.
func (mw *ManifestWriter) PartitionType() Type { return mw.partType }

// Write encodes entries as one manifest file. The writer remembers the
// encoding of every *DataFile it has written, so a DataFile must not be
// modified once written. The returned ManifestFile has
// every field but Path filled in (Length, counts, partition summaries,
// MinSequenceNumber from the entries' data sequence numbers); the caller
// names the file and sets SequenceNumber and AddedSnapshotID for the list.
// Entries must all carry explicit sequence numbers for MinSequenceNumber to
// be exact; inherited ones count as seq.
func (mw *ManifestWriter) Write(entries []ManifestEntry, seq int64) ([]byte, ManifestFile, error) {
	mf := ManifestFile{PartitionSpecID: mw.info.Spec.ID, Content: mw.info.Content, MinSequenceNumber: math.MaxInt64}
	nparts := len(mw.partType.Fields)
	sums := make([]partitionSummary, nparts)
	w := mw.w
	w.Reset(nil)
	for i := range entries {
		e := &entries[i]
		f := e.File
		if f == nil {
			return nil, mf, fmt.Errorf("manifest entry %d: no data file", i)
		}
		if len(f.Partition) != nparts {
			return nil, mf, fmt.Errorf("manifest entry %d (%s): %d partition values, spec %d has %d fields", i, f.Path, len(f.Partition), mw.info.Spec.ID, nparts)
		}
		if (mw.info.Content == ManifestData) != (f.Content == ContentData) {
			return nil, mf, fmt.Errorf("manifest entry %d (%s): content %d in a %s manifest", i, f.Path, f.Content, mw.info.Content)
		}
		if f.Format == FormatPuffin && (mw.info.FormatVersion < 3 || f.Content != ContentPositionDeletes ||
			f.ReferencedDataFile == "" || f.ContentOffset == nil || f.ContentSizeInBytes == nil) {
			return nil, mf, fmt.Errorf("manifest entry %d (%s): a Puffin file is a v3 deletion vector with referenced_data_file, content_offset and content_size_in_bytes", i, f.Path)
		}
		switch e.Status {
		case StatusAdded:
			mf.AddedFilesCount++
			mf.AddedRowsCount += f.RecordCount
		case StatusExisting:
			mf.ExistingFilesCount++
			mf.ExistingRowsCount += f.RecordCount
		case StatusDeleted:
			mf.DeletedFilesCount++
			mf.DeletedRowsCount += f.RecordCount
		default:
			return nil, mf, fmt.Errorf("manifest entry %d: status %d", i, e.Status)
		}
		if e.Status != StatusDeleted {
			ds := seq
			if e.SequenceNumber != nil {
				ds = *e.SequenceNumber
			}
			mf.MinSequenceNumber = min(mf.MinSequenceNumber, ds)
		}
		for j, fld := range mw.partType.Fields {
			if err := sums[j].update(fld.Type, f.Partition[j]); err != nil {
				return nil, mf, fmt.Errorf("manifest entry %d (%s): partition field %s: %w", i, f.Path, fld.Name, err)
			}
		}
		if err := mw.writeEntry(e); err != nil {
			return nil, mf, fmt.Errorf("manifest entry %d (%s): %w", i, f.Path, err)
		}
	}
	if mf.MinSequenceNumber == math.MaxInt64 {
		mf.MinSequenceNumber = seq
	}
	mf.Partitions = make([]FieldSummary, nparts)
	for j := range sums {
		mf.Partitions[j] = sums[j].summary()
	}
	out, err := writeContainer(mw.schema, mw.meta, int64(len(entries)), w.Buffer())
	if err != nil {
		return nil, mf, err
	}
	mf.Length = int64(len(out))
	return out, mf, nil
}

// writeUnion writes a ["null", T] union: branch 0 when the value is
// absent, else branch 1 and what write writes.
func writeUnion(w *avro.Writer, present bool, write func()) {
	if !present {
		w.WriteLong(0)
		return
	}
	w.WriteLong(1)
	write()
}

func writeOptLong(w *avro.Writer, p *int64) {
	writeUnion(w, p != nil, func() { w.WriteLong(*p) })
}

func writeOptBytes(w *avro.Writer, b []byte) {
	writeUnion(w, b != nil, func() { w.WriteBytes(b) })
}

// writeOptArray writes an optional array (nil: null) as a union: null, or
// the items in one block.
func writeOptArray[T any](w *avro.Writer, items []T, write func(T)) {
	writeUnion(w, items != nil, func() {
		if len(items) > 0 {
			w.WriteLong(int64(len(items)))
			for _, x := range items {
				write(x)
			}
		}
		w.WriteLong(0)
	})
}

func writeIntLongMap(w *avro.Writer, m map[int]int64) {
	writeIntMap(w, m, (*avro.Writer).WriteLong)
}

func writeIntBytesMap(w *avro.Writer, m map[int][]byte) {
	writeIntMap(w, m, (*avro.Writer).WriteBytes)
}

// writeIntMap writes an optional map<int, V> (Iceberg's key-value array of
// field id → value) as a union: null, or the entries sorted by field id.
func writeIntMap[V any](w *avro.Writer, m map[int]V, writeValue func(*avro.Writer, V)) {
	var keys []int
	if m != nil {
		keys = sortedKeys(m)
	}
	writeOptArray(w, keys, func(k int) {
		w.WriteInt(int32(k))
		writeValue(w, m[k])
	})
}

func sortedKeys[V any](m map[int]V) []int {
	var buf [32]int
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (mw *ManifestWriter) writeEntry(e *ManifestEntry) error {
	w := mw.w
	w.WriteInt(int32(e.Status))
	writeOptLong(w, e.SnapshotID)
	writeOptLong(w, e.SequenceNumber)
	writeOptLong(w, e.FileSequenceNumber)
	b, ok := mw.encoded[e.File]
	if !ok {
		mw.fw.Reset(nil)
		if err := mw.writeDataFile(mw.fw, e.File); err != nil {
			return err
		}
		b = slices.Clone(mw.fw.Buffer())
		mw.encoded[e.File] = b
	}
	_, _ = w.Write(b)
	return nil
}

func (mw *ManifestWriter) writeDataFile(w *avro.Writer, f *DataFile) error {
	w.WriteInt(int32(f.Content))
	w.WriteString(f.Path)
	w.WriteString(cmp.Or(f.Format, FormatParquet))
	for j, fld := range mw.partType.Fields {
		if err := appendAvroValue(w, fld.Type, true, f.Partition[j]); err != nil {
			return fmt.Errorf("partition field %s: %w", fld.Name, err)
		}
	}
	w.WriteLong(f.RecordCount)
	w.WriteLong(f.FileSizeBytes)
	writeIntLongMap(w, f.ColumnSizes)
	writeIntLongMap(w, f.ValueCounts)
	writeIntLongMap(w, f.NullValueCounts)
	writeIntLongMap(w, f.NaNValueCounts)
	writeIntBytesMap(w, f.LowerBounds)
	writeIntBytesMap(w, f.UpperBounds)
	writeOptBytes(w, f.KeyMetadata)
	writeOptArray(w, f.SplitOffsets, w.WriteLong)
	writeOptArray(w, f.EqualityIDs, func(id int) { w.WriteInt(int32(id)) })
	writeUnion(w, f.SortOrderID != nil, func() { w.WriteInt(int32(*f.SortOrderID)) })
	if mw.info.FormatVersion >= 3 {
		writeOptLong(w, f.FirstRowID)
	}
	writeUnion(w, f.ReferencedDataFile != "", func() { w.WriteString(f.ReferencedDataFile) })
	if mw.info.FormatVersion >= 3 {
		writeOptLong(w, f.ContentOffset)
		writeOptLong(w, f.ContentSizeInBytes)
	}
	return nil
}

// partitionSummary accumulates a FieldSummary.
type partitionSummary struct {
	null, nan    bool
	lower, upper any
	t            Type
}

func (s *partitionSummary) update(t Type, v any) error {
	s.t = t
	if v == nil {
		s.null = true
		return nil
	}
	switch f := v.(type) {
	case float32:
		if f != f {
			s.nan = true
			return nil
		}
	case float64:
		if f != f {
			s.nan = true
			return nil
		}
	}
	if s.lower == nil {
		s.lower, s.upper = v, v
		return nil
	}
	c, err := CompareValues(t, v, s.lower)
	if err != nil {
		return err
	}
	if c < 0 {
		s.lower = v
	}
	if c, _ = CompareValues(t, v, s.upper); c > 0 {
		s.upper = v
	}
	return nil
}

func (s *partitionSummary) summary() FieldSummary {
	fs := FieldSummary{ContainsNull: s.null}
	if s.t.ID == TypeFloat || s.t.ID == TypeDouble {
		nan := s.nan
		fs.ContainsNaN = &nan
	}
	if s.lower != nil {
		fs.LowerBound, _ = AppendBinary(nil, s.t, s.lower)
		fs.UpperBound, _ = AppendBinary(nil, s.t, s.upper)
	}
	return fs
}

// CompareValues orders two non-null values of type t the way Iceberg does
// (bytes unsigned lexicographic, strings by UTF-8 bytes, -0.0 < +0.0);
// callers keep NaN out, it is not ordered.
func CompareValues(t Type, a, b any) (int, error) {
	switch x := a.(type) {
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0, nil
			case !x:
				return -1, nil
			}
			return 1, nil
		}
	case int32:
		if y, ok := b.(int32); ok {
			return cmp.Compare(x, y), nil
		}
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y), nil
		}
	case float32:
		if y, ok := b.(float32); ok {
			return compareFloat(float64(x), float64(y)), nil
		}
	case float64:
		if y, ok := b.(float64); ok {
			return compareFloat(x, y), nil
		}
	case Decimal:
		if y, ok := b.(Decimal); ok && x.Unscaled != nil && y.Unscaled != nil {
			return x.Unscaled.Cmp(y.Unscaled), nil
		}
	case string:
		if y, ok := b.(string); ok {
			return cmp.Compare(x, y), nil
		}
	case [16]byte:
		if y, ok := b.([16]byte); ok {
			return slices.Compare(x[:], y[:]), nil
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return slices.Compare(x, y), nil
		}
	}
	return 0, fmt.Errorf("%w: cannot compare %T and %T as %s", ErrBadValue, a, b, t)
}

func compareFloat(x, y float64) int {
	if x == 0 && y == 0 {
		sx, sy := math.Signbit(x), math.Signbit(y) // -0 < +0
		switch {
		case sx == sy:
			return 0
		case sx:
			return -1
		}
		return 1
	}
	return cmp.Compare(x, y)
}

// ManifestListInfo is the key-value metadata of a manifest list.
type ManifestListInfo struct {
	FormatVersion    int
	SnapshotID       int64
	ParentSnapshotID *int64
	SequenceNumber   int64
	FirstRowID       *int64 // v3
}

// WriteManifestList encodes a manifest list.
func WriteManifestList(info ManifestListInfo, files []ManifestFile) ([]byte, error) {
	if info.FormatVersion < 2 || info.FormatVersion > 3 {
		return nil, fmt.Errorf("iceberg: manifest lists of format version %d are not written", info.FormatVersion)
	}
	meta := map[string]string{
		"snapshot-id":     strconv.FormatInt(info.SnapshotID, 10),
		"sequence-number": strconv.FormatInt(info.SequenceNumber, 10),
		"format-version":  strconv.Itoa(info.FormatVersion),
	}
	if info.ParentSnapshotID != nil {
		meta["parent-snapshot-id"] = strconv.FormatInt(*info.ParentSnapshotID, 10)
	} else {
		meta["parent-snapshot-id"] = "null"
	}
	if info.FormatVersion >= 3 && info.FirstRowID != nil {
		meta["first-row-id"] = strconv.FormatInt(*info.FirstRowID, 10)
	}
	w := avro.NewWriter(nil, 1024+256*len(files))
	for _, m := range files {
		w.WriteString(m.Path)
		w.WriteLong(m.Length)
		w.WriteInt(int32(m.PartitionSpecID))
		w.WriteInt(int32(m.Content))
		w.WriteLong(m.SequenceNumber)
		w.WriteLong(m.MinSequenceNumber)
		w.WriteLong(m.AddedSnapshotID)
		w.WriteInt(m.AddedFilesCount)
		w.WriteInt(m.ExistingFilesCount)
		w.WriteInt(m.DeletedFilesCount)
		w.WriteLong(m.AddedRowsCount)
		w.WriteLong(m.ExistingRowsCount)
		w.WriteLong(m.DeletedRowsCount)
		writeOptArray(w, m.Partitions, func(p FieldSummary) {
			w.WriteBool(p.ContainsNull)
			writeUnion(w, p.ContainsNaN != nil, func() { w.WriteBool(*p.ContainsNaN) })
			writeOptBytes(w, p.LowerBound)
			writeOptBytes(w, p.UpperBound)
		})
		writeOptBytes(w, m.KeyMetadata)
		if info.FormatVersion >= 3 {
			writeOptLong(w, m.FirstRowID)
		}
	}
	return writeContainer(ManifestListSchema(info.FormatVersion), meta, int64(len(files)), w.Buffer())
}
