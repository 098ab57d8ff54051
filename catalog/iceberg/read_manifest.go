package iceberg

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// ManifestListFile is a manifest list as read: its key-value metadata and
// entries.
type ManifestListFile struct {
	Info  ManifestListInfo
	Files []ManifestFile
}

// ReadManifestList decodes a manifest list written by any Iceberg writer
// (format versions 1 to 3; fields a version lacks keep their zero value,
// which is what the spec says they mean). Codecs null, deflate, snappy and
// zstandard are read.
func ReadManifestList(data []byte) (*ManifestListFile, error) {
	f, err := readAvroFile(data)
	if err != nil {
		return nil, fmt.Errorf("manifest list: %w", err)
	}
	out := &ManifestListFile{}
	out.Info.FormatVersion = metaInt(f.meta, "format-version", 1)
	out.Info.SnapshotID = int64(metaInt(f.meta, "snapshot-id", 0))
	out.Info.SequenceNumber = int64(metaInt(f.meta, "sequence-number", 0))
	if p, ok := f.meta["parent-snapshot-id"]; ok && string(p) != "null" {
		if n, err := strconv.ParseInt(string(p), 10, 64); err == nil {
			out.Info.ParentSnapshotID = &n
		}
	}
	if f.schema.kind != kindRecord {
		return nil, badAvro("manifest list records are not records")
	}
	for i, rec := range f.records {
		r := rec.(*avroRecordValue)
		var m ManifestFile
		var err error
		g := getter{r: r, err: &err}
		m.Path = g.str("manifest_path")
		m.Length = g.long("manifest_length")
		m.PartitionSpecID = int(g.int("partition_spec_id"))
		m.Content = ManifestContent(g.int("content"))
		m.SequenceNumber = g.long("sequence_number")
		m.MinSequenceNumber = g.long("min_sequence_number")
		m.AddedSnapshotID = g.long("added_snapshot_id")
		m.AddedFilesCount = g.int("added_files_count", "added_data_files_count")
		m.ExistingFilesCount = g.int("existing_files_count", "existing_data_files_count")
		m.DeletedFilesCount = g.int("deleted_files_count", "deleted_data_files_count")
		m.AddedRowsCount = g.long("added_rows_count")
		m.ExistingRowsCount = g.long("existing_rows_count")
		m.DeletedRowsCount = g.long("deleted_rows_count")
		m.KeyMetadata = g.bytes("key_metadata")
		m.FirstRowID = g.optLong("first_row_id")
		if parts, ok := r.get("partitions"); ok && parts != nil {
			list, ok := parts.([]any)
			if !ok {
				err = badAvro("partitions is not an array")
			}
			m.Partitions = make([]FieldSummary, 0, len(list))
			for _, p := range list {
				pr, ok := p.(*avroRecordValue)
				if !ok {
					err = badAvro("partition summary is not a record")
					break
				}
				pg := getter{r: pr, err: &err}
				s := FieldSummary{ContainsNull: pg.bool("contains_null"), LowerBound: pg.bytes("lower_bound"), UpperBound: pg.bytes("upper_bound")}
				if v, ok := pr.get("contains_nan"); ok && v != nil {
					b, ok := v.(bool)
					if !ok {
						err = badAvro("contains_nan is not a boolean")
					}
					s.ContainsNaN = &b
				}
				m.Partitions = append(m.Partitions, s)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("manifest list entry %d: %w", i, err)
		}
		if m.Path == "" {
			return nil, fmt.Errorf("manifest list entry %d: %w", i, badAvro("no manifest_path"))
		}
		out.Files = append(out.Files, m)
	}
	return out, nil
}

// ManifestRead is a manifest as read: what its key-value metadata says
// about it, and its entries. Schema is nil when the writer left it out.
type ManifestRead struct {
	FormatVersion int
	Content       ManifestContent
	Schema        *Schema
	Spec          PartitionSpec
	Entries       []ManifestEntry
}

// ReadManifest decodes a manifest. Partition values come back as the Go
// values of the partition field types (see the package documentation), so
// they compare with what ManifestWriter takes; fields are matched to the
// spec by their field ids. Entries keep the snapshot ids and sequence
// numbers as written: nil means inherited from the manifest list entry.
func ReadManifest(data []byte) (*ManifestRead, error) {
	f, err := readAvroFile(data)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	m := &ManifestRead{FormatVersion: metaInt(f.meta, "format-version", 1)}
	if string(f.meta["content"]) == "deletes" {
		m.Content = ManifestDeletes
	}
	if s, ok := f.meta["schema"]; ok {
		m.Schema = &Schema{}
		if err := json.Unmarshal(s, m.Schema); err != nil {
			return nil, fmt.Errorf("manifest: schema: %w", err)
		}
	}
	m.Spec.ID = metaInt(f.meta, "partition-spec-id", 0)
	if s, ok := f.meta["partition-spec"]; ok {
		if err := json.Unmarshal(s, &m.Spec.Fields); err != nil {
			return nil, fmt.Errorf("manifest: partition spec: %w", err)
		}
	}
	// The partition tuple's Iceberg types, by partition field id.
	partTypes := map[int]Type{}
	if m.Schema != nil {
		if pt, err := m.Spec.PartitionType(m.Schema); err == nil {
			for _, f := range pt.Fields {
				partTypes[f.ID] = f.Type
			}
		}
	}
	if f.schema.kind != kindRecord {
		return nil, badAvro("manifest records are not records")
	}
	for i, rec := range f.records {
		e, err := readEntry(rec.(*avroRecordValue), m, partTypes)
		if err != nil {
			return nil, fmt.Errorf("manifest entry %d: %w", i, err)
		}
		m.Entries = append(m.Entries, e)
	}
	return m, nil
}

func readEntry(r *avroRecordValue, m *ManifestRead, partTypes map[int]Type) (ManifestEntry, error) {
	var err error
	g := getter{r: r, err: &err}
	e := ManifestEntry{Status: EntryStatus(g.int("status"))}
	e.SnapshotID = g.optLong("snapshot_id")
	e.SequenceNumber = g.optLong("sequence_number")
	e.FileSequenceNumber = g.optLong("file_sequence_number")
	raw, ok := r.get("data_file")
	dr, isRec := raw.(*avroRecordValue)
	if !ok || !isRec {
		return e, badAvro("no data_file record")
	}
	if e.Status < StatusExisting || e.Status > StatusDeleted {
		return e, badAvro("status %d", e.Status)
	}
	dg := getter{r: dr, err: &err}
	f := &DataFile{
		Content:            FileContent(dg.int("content")),
		Path:               dg.str("file_path"),
		Format:             dg.str("file_format"),
		RecordCount:        dg.long("record_count"),
		FileSizeBytes:      dg.long("file_size_in_bytes"),
		ColumnSizes:        dg.intLongMap("column_sizes"),
		ValueCounts:        dg.intLongMap("value_counts"),
		NullValueCounts:    dg.intLongMap("null_value_counts"),
		NaNValueCounts:     dg.intLongMap("nan_value_counts"),
		LowerBounds:        dg.intBytesMap("lower_bounds"),
		UpperBounds:        dg.intBytesMap("upper_bounds"),
		KeyMetadata:        dg.bytes("key_metadata"),
		SplitOffsets:       dg.longs("split_offsets"),
		EqualityIDs:        dg.ints("equality_ids"),
		ReferencedDataFile: dg.str("referenced_data_file"),
		FirstRowID:         dg.optLong("first_row_id"),
		// A deletion vector's blob in its Puffin file (format version 3).
		ContentOffset:      dg.optLong("content_offset"),
		ContentSizeInBytes: dg.optLong("content_size_in_bytes"),
	}
	if so := dg.optLong("sort_order_id"); so != nil {
		n := int(*so)
		f.SortOrderID = &n
	}
	if err != nil {
		return e, err
	}
	if f.Content < ContentData || f.Content > ContentEqualityDeletes {
		return e, badAvro("data_file content %d", f.Content)
	}
	if f.Path == "" {
		return e, badAvro("data_file without file_path")
	}
	part, err := readPartition(dr, m.Spec, partTypes)
	if err != nil {
		return e, fmt.Errorf("%s: %w", f.Path, err)
	}
	f.Partition = part
	e.File = f
	return e, nil
}

// readPartition returns the partition tuple in spec field order.
func readPartition(dr *avroRecordValue, spec PartitionSpec, types map[int]Type) ([]any, error) {
	raw, ok := dr.get("partition")
	out := make([]any, len(spec.Fields))
	if !ok || raw == nil {
		if len(spec.Fields) == 0 {
			return out, nil
		}
		return nil, badAvro("no partition record for a spec with %d fields", len(spec.Fields))
	}
	pr, ok := raw.(*avroRecordValue)
	if !ok {
		return nil, badAvro("partition is not a record")
	}
	for i, pf := range spec.Fields {
		j := -1
		for k, af := range pr.t.fields {
			if af.id == pf.FieldID {
				j = k
				break
			}
		}
		if j < 0 {
			j = pr.t.field(AvroName(pf.Name)) // writers that drop field ids
		}
		if j < 0 {
			return nil, badAvro("partition has no field %d (%s)", pf.FieldID, pf.Name)
		}
		t, known := types[pf.FieldID]
		v, err := partitionValue(pr.vals[j], t, known)
		if err != nil {
			return nil, fmt.Errorf("partition field %s: %w", pf.Name, err)
		}
		out[i] = v
	}
	return out, nil
}

// partitionValue turns a raw Avro value into the Go value of Iceberg type
// t (see the package documentation).
func partitionValue(v any, t Type, known bool) (any, error) {
	if v == nil {
		return nil, nil
	}
	if !known {
		if b, ok := v.([]byte); ok {
			return append([]byte(nil), b...), nil
		}
		return v, nil
	}
	switch t.ID {
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case TypeInt, TypeDate:
		if n, ok := v.(int32); ok {
			return n, nil
		}
	case TypeLong, TypeTime, TypeTimestamp, TypeTimestampTZ, TypeTimestampNS, TypeTimestampTZNS:
		switch n := v.(type) {
		case int64:
			return n, nil
		case int32: // an int written where a long is read: Avro promotes
			return int64(n), nil
		}
	case TypeFloat:
		if f, ok := v.(float32); ok {
			return f, nil
		}
	case TypeDouble:
		switch f := v.(type) {
		case float64:
			return f, nil
		case float32:
			return float64(f), nil
		}
	case TypeString:
		switch s := v.(type) {
		case string:
			return s, nil
		case []byte:
			return string(s), nil
		}
	case TypeUUID:
		if b, ok := v.([]byte); ok && len(b) == 16 {
			return [16]byte(b), nil
		}
	case TypeFixed, TypeBinary:
		if b, ok := v.([]byte); ok {
			return append([]byte(nil), b...), nil
		}
	case TypeDecimal:
		if b, ok := v.([]byte); ok && len(b) > 0 {
			return Decimal{Unscaled: FromBigEndian(b)}, nil
		}
	}
	return nil, badAvro("%T is not a %s value", v, t)
}

func metaInt(meta map[string][]byte, key string, def int) int {
	if v, ok := meta[key]; ok {
		if n, err := strconv.Atoi(string(v)); err == nil {
			return n
		}
	}
	return def
}

// getter reads typed record fields, remembering the first type error.
// Absent fields and nulls read as zero values.
type getter struct {
	r   *avroRecordValue
	err *error
}

func (g getter) fail(name string, v any, want string) {
	if *g.err == nil {
		*g.err = badAvro("field %s is %T, want %s", name, v, want)
	}
}

func (g getter) value(names ...string) (string, any) {
	for _, n := range names {
		if v, ok := g.r.get(n); ok {
			return n, v
		}
	}
	return names[0], nil
}

func (g getter) str(names ...string) string {
	n, v := g.value(names...)
	switch s := v.(type) {
	case nil:
	case string:
		return s
	default:
		g.fail(n, v, "string")
	}
	return ""
}

func (g getter) bool(names ...string) bool {
	n, v := g.value(names...)
	switch b := v.(type) {
	case nil:
	case bool:
		return b
	default:
		g.fail(n, v, "boolean")
	}
	return false
}

func (g getter) int(names ...string) int32 {
	n, v := g.value(names...)
	switch x := v.(type) {
	case nil:
	case int32:
		return x
	case int64:
		if int64(int32(x)) == x {
			return int32(x)
		}
		g.fail(n, v, "int")
	default:
		g.fail(n, v, "int")
	}
	return 0
}

func (g getter) long(names ...string) int64 {
	if p := g.optLong(names...); p != nil {
		return *p
	}
	return 0
}

func (g getter) optLong(names ...string) *int64 {
	n, v := g.value(names...)
	switch x := v.(type) {
	case nil:
	case int64:
		return &x
	case int32:
		y := int64(x)
		return &y
	default:
		g.fail(n, v, "long")
	}
	return nil
}

func (g getter) bytes(names ...string) []byte {
	n, v := g.value(names...)
	switch b := v.(type) {
	case nil:
	case []byte:
		return append([]byte(nil), b...)
	default:
		g.fail(n, v, "bytes")
	}
	return nil
}

func (g getter) list(name string) []any {
	v, _ := g.r.get(name)
	switch l := v.(type) {
	case nil:
	case []any:
		return l
	default:
		g.fail(name, v, "array")
	}
	return nil
}

func (g getter) longs(name string) []int64 {
	l := g.list(name)
	if l == nil {
		return nil
	}
	out := make([]int64, 0, len(l))
	for _, v := range l {
		switch x := v.(type) {
		case int64:
			out = append(out, x)
		case int32:
			out = append(out, int64(x))
		default:
			g.fail(name, v, "long")
			return nil
		}
	}
	return out
}

func (g getter) ints(name string) []int {
	l := g.list(name)
	if l == nil {
		return nil
	}
	out := make([]int, 0, len(l))
	for _, v := range l {
		switch x := v.(type) {
		case int32:
			out = append(out, int(x))
		case int64:
			// PyIceberg (0.12) writes equality_ids as longs, not the
			// spec's ints; a field id is an int either way.
			if x < math.MinInt32 || x > math.MaxInt32 {
				g.fail(name, v, "int")
				return nil
			}
			out = append(out, int(x))
		default:
			g.fail(name, v, "int")
			return nil
		}
	}
	return out
}

// kv walks an Iceberg int-keyed map: an array of key/value records.
func (g getter) kv(name string, each func(k int, v any)) bool {
	l := g.list(name)
	if l == nil {
		return false
	}
	for _, item := range l {
		r, ok := item.(*avroRecordValue)
		if !ok {
			g.fail(name, item, "key/value record")
			return false
		}
		k, _ := r.get("key")
		kn, ok := k.(int32)
		if !ok {
			g.fail(name+".key", k, "int")
			return false
		}
		v, _ := r.get("value")
		each(int(kn), v)
	}
	return true
}

func (g getter) intLongMap(name string) map[int]int64 {
	m := map[int]int64{}
	if !g.kv(name, func(k int, v any) {
		switch x := v.(type) {
		case int64:
			m[k] = x
		case int32:
			m[k] = int64(x)
		default:
			g.fail(name+".value", v, "long")
		}
	}) {
		return nil
	}
	return m
}

func (g getter) intBytesMap(name string) map[int][]byte {
	m := map[int][]byte{}
	if !g.kv(name, func(k int, v any) {
		b, ok := v.([]byte)
		if !ok {
			g.fail(name+".value", v, "bytes")
			return
		}
		m[k] = append([]byte(nil), b...)
	}) {
		return nil
	}
	return m
}
