package iceberg

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// -update rewrites the golden files (testsupport.TestdataGolden).
var _ = flag.Bool("update", false, "rewrite golden files")

func testMetadata() *TableMetadata {
	s0 := &Schema{ID: 1, Fields: []NestedField{
		{ID: 1, Name: "id", Type: Primitive(TypeLong)},
		{ID: 2, Name: "ts", Type: Primitive(TypeTimestamp)},
	}}
	s1 := testSchema()
	return &TableMetadata{
		FormatVersion:      2,
		TableUUID:          "0195a3c2-0000-7000-8000-00000000002a",
		Location:           "s3://lake/main/events",
		LastSequenceNumber: 5,
		LastUpdatedMS:      1735689600000,
		LastColumnID:       17,
		Schemas:            []*Schema{s0, s1},
		CurrentSchemaID:    3,
		PartitionSpecs: []PartitionSpec{{ID: 0}, {ID: 4, Fields: []PartitionField{
			{SourceID: 2, FieldID: 1000, Name: "ts_year", Transform: Year},
			{SourceID: 1, FieldID: 1001, Name: "id_bucket_8", Transform: Bucket(8)},
		}}},
		DefaultSpecID:   4,
		LastPartitionID: 1001,
		Snapshots: []Snapshot{
			{SnapshotID: 3, SequenceNumber: 3, TimestampMS: 1735689500000, ManifestList: "s3://lake/main/events/metadata/snap-3-a.avro",
				Summary: map[string]string{"operation": OpAppend, "added-data-files": "2", "added-records": "10"}, SchemaID: ptr(1)},
			{SnapshotID: 5, ParentSnapshotID: ptr[int64](3), SequenceNumber: 5, TimestampMS: 1735689600000,
				ManifestList: "s3://lake/main/events/metadata/snap-5-b.avro",
				Summary:      map[string]string{"operation": OpDelete, "added-delete-files": "1"}, SchemaID: ptr(3)},
		},
		SnapshotLog:       []SnapshotLogEntry{{SnapshotID: 3, TimestampMS: 1735689500000}, {SnapshotID: 5, TimestampMS: 1735689600000}},
		SortOrders:        []SortOrder{Unsorted},
		CurrentSnapshotID: ptr[int64](5),
		Refs:              map[string]SnapshotRef{MainBranch: {SnapshotID: 5, Type: "branch"}},
	}
}

func TestMetadataGolden(t *testing.T) {
	md := testMetadata()
	if err := md.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := md.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	testsupport.TestdataGolden(t, "metadata_v2.json", b)

	// iceberg-go reads it back with the same schemas, specs and snapshots.
	got, err := table.ParseMetadataBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 2 || got.TableUUID().String() != md.TableUUID || got.Location() != md.Location ||
		got.CurrentSchema().ID != 3 || got.LastColumnID() != 17 || got.DefaultPartitionSpec() != 4 ||
		got.CurrentSnapshot().SnapshotID != 5 || *got.CurrentSnapshot().ParentSnapshotID != 3 ||
		got.CurrentSnapshot().Summary.Operation != table.OpDelete || len(got.Snapshots()) != 2 {
		t.Errorf("iceberg-go read %+v", got)
	}
	if f, ok := got.CurrentSchema().FindFieldByID(14); !ok || f.Name != "y-coord" || f.Doc != "north" {
		t.Errorf("field 14 = %+v", f)
	}
	spec := got.PartitionSpecByID(4)
	if spec == nil || spec.NumFields() != 2 || spec.Field(1).Transform.String() != "bucket[8]" {
		t.Errorf("spec 4 = %v", spec)
	}

	// And so do we.
	var back TableMetadata
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := back.MarshalIndent()
	if !bytes.Equal(again, b) {
		t.Errorf("re-marshalled metadata differs:\n%s", again)
	}
}

func TestMetadataWithoutSnapshots(t *testing.T) {
	md := testMetadata()
	md.Snapshots, md.SnapshotLog, md.CurrentSnapshotID, md.Refs = nil, nil, nil, nil
	if err := md.Validate(); err != nil {
		t.Fatal(err)
	}
	b, _ := md.MarshalIndent()
	if !bytes.Contains(b, []byte(`"snapshots": []`)) || bytes.Contains(b, []byte("current-snapshot-id")) {
		t.Errorf("empty table metadata:\n%s", b)
	}
	got, err := table.ParseMetadataBytes(b)
	if err != nil || got.CurrentSnapshot() != nil {
		t.Errorf("iceberg-go: %v, %v", got, err)
	}
}

func TestMetadataValidate(t *testing.T) {
	for name, mutate := range map[string]func(*TableMetadata){
		"unknown current schema": func(m *TableMetadata) { m.CurrentSchemaID = 9 },
		"unknown default spec":   func(m *TableMetadata) { m.DefaultSpecID = 9 },
		"main elsewhere":         func(m *TableMetadata) { m.Refs[MainBranch] = SnapshotRef{SnapshotID: 3, Type: "branch"} },
		"seq beyond last":        func(m *TableMetadata) { m.LastSequenceNumber = 4 },
		"column beyond last":     func(m *TableMetadata) { m.LastColumnID = 5 },
		"partition id beyond":    func(m *TableMetadata) { m.LastPartitionID = 1000 },
		"no operation":           func(m *TableMetadata) { m.Snapshots[0].Summary = map[string]string{} },
		"v3 type in v2": func(m *TableMetadata) {
			m.Schemas[0].Fields = append(m.Schemas[0].Fields, NestedField{ID: 3, Name: "n", Type: Primitive(TypeTimestampNS)})
		},
	} {
		md := testMetadata()
		mutate(md)
		if err := md.Validate(); !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}

func TestSchemaJSON(t *testing.T) {
	s := testSchema()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	testsupport.TestdataGolden(t, "schema.json", append(b, '\n'))
	var back Schema
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) || back.ID != s.ID {
		t.Errorf("round trip: %s", back.AsStruct())
	}
	if s.HighestFieldID() != 17 || s.FindField(16).Name != "key" || s.FindField(99) != nil {
		t.Error("HighestFieldID/FindField")
	}
	for _, in := range []string{"decimal(9, 2)", " fixed[16] ", "timestamptz_ns", "UUID"} {
		if _, err := ParsePrimitive(in); err != nil {
			t.Errorf("ParsePrimitive(%q): %v", in, err)
		}
	}
	for _, in := range []string{"decimal(39,0)", "fixed[0]", "int64", "struct"} {
		if _, err := ParsePrimitive(in); !errors.Is(err, ErrBadType) {
			t.Errorf("ParsePrimitive(%q) = %v, want ErrBadType", in, err)
		}
	}
}

// FuzzSchemaJSON: whatever schema JSON parses must survive a round trip.
func FuzzSchemaJSON(f *testing.F) {
	b, _ := json.Marshal(testSchema())
	f.Add(b)
	f.Add([]byte(`{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a","required":true,"type":"decimal(9, 2)"}]}`))
	f.Add([]byte(`{"fields":[{"id":1,"name":"m","type":{"type":"map","key-id":2,"key":"string","value-id":3,"value":"fixed[4]"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Schema
		if json.Unmarshal(data, &s) != nil {
			return
		}
		out, err := json.Marshal(&s)
		if err != nil {
			return // e.g. a list without an element: parsed but not writable
		}
		var back Schema
		if err := json.Unmarshal(out, &back); err != nil || !back.Equal(&s) || back.ID != s.ID {
			t.Fatalf("round trip of %s: %s, %v", data, out, err)
		}
	})
}

func FuzzParseTransform(f *testing.F) {
	for _, s := range []string{"identity", "bucket[16]", "truncate[4]", "void", "bucket[0]", "year"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := ParseTransform(s)
		if err != nil {
			return
		}
		if again, err := ParseTransform(tr.String()); err != nil || again != tr {
			t.Fatalf("%q -> %v -> %v, %v", s, tr, again, err)
		}
	})
}
