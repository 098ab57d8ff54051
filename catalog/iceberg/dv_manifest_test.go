package iceberg

import (
	"bytes"
	"testing"

	goiceberg "github.com/apache/iceberg-go"
)

// TestDeletionVectorManifest writes a v3 delete manifest whose entries are
// deletion vectors in one Puffin file, and reads it back with iceberg-go:
// file_format PUFFIN, content 1, referenced_data_file, content_offset and
// content_size_in_bytes equal to the blob's footer offset and length,
// record_count the cardinality, first_row_id null.
func TestDeletionVectorManifest(t *testing.T) {
	schema := &Schema{ID: 0, Fields: []NestedField{{ID: 1, Name: "id", Required: true, Type: Primitive(TypeLong)}}}
	spec := PartitionSpec{ID: 0, Fields: []PartitionField{}}
	targets := []string{"s3://b/t/data/a.parquet", "s3://b/t/data/b.parquet"}
	var vectors []testVector
	for i, target := range targets {
		vectors = append(vectors, testVector{target, []int64{int64(i), 10, 11}})
	}
	puffin, blobs := writePuffin(t, vectors)
	const loc = "s3://b/t/metadata/5-dvs.puffin"
	var entries []ManifestEntry
	for i, m := range blobs {
		entries = append(entries, ManifestEntry{Status: StatusAdded, SnapshotID: ptr[int64](5), SequenceNumber: ptr[int64](5), FileSequenceNumber: ptr[int64](5),
			File: &DataFile{Content: ContentPositionDeletes, Path: loc, Format: FormatPuffin, Partition: []any{},
				RecordCount: 3, FileSizeBytes: int64(len(puffin)), ReferencedDataFile: targets[i],
				ContentOffset: ptr(m.Offset), ContentSizeInBytes: ptr(m.Length)}})
	}
	mw, err := NewManifestWriter(ManifestInfo{FormatVersion: 3, Content: ManifestDeletes, Schema: schema, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	body, mf, err := mw.Write(entries, 5)
	if err != nil {
		t.Fatal(err)
	}
	mf.Path, mf.SequenceNumber, mf.AddedSnapshotID = "s3://b/t/metadata/m.avro", 5, 5
	list, err := WriteManifestList(ManifestListInfo{FormatVersion: 3, SnapshotID: 5, SequenceNumber: 5, FirstRowID: ptr[int64](0)}, []ManifestFile{mf})
	if err != nil {
		t.Fatal(err)
	}
	files, err := goiceberg.ReadManifestList(bytes.NewReader(list))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].ManifestContent() != goiceberg.ManifestContentDeletes || files[0].FirstRowID() != nil {
		t.Fatalf("manifest list %+v", files)
	}
	read, err := goiceberg.ReadManifest(files[0], bytes.NewReader(body), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != len(blobs) {
		t.Fatalf("%d entries", len(read))
	}
	p, err := ParsePuffin(puffin)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range read {
		df := e.DataFile()
		if df.ContentType() != goiceberg.EntryContentPosDeletes || df.FileFormat() != goiceberg.PuffinFile || df.FilePath() != loc ||
			df.Count() != 3 || df.FileSizeBytes() != int64(len(puffin)) || df.FirstRowID() != nil {
			t.Errorf("entry %d: %+v", i, df)
		}
		if r := df.ReferencedDataFile(); r == nil || *r != targets[i] {
			t.Errorf("entry %d: referenced_data_file %v", i, r)
		}
		off, size := df.ContentOffset(), df.ContentSizeInBytes()
		if off == nil || size == nil || *off != p.Metadata.Blobs[i].Offset || *size != p.Metadata.Blobs[i].Length {
			t.Fatalf("entry %d: content at %v+%v, footer says %d+%d", i, off, size, p.Metadata.Blobs[i].Offset, p.Metadata.Blobs[i].Length)
		}
		v, err := ParseDeletionVector(puffin[*off : *off+*size])
		if err != nil || v.Cardinality() != df.Count() {
			t.Errorf("entry %d: blob at the manifest's range: %v", i, err)
		}
	}

	// Our own reader (the catalog's, for commits) keeps where each blob is:
	// a commit of client deletion vectors needs it (issue 15 item 3).
	ours, err := ReadManifest(body)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range ours.Entries {
		f := e.File
		if f.ContentOffset == nil || f.ContentSizeInBytes == nil || *f.ContentOffset != blobs[i].Offset || *f.ContentSizeInBytes != blobs[i].Length ||
			f.ReferencedDataFile != targets[i] || f.Format != FormatPuffin {
			t.Errorf("ReadManifest entry %d: %s at %v+%v for %q", i, f.Format, f.ContentOffset, f.ContentSizeInBytes, f.ReferencedDataFile)
		}
	}

	// Entries that cannot be a deletion vector are refused.
	for name, f := range map[string]func(*DataFile){
		"no offset":      func(d *DataFile) { d.ContentOffset = nil },
		"no size":        func(d *DataFile) { d.ContentSizeInBytes = nil },
		"no data file":   func(d *DataFile) { d.ReferencedDataFile = "" },
		"not a deletion": func(d *DataFile) { d.Content = ContentEqualityDeletes },
	} {
		bad := *entries[0].File
		f(&bad)
		if _, _, err := mw.Write([]ManifestEntry{{Status: StatusAdded, File: &bad}}, 5); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	v2, err := NewManifestWriter(ManifestInfo{FormatVersion: 2, Content: ManifestDeletes, Schema: schema, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := v2.Write(entries[:1], 5); err == nil {
		t.Error("a v2 manifest took a deletion vector")
	}
}
