package iceberg

import (
	"bytes"
	"errors"
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
)

// TestReadManifestRoundTrip: what ManifestWriter writes, ReadManifest reads
// back entry for entry, partition values as the same Go values.
func TestReadManifestRoundTrip(t *testing.T) {
	for _, version := range []int{2, 3} {
		b, _ := writeTestManifest(t, version)
		m, err := ReadManifest(b)
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if m.FormatVersion != version || m.Content != ManifestData || m.Spec.ID != testSpec().ID {
			t.Errorf("v%d: header: version %d content %v spec %d", version, m.FormatVersion, m.Content, m.Spec.ID)
		}
		if !reflect.DeepEqual(m.Spec.Fields, testSpec().Fields) {
			t.Errorf("v%d: spec fields %+v", version, m.Spec.Fields)
		}
		if m.Schema == nil || !m.Schema.Equal(testSchema()) {
			t.Errorf("v%d: schema %+v", version, m.Schema)
		}
		want := testEntries()
		if len(m.Entries) != len(want) {
			t.Fatalf("v%d: %d entries, want %d", version, len(m.Entries), len(want))
		}
		for i := range want {
			got, w := m.Entries[i], want[i]
			normaliseFile(w.File)
			if !reflect.DeepEqual(got, w) {
				t.Errorf("v%d entry %d:\n got %+v\n     %+v\nwant %+v\n     %+v", version, i, got, *got.File, w, *w.File)
			}
		}
	}
}

// normaliseFile makes a written DataFile compare with its read-back form:
// absent metric maps read as nil.
func normaliseFile(f *DataFile) {
	if f.Format == "" {
		f.Format = FormatParquet
	}
}

func TestReadManifestListRoundTrip(t *testing.T) {
	parent := int64(41)
	nan := true
	files := []ManifestFile{
		{Path: "s3://b/t/metadata/m0.avro", Length: 1234, PartitionSpecID: 7, Content: ManifestData, SequenceNumber: 42,
			MinSequenceNumber: 3, AddedSnapshotID: 42, AddedFilesCount: 2, ExistingFilesCount: 1, DeletedFilesCount: 0,
			AddedRowsCount: 10, ExistingRowsCount: 5, DeletedRowsCount: 0,
			Partitions: []FieldSummary{{ContainsNull: true, LowerBound: []byte{1}, UpperBound: []byte{9}}, {ContainsNaN: &nan}}},
		{Path: "s3://b/t/metadata/m1.avro", Length: 99, PartitionSpecID: 0, Content: ManifestDeletes, SequenceNumber: 40,
			MinSequenceNumber: 40, AddedSnapshotID: 40, DeletedFilesCount: 1, DeletedRowsCount: 4, Partitions: []FieldSummary{}},
	}
	for _, version := range []int{2, 3} {
		b, err := WriteManifestList(ManifestListInfo{FormatVersion: version, SnapshotID: 42, ParentSnapshotID: &parent, SequenceNumber: 42}, files)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ReadManifestList(b)
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if l.Info.FormatVersion != version || l.Info.SnapshotID != 42 || l.Info.SequenceNumber != 42 || l.Info.ParentSnapshotID == nil || *l.Info.ParentSnapshotID != 41 {
			t.Errorf("v%d: info %+v", version, l.Info)
		}
		if !reflect.DeepEqual(l.Files, files) {
			t.Errorf("v%d:\n got %+v\nwant %+v", version, l.Files, files)
		}
	}
}

// TestReadPyIcebergManifest reads files PyIceberg 0.12 wrote with its
// default deflate codec (testdata/pyiceberg_manifest.py).
func TestReadPyIcebergManifest(t *testing.T) {
	b, err := os.ReadFile("testdata/pyiceberg-manifest.avro")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.FormatVersion != 2 || m.Spec.ID != 3 || len(m.Spec.Fields) != 6 || m.Schema == nil || len(m.Schema.Fields) != 6 {
		t.Fatalf("header: %+v", m)
	}
	if len(m.Entries) != 2 {
		t.Fatalf("%d entries", len(m.Entries))
	}
	e := m.Entries[0]
	if e.Status != StatusAdded || e.SnapshotID == nil || *e.SnapshotID != 7302548421370193458 || e.SequenceNumber != nil {
		t.Errorf("entry: %+v", e)
	}
	f := e.File
	u := [16]byte{0x6a, 0x1f, 0x3a, 0x7c, 0x1b, 0x2c, 0x4d, 0x3e, 0x8f, 0x90, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc}
	wantPart := []any{int32(19724), int32(3), "books", Decimal{Unscaled: big.NewInt(1250)}, u, "bo"}
	if !reflect.DeepEqual(f.Partition, wantPart) {
		t.Errorf("partition %#v, want %#v", f.Partition, wantPart)
	}
	if f.Path != "s3://lake/data/ns/t/data/ts_day=2024-01-02/00000-0-a.parquet" || f.Format != FormatParquet ||
		f.RecordCount != 3 || f.FileSizeBytes != 1234 || f.Content != ContentData {
		t.Errorf("file: %+v", f)
	}
	if f.NullValueCounts[3] != 1 || f.ValueCounts[1] != 3 || f.ColumnSizes[3] != 30 || !bytes.Equal(f.UpperBounds[3], []byte("z")) {
		t.Errorf("metrics: %+v", f)
	}
	if lo, _ := DecodeBinary(Primitive(TypeLong), f.LowerBounds[1]); lo != int64(5) {
		t.Errorf("lower bound of id: %v", lo)
	}
	if f.SortOrderID == nil || *f.SortOrderID != 0 || !reflect.DeepEqual(f.SplitOffsets, []int64{4}) {
		t.Errorf("sort order / split offsets: %v %v", f.SortOrderID, f.SplitOffsets)
	}
	if p := m.Entries[1].File.Partition; !reflect.DeepEqual(p, []any{nil, int32(0), nil, nil, nil, nil}) {
		t.Errorf("null partition values: %#v", p)
	}

	lb, err := os.ReadFile("testdata/pyiceberg-manifest-list.avro")
	if err != nil {
		t.Fatal(err)
	}
	l, err := ReadManifestList(lb)
	if err != nil {
		t.Fatal(err)
	}
	if l.Info.SnapshotID != 7302548421370193458 || l.Info.SequenceNumber != 5 || l.Info.ParentSnapshotID == nil || *l.Info.ParentSnapshotID != 42 {
		t.Errorf("list info %+v", l.Info)
	}
	if len(l.Files) != 1 || !strings.HasSuffix(l.Files[0].Path, "pyiceberg-manifest.avro") || l.Files[0].AddedFilesCount != 2 ||
		l.Files[0].AddedRowsCount != 4 || l.Files[0].SequenceNumber != 5 || l.Files[0].AddedSnapshotID != 7302548421370193458 ||
		len(l.Files[0].Partitions) != 6 || !l.Files[0].Partitions[0].ContainsNull {
		t.Errorf("list entries %+v", l.Files)
	}
}

// TestReadAvroCodecs reads the same records through each codec hamba/avro
// writes.
func TestReadAvroCodecs(t *testing.T) {
	const schema = `{"type":"record","name":"r","fields":[{"name":"a","type":"long","field-id":1},{"name":"b","type":["null","string"],"field-id":2}]}`
	type rec struct {
		A int64   `avro:"a"`
		B *string `avro:"b"`
	}
	s := "x"
	for _, codec := range []ocf.CodecName{ocf.Null, ocf.Deflate, ocf.Snappy, ocf.ZStandard} {
		var buf bytes.Buffer
		enc, err := ocf.NewEncoder(schema, &buf, ocf.WithCodec(codec), ocf.WithBlockLength(2))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			r := rec{A: int64(i) * -1000}
			if i%2 == 0 {
				r.B = &s
			}
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := readAvroFile(buf.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		if len(f.records) != 5 {
			t.Fatalf("%s: %d records", codec, len(f.records))
		}
		for i, v := range f.records {
			r := v.(*avroRecordValue)
			a, _ := r.get("a")
			b, _ := r.get("b")
			var wantB any
			if i%2 == 0 {
				wantB = "x"
			}
			if a != int64(i)*-1000 || b != wantB {
				t.Errorf("%s record %d: a=%v b=%v", codec, i, a, b)
			}
		}
	}
}

func TestReadAvroRejects(t *testing.T) {
	good, _ := writeTestManifest(t, 2)
	cases := map[string][]byte{
		"empty":          nil,
		"not avro":       []byte("PAR1 not avro at all"),
		"truncated":      good[:len(good)-20],
		"bad sync":       append(good[:len(good)-1:len(good)-1], good[len(good)-1]^0xff),
		"header only":    good[:40],
		"unknown codec":  avroWithCodec(t, "lzma"),
		"garbage schema": append([]byte("Obj\x01\x02\x16avro.schema\x06{{{"), make([]byte, 17)...),
	}
	for name, b := range cases {
		if _, err := ReadManifest(b); !errors.Is(err, ErrBadAvro) {
			t.Errorf("%s: %v, want ErrBadAvro", name, err)
		}
	}
}

func avroWithCodec(t *testing.T, codec string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := avro.NewWriter(&buf, 256)
	w.Write(avroOCFMagic)
	w.WriteLong(2)
	w.WriteString("avro.schema")
	w.WriteBytes([]byte(`"long"`))
	w.WriteString("avro.codec")
	w.WriteBytes([]byte(codec))
	w.WriteLong(0)
	w.Write(make([]byte, 16))
	w.WriteLong(1)
	w.WriteLong(1)
	w.Write([]byte{2})
	w.Write(make([]byte, 16))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzReadManifest: client-written manifests are untrusted; no input may
// panic, hang or allocate beyond the limits.
func FuzzReadManifest(f *testing.F) {
	for _, v := range []int{2, 3} {
		b, _ := writeTestManifest(f, v)
		f.Add(b)
	}
	if b, err := os.ReadFile("testdata/pyiceberg-manifest.avro"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadManifest(data)
		if err == nil && m == nil {
			t.Fatal("nil manifest without an error")
		}
	})
}

func FuzzReadManifestList(f *testing.F) {
	b, _ := WriteManifestList(ManifestListInfo{FormatVersion: 2, SnapshotID: 1, SequenceNumber: 1},
		[]ManifestFile{{Path: "s3://b/m.avro", Partitions: []FieldSummary{{ContainsNull: true}}}})
	f.Add(b)
	if b, err := os.ReadFile("testdata/pyiceberg-manifest-list.avro"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ReadManifestList(data)
		if err == nil && l == nil {
			t.Fatal("nil manifest list without an error")
		}
	})
}

func BenchmarkReadManifest(b *testing.B) {
	mw, err := NewManifestWriter(ManifestInfo{FormatVersion: 2, Content: ManifestData, Schema: testSchema(), Spec: testSpec()})
	if err != nil {
		b.Fatal(err)
	}
	var entries []ManifestEntry
	for range 100 {
		entries = append(entries, testEntries()...)
	}
	data, _, err := mw.Write(entries, 11)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ReadManifest(data); err != nil {
			b.Fatal(err)
		}
	}
}
