package materialize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	goiceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

func sp(s string) *string { return &s }

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func snapshots(n int64, changes map[int64]string) []ducklake.Snapshot {
	var out []ducklake.Snapshot
	for i := int64(0); i <= n; i++ {
		out = append(out, ducklake.Snapshot{ID: i, Time: t0.Add(time.Duration(i) * time.Minute), SchemaVersion: min(i, 2), Changes: changes[i]})
	}
	return out
}

// eventsHistory is a small table's history, written by hand after what
// DuckDB 1.5 records (see the integration test for the real thing):
//
//	1 CREATE TABLE ev (id BIGINT, ts TIMESTAMP, cat VARCHAR)
//	2 ALTER TABLE ev SET PARTITIONED BY (year(ts), bucket(4, id))
//	3 INSERT: files A (2023, bucket 1) and B (2024, bucket 2)
//	4 INSERT (inlined): two rows
//	5 DELETE: a delete file for A, an inlined deletion in B, one inlined row
//	6 UPDATE: A replaced by C
func eventsHistory() *History {
	cols := []ducklake.Column{
		{ID: 1, Begin: 1, TableID: 1, Order: 1, Name: "id", Type: "int64", NullsAllowed: true},
		{ID: 2, Begin: 1, TableID: 1, Order: 2, Name: "ts", Type: "timestamp", NullsAllowed: true},
		{ID: 3, Begin: 1, TableID: 1, Order: 3, Name: "cat", Type: "varchar", NullsAllowed: true},
	}
	fields, _ := ducklake.BuildFields(cols)
	part := func(y, b string) []ducklake.FilePartitionValue {
		return []ducklake.FilePartitionValue{{KeyIndex: 0, Value: y}, {KeyIndex: 1, Value: b}}
	}
	base := "s3://lake/main/ev/"
	return &History{
		Table: ducklake.Table{ID: 1, UUID: "01938a4e-0000-7000-8000-000000000001", Begin: 1, SchemaID: 0, Name: "ev", Path: base},
		Snapshots: snapshots(6, map[int64]string{1: `created_table:"main"."ev"`, 2: "altered_table:1", 3: "inserted_into_table:1",
			4: "inlined_insert:1", 5: "deleted_from_table:1,inlined_delete:1", 6: "inserted_into_table:1,deleted_from_table:1"}),
		Columns: cols,
		Partitions: []ducklake.PartitionInfo{{ID: 2, TableID: 1, Begin: 2, Columns: []ducklake.PartitionColumn{
			{KeyIndex: 0, ColumnID: 2, Transform: "year"}, {KeyIndex: 1, ColumnID: 1, Transform: "bucket(4)"}}}},
		DataFiles: []ducklake.DataFile{
			{ID: 10, TableID: 1, Begin: 3, End: 6, Path: base + "year=2023/bucket=1/a.parquet", Format: "parquet", RecordCount: 100, FileSizeBytes: 2000, PartitionID: 2, PartitionValues: part("2023", "1")},
			{ID: 11, TableID: 1, Begin: 3, Path: base + "year=2024/bucket=2/b.parquet", Format: "parquet", RecordCount: 50, FileSizeBytes: 1000, PartitionID: 2, PartitionValues: part("2024", "2")},
			{ID: 12, TableID: 1, Begin: 6, Path: base + "year=2023/bucket=1/c.parquet", Format: "parquet", RecordCount: 98, FileSizeBytes: 1900, PartitionID: 2, PartitionValues: part("2023", "1")},
		},
		DeleteFiles: []ducklake.DeleteFile{
			{ID: 20, TableID: 1, Begin: 5, DataFileID: 10, Path: base + "a-delete.parquet", Format: "parquet", DeleteCount: 2, FileSizeBytes: 300},
		},
		Stats: []ducklake.FileColumnStats{
			{DataFileID: 10, ColumnID: 1, ColumnSizeBytes: 800, ValueCount: 100, NullCount: 0, Min: sp("0"), Max: sp("99")},
			{DataFileID: 10, ColumnID: 2, ColumnSizeBytes: 900, ValueCount: 100, NullCount: 0, Min: sp("2023-06-01 00:00:00"), Max: sp("2023-12-31 23:00:00")},
			{DataFileID: 10, ColumnID: 3, ColumnSizeBytes: 100, ValueCount: 90, NullCount: 10, Min: sp("aardvark-aardvark-aardvark"), Max: sp("zebra")},
			{DataFileID: 11, ColumnID: 1, ValueCount: 50, NullCount: 0, Min: sp("100"), Max: sp("149"), ColumnSizeBytes: -1},
		},
		// What a-delete.parquet deletes (LoadDeletePositions reads it).
		DeletePositions: map[int64][]DeletedPosition{20: {{Pos: 9}, {Pos: 3}}},
		InlinedDeletes:  []InlinedDelete{{DataFileID: 11, Pos: 7, Begin: 5}},
		Inlined: []ducklake.InlinedData{{
			InlinedTable: ducklake.InlinedTable{TableID: 1, Name: "ducklake_inlined_data_1_2", SchemaVersion: 2},
			Columns:      fields,
			Rows: []ducklake.InlinedRow{
				{RowID: 150, Begin: 4, Values: []any{int64(1000), time.Date(2024, 2, 2, 3, 4, 5, 0, time.UTC), "x"}},
				{RowID: 151, Begin: 4, End: 5, Values: []any{int64(1001), nil, "y"}},
			},
		}},
	}
}

func buildEvents(t *testing.T, snap int64) *Output {
	t.Helper()
	out, err := Build(eventsHistory(), snap, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileMap(out *Output) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range out.Files {
		m[f.Location] = f.Body
	}
	return m
}

// scanned is what a snapshot's manifests say, read back by iceberg-go.
type scanned struct {
	data    map[string]goiceberg.ManifestEntry // live data files by path
	deletes map[string]goiceberg.ManifestEntry // live delete files by path
	deleted []string                           // DELETED entries
}

func readSnapshot(t *testing.T, files map[string][]byte, snap *iceberg.Snapshot) scanned {
	t.Helper()
	list, ok := files[snap.ManifestList]
	if !ok {
		t.Fatalf("manifest list %s not produced", snap.ManifestList)
	}
	mfs, err := goiceberg.ReadManifestList(bytes.NewReader(list))
	if err != nil {
		t.Fatal(err)
	}
	s := scanned{data: map[string]goiceberg.ManifestEntry{}, deletes: map[string]goiceberg.ManifestEntry{}}
	for _, mf := range mfs {
		body, ok := files[mf.FilePath()]
		if !ok {
			t.Fatalf("manifest %s not produced", mf.FilePath())
		}
		if mf.Length() != int64(len(body)) {
			t.Errorf("manifest %s: length %d, file %d", mf.FilePath(), mf.Length(), len(body))
		}
		entries, err := goiceberg.ReadManifest(mf, bytes.NewReader(body), false)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			path := e.DataFile().FilePath()
			switch {
			case e.Status() == goiceberg.EntryStatusDELETED:
				s.deleted = append(s.deleted, path)
			case mf.ManifestContent() == goiceberg.ManifestContentData:
				if _, dup := s.data[path]; dup {
					t.Errorf("snapshot %d lists %s twice", snap.SnapshotID, path)
				}
				s.data[path] = e
			default:
				s.deletes[path] = e
			}
		}
	}
	return s
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k[strings.LastIndex(k, "/")+1:])
	}
	slices.Sort(out)
	return out
}

func TestBuildEvents(t *testing.T) {
	out := buildEvents(t, 6)
	md := out.Metadata
	files := fileMap(out)
	if got := md.Snapshots; len(got) != 4 {
		t.Fatalf("%d snapshots, want 4 (3..6)", len(got))
	}
	wantOps := []string{"append", "append", "delete", "overwrite"}
	for i, s := range md.Snapshots {
		if s.SnapshotID != int64(i+3) || s.SequenceNumber != s.SnapshotID || s.Summary["operation"] != wantOps[i] {
			t.Errorf("snapshot %d: id %d seq %d op %s, want %d %s", i, s.SnapshotID, s.SequenceNumber, s.Summary["operation"], i+3, wantOps[i])
		}
		if i > 0 && (s.ParentSnapshotID == nil || *s.ParentSnapshotID != md.Snapshots[i-1].SnapshotID) {
			t.Errorf("snapshot %d: parent %v", s.SnapshotID, s.ParentSnapshotID)
		}
		if s.TimestampMS != t0.Add(time.Duration(s.SnapshotID)*time.Minute).UnixMilli() {
			t.Errorf("snapshot %d: timestamp %d", s.SnapshotID, s.TimestampMS)
		}
	}
	if md.Snapshots[0].ParentSnapshotID != nil || *md.CurrentSnapshotID != 6 || md.Refs["main"].SnapshotID != 6 || md.LastSequenceNumber != 6 {
		t.Errorf("current %v refs %v", md.CurrentSnapshotID, md.Refs)
	}
	if md.TableUUID != "01938a4e-0000-7000-8000-000000000001" || md.Location != "s3://lake/main/ev" || md.DefaultSpecID != 2 || md.LastPartitionID != 1001 {
		t.Errorf("uuid %s location %s spec %d last partition %d", md.TableUUID, md.Location, md.DefaultSpecID, md.LastPartitionID)
	}
	if !strings.HasPrefix(out.MetadataLocation, "s3://lake/main/ev/metadata/v6-") || !strings.HasSuffix(out.MetadataLocation, ".metadata.json") {
		t.Errorf("metadata location %s", out.MetadataLocation)
	}
	if out.Files[len(out.Files)-1].Location != out.MetadataLocation {
		t.Error("the metadata file is not written last")
	}

	// Summaries: totals follow the files.
	if s := md.Snapshots[0].Summary; s["added-data-files"] != "2" || s["added-records"] != "150" || s["total-records"] != "150" || s["total-data-files"] != "2" {
		t.Errorf("snapshot 3 summary %v", s)
	}
	if s := md.Snapshots[2].Summary; s["added-delete-files"] != "3" || s["added-position-deletes"] != "4" || s["total-delete-files"] != "3" {
		t.Errorf("snapshot 5 summary %v", s)
	}

	// Snapshot 3: files A and B, partitioned (year 2023 → 53, bucket 1).
	s3 := readSnapshot(t, files, &md.Snapshots[0])
	if got := keys(s3.data); !slices.Equal(got, []string{"a.parquet", "b.parquet"}) || len(s3.deletes) != 0 {
		t.Fatalf("snapshot 3 data %v deletes %v", got, keys(s3.deletes))
	}
	a := s3.data["s3://lake/main/ev/year=2023/bucket=1/a.parquet"]
	df := a.DataFile()
	if p := df.Partition(); p[1000] != int32(53) || p[1001] != int32(1) {
		t.Errorf("A partition %v", p)
	}
	if a.Status() != goiceberg.EntryStatusADDED || a.SnapshotID() != 3 || a.SequenceNum() != 3 || df.Count() != 100 || df.FileSizeBytes() != 2000 {
		t.Errorf("A entry status %v snap %d seq %d", a.Status(), a.SnapshotID(), a.SequenceNum())
	}
	if df.ValueCounts()[3] != 100 || df.NullValueCounts()[3] != 10 || df.ColumnSizes()[2] != 900 {
		t.Errorf("A counts %v %v %v", df.ValueCounts(), df.NullValueCounts(), df.ColumnSizes())
	}
	lo, hi := df.LowerBoundValues(), df.UpperBoundValues()
	if v, _ := iceberg.DecodeBinary(iceberg.Primitive(iceberg.TypeLong), lo[1]); v != int64(0) {
		t.Errorf("id lower bound %v", v)
	}
	if string(lo[3]) != "aardvark-aardvar" || string(hi[3]) != "zebra" {
		t.Errorf("cat bounds %q %q (lower truncated to 16 characters)", lo[3], hi[3])
	}
	if v, _ := iceberg.DecodeBinary(iceberg.Primitive(iceberg.TypeTimestamp), hi[2]); v != time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC).UnixMicro() {
		t.Errorf("ts upper bound %v", v)
	}

	// Snapshot 4 adds the inlined rows as an unpartitioned Parquet file.
	s4 := readSnapshot(t, files, &md.Snapshots[1])
	var inl string
	for p := range s4.data {
		if strings.Contains(p, "/__inlined__/") {
			inl = p
		}
	}
	if inl == "" || len(s4.data) != 3 {
		t.Fatalf("snapshot 4 data %v", keys(s4.data))
	}
	ie := s4.data[inl]
	if ie.DataFile().Count() != 2 || ie.DataFile().SpecID() != 0 || len(ie.DataFile().Partition()) != 0 || ie.SequenceNum() != 4 {
		t.Errorf("inlined file: %d rows spec %d partition %v", ie.DataFile().Count(), ie.DataFile().SpecID(), ie.DataFile().Partition())
	}
	if _, ok := files[inl]; !ok {
		t.Errorf("inlined Parquet %s not produced", inl)
	}

	// Snapshot 5: DuckLake's delete file for A, ours for B and the inlined row.
	s5 := readSnapshot(t, files, &md.Snapshots[2])
	if len(s5.deletes) != 3 || len(s5.data) != 3 {
		t.Fatalf("snapshot 5 data %v deletes %v", keys(s5.data), keys(s5.deletes))
	}
	for path, e := range s5.deletes {
		d := e.DataFile()
		if d.ContentType() != goiceberg.EntryContentPosDeletes || e.SequenceNum() != 5 {
			t.Errorf("delete %s: content %v seq %d", path, d.ContentType(), e.SequenceNum())
		}
		target := s5.data[string(d.LowerBoundValues()[iceberg.PositionDeleteFilePathID])]
		if target == nil {
			t.Errorf("delete %s targets no live data file", path)
			continue
		}
		if fmt.Sprint(d.Partition()) != fmt.Sprint(target.DataFile().Partition()) || d.SpecID() != target.DataFile().SpecID() {
			t.Errorf("delete %s: partition %v spec %d, its data file %v spec %d", path, d.Partition(), d.SpecID(), target.DataFile().Partition(), target.DataFile().SpecID())
		}
	}
	// Snapshot 6: A and its delete file are gone, C added; B's manifest reused.
	s6 := readSnapshot(t, files, &md.Snapshots[3])
	if got := keys(s6.data); len(got) != 3 || !slices.Contains(got, "c.parquet") || slices.Contains(got, "a.parquet") {
		t.Errorf("snapshot 6 data %v", got)
	}
	if len(s6.deletes) != 2 || !slices.Contains(s6.deleted, "s3://lake/main/ev/year=2023/bucket=1/a.parquet") {
		t.Errorf("snapshot 6 deletes %v deleted %v", keys(s6.deletes), s6.deleted)
	}
	if e := s6.data["s3://lake/main/ev/year=2024/bucket=2/b.parquet"]; e.Status() != goiceberg.EntryStatusEXISTING || e.SnapshotID() != 3 || e.SequenceNum() != 3 {
		t.Errorf("B in snapshot 6: status %v snapshot %d seq %d", e.Status(), e.SnapshotID(), e.SequenceNum())
	}

	// iceberg-go reads the metadata and agrees on snapshots and schema.
	tm, err := table.ParseMetadataBytes(out.MetadataJSON)
	if err != nil {
		t.Fatal(err)
	}
	if tm.CurrentSnapshot().SnapshotID != 6 || len(tm.Snapshots()) != 4 || tm.CurrentSchema().NumFields() != 3 || tm.PartitionSpecByID(2) == nil {
		t.Errorf("iceberg-go: current %v, %d snapshots", tm.CurrentSnapshot(), len(tm.Snapshots()))
	}
}

func TestBuildReusesManifests(t *testing.T) {
	out := buildEvents(t, 6)
	files := fileMap(out)
	lists := map[int64][]string{}
	for _, s := range out.Metadata.Snapshots {
		mfs, err := goiceberg.ReadManifestList(bytes.NewReader(files[s.ManifestList]))
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			lists[s.SnapshotID] = append(lists[s.SnapshotID], mf.FilePath())
		}
	}
	// The manifest of snapshot 3's files is carried into snapshots 4 and 5
	// unchanged (same path); snapshot 6 rewrites it because A went away.
	m3 := lists[3][0]
	if !slices.Contains(lists[4], m3) || !slices.Contains(lists[5], m3) || slices.Contains(lists[6], m3) {
		t.Errorf("manifest lists: %v", lists)
	}
	if !strings.HasPrefix(m3, "s3://lake/main/ev/metadata/3-") || !strings.HasSuffix(m3, "-m0.avro") {
		t.Errorf("manifest name %s", m3)
	}
}

func TestBuildDeterministic(t *testing.T) {
	a, b := buildEvents(t, 6), buildEvents(t, 6)
	if len(a.Files) != len(b.Files) {
		t.Fatalf("%d vs %d files", len(a.Files), len(b.Files))
	}
	for i := range a.Files {
		if a.Files[i].Location != b.Files[i].Location || !bytes.Equal(a.Files[i].Body, b.Files[i].Body) {
			t.Errorf("file %d differs: %s vs %s", i, a.Files[i].Location, b.Files[i].Location)
		}
	}
	// An earlier snapshot shares every file it has in common.
	early := fileMap(buildEvents(t, 4))
	late := fileMap(a)
	for loc, body := range early {
		if strings.Contains(loc, ".metadata.json") {
			continue
		}
		if lb, ok := late[loc]; !ok || !bytes.Equal(lb, body) {
			t.Errorf("%s of snapshot 4 is not reused by snapshot 6", loc)
		}
	}
}

func TestBuildEarlierSnapshots(t *testing.T) {
	for _, c := range []struct {
		snap    int64
		current int64 // 0: none
	}{{1, 0}, {2, 0}, {3, 3}, {5, 5}} {
		out := buildEvents(t, c.snap)
		md := out.Metadata
		switch {
		case c.current == 0 && md.CurrentSnapshotID != nil:
			t.Errorf("snapshot %d: current %d, want none", c.snap, *md.CurrentSnapshotID)
		case c.current != 0 && (md.CurrentSnapshotID == nil || *md.CurrentSnapshotID != c.current):
			t.Errorf("snapshot %d: current %v, want %d", c.snap, md.CurrentSnapshotID, c.current)
		}
		wantSpec := 2
		if c.snap < 2 {
			wantSpec = 0
		}
		if md.DefaultSpecID != wantSpec {
			t.Errorf("snapshot %d: default spec %d", c.snap, md.DefaultSpecID)
		}
	}
	if _, err := Build(eventsHistory(), 9, Options{}); !errors.Is(err, ducklake.ErrNotFound) {
		t.Errorf("snapshot 9: %v, want ErrNotFound", err)
	}
}

func TestBuildUnrepresentable(t *testing.T) {
	h := eventsHistory()
	// DuckDB merged B with rows of snapshot 5 (partial_max): snapshots 3 and
	// 4 cannot be shown exactly any more; 5 and 6 can.
	h.DataFiles[1].PartialMax = 5
	if _, err := Build(h, 4, Options{}); !errors.Is(err, ErrUnrepresentable) {
		t.Errorf("snapshot 4: %v, want ErrUnrepresentable", err)
	}
	out, err := Build(h, 6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, s := range out.Metadata.Snapshots {
		ids = append(ids, s.SnapshotID)
	}
	if !slices.Equal(ids, []int64{5, 6}) {
		t.Errorf("snapshots %v, want [5 6]", ids)
	}
	if out.Metadata.Snapshots[0].ParentSnapshotID != nil {
		t.Error("the first shown snapshot has a parent")
	}
	files := fileMap(out)
	s5 := readSnapshot(t, files, &out.Metadata.Snapshots[0])
	if len(s5.data) != 3 || len(s5.deletes) != 3 {
		t.Errorf("snapshot 5: data %v deletes %v", keys(s5.data), keys(s5.deletes))
	}
}

func TestBuildRejects(t *testing.T) {
	h := eventsHistory()
	h.Columns = append(h.Columns, ducklake.Column{ID: 4, Begin: 1, TableID: 1, Order: 4, Name: "span", Type: "interval", NullsAllowed: true})
	_, err := Build(h, 6, Options{})
	if !errors.Is(err, ErrUnrepresentable) || !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `column "span"`) {
		t.Errorf("interval column: %v", err)
	}
	h = eventsHistory()
	h.DataFiles[0].EncryptionKey = "k"
	if _, err := Build(h, 6, Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("encrypted file: %v", err)
	}
	if _, err := Build(eventsHistory(), 6, Options{FormatVersion: 4}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("format v4: %v", err)
	}
}

func TestMaterialiseFromSource(t *testing.T) {
	src := historySource{eventsHistory()}
	out, err := Materialise(context.Background(), src, 1, 6, Options{})
	if err != nil || *out.Metadata.CurrentSnapshotID != 6 {
		t.Fatalf("Materialise: %v", err)
	}
}

// historySource serves one prepared history.
type historySource struct{ h *History }

func (s historySource) History(_ context.Context, tableID, snap int64) (*History, error) {
	if tableID != s.h.Table.ID {
		return nil, fmt.Errorf("table %d: %w", tableID, ducklake.ErrNotFound)
	}
	return s.h, nil
}

// Column comments are Iceberg docs: a comment (snapshot 4 on id, nested
// ones too) makes a new schema from its snapshot on, and the schemas
// before it keep the docs they had.
func TestBuildColumnDocs(t *testing.T) {
	h := eventsHistory()
	h.Columns = append(h.Columns,
		ducklake.Column{ID: 4, Begin: 1, TableID: 1, Order: 4, Name: "s", Type: "struct", NullsAllowed: true},
		ducklake.Column{ID: 5, Begin: 1, TableID: 1, Order: 5, Name: "x", Type: "int32", NullsAllowed: true, ParentColumn: 4})
	h.Comments = []ducklake.ColumnTag{
		{TableID: 1, ColumnID: 3, Begin: 1, End: 4, Key: "comment", Value: "category"},
		{TableID: 1, ColumnID: 3, Begin: 4, Key: "comment", Value: "category 🤪"},
		{TableID: 1, ColumnID: 1, Begin: 4, Key: "comment", Value: "unique ID"},
		{TableID: 1, ColumnID: 5, Begin: 4, Key: "comment", Value: "nested"},
	}
	h.Inlined = nil
	h.InlinedDeletes = nil
	out, err := Build(h, 6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := out.Metadata
	docs := func(s *iceberg.Schema) []string {
		var d []string
		for _, f := range s.Fields {
			d = append(d, f.Name+"="+f.Doc)
			if f.Type.ID == iceberg.TypeStruct {
				for _, c := range f.Type.Fields {
					d = append(d, f.Name+"."+c.Name+"="+c.Doc)
				}
			}
		}
		return d
	}
	if len(md.Schemas) != 2 {
		t.Fatalf("%d schemas, want 2 (the comment change at snapshot 4 is a new schema)", len(md.Schemas))
	}
	want := [][]string{
		{"id=", "ts=", "cat=category", "s=", "s.x="},
		{"id=unique ID", "ts=", "cat=category 🤪", "s=", "s.x=nested"},
	}
	for i, s := range md.Schemas {
		if got := docs(s); !slices.Equal(got, want[i]) {
			t.Errorf("schema %d docs = %q, want %q", s.ID, got, want[i])
		}
	}
	if cur := md.Schemas[len(md.Schemas)-1].ID; md.CurrentSchemaID != cur {
		t.Errorf("current schema %d, want the commented one %d", md.CurrentSchemaID, cur)
	}
}

// The metadata-log lists the recorded files of earlier snapshots only,
// oldest first, at most write.metadata.previous-versions-max of them.
func TestBuildMetadataLog(t *testing.T) {
	logged := func(snap int64) LoggedMetadata {
		return LoggedMetadata{Snapshot: snap, MetadataLogEntry: iceberg.MetadataLogEntry{
			MetadataFile: fmt.Sprintf("s3://lake/main/ev/metadata/v%d-x.metadata.json", snap), TimestampMS: t0.Add(time.Duration(snap) * time.Minute).UnixMilli()}}
	}
	files := func(md *iceberg.TableMetadata) []string {
		var out []string
		for _, e := range md.MetadataLog {
			out = append(out, e.MetadataFile[len("s3://lake/main/ev/metadata/"):])
		}
		return out
	}
	for _, c := range []struct {
		name string
		snap int64
		max  string
		want []string
	}{
		{"all earlier", 6, "", []string{"v1-x.metadata.json", "v2-x.metadata.json", "v3-x.metadata.json", "v5-x.metadata.json"}},
		{"not the snapshot's own nor later ones", 3, "", []string{"v1-x.metadata.json", "v2-x.metadata.json"}},
		{"previous-versions-max keeps the newest", 6, "2", []string{"v3-x.metadata.json", "v5-x.metadata.json"}},
		{"previous-versions-max 0", 6, "0", nil},
	} {
		h := eventsHistory()
		h.MetadataLog = []LoggedMetadata{logged(1), logged(2), logged(3), logged(5), logged(6)}
		if c.max != "" {
			h.Extras.Properties = map[string]string{"write.metadata.previous-versions-max": c.max}
		}
		out, err := Build(h, c.snap, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := files(out.Metadata); !slices.Equal(got, c.want) {
			t.Errorf("%s: metadata-log %q, want %q", c.name, got, c.want)
		}
	}
}

// TestBuildTranslatesDuckLakeDeleteFiles: DuckDB writes its delete files
// with field ids 2147483646/2147483645 for file_path/pos, which Java readers
// (who go by field id) cannot read; version 2 serves a copy with Iceberg's
// ids instead of the DuckLake file, named so a commit can map it back.
func TestBuildTranslatesDuckLakeDeleteFiles(t *testing.T) {
	out := buildEvents(t, 5)
	files := fileMap(out)
	s5 := readSnapshot(t, files, &out.Metadata.Snapshots[len(out.Metadata.Snapshots)-1])
	var served string
	for path, e := range s5.deletes {
		if string(e.DataFile().LowerBoundValues()[iceberg.PositionDeleteFilePathID]) == "s3://lake/main/ev/year=2023/bucket=1/a.parquet" {
			served = path
		}
	}
	if served == "" || strings.HasSuffix(served, "a-delete.parquet") {
		t.Fatalf("a.parquet's deletes served as %q, want a translated copy", served)
	}
	if !strings.HasPrefix(served, "s3://lake/main/ev/__inlined__/"+TranslatedDeletePrefix+"20-") {
		t.Errorf("translated copy at %s", served)
	}
	if id, ok := TranslatedDeleteFileID(served); !ok || id != 20 {
		t.Errorf("TranslatedDeleteFileID(%s) = %d, %v", served, id, ok)
	}
	body, ok := files[served]
	if !ok {
		t.Fatalf("%s is not among the generated files", served)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	sc := pf.MetaData().Schema
	ids := map[string]int32{}
	for i := range sc.NumColumns() {
		ids[sc.Column(i).Name()] = sc.Column(i).SchemaNode().FieldID()
	}
	if ids["file_path"] != iceberg.PositionDeleteFilePathID || ids["pos"] != iceberg.PositionDeletePosID {
		t.Errorf("field ids %v, want file_path %d pos %d", ids, iceberg.PositionDeleteFilePathID, iceberg.PositionDeletePosID)
	}
	pd, err := ReadPositionDeletes(context.Background(), body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pd.Pos, []int64{3, 9}) {
		t.Errorf("positions %v, want [3 9]", pd.Pos)
	}

	// Without the positions the file cannot be served: an error, never
	// DuckDB's file passed through.
	h := eventsHistory()
	h.DeletePositions = nil
	if _, err := Build(h, 5, Options{}); err == nil || !strings.Contains(err.Error(), "a-delete.parquet") {
		t.Errorf("Build without positions: %v", err)
	}

	for _, bad := range []string{
		"s3://lake/main/ev/a-delete.parquet",
		"s3://lake/main/ev/__inlined__/5-0123456789abcdef-deletes.parquet",
		"s3://lake/main/ev/__inlined__/" + TranslatedDeletePrefix + "x-00.parquet",
		"s3://lake/main/ev/__inlined__/" + TranslatedDeletePrefix + "-1-00.parquet",
		"s3://lake/main/ev/__inlined__/" + TranslatedDeletePrefix + "7-00.avro",
	} {
		if id, ok := TranslatedDeleteFileID(bad); ok {
			t.Errorf("TranslatedDeleteFileID(%s) = %d, want none", bad, id)
		}
	}
}

// TestGeneratedNames: every file a build writes is Generated, so no
// cleanup of client files takes it for one; the names engines give their
// manifest lists and manifests are not.
func TestGeneratedNames(t *testing.T) {
	for _, f := range buildEvents(t, 6).Files {
		if !Generated(f.Location) {
			t.Errorf("%s is written by materialize but not Generated", f.Location)
		}
	}
	for _, tc := range []struct {
		location string
		want     bool
	}{
		{"s3://lake/data/s/t/metadata/3-0123456789abcdef-dv.puffin", true},
		{"s3://lake/data/s/t/__inlined__/ducklake-delete-7-0123456789abcdef.parquet", true},
		// PyIceberg, iceberg-go, Spark, Trino.
		{"s3://lake/data/s/t/metadata/snap-6777207317621133452-0-0f87d1df-42ef-4e89-9727-9e1ab9523ca3.avro", false},
		{"s3://lake/data/s/t/metadata/0f87d1df-42ef-4e89-9727-9e1ab9523ca3-m1.avro", false},
		{"s3://lake/data/s/t/metadata/snap-4421345434212213233-1-b8d2a6a7-2b45-4a3c-9a47-13c4a4fe1b3e.avro", false},
		{"s3://lake/data/s/t/metadata/b8d2a6a7-2b45-4a3c-9a47-13c4a4fe1b3e-m0.avro", false},
		{"s3://lake/data/s/t/metadata/00001-9c1b7d2e-8a3f-4f0e-b1d5-1e2f3a4b5c6d.metadata.json", false},
	} {
		if got := Generated(tc.location); got != tc.want {
			t.Errorf("Generated(%s) = %v, want %v", tc.location, got, tc.want)
		}
	}
}
