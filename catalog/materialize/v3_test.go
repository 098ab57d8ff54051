package materialize

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	goiceberg "github.com/apache/iceberg-go"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// eventsHistoryV3 is eventsHistory with DuckLake row ids, the positions of
// its delete file, and deletions of both kinds for the same data file:
//
//	A (rows 0..99):    delete file at 5 deletes 3 and 4; an inlined deletion
//	                   at 5 deletes 9 — one vector {3,4,9}; A ends at 6
//	B (rows 100..149): inlined deletion of 7 at 5; a delete file gathering
//	                   the deletions of snapshots 5 and 6 (1 at 5, 2 at 6)
//	inlined rows 150, 151 (one file), 151 deleted at 5
//	C (rows 152..249)
func eventsHistoryV3() *History {
	h := eventsHistory()
	h.DataFiles[0].RowIDStart = 0
	h.DataFiles[1].RowIDStart = 100
	h.DataFiles[2].RowIDStart = 152
	h.InlinedDeletes = append(h.InlinedDeletes, InlinedDelete{DataFileID: 10, Pos: 9, Begin: 5})
	h.DeleteFiles = append(h.DeleteFiles, ducklake.DeleteFile{ID: 21, TableID: 1, Begin: 5, PartialMax: 6, DataFileID: 11,
		Path: "s3://lake/main/ev/b-delete.parquet", Format: "parquet", DeleteCount: 2, FileSizeBytes: 300})
	h.DeletePositions = map[int64][]DeletedPosition{
		20: {{Pos: 3}, {Pos: 4}},
		21: {{Pos: 1, Snapshot: 5}, {Pos: 2, Snapshot: 6}},
	}
	return h
}

// dvsOf reads the deletion vectors a snapshot lists: referenced data file →
// positions, checking each entry against the Puffin file it points into.
func dvsOf(t *testing.T, files map[string][]byte, snap *iceberg.Snapshot) map[string][]int64 {
	t.Helper()
	s := readSnapshot(t, files, snap)
	out := map[string][]int64{}
	puffins := map[string]bool{}
	for path, e := range s.deletes {
		_ = path
		df := e.DataFile()
		if df.FileFormat() != goiceberg.PuffinFile || df.ContentType() != goiceberg.EntryContentPosDeletes {
			t.Fatalf("snapshot %d: delete file %s is %s content %d", snap.SnapshotID, df.FilePath(), df.FileFormat(), df.ContentType())
		}
		puffins[df.FilePath()] = true
	}
	// s.deletes is keyed by path, and DVs share their Puffin file: read
	// the manifests again for every entry.
	list, _ := goiceberg.ReadManifestList(bytes.NewReader(files[snap.ManifestList]))
	for _, mf := range list {
		if mf.ManifestContent() != goiceberg.ManifestContentDeletes {
			if mf.FirstRowID() == nil {
				t.Errorf("snapshot %d: data manifest %s has no first_row_id", snap.SnapshotID, mf.FilePath())
			}
			continue
		}
		if mf.FirstRowID() != nil {
			t.Errorf("snapshot %d: delete manifest with first_row_id %d", snap.SnapshotID, *mf.FirstRowID())
		}
		entries, err := goiceberg.ReadManifest(mf, bytes.NewReader(files[mf.FilePath()]), true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			df := e.DataFile()
			body, ok := files[df.FilePath()]
			if !ok {
				t.Fatalf("Puffin file %s not produced", df.FilePath())
			}
			if df.FileSizeBytes() != int64(len(body)) {
				t.Errorf("%s: file_size_in_bytes %d, file %d", df.FilePath(), df.FileSizeBytes(), len(body))
			}
			p, err := iceberg.ParsePuffin(body)
			if err != nil {
				t.Fatal(err)
			}
			off, size, ref := df.ContentOffset(), df.ContentSizeInBytes(), df.ReferencedDataFile()
			if off == nil || size == nil || ref == nil {
				t.Fatalf("%s: DV entry without content_offset/size/referenced_data_file", df.FilePath())
			}
			found := false
			for i, b := range p.Metadata.Blobs {
				if b.Offset != *off {
					continue
				}
				found = true
				if b.Length != *size || b.Properties[iceberg.PuffinReferencedDataFile] != *ref {
					t.Errorf("%s: entry (%d+%d, %s) and footer (%d+%d, %s) disagree", df.FilePath(), *off, *size, *ref, b.Offset, b.Length, b.Properties[iceberg.PuffinReferencedDataFile])
				}
				dv, err := p.DeletionVector(i)
				if err != nil {
					t.Fatal(err)
				}
				if dv.Cardinality() != df.Count() {
					t.Errorf("%s: record_count %d, cardinality %d", *ref, df.Count(), dv.Cardinality())
				}
				if _, dup := out[*ref]; dup {
					t.Errorf("snapshot %d: two deletion vectors for %s", snap.SnapshotID, *ref)
				}
				out[*ref] = slices.Collect(dv.Positions())
			}
			if !found {
				t.Errorf("%s: no blob at offset %d", df.FilePath(), *off)
			}
		}
	}
	return out
}

func TestBuildV3DeletionVectors(t *testing.T) {
	out, err := Build(eventsHistoryV3(), 6, Options{FormatVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	md := out.Metadata
	if md.FormatVersion != 3 || md.NextRowID == nil {
		t.Fatalf("format version %d, next-row-id %v", md.FormatVersion, md.NextRowID)
	}
	files := fileMap(out)
	base := "s3://lake/main/ev/"
	a, b, c := base+"year=2023/bucket=1/a.parquet", base+"year=2024/bucket=2/b.parquet", base+"year=2023/bucket=1/c.parquet"
	var inlined string
	for loc := range files {
		if strings.Contains(loc, "/__inlined__/4-") {
			inlined = loc
		}
		if strings.HasSuffix(loc, "-deletes.parquet") {
			t.Errorf("format version 3 must not add position delete files: %s", loc)
		}
	}
	want := map[int64]map[string][]int64{
		3: {},
		4: {},
		5: {a: {3, 4, 9}, b: {1, 7}, inlined: {1}},
		6: {b: {1, 2, 7}, inlined: {1}},
	}
	puffins := map[int64]int{}
	for loc := range files {
		if strings.HasSuffix(loc, "-dv.puffin") {
			s := loc[strings.LastIndex(loc, "/")+1:]
			puffins[int64(s[0]-'0')]++
		}
	}
	if puffins[5] != 1 || puffins[6] != 1 || len(puffins) != 2 {
		t.Errorf("Puffin files per snapshot %v, want one at 5 and one at 6", puffins)
	}
	for i := range md.Snapshots {
		snap := &md.Snapshots[i]
		got := dvsOf(t, files, snap)
		if w, ok := want[snap.SnapshotID]; ok && !equalDVs(got, w) {
			t.Errorf("snapshot %d: deletion vectors %v, want %v", snap.SnapshotID, got, w)
		}
	}

	// Row lineage: first_row_id of every data file is its DuckLake row id.
	wantRowID := map[string]int64{a: 0, b: 100, c: 152, inlined: 150}
	for i := range md.Snapshots {
		for path, e := range readSnapshot(t, files, &md.Snapshots[i]).data {
			if id := e.DataFile().FirstRowID(); id == nil || *id != wantRowID[path] {
				t.Errorf("snapshot %d: %s first_row_id %v, want %d", md.Snapshots[i].SnapshotID, path, id, wantRowID[path])
			}
		}
	}
	// next-row-id only grows, each snapshot starts where the previous ended.
	next := int64(0)
	for _, s := range md.Snapshots {
		if s.FirstRowID == nil || s.AddedRows == nil || *s.FirstRowID != next {
			t.Fatalf("snapshot %d: first-row-id %v added-rows %v, want first %d", s.SnapshotID, s.FirstRowID, s.AddedRows, next)
		}
		next += *s.AddedRows
	}
	if *md.NextRowID != 250 || next != 250 {
		t.Errorf("next-row-id %d (snapshots add up to %d), want 250", *md.NextRowID, next)
	}
	if s := md.SnapshotByID(5); s.Summary["added-dvs"] != "3" || s.Summary["added-position-delete-files"] != "" || s.Summary["added-delete-files"] != "3" {
		t.Errorf("snapshot 5 summary %v", s.Summary)
	}

	// The metadata JSON carries the v3 fields readers require.
	var raw map[string]any
	if err := json.Unmarshal(out.MetadataJSON, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["format-version"] != float64(3) || raw["next-row-id"] != float64(250) {
		t.Errorf("metadata JSON format-version %v next-row-id %v", raw["format-version"], raw["next-row-id"])
	}
	for _, s := range raw["snapshots"].([]any) {
		if _, ok := s.(map[string]any)["first-row-id"]; !ok {
			t.Errorf("snapshot without first-row-id: %v", s)
		}
	}

	again, err := Build(eventsHistoryV3(), 6, Options{FormatVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.MetadataJSON, out.MetadataJSON) || len(again.Files) != len(out.Files) {
		t.Error("two builds differ")
	}
}

func equalDVs(got, want map[string][]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			return false
		}
	}
	return true
}

// Without the snapshot column, a delete file spanning snapshots leaves the
// earlier ones unrepresentable, as in format version 2.
func TestBuildV3UntimedDeleteFile(t *testing.T) {
	h := eventsHistoryV3()
	h.DeletePositions[21] = []DeletedPosition{{Pos: 1}, {Pos: 2}}
	if _, err := Build(h, 5, Options{FormatVersion: 3}); err == nil || !strings.Contains(err.Error(), "b-delete.parquet") {
		t.Errorf("snapshot 5: %v, want unrepresentable", err)
	}
	out, err := Build(h, 6, Options{FormatVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := dvsOf(t, fileMap(out), out.Metadata.CurrentSnapshot())
	if !slices.Equal(got["s3://lake/main/ev/year=2024/bucket=2/b.parquet"], []int64{1, 2, 7}) {
		t.Errorf("snapshot 6: %v", got)
	}
	delete(h.DeletePositions, 21)
	if _, err := Build(h, 6, Options{FormatVersion: 3}); err == nil || !strings.Contains(err.Error(), "Options.Objects") {
		t.Errorf("unread delete file: %v", err)
	}
}

// Inlined rows whose row ids are not consecutive (an UPDATE keeps the ids
// of the rows it rewrites) go to one file per run, each with its
// first_row_id.
func TestBuildV3InlinedRowIDs(t *testing.T) {
	h := eventsHistoryV3()
	rows := h.Inlined[0].Rows
	rows = append(rows,
		ducklake.InlinedRow{RowID: 20, Begin: 6, Values: []any{int64(20), nil, "u"}},
		ducklake.InlinedRow{RowID: 600, Begin: 6, Values: []any{int64(600), nil, "u"}},
		ducklake.InlinedRow{RowID: 601, Begin: 6, Values: []any{int64(601), nil, "u"}})
	h.Inlined[0].Rows = rows
	out, err := Build(h, 6, Options{FormatVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	files := fileMap(out)
	got := map[int64]int64{} // first_row_id → record count, of the files added at 6
	for path, e := range readSnapshot(t, files, out.Metadata.CurrentSnapshot()).data {
		if strings.Contains(path, "/__inlined__/6-") {
			got[*e.DataFile().FirstRowID()] = e.DataFile().Count()
		}
	}
	if len(got) != 2 || got[20] != 1 || got[600] != 2 {
		t.Errorf("inlined files of snapshot 6 (first_row_id: rows) %v, want 20:1 600:2", got)
	}
	// Format version 2 keeps one file per snapshot.
	v2, err := Build(h, 6, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for loc := range fileMap(v2) {
		if strings.Contains(loc, "/__inlined__/6-") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("v2: %d inlined files at 6", n)
	}
}

// Materialise reads the delete files through Options.Objects for v3.
func TestMaterialiseV3ReadsDeleteFiles(t *testing.T) {
	h := eventsHistoryV3()
	h.DeletePositions = nil
	h.DeleteFiles = h.DeleteFiles[:1] // A's, read from the store below
	mem := objstore.NewMem()
	body, err := WritePositionDeletes("s3://lake/main/ev/year=2023/bucket=1/a.parquet", []int64{3, 4, 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mem.Set(h.DeleteFiles[0].Path, body)
	out, err := Materialise(ctx, historySource{h}, 1, 5, Options{FormatVersion: 3, Objects: mem})
	if err != nil {
		t.Fatal(err)
	}
	got := dvsOf(t, fileMap(out), out.Metadata.CurrentSnapshot())
	if !slices.Equal(got["s3://lake/main/ev/year=2023/bucket=1/a.parquet"], []int64{3, 4, 8, 9}) {
		t.Errorf("A's vector %v", got)
	}
	h.DeletePositions = nil
	if _, err := Materialise(ctx, historySource{h}, 1, 5, Options{FormatVersion: 3}); err == nil {
		t.Error("v3 without an object reader read delete files")
	}
	if _, err := Materialise(ctx, historySource{h}, 1, 5, Options{FormatVersion: 3, Objects: objstore.NewMem()}); err == nil {
		t.Error("missing delete file accepted")
	}
}

func TestReadDeletePositionsSnapshotColumn(t *testing.T) {
	// DuckDB's delete files with a snapshot column are written by the
	// integration test; here, a file without one reads as snapshot 0.
	body, err := WritePositionDeletes("x", []int64{5, 1, 9})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readDeletePositions(context.Background(), body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []DeletedPosition{{Pos: 5}, {Pos: 1}, {Pos: 9}}) {
		t.Errorf("positions %v", got)
	}
	if _, err := readDeletePositions(context.Background(), []byte("not parquet")); err == nil {
		t.Error("garbage accepted")
	}
}

// A stretch of unrepresentable snapshots that ends where no file changes
// still gives an Iceberg snapshot there, with the changes made inside it
// (DuckDB's flush leaves such delete files: deletions of snapshots 5..7 in
// one file, nothing else changing at 7).
func TestBuildEmitsEndOfUnrepresentableStretch(t *testing.T) {
	for _, version := range []int{2, 3} {
		h := eventsHistoryV3()
		h.Snapshots = append(h.Snapshots, ducklake.Snapshot{ID: 7, Time: t0.Add(7 * 60e9), SchemaVersion: 2, Changes: "deleted_from_table:1"})
		h.DeleteFiles[1].PartialMax = 7
		h.DeletePositions[21] = []DeletedPosition{{Pos: 1}, {Pos: 2}} // untimed: 5 and 6 are unrepresentable
		out, err := Build(h, 7, Options{FormatVersion: version})
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		var ids []int64
		for _, s := range out.Metadata.Snapshots {
			ids = append(ids, s.SnapshotID)
		}
		if !slices.Equal(ids, []int64{3, 4, 7}) {
			t.Errorf("v%d: Iceberg snapshots %v, want [3 4 7]", version, ids)
		}
		s7 := readSnapshot(t, fileMap(out), out.Metadata.CurrentSnapshot())
		if got := keys(s7.data); !slices.Contains(got, "c.parquet") || slices.Contains(got, "a.parquet") {
			t.Errorf("v%d: snapshot 7 data %v", version, got)
		}
		if version == 3 {
			if got := dvsOf(t, fileMap(out), out.Metadata.CurrentSnapshot())["s3://lake/main/ev/year=2024/bucket=2/b.parquet"]; !slices.Equal(got, []int64{1, 2, 7}) {
				t.Errorf("v3: b's vector at 7: %v", got)
			}
		} else if len(s7.deletes) != 3 {
			t.Errorf("v2: snapshot 7 delete files %v", keys(s7.deletes))
		}
	}
}

// countingReader counts Get calls per location.
type countingReader struct {
	objstore.Reader
	gets map[string]int
}

func (c *countingReader) Get(ctx context.Context, loc objstore.Location, max int64) ([]byte, error) {
	c.gets[loc.String()]++
	return c.Reader.Get(ctx, loc, max)
}

func TestPositionCache(t *testing.T) {
	ctx := context.Background()
	mem := objstore.NewMem()
	for _, d := range eventsHistoryV3().DeleteFiles {
		body, err := WritePositionDeletes("x", []int64{3, 4})
		if err != nil {
			t.Fatal(err)
		}
		mem.Set(d.Path, body)
	}
	counter := &countingReader{Reader: mem, gets: map[string]int{}}
	cache := NewPositionCache(counter, 0)
	for snap := int64(5); snap <= 6; snap++ {
		h := eventsHistoryV3()
		h.DeletePositions = nil
		if _, err := Materialise(ctx, historySource{h}, 1, snap, Options{FormatVersion: 3, Objects: cache}); err != nil && !strings.Contains(err.Error(), "b-delete") {
			t.Fatalf("snapshot %d: %v", snap, err)
		}
	}
	for loc, n := range counter.gets {
		if n != 1 {
			t.Errorf("%s read %d times through the cache", loc, n)
		}
	}
	if len(counter.gets) != 2 {
		t.Errorf("reads %v", counter.gets)
	}

	// A budget of 3 positions holds one 2-position file at a time.
	small := NewPositionCache(counter, 3)
	clear(counter.gets)
	paths := []string{"s3://lake/main/ev/a-delete.parquet", "s3://lake/main/ev/b-delete.parquet", "s3://lake/main/ev/a-delete.parquet"}
	for _, p := range paths {
		if pos, err := small.positions(ctx, p); err != nil || len(pos) != 2 {
			t.Fatalf("%s: %v %v", p, pos, err)
		}
	}
	if counter.gets[paths[0]] != 2 || counter.gets[paths[1]] != 1 || small.lru.Len() != 1 {
		t.Errorf("reads %v, cached %d files", counter.gets, small.lru.Len())
	}
	if _, err := small.positions(ctx, "s3://lake/missing"); err == nil {
		t.Error("missing file read")
	}
}
