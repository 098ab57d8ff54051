package commit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
)

// eqRow is a row of (id long, name string); nil is NULL.
type eqRow struct {
	id   *int64
	name *string
}

func rowOf(id any, name any) eqRow {
	var r eqRow
	if id != nil {
		v := int64(id.(int))
		r.id = &v
	}
	if name != nil {
		v := name.(string)
		r.name = &v
	}
	return r
}

// writeKeyed writes Parquet rows of the columns named (among "id", field
// id 1, a long — or a string when idAsString — and "name", field id 2),
// with Iceberg field ids, as an Iceberg writer does.
func writeKeyed(t *testing.T, cols []string, rows []eqRow, idAsString bool) []byte {
	t.Helper()
	var fields []arrow.Field
	for _, c := range cols {
		id, typ := 2, arrow.DataType(arrow.BinaryTypes.String)
		if c == "id" {
			id, typ = 1, arrow.PrimitiveTypes.Int64
			if idAsString {
				typ = arrow.BinaryTypes.String
			}
		}
		fields = append(fields, arrow.Field{Name: c, Type: typ, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})})
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for i, c := range cols {
			switch fb := b.Field(i).(type) {
			case *array.Int64Builder:
				if r.id == nil {
					fb.AppendNull()
				} else {
					fb.Append(*r.id)
				}
			case *array.StringBuilder:
				v := r.name
				if c == "id" && r.id != nil {
					s := strconv.FormatInt(*r.id, 10)
					v = &s
				} else if c == "id" {
					v = nil
				}
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(*v)
				}
			}
		}
	}
	return parquetFile(t, b)
}

// manifests writes one manifest per group (each under its info) and a
// manifest list for client snapshot id, and returns the add-snapshot and
// set-snapshot-ref updates that commit it.
func (l *lake) manifests(id int64, op string, groups ...manifestGroup) []Update {
	l.t.Helper()
	var files []iceberg.ManifestFile
	for i, g := range groups {
		mw, err := iceberg.NewManifestWriter(g.info)
		if err != nil {
			l.t.Fatal(err)
		}
		body, mf, err := mw.Write(g.entries, 0)
		if err != nil {
			l.t.Fatal(err)
		}
		mf.Path = fmt.Sprintf("s3://lake/data/s/t/metadata/%d-m%d.avro", id, i)
		mf.AddedSnapshotID = id
		l.objects.Set(mf.Path, body)
		files = append(files, mf)
	}
	list, err := iceberg.WriteManifestList(iceberg.ManifestListInfo{FormatVersion: 2, SnapshotID: id, SequenceNumber: 1}, files)
	if err != nil {
		l.t.Fatal(err)
	}
	listPath := fmt.Sprintf("s3://lake/data/s/t/metadata/snap-%d.avro", id)
	l.objects.Set(listPath, list)
	return []Update{
		{Action: ActionAddSnapshot, Snapshot: &iceberg.Snapshot{SnapshotID: id, ManifestList: listPath, Summary: map[string]string{"operation": op}}},
		{Action: ActionSetSnapshotRef, RefName: "main", Type: "branch", SnapshotID: &id},
	}
}

type manifestGroup struct {
	info    iceberg.ManifestInfo
	entries []iceberg.ManifestEntry
}

// TestEqualityDeletes: equality delete files become DuckLake position
// deletes of the data files they apply to — older ones only, within their
// partition, on multi-column keys with NULL equal to NULL — merged with
// the deletes those files had; the delete files themselves are scheduled
// for deletion. Before issue 15 item 10 every such commit was refused.
func TestEqualityDeletes(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	schema := &iceberg.Schema{Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.Primitive(iceberg.TypeLong)},
		{ID: 2, Name: "name", Type: iceberg.Primitive(iceberg.TypeString)},
		{ID: 3, Name: "cat", Type: iceberg.Primitive(iceberg.TypeString)},
	}}
	spec := &iceberg.PartitionSpec{Fields: []iceberg.PartitionField{{SourceID: 3, FieldID: 1000, Name: "cat", Transform: iceberg.Identity}}}
	l.mustCreate(&CreateTableRequest{Name: "t", Schema: schema, PartitionSpec: spec})
	partID := l.query(`SELECT partition_id FROM ducklake_partition_info`)[0][0].(int64)
	served := iceberg.PartitionSpec{ID: int(partID), Fields: spec.Fields}
	dataInfo := iceberg.ManifestInfo{FormatVersion: 2, Content: iceberg.ManifestData, Schema: schema, Spec: served}
	delInfo := iceberg.ManifestInfo{FormatVersion: 2, Content: iceberg.ManifestDeletes, Schema: schema, Spec: served}
	globalInfo := iceberg.ManifestInfo{FormatVersion: 2, Content: iceberg.ManifestDeletes, Schema: schema}
	added := func(f *iceberg.DataFile) iceberg.ManifestEntry {
		return iceberg.ManifestEntry{Status: iceberg.StatusAdded, File: f}
	}
	dataFile := func(name, cat string, rows ...eqRow) *iceberg.DataFile {
		path := "s3://lake/data/s/t/data/" + name
		body := writeKeyed(t, []string{"id", "name"}, rows, false)
		l.objects.Set(path, body)
		return &iceberg.DataFile{Content: iceberg.ContentData, Path: path, Format: "PARQUET", Partition: []any{cat},
			RecordCount: int64(len(rows)), FileSizeBytes: int64(len(body))}
	}
	eqFile := func(name string, partition []any, cols []string, ids []int, rows ...eqRow) *iceberg.DataFile {
		path := "s3://lake/data/s/t/data/" + name
		body := writeKeyed(t, cols, rows, false)
		l.objects.Set(path, body)
		return &iceberg.DataFile{Content: iceberg.ContentEqualityDeletes, Path: path, Format: "PARQUET", Partition: partition,
			RecordCount: int64(len(rows)), FileSizeBytes: int64(len(body)), EqualityIDs: ids}
	}

	a := dataFile("a.parquet", "x", rowOf(1, "a"), rowOf(2, "b"), rowOf(3, nil), rowOf(nil, "d"), rowOf(1, "a2"), rowOf(4, "e"), rowOf(3, "c"))
	b := dataFile("b.parquet", "y", rowOf(1, "a"), rowOf(2, "b"), rowOf(3, nil))
	if _, err := l.commit("t", &TableCommit{Updates: l.manifests(9001, iceberg.OpAppend, manifestGroup{dataInfo, []iceberg.ManifestEntry{added(a), added(b)}})}); err != nil {
		t.Fatal(err)
	}
	// a.parquet already has a position delete (row 4), to be merged with.
	posBody, err := materialize.WritePositionDeletes(a.Path, []int64{4})
	if err != nil {
		t.Fatal(err)
	}
	posDel := &iceberg.DataFile{Content: iceberg.ContentPositionDeletes, Path: "s3://lake/data/s/t/data/a-pos.parquet", Format: "PARQUET",
		Partition: []any{"x"}, RecordCount: 1, FileSizeBytes: int64(len(posBody)), ReferencedDataFile: a.Path}
	l.objects.Set(posDel.Path, posBody)
	if _, err := l.commit("t", &TableCommit{Updates: l.manifests(9002, iceberg.OpDelete, manifestGroup{delInfo, []iceberg.ManifestEntry{added(posDel)}})}); err != nil {
		t.Fatal(err)
	}
	fileID := func(path string) int64 {
		return l.query(`SELECT data_file_id FROM ducklake_data_file WHERE path = $1`, path)[0][0].(int64)
	}
	aID, bID := fileID("data/a.parquet"), fileID("data/b.parquet")
	liveDeletes := func() string {
		return fmt.Sprint(l.query(`SELECT f.path, d.path, d.delete_count FROM ducklake_delete_file d JOIN ducklake_data_file f USING (data_file_id)
			WHERE d.end_snapshot IS NULL ORDER BY 1`))
	}
	countRows := func(table string) int64 {
		return l.query(`SELECT count(*) FROM ` + table)[0][0].(int64)
	}

	// Refused, and nothing changes: equality ids naming no column, a key
	// column of the wrong type, a delete file that is no Parquet file or
	// is not there, a key the file lacks.
	before := liveDeletes()
	deletesBefore, schedBefore := countRows("ducklake_delete_file"), countRows("ducklake_files_scheduled_for_deletion")
	wrongType := eqFile("bad-type.parquet", nil, []string{"id"}, []int{1}, rowOf(1, nil))
	l.objects.Set(wrongType.Path, writeKeyed(t, []string{"id"}, []eqRow{rowOf(1, nil)}, true))
	garbage := eqFile("garbage.parquet", nil, []string{"id"}, []int{1}, rowOf(1, nil))
	l.objects.Set(garbage.Path, []byte("PAR1 this is no Parquet file PAR1"))
	missing := eqFile("missing.parquet", nil, []string{"id"}, []int{1}, rowOf(1, nil))
	missing.Path = "s3://lake/data/s/t/data/never-written.parquet"
	for i, tc := range []struct {
		name string
		f    *iceberg.DataFile
		want error
	}{
		{"no such column", eqFile("bad-id.parquet", nil, []string{"id"}, []int{99}, rowOf(1, nil)), ErrInvalid},
		{"no equality ids", eqFile("no-ids.parquet", nil, []string{"id"}, nil, rowOf(1, nil)), ErrInvalid},
		{"type mismatch", wrongType, ErrInvalid},
		{"not Parquet", garbage, ErrInvalid},
		{"missing file", missing, ErrInvalid},
		{"key not in the file", eqFile("no-name.parquet", nil, []string{"id"}, []int{1, 2}, rowOf(1, nil)), ErrInvalid},
	} {
		_, err := l.commit("t", &TableCommit{Updates: l.manifests(int64(9100+i), iceberg.OpDelete, manifestGroup{globalInfo, []iceberg.ManifestEntry{added(tc.f)}})})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
	if got := liveDeletes(); got != before {
		t.Errorf("refused commits changed the delete files: %s, was %s", got, before)
	}
	if d, s := countRows("ducklake_delete_file"), countRows("ducklake_files_scheduled_for_deletion"); d != deletesBefore || s != schedBefore {
		t.Errorf("refused commits left rows: %d delete files (was %d), %d scheduled (was %d)", d, deletesBefore, s, schedBefore)
	}

	// One commit: c.parquet (partition x) comes, with keys that match its
	// row; a delete on (id, name) within partition x; a global delete on
	// name.
	c := dataFile("c.parquet", "x", rowOf(1, "a"), rowOf(5, "f"))
	scoped := eqFile("eq-x.parquet", []any{"x"}, []string{"id", "name"}, []int{1, 2}, rowOf(1, "a"), rowOf(3, nil), rowOf(nil, "d"))
	global := eqFile("eq-all.parquet", nil, []string{"name"}, []int{2}, rowOf(nil, "b"))
	s, err := l.commit("t", &TableCommit{Updates: l.manifests(9003, iceberg.OpDelete,
		manifestGroup{dataInfo, []iceberg.ManifestEntry{added(c)}},
		manifestGroup{delInfo, []iceberg.ManifestEntry{added(scoped)}},
		manifestGroup{globalInfo, []iceberg.ManifestEntry{added(global)}})})
	if err != nil {
		t.Fatalf("equality deletes: %v", err)
	}
	// a.parquet: (1,a) (2,b) (3,NULL) (NULL,d) and its earlier row 4;
	// (4,e) and (3,c) stay. b.parquet, partition y: (2,b) only.
	// c.parquet, of the same snapshot: nothing.
	want := fmt.Sprintf("[[data/a.parquet data/eq-all-%d.parquet 5] [data/b.parquet data/eq-all-%d.parquet 1]]", aID, bID)
	if got := liveDeletes(); got != want {
		t.Errorf("live delete files: %s, want %s", got, want)
	}
	positions := func(location, dataFile string) []int64 {
		t.Helper()
		body, ok := l.objects.Object(location)
		if !ok {
			t.Fatalf("%s was not written", location)
		}
		pd, err := materialize.ReadPositionDeletes(ctx, body)
		if err != nil {
			t.Fatalf("%s: %v", location, err)
		}
		for _, p := range pd.Paths {
			if p != dataFile {
				t.Errorf("%s names %s, want %s", location, p, dataFile)
			}
		}
		return pd.Pos
	}
	if got := positions(fmt.Sprintf("s3://lake/data/s/t/data/eq-all-%d.parquet", aID), a.Path); !slices.Equal(got, []int64{0, 1, 2, 3, 4}) {
		t.Errorf("a.parquet's deleted positions %v, want [0 1 2 3 4]", got)
	}
	if got := positions(fmt.Sprintf("s3://lake/data/s/t/data/eq-all-%d.parquet", bID), b.Path); !slices.Equal(got, []int64{1}) {
		t.Errorf("b.parquet's deleted positions %v, want [1]", got)
	}
	tid := l.query(`SELECT table_id FROM ducklake_table`)[0][0]
	if got := l.query(`SELECT changes_made FROM ducklake_snapshot_changes WHERE snapshot_id = $1`, s); fmt.Sprint(got) != fmt.Sprintf("[[inserted_into_table:%v,deleted_from_table:%v]]", tid, tid) {
		t.Errorf("changes: %v", got)
	}
	// The client's equality delete files are no DuckLake files: scheduled
	// for deletion, as are the merged-away file of the scoped delete and
	// a.parquet's earlier delete file's successor chain.
	sched := fmt.Sprint(l.query(`SELECT path FROM ducklake_files_scheduled_for_deletion WHERE path LIKE '%eq-%' ORDER BY path COLLATE "C"`))
	if want := fmt.Sprintf("[[s/t/data/eq-all.parquet] [s/t/data/eq-x-%d.parquet] [s/t/data/eq-x.parquet]]", aID); sched != want {
		t.Errorf("scheduled: %s, want %s", sched, want)
	}
	if got := l.query(`SELECT count(*) FROM ducklake_delete_file WHERE path LIKE '%eq-x%'`); fmt.Sprint(got) != "[[0]]" {
		t.Errorf("the scoped delete's intermediate file is registered: %v", got)
	}
	if got := l.query(`SELECT end_snapshot FROM ducklake_delete_file WHERE path = 'data/a-pos.parquet'`); fmt.Sprint(got) != fmt.Sprintf("[[%d]]", s) {
		t.Errorf("a.parquet's earlier delete file: end_snapshot %v, want %d", got, s)
	}

	// In a later snapshot, c.parquet is older: a delete of (5,f) applies
	// to it now; a delete matching nothing only goes.
	later := eqFile("eq-later.parquet", nil, []string{"name", "id"}, []int{2, 1}, rowOf(5, "f"))
	nothing := eqFile("eq-nothing.parquet", nil, []string{"id"}, []int{1}, rowOf(42, nil))
	if _, err := l.commit("t", &TableCommit{Updates: l.manifests(9004, iceberg.OpDelete, manifestGroup{globalInfo, []iceberg.ManifestEntry{added(later), added(nothing)}})}); err != nil {
		t.Fatal(err)
	}
	cID := fileID("data/c.parquet")
	want = fmt.Sprintf("[[data/a.parquet data/eq-all-%d.parquet 5] [data/b.parquet data/eq-all-%d.parquet 1] [data/c.parquet data/eq-later-%d.parquet 1]]", aID, bID, cID)
	if got := liveDeletes(); got != want {
		t.Errorf("live delete files after the later delete: %s, want %s", got, want)
	}
	if got := positions(fmt.Sprintf("s3://lake/data/s/t/data/eq-later-%d.parquet", cID), c.Path); !slices.Equal(got, []int64{1}) {
		t.Errorf("c.parquet's deleted positions %v, want [1]", got)
	}
	if got := l.query(`SELECT count(*) FROM ducklake_files_scheduled_for_deletion WHERE path IN ('s/t/data/eq-later.parquet', 's/t/data/eq-nothing.parquet')`); fmt.Sprint(got) != "[[2]]" {
		t.Errorf("the later delete files are not scheduled: %v", got)
	}

	// A truncate-partitioned equality delete's scope is not known to
	// DuckLake: refused, not widened.
	trunc := iceberg.PartitionSpec{ID: 77, Fields: []iceberg.PartitionField{{SourceID: 2, FieldID: 1001, Name: "name_trunc", Transform: iceberg.Transform{Kind: iceberg.TransformTruncate, Param: 1}}}}
	truncDel := eqFile("eq-trunc.parquet", []any{"a"}, []string{"id"}, []int{1}, rowOf(1, nil))
	_, err = l.commit("t", &TableCommit{Updates: append([]Update{{Action: ActionAddSpec, Spec: &trunc}},
		l.manifests(9005, iceberg.OpDelete, manifestGroup{iceberg.ManifestInfo{FormatVersion: 2, Content: iceberg.ManifestDeletes, Schema: schema, Spec: trunc},
			[]iceberg.ManifestEntry{added(truncDel)}})...)})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("a truncate-scoped equality delete: %v, want ErrUnsupported", err)
	}
}
