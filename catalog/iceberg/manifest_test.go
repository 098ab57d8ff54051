package iceberg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	goiceberg "github.com/apache/iceberg-go"
	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
)

// testSchema has every primitive the materialiser produces plus nested types.
func testSchema() *Schema {
	return &Schema{ID: 3, Fields: []NestedField{
		{ID: 1, Name: "id", Required: true, Type: Primitive(TypeLong)},
		{ID: 2, Name: "ts", Type: Primitive(TypeTimestamp)},
		{ID: 3, Name: "cat", Type: Primitive(TypeString)},
		{ID: 4, Name: "amount", Type: DecimalOf(10, 2)},
		{ID: 5, Name: "u", Type: Primitive(TypeUUID)},
		{ID: 6, Name: "d", Type: Primitive(TypeDate)},
		{ID: 7, Name: "tags", Type: ListOf(8, false, Primitive(TypeString))},
		{ID: 9, Name: "attrs", Type: MapOf(10, Primitive(TypeString), 11, false, Primitive(TypeInt))},
		{ID: 12, Name: "pt", Type: StructOf(
			NestedField{ID: 13, Name: "x", Type: Primitive(TypeDouble)},
			NestedField{ID: 14, Name: "y-coord", Doc: "north", Type: Primitive(TypeFloat)})},
		{ID: 15, Name: "m2", Type: MapOf(16, Primitive(TypeInt), 17, true, Primitive(TypeBinary))},
	}}
}

func testSpec() PartitionSpec {
	return PartitionSpec{ID: 7, Fields: []PartitionField{
		{SourceID: 2, FieldID: 1000, Name: "ts_year", Transform: Year},
		{SourceID: 1, FieldID: 1001, Name: "id_bucket_4", Transform: Bucket(4)},
		{SourceID: 3, FieldID: 1002, Name: "cat", Transform: Identity},
		{SourceID: 4, FieldID: 1003, Name: "amount", Transform: Identity},
		{SourceID: 5, FieldID: 1004, Name: "u", Transform: Identity},
		{SourceID: 6, FieldID: 1005, Name: "d_day", Transform: Day},
	}}
}

func ptr[T any](v T) *T { return &v }

func testEntries() []ManifestEntry {
	lo, _ := AppendBinary(nil, Primitive(TypeLong), int64(-5))
	hi, _ := AppendBinary(nil, Primitive(TypeLong), int64(99))
	return []ManifestEntry{
		{Status: StatusAdded, SnapshotID: ptr[int64](11), SequenceNumber: ptr[int64](11), FileSequenceNumber: ptr[int64](11),
			File: &DataFile{Content: ContentData, Path: "s3://b/t/data/a.parquet", Format: FormatParquet,
				Partition:   []any{int32(54), int32(3), "x", dec("1420"), testUUID, int32(19800)},
				RecordCount: 100, FileSizeBytes: 4096,
				ColumnSizes: map[int]int64{1: 800, 3: 120}, ValueCounts: map[int]int64{1: 100, 3: 100},
				NullValueCounts: map[int]int64{1: 0, 3: 7}, NaNValueCounts: map[int]int64{13: 0},
				LowerBounds: map[int][]byte{1: lo}, UpperBounds: map[int][]byte{1: hi},
				SplitOffsets: []int64{4}, SortOrderID: ptr(0)}},
		{Status: StatusExisting, SnapshotID: ptr[int64](9), SequenceNumber: ptr[int64](9), FileSequenceNumber: ptr[int64](9),
			File: &DataFile{Content: ContentData, Path: "s3://b/t/data/b.parquet", Format: FormatParquet,
				Partition:   []any{nil, int32(0), nil, nil, nil, nil},
				RecordCount: 5, FileSizeBytes: 512}},
		{Status: StatusDeleted, SnapshotID: ptr[int64](11), SequenceNumber: ptr[int64](2), FileSequenceNumber: ptr[int64](2),
			File: &DataFile{Content: ContentData, Path: "s3://b/t/data/c.parquet", Format: FormatParquet,
				Partition:   []any{int32(-1), int32(1), "a", dec("-5"), testUUID, int32(-3)},
				RecordCount: 7, FileSizeBytes: 600}},
	}
}

// writeTestManifest writes testEntries as a manifest of the format
// version; tests and the fuzz seeds share it.
func writeTestManifest(tb testing.TB, version int) ([]byte, ManifestFile) {
	tb.Helper()
	mw, err := NewManifestWriter(ManifestInfo{FormatVersion: version, Content: ManifestData, Schema: testSchema(), Spec: testSpec()})
	if err != nil {
		tb.Fatal(err)
	}
	b, mf, err := mw.Write(testEntries(), 11)
	if err != nil {
		tb.Fatal(err)
	}
	return b, mf
}

func TestManifestSchemasParse(t *testing.T) {
	spec := testSpec()
	pt, err := spec.PartitionType(testSchema())
	if err != nil {
		t.Fatal(err)
	}
	var s avroSchemas
	full, err := s.of(testSchema().AsStruct(), "table")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{2, 3} {
		ms, err := ManifestSchema(v, pt)
		if err != nil {
			t.Fatal(err)
		}
		for name, js := range map[string]string{"manifest": ms, "manifest list": ManifestListSchema(v), "table": full} {
			if _, err := avro.ParseBytesWithCache([]byte(js), "", &avro.SchemaCache{}); err != nil {
				t.Errorf("v%d %s schema does not parse: %v\n%s", v, name, err, js)
			}
		}
	}
	// Field ids on every field, element, key and value.
	for _, want := range []string{`"element-id":8`, `"key-id":10,"value-id":11`, `"name":"key","type":"int","field-id":16`,
		`"name":"y_x2Dcoord"`, `"name":"x","type":["null","double"],"default":null,"field-id":13`} {
		if !strings.Contains(full, want) {
			t.Errorf("table schema lacks %s:\n%s", want, full)
		}
	}
}

// TestManifestReadBack decodes a manifest with hamba/avro's container reader
// and checks the schema, key-value metadata and every field of the entries.
func TestManifestReadBack(t *testing.T) {
	b, mf := writeTestManifest(t, 2)
	dec, err := ocf.NewDecoder(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	meta := dec.Metadata()
	for k, want := range map[string]string{
		"schema-id": "3", "partition-spec-id": "7", "format-version": "2", "content": "data",
		"partition-spec": `[{"source-id":2,"field-id":1000,"name":"ts_year","transform":"year"},{"source-id":1,"field-id":1001,"name":"id_bucket_4","transform":"bucket[4]"},{"source-id":3,"field-id":1002,"name":"cat","transform":"identity"},{"source-id":4,"field-id":1003,"name":"amount","transform":"identity"},{"source-id":5,"field-id":1004,"name":"u","transform":"identity"},{"source-id":6,"field-id":1005,"name":"d_day","transform":"day"}]`,
	} {
		if string(meta[k]) != want {
			t.Errorf("metadata %s = %q, want %q", k, meta[k], want)
		}
	}
	var s Schema
	if err := json.Unmarshal(meta["schema"], &s); err != nil || !s.Equal(testSchema()) || s.ID != 3 {
		t.Errorf("schema metadata %s: %v", meta["schema"], err)
	}
	var rows []map[string]any
	for dec.HasNext() {
		var row map[string]any
		if err := dec.Decode(&row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	if dec.Error() != nil || len(rows) != 3 {
		t.Fatalf("decoded %d rows: %v", len(rows), dec.Error())
	}
	df := rows[0]["data_file"].(map[string]any)
	if df["file_path"] != "s3://b/t/data/a.parquet" || df["record_count"] != int64(100) || rows[0]["status"] != 1 {
		t.Errorf("entry 0 = %v", rows[0])
	}
	part := df["partition"].(map[string]any)
	if part["ts_year"] != 54 || part["cat"] != "x" || part["amount"] == nil {
		t.Errorf("partition = %v", part)
	}
	if mf.AddedFilesCount != 1 || mf.ExistingFilesCount != 1 || mf.DeletedFilesCount != 1 ||
		mf.AddedRowsCount != 100 || mf.ExistingRowsCount != 5 || mf.DeletedRowsCount != 7 || mf.MinSequenceNumber != 9 {
		t.Errorf("manifest file counts %+v", mf)
	}
	// ts_year over all entries: -1..54, one null; bucket never null.
	lo, _ := AppendBinary(nil, Primitive(TypeInt), int32(-1))
	hi, _ := AppendBinary(nil, Primitive(TypeInt), int32(54))
	if p := mf.Partitions[0]; !p.ContainsNull || !bytes.Equal(p.LowerBound, lo) || !bytes.Equal(p.UpperBound, hi) || p.ContainsNaN != nil {
		t.Errorf("ts_year summary %+v", p)
	}
	if p := mf.Partitions[1]; p.ContainsNull {
		t.Errorf("bucket summary %+v", p)
	}

	again, _ := writeTestManifest(t, 2)
	if !bytes.Equal(b, again) {
		t.Error("the same manifest written twice differs")
	}
}

// TestIcebergGoReadsManifests is the independent check: apache/iceberg-go
// parses our manifest list and manifest.
func TestIcebergGoReadsManifests(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			b, mf := writeTestManifest(t, version)
			mf.Path, mf.SequenceNumber, mf.AddedSnapshotID = "s3://b/t/metadata/m0.avro", 11, 11
			list, err := WriteManifestList(ManifestListInfo{FormatVersion: version, SnapshotID: 11, ParentSnapshotID: ptr[int64](9), SequenceNumber: 11, FirstRowID: ptr[int64](0)}, []ManifestFile{mf})
			if err != nil {
				t.Fatal(err)
			}
			files, err := goiceberg.ReadManifestList(bytes.NewReader(list))
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 1 {
				t.Fatalf("%d manifest files", len(files))
			}
			f := files[0]
			if f.FilePath() != mf.Path || f.Length() != int64(len(b)) || f.PartitionSpecID() != 7 || f.SequenceNum() != 11 ||
				f.MinSequenceNum() != 9 || f.SnapshotID() != 11 || f.AddedDataFiles() != 1 || f.ExistingDataFiles() != 1 ||
				f.DeletedDataFiles() != 1 || f.ManifestContent() != goiceberg.ManifestContentData || len(f.Partitions()) != 6 {
				t.Errorf("manifest file = %+v", f)
			}
			entries, err := goiceberg.ReadManifest(f, bytes.NewReader(b), false)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 3 {
				t.Fatalf("%d entries", len(entries))
			}
			e := entries[0]
			df := e.DataFile()
			if e.Status() != goiceberg.EntryStatusADDED || e.SnapshotID() != 11 || e.SequenceNum() != 11 ||
				df.FilePath() != "s3://b/t/data/a.parquet" || df.FileFormat() != goiceberg.ParquetFile || df.Count() != 100 ||
				df.FileSizeBytes() != 4096 || df.ValueCounts()[3] != 100 || df.NullValueCounts()[3] != 7 || df.ColumnSizes()[1] != 800 {
				t.Errorf("entry 0: %+v", df)
			}
			p := df.Partition()
			if p[1000] != int32(54) || p[1001] != int32(3) || p[1002] != "x" || p[1005] != goiceberg.Date(19800) {
				t.Errorf("partition = %#v", p)
			}
			if lo := df.LowerBoundValues()[1]; len(lo) != 8 || lo[0] != 0xfb {
				t.Errorf("lower bound = %x", lo)
			}
			if entries[1].Status() != goiceberg.EntryStatusEXISTING || entries[1].SequenceNum() != 9 || entries[1].DataFile().Partition()[1000] != nil {
				t.Errorf("entry 1: %v %v", entries[1].Status(), entries[1].DataFile().Partition())
			}
			if entries[2].Status() != goiceberg.EntryStatusDELETED || entries[2].SequenceNum() != 2 {
				t.Errorf("entry 2: %v", entries[2].Status())
			}
		})
	}
}

func TestManifestWriterRejects(t *testing.T) {
	mw, err := NewManifestWriter(ManifestInfo{FormatVersion: 2, Content: ManifestDeletes, Schema: testSchema(), Spec: testSpec()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := mw.Write(testEntries(), 1); err == nil {
		t.Error("data files in a delete manifest were accepted")
	}
	mw, _ = NewManifestWriter(ManifestInfo{FormatVersion: 2, Content: ManifestData, Schema: testSchema(), Spec: testSpec()})
	bad := testEntries()[:1]
	bad[0].File.Partition = bad[0].File.Partition[:2]
	if _, _, err := mw.Write(bad, 1); err == nil {
		t.Error("a short partition tuple was accepted")
	}
	bad = testEntries()[:1]
	bad[0].File.Partition[0] = "2024"
	if _, _, err := mw.Write(bad, 1); err == nil {
		t.Error("a string for an int partition field was accepted")
	}
	if _, err := NewManifestWriter(ManifestInfo{FormatVersion: 2, Schema: testSchema(), Spec: PartitionSpec{Fields: []PartitionField{{SourceID: 99, FieldID: 1000, Name: "x", Transform: Identity}}}}); err == nil {
		t.Error("a spec over a missing column was accepted")
	}
}
