package commit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// lake is a DuckLake catalog on a fresh Postgres database with schema
// "s", and client-written objects in memory.
type lake struct {
	t       *testing.T
	pool    *pgxpool.Pool
	cat     *Catalog
	objects *objstore.MemStore
	ns      Namespace
}

func newLake(t *testing.T) *lake {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.Database(t))
	if _, err := ducklake.Init(ctx, pool, ducklake.InitOptions{DataPath: "s3://lake/data/"}); err != nil {
		t.Fatal(err)
	}
	l := &lake{t: t, pool: pool, objects: objstore.NewMem()}
	l.cat = New(Config{Objects: l.objects})
	l.write(func(tx pgx.Tx, snap *Snapshot) error {
		id := snap.catalogID()
		l.ns = Namespace{ID: id, Name: "s", Path: "s3://lake/data/s/"}
		snap.change(`created_schema:"s"`)
		snap.schemaChanged = true
		_, err := tx.Exec(ctx, `INSERT INTO ducklake_schema VALUES ($1, gen_random_uuid(), $2, NULL, 's', 's/', true)`, id, snap.ID)
		return err
	})
	return l
}

// write runs fn in one snapshot, committed as the REST catalog commits
// (the snapshot row first, then the changes, then the ids and the log).
func (l *lake) write(fn func(tx pgx.Tx, snap *Snapshot) error) (int64, error) {
	l.t.Helper()
	ctx := context.Background()
	tx, err := l.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		l.t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	snap := &Snapshot{}
	if err := tx.QueryRow(ctx, `SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1`).
		Scan(&snap.Head, &snap.SchemaVersion, &snap.NextCatalogID, &snap.NextFileID); err != nil {
		l.t.Fatal(err)
	}
	snap.ID = snap.Head + 1
	if _, err := tx.Exec(ctx, `INSERT INTO ducklake_snapshot VALUES ($1, now(), $2, $3, $4)`, snap.ID, snap.SchemaVersion, snap.NextCatalogID, snap.NextFileID); err != nil {
		l.t.Fatal(err)
	}
	if err := fn(tx, snap); err != nil {
		return 0, err
	}
	version := snap.SchemaVersion
	if snap.SchemaChanged() {
		version = snap.NewSchemaVersion()
	}
	if _, err := tx.Exec(ctx, `UPDATE ducklake_snapshot SET schema_version = $2, next_catalog_id = $3, next_file_id = $4 WHERE snapshot_id = $1`,
		snap.ID, version, snap.NextCatalogID, snap.NextFileID); err != nil {
		l.t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ducklake_snapshot_changes VALUES ($1, $2, NULL, NULL, NULL)`, snap.ID, snap.Changes()); err != nil {
		l.t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		l.t.Fatal(err)
	}
	return snap.ID, nil
}

// create creates the table req asks for in a snapshot of its own (see
// write), and returns it with that snapshot's id.
func (l *lake) create(req *CreateTableRequest) (ducklake.Table, int64, error) {
	l.t.Helper()
	var tbl ducklake.Table
	id, err := l.write(func(tx pgx.Tx, snap *Snapshot) error {
		var err error
		tbl, err = l.cat.CreateTable(context.Background(), tx, snap, l.ns, req)
		return err
	})
	return tbl, id, err
}

// mustCreate is create, failing the test on an error.
func (l *lake) mustCreate(req *CreateTableRequest) (ducklake.Table, int64) {
	l.t.Helper()
	tbl, id, err := l.create(req)
	if err != nil {
		l.t.Fatal(err)
	}
	return tbl, id
}

// commit applies one table commit the way the REST catalog does: against
// the table's materialised metadata at the head.
func (l *lake) commit(name string, req *TableCommit) (int64, error) {
	l.t.Helper()
	return l.write(func(tx pgx.Tx, snap *Snapshot) error {
		ctx := context.Background()
		target := Target{Namespace: l.ns, Name: name}
		t, err := ducklake.NewReader(tx, "").TableByName(ctx, snap.Head, "s", name)
		if err == nil {
			out, err := materialize.Materialise(ctx, materialize.NewPGSource(l.pool, ""), t.ID, snap.Head, materialize.Options{Objects: l.objects})
			if err != nil {
				return err
			}
			target.Table, target.Base = &t, out.Metadata
		} else if !errors.Is(err, ducklake.ErrNotFound) {
			return err
		}
		_, err = l.cat.Commit(ctx, tx, snap, target, req)
		return err
	})
}

func (l *lake) query(sql string, args ...any) [][]any {
	l.t.Helper()
	rows, err := l.pool.Query(context.Background(), sql, args...)
	if err != nil {
		l.t.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			l.t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	return out
}

func bound(t iceberg.Type, v any) []byte {
	b, err := iceberg.AppendBinary(nil, t, v)
	if err != nil {
		panic(err)
	}
	return b
}

// snapshotUpdates writes a manifest with entries and a manifest list for
// client snapshot id, and returns the add-snapshot and set-snapshot-ref
// updates that commit it.
func (l *lake) snapshotUpdates(id int64, op string, info iceberg.ManifestInfo, entries ...iceberg.ManifestEntry) []Update {
	l.t.Helper()
	return l.manifests(id, op, manifestGroup{info: info, entries: entries})
}

// TestCommitRegistersFiles: an Iceberg create and three snapshots — an
// append into a partitioned table, an overwrite, a position delete — become
// the DuckLake rows DuckDB writes for the same changes.
func TestCommitRegistersFiles(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	schema := &iceberg.Schema{Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Required: true, Type: iceberg.Primitive(iceberg.TypeLong)},
		{ID: 2, Name: "ts", Type: iceberg.Primitive(iceberg.TypeTimestamp)},
		{ID: 3, Name: "cat", Type: iceberg.Primitive(iceberg.TypeString)},
		{ID: 4, Name: "v", Type: iceberg.Primitive(iceberg.TypeDouble)},
	}}
	spec := &iceberg.PartitionSpec{Fields: []iceberg.PartitionField{
		{SourceID: 2, FieldID: 1000, Name: "ts_day", Transform: iceberg.Day},
		{SourceID: 3, FieldID: 1001, Name: "cat", Transform: iceberg.Identity},
	}}
	table, _ := l.mustCreate(&CreateTableRequest{Name: "t", Schema: schema, PartitionSpec: spec})
	if got := l.query(`SELECT partition_key_index, column_id, "transform" FROM ducklake_partition_column ORDER BY 1`); fmt.Sprint(got) != "[[0 2 year] [1 2 month] [2 2 day] [3 3 identity]]" {
		t.Fatalf("partition keys %v", got)
	}
	partID := l.query(`SELECT partition_id FROM ducklake_partition_info`)[0][0].(int64)
	served := iceberg.PartitionSpec{ID: int(partID), Fields: []iceberg.PartitionField{
		{SourceID: 2, FieldID: 1000, Name: "ts_day", Transform: iceberg.Day},
		{SourceID: 3, FieldID: 1001, Name: "cat", Transform: iceberg.Identity},
	}}
	info := iceberg.ManifestInfo{FormatVersion: 2, Content: iceberg.ManifestData, Schema: schema, Spec: served}
	ts := int64(1709622489) * 1_000_000 // 2024-03-05 07:08:09
	day := int32(ts / 86_400_000_000)
	tsT, longT, dblT := iceberg.Primitive(iceberg.TypeTimestamp), iceberg.Primitive(iceberg.TypeLong), iceberg.Primitive(iceberg.TypeDouble)
	file := func(path string, rows int64, cat string, loID, hiID int64) *iceberg.DataFile {
		return &iceberg.DataFile{Content: iceberg.ContentData, Path: "s3://lake/data/s/t/data/" + path, Format: "PARQUET",
			Partition: []any{day, cat}, RecordCount: rows, FileSizeBytes: 1000 + rows,
			ColumnSizes: map[int]int64{1: 40}, ValueCounts: map[int]int64{1: rows, 2: rows, 3: rows, 4: rows},
			NullValueCounts: map[int]int64{1: 0, 2: 0, 3: 0, 4: 1}, NaNValueCounts: map[int]int64{4: 1},
			LowerBounds: map[int][]byte{1: bound(longT, loID), 2: bound(tsT, ts), 3: []byte(cat), 4: bound(dblT, -0.5)},
			UpperBounds: map[int][]byte{1: bound(longT, hiID), 2: bound(tsT, ts+1500000), 3: []byte(cat), 4: bound(dblT, 2.5)}}
	}
	added := func(f *iceberg.DataFile) iceberg.ManifestEntry {
		return iceberg.ManifestEntry{Status: iceberg.StatusAdded, File: f}
	}
	a, b := file("a.parquet", 10, "books", 0, 9), file("b.parquet", 5, "toys", 10, 14)
	none := []Requirement{{Type: AssertRefSnapshotID, Ref: "main", SnapshotIDSet: true}}
	s1, err := l.commit("t", &TableCommit{Requirements: none, Updates: l.snapshotUpdates(7001, iceberg.OpAppend, info, added(a), added(b))})
	if err != nil {
		t.Fatal(err)
	}
	r := ducklake.NewReader(l.pool, "")
	files, err := r.DataFiles(ctx, s1, table.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		var vals []string
		for _, v := range f.PartitionValues {
			vals = append(vals, v.Value)
		}
		got = append(got, fmt.Sprintf("%s rel=%v rows=%d rowid=%d part=%d %v", f.RawPath, f.PathIsRelative, f.RecordCount, f.RowIDStart, f.PartitionID, vals))
	}
	want := []string{
		fmt.Sprintf("data/a.parquet rel=true rows=10 rowid=0 part=%d [2024 3 5 books]", partID),
		fmt.Sprintf("data/b.parquet rel=true rows=5 rowid=10 part=%d [2024 3 5 toys]", partID),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("data files\n got %q\nwant %q", got, want)
	}
	stats := l.query(`SELECT column_id, column_size_bytes, value_count, null_count, min_value, max_value, contains_nan
		FROM ducklake_file_column_stats WHERE data_file_id = $1 ORDER BY column_id`, files[0].ID)
	if fmt.Sprint(stats) != "[[1 40 10 0 0 9 <nil>] [2 <nil> 10 0 2024-03-05 07:08:09 2024-03-05 07:08:10.5 <nil>] [3 <nil> 10 0 books books <nil>] [4 <nil> 9 1 -0.5 2.5 true]]" {
		t.Errorf("column stats of a.parquet: %v", stats)
	}
	if got := l.query(`SELECT record_count, next_row_id, file_size_bytes FROM ducklake_table_stats`); fmt.Sprint(got) != "[[15 15 2015]]" {
		t.Errorf("table stats %v", got)
	}
	if got := l.query(`SELECT column_id, contains_null, contains_nan, min_value, max_value FROM ducklake_table_column_stats ORDER BY 1`); fmt.Sprint(got) !=
		"[[1 false <nil> 0 14] [2 false <nil> 2024-03-05 07:08:09 2024-03-05 07:08:10.5] [3 false <nil> books toys] [4 true true -0.5 2.5]]" {
		t.Errorf("table column stats %v", got)
	}
	// next_file_id 4: the two data files, and the client's manifest list
	// and manifest, scheduled for deletion under file ids of their own.
	if got := l.query(`SELECT changes_made, schema_version = (SELECT schema_version FROM ducklake_snapshot WHERE snapshot_id = $1 - 1), next_file_id
		FROM ducklake_snapshot JOIN ducklake_snapshot_changes USING (snapshot_id) WHERE snapshot_id = $1`, s1); fmt.Sprint(got) != fmt.Sprintf("[[inserted_into_table:%d true 4]]", table.ID) {
		t.Errorf("snapshot %d: %v", s1, got)
	}

	// Overwrite: a.parquet goes, c.parquet comes.
	c := file("c.parquet", 3, "books", 100, 102)
	removed := iceberg.ManifestEntry{Status: iceberg.StatusDeleted, SnapshotID: ptr(int64(7002)), File: a}
	s2, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7002, iceberg.OpOverwrite, info, added(c), removed)})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.query(`SELECT path, end_snapshot FROM ducklake_data_file ORDER BY data_file_id`); fmt.Sprint(got) != fmt.Sprintf("[[data/a.parquet %d] [data/b.parquet <nil>] [data/c.parquet <nil>]]", s2) {
		t.Errorf("files after the overwrite: %v", got)
	}
	if got := l.query(`SELECT changes_made FROM ducklake_snapshot_changes WHERE snapshot_id = $1`, s2); fmt.Sprint(got) != fmt.Sprintf("[[inserted_into_table:%d,deleted_from_table:%d]]", table.ID, table.ID) {
		t.Errorf("changes of the overwrite: %v", got)
	}
	// a.parquet is gone: removing it again is a conflict (another writer
	// got there first), and so is adding b.parquet twice.
	again := iceberg.ManifestEntry{Status: iceberg.StatusDeleted, SnapshotID: ptr(int64(7003)), File: a}
	if _, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7003, iceberg.OpDelete, info, again)}); !errors.Is(err, ErrConflict) {
		t.Errorf("removing a removed file: %v", err)
	}
	if _, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7004, iceberg.OpAppend, info, added(b))}); !errors.Is(err, ErrConflict) {
		t.Errorf("adding a file twice: %v", err)
	}

	// A position delete file for b.parquet.
	delInfo := iceberg.ManifestInfo{FormatVersion: 2, Content: iceberg.ManifestDeletes, Schema: schema, Spec: served}
	del := &iceberg.DataFile{Content: iceberg.ContentPositionDeletes, Path: "s3://lake/data/s/t/data/b-deletes.parquet", Format: "PARQUET",
		Partition: []any{day, "toys"}, RecordCount: 2, FileSizeBytes: 300, ReferencedDataFile: b.Path}
	s3, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7005, iceberg.OpDelete, delInfo, added(del))})
	if err != nil {
		t.Fatal(err)
	}
	files, err = r.DataFiles(ctx, s3, table.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.RawPath == "data/b.parquet" && (f.Delete == nil || f.Delete.RawPath != "data/b-deletes.parquet" || f.Delete.DeleteCount != 2) {
			t.Errorf("b.parquet's delete file: %+v", f.Delete)
		}
	}
	// DuckLake keeps one delete file per data file: a second delete file
	// for b.parquet is merged with the first into a new file beside the
	// second, and the first ends.
	fileID := func(path string) any {
		return l.query(`SELECT data_file_id FROM ducklake_data_file WHERE path = $1`, path)[0][0]
	}
	bID, cID := fileID("data/b.parquet"), fileID("data/c.parquet")
	live := func() string {
		return fmt.Sprint(l.query(`SELECT f.path, d.path, d.delete_count FROM ducklake_delete_file d JOIN ducklake_data_file f USING (data_file_id)
			WHERE d.end_snapshot IS NULL ORDER BY 1`))
	}
	positions := func(location, dataFile string) []int64 {
		t.Helper()
		body, _ := l.objects.Object(location)
		pd, err := materialize.ReadPositionDeletes(ctx, body)
		if err != nil {
			t.Fatalf("%s: %v", location, err)
		}
		pos := pd.Pos
		for _, p := range pd.Paths {
			if p != dataFile {
				t.Errorf("%s names %s, want %s", location, p, dataFile)
			}
		}
		return pos
	}
	first, err := materialize.WritePositionDeletes(b.Path, []int64{3, 7})
	if err != nil {
		t.Fatal(err)
	}
	l.objects.Set(del.Path, first)
	second, err := materialize.WritePositionDeletes(b.Path, []int64{7, 9})
	if err != nil {
		t.Fatal(err)
	}
	del2 := *del
	del2.Path = "s3://lake/data/s/t/data/b-deletes-2.parquet"
	l.objects.Set(del2.Path, second)
	s5, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7006, iceberg.OpDelete, delInfo, added(&del2))})
	if err != nil {
		t.Fatalf("a second delete file for b.parquet: %v", err)
	}
	if got, want := live(), fmt.Sprintf("[[data/b.parquet data/b-deletes-2-%v.parquet 3]]", bID); got != want {
		t.Errorf("live delete files after the merge: %s, want %s", got, want)
	}
	if got := l.query(`SELECT end_snapshot FROM ducklake_delete_file WHERE path = 'data/b-deletes.parquet'`); fmt.Sprint(got) != fmt.Sprintf("[[%d]]", s5) {
		t.Errorf("the first delete file of b.parquet: end_snapshot %v, want %d", got, s5)
	}
	if got := positions(fmt.Sprintf("s3://lake/data/s/t/data/b-deletes-2-%v.parquet", bID), b.Path); !slices.Equal(got, []int64{3, 7, 9}) {
		t.Errorf("merged positions %v, want [3 7 9]", got)
	}
	// DuckDB's iceberg extension names no data file (no
	// referenced_data_file, no file_path bounds): the catalog reads the
	// file. One spanning b.parquet and c.parquet is split into one file per
	// data file (b.parquet's merged with its delete file); one naming
	// c.parquet alone is then merged with c.parquet's.
	duckDel := func(path string, files ...string) *iceberg.DataFile {
		var pos []int64
		var names []string
		for i, f := range files {
			names, pos = append(names, f), append(pos, int64(i))
		}
		body := writePositionDeletesOf(t, names, pos)
		l.objects.Set(path, body)
		return &iceberg.DataFile{Content: iceberg.ContentPositionDeletes, Path: path, Format: "PARQUET",
			Partition: []any{day, "books"}, RecordCount: int64(len(files)), FileSizeBytes: int64(len(body))}
	}
	spanning := duckDel("s3://lake/data/s/t/data/bc-deletes.parquet", b.Path, c.Path)
	if _, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7010, iceberg.OpDelete, delInfo, added(spanning))}); err != nil {
		t.Fatalf("a delete file spanning b.parquet and c.parquet: %v", err)
	}
	if got, want := live(), fmt.Sprintf("[[data/b.parquet data/bc-deletes-%v.parquet 4] [data/c.parquet data/bc-deletes-%v.parquet 1]]", bID, cID); got != want {
		t.Errorf("live delete files after the split: %s, want %s", got, want)
	}
	if got := positions(fmt.Sprintf("s3://lake/data/s/t/data/bc-deletes-%v.parquet", bID), b.Path); !slices.Equal(got, []int64{0, 3, 7, 9}) {
		t.Errorf("b.parquet's positions after the split %v, want [0 3 7 9]", got)
	}
	if got := positions(fmt.Sprintf("s3://lake/data/s/t/data/bc-deletes-%v.parquet", cID), c.Path); !slices.Equal(got, []int64{1}) {
		t.Errorf("c.parquet's positions after the split %v, want [1]", got)
	}
	cDel := duckDel("s3://lake/data/s/t/data/c-deletes.parquet", c.Path, c.Path)
	s4, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7011, iceberg.OpDelete, delInfo, added(cDel))})
	if err != nil {
		t.Fatalf("a delete file naming only c.parquet in its rows: %v", err)
	}
	if got, want := fmt.Sprint(l.query(`SELECT f.path, d.path, d.delete_count FROM ducklake_delete_file d JOIN ducklake_data_file f USING (data_file_id)
		WHERE d.begin_snapshot = $1`, s4)), fmt.Sprintf("[[data/c.parquet data/c-deletes-%v.parquet 2]]", cID); got != want {
		t.Errorf("c.parquet's delete file: %s, want %s", got, want)
	}
	// The client's delete files merged or split above were never
	// registered: they are scheduled for deletion (relative to the data
	// path) under file ids of their own.
	sched := func() string {
		// The clients' manifests are scheduled too (scheduleClientManifests).
		return fmt.Sprint(l.query(`SELECT path, path_is_relative FROM ducklake_files_scheduled_for_deletion WHERE path LIKE '%.parquet' ORDER BY data_file_id`))
	}
	wantSched := "[[s/t/data/b-deletes-2.parquet true] [s/t/data/bc-deletes.parquet true] [s/t/data/c-deletes.parquet true]]"
	if got := sched(); got != wantSched {
		t.Errorf("scheduled for deletion: %s, want %s", got, wantSched)
	}
	if got := l.query(`SELECT count(*) FROM ducklake_files_scheduled_for_deletion f
		WHERE EXISTS (SELECT 1 FROM ducklake_data_file d WHERE d.data_file_id = f.data_file_id)
		OR EXISTS (SELECT 1 FROM ducklake_delete_file d WHERE d.delete_file_id = f.data_file_id)
		OR f.data_file_id >= (SELECT max(next_file_id) FROM ducklake_snapshot)`); fmt.Sprint(got) != "[[0]]" {
		t.Errorf("scheduled files reuse or exceed file ids: %v", got)
	}
	// Two delete files for a new data file in one commit: the first is
	// registered, then merged with the second, so no snapshot ever sees
	// it: its row goes and both client files are scheduled.
	d := file("d.parquet", 3, "toys", 20, 22)
	if _, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7012, iceberg.OpAppend, info, added(d))}); err != nil {
		t.Fatal(err)
	}
	dID := l.query(`SELECT data_file_id FROM ducklake_data_file WHERE path = 'data/d.parquet'`)[0][0]
	d1, d2 := duckDel("s3://lake/data/s/t/data/d1-deletes.parquet", d.Path), duckDel("s3://lake/data/s/t/data/d2-deletes.parquet", d.Path, d.Path)
	if _, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7013, iceberg.OpDelete, delInfo, added(d1), added(d2))}); err != nil {
		t.Fatalf("two delete files for d.parquet: %v", err)
	}
	if got, want := fmt.Sprint(l.query(`SELECT d.path, d.delete_count FROM ducklake_delete_file d JOIN ducklake_data_file f USING (data_file_id) WHERE f.path = 'data/d.parquet'`)),
		fmt.Sprintf("[[data/d2-deletes-%v.parquet 2]]", dID); got != want {
		t.Errorf("d.parquet's delete files: %s, want %s", got, want)
	}
	wantSched = strings.TrimSuffix(wantSched, "]") + " [s/t/data/d1-deletes.parquet true] [s/t/data/d2-deletes.parquet true]]"
	if got := sched(); got != wantSched {
		t.Errorf("scheduled for deletion: %s, want %s", got, wantSched)
	}
	// A commit that fails after merging a delete file schedules nothing.
	d3 := duckDel("s3://lake/data/s/t/data/d3-deletes.parquet", d.Path)
	stray := duckDel("s3://lake/data/s/t/data/stray-deletes.parquet", "s3://lake/data/s/t/data/nope.parquet")
	if _, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7014, iceberg.OpDelete, delInfo, added(d3), added(stray))}); !errors.Is(err, ErrConflict) {
		t.Errorf("a delete file for a data file the table lacks: %v", err)
	}
	if got := sched(); got != wantSched {
		t.Errorf("scheduled for deletion after a failed commit: %s, want %s", got, wantSched)
	}
	outside := file("../../u/x.parquet", 1, "books", 0, 0)
	outside.Path = "s3://lake/data/u/x.parquet"
	if _, err := l.commit("t", &TableCommit{Updates: l.snapshotUpdates(7007, iceberg.OpAppend, info, added(outside))}); !errors.Is(err, ErrForbidden) {
		t.Errorf("a file outside the table: %v", err)
	}
	// Only the first snapshot asserted an absent main; it exists now.
	if _, err := l.commit("t", &TableCommit{Requirements: none, Updates: []Update{{Action: ActionSetProperties, Updates: map[string]string{"a": "b"}}}}); !errors.Is(err, ErrConflict) {
		t.Errorf("asserting an absent main on a table with snapshots: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestCommitEvolvesColumns: DuckLake's column rows after add, rename,
// promotion and drop, as DuckDB's ALTER TABLE writes them.
func TestCommitEvolvesColumns(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	schema := &iceberg.Schema{Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.Primitive(iceberg.TypeInt)},
		{ID: 2, Name: "name", Type: iceberg.Primitive(iceberg.TypeString)},
		{ID: 3, Name: "f", Type: iceberg.Primitive(iceberg.TypeFloat)},
	}}
	_, created := l.mustCreate(&CreateTableRequest{Name: "t", Schema: schema})
	next := &iceberg.Schema{ID: 9, Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.Primitive(iceberg.TypeLong)},
		{ID: 2, Name: "label", Type: iceberg.Primitive(iceberg.TypeString)},
		{ID: 4, Name: "extra", Type: iceberg.StructOf(iceberg.NestedField{ID: 5, Name: "x", Type: iceberg.Primitive(iceberg.TypeDouble)})},
	}}
	s, err := l.commit("t", &TableCommit{Updates: []Update{{Action: ActionAddSchema, Schema: next}, {Action: ActionSetCurrentSchema, SchemaID: ptr(-1)}}})
	if err != nil {
		t.Fatal(err)
	}
	rows := l.query(`SELECT column_id, begin_snapshot = $1, end_snapshot = $2, column_name, column_type, coalesce(parent_column, 0)
		FROM ducklake_column ORDER BY column_id, begin_snapshot`, created, s)
	want := "[[1 true true id int32 0] [1 false <nil> id int64 0] [2 true true name varchar 0] [2 false <nil> label varchar 0] " +
		"[3 true true f float32 0] [4 false <nil> extra struct 0] [5 false <nil> x float64 4]]"
	if fmt.Sprint(rows) != want {
		t.Errorf("columns\n got %v\nwant %s", rows, want)
	}
	if got := l.query(`SELECT count(*) FROM ducklake_schema_versions WHERE begin_snapshot = $1`, s); fmt.Sprint(got) != "[[1]]" {
		t.Errorf("schema versions of snapshot %d: %v", s, got)
	}
	out, err := materialize.Materialise(ctx, materialize.NewPGSource(l.pool, ""), 2, s, materialize.Options{Objects: l.objects})
	if err != nil {
		t.Fatal(err)
	}
	cur := out.Metadata.SchemaByID(out.Metadata.CurrentSchemaID)
	next.ID = cur.ID
	if !cur.Equal(next) || out.Metadata.LastColumnID != 5 {
		t.Errorf("the schema served back: %+v (last column %d)", cur, out.Metadata.LastColumnID)
	}
	if math.Abs(float64(out.Metadata.CurrentSchemaID)) == 0 || !strings.Contains(string(out.MetadataJSON), `"label"`) {
		t.Errorf("metadata %s", out.MetadataJSON)
	}
}

// TestCommitColumnDocs: Iceberg docs are DuckLake column comments, the
// ducklake_column_tag rows DuckDB's COMMENT ON COLUMN writes, versioned by
// snapshot; the schema served back carries them.
func TestCommitColumnDocs(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	schema := &iceberg.Schema{Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Required: true, Type: iceberg.Primitive(iceberg.TypeInt), Doc: "unique ID 🤪"},
		{ID: 2, Name: "data", Type: iceberg.Primitive(iceberg.TypeString)},
		{ID: 3, Name: "s", Type: iceberg.StructOf(iceberg.NestedField{ID: 4, Name: "x", Type: iceberg.Primitive(iceberg.TypeDouble), Doc: "inner"})},
	}}
	_, created := l.mustCreate(&CreateTableRequest{Name: "t", Schema: schema})
	// A doc changed, one added, one removed; the columns stay as they are.
	next := &iceberg.Schema{ID: 1, Fields: []iceberg.NestedField{
		{ID: 1, Name: "id", Required: true, Type: iceberg.Primitive(iceberg.TypeInt), Doc: "the key"},
		{ID: 2, Name: "data", Type: iceberg.Primitive(iceberg.TypeString), Doc: "payload"},
		{ID: 3, Name: "s", Type: iceberg.StructOf(iceberg.NestedField{ID: 4, Name: "x", Type: iceberg.Primitive(iceberg.TypeDouble)})},
	}}
	s, err := l.commit("t", &TableCommit{Updates: []Update{{Action: ActionAddSchema, Schema: next}, {Action: ActionSetCurrentSchema, SchemaID: ptr(-1)}}})
	if err != nil {
		t.Fatal(err)
	}
	rows := l.query(`SELECT column_id, begin_snapshot = $1, coalesce(end_snapshot = $2, false), "key", "value"
		FROM ducklake_column_tag ORDER BY column_id, begin_snapshot`, created, s)
	want := "[[1 true true comment unique ID 🤪] [1 false false comment the key] [2 false false comment payload] [4 true true comment inner]]"
	if fmt.Sprint(rows) != want {
		t.Errorf("column tags\n got %v\nwant %s", rows, want)
	}
	if got := l.query(`SELECT count(*) FROM ducklake_column WHERE begin_snapshot = $1`, s); fmt.Sprint(got) != "[[0]]" {
		t.Errorf("a doc change rewrote columns: %v", got)
	}
	out, err := materialize.Materialise(ctx, materialize.NewPGSource(l.pool, ""), 2, s, materialize.Options{Objects: l.objects})
	if err != nil {
		t.Fatal(err)
	}
	cur := out.Metadata.SchemaByID(out.Metadata.CurrentSchemaID)
	next.ID = cur.ID
	if !cur.Equal(next) {
		t.Errorf("the schema served back: %+v, want %+v", cur, next)
	}
	first := out.Metadata.Schemas[0]
	schema.ID = first.ID
	if len(out.Metadata.Schemas) != 2 || !first.Equal(schema) {
		t.Errorf("the schemas served back: %+v", out.Metadata.Schemas)
	}
	// The same commit again changes nothing.
	if s2, err := l.commit("t", &TableCommit{Updates: []Update{{Action: ActionAddSchema, Schema: next}, {Action: ActionSetCurrentSchema, SchemaID: ptr(-1)}}}); err != nil {
		t.Fatal(err)
	} else if got := l.query(`SELECT count(*) FROM ducklake_column_tag WHERE begin_snapshot = $1`, s2); fmt.Sprint(got) != "[[0]]" {
		t.Errorf("an unchanged schema wrote tags: %v", got)
	}
}

// TestCreateTableAfterRename: a table renamed away keeps its files under
// the old name's path; a new table of that name gets a path of its own, so
// purging either never deletes the other's files. A location the client
// chose is kept as asked.
func TestCreateTableAfterRename(t *testing.T) {
	l := newLake(t)
	schema := &iceberg.Schema{Fields: []iceberg.NestedField{{ID: 1, Name: "id", Type: iceberg.Primitive(iceberg.TypeInt)}}}
	create := func(name, location string) ducklake.Table {
		t.Helper()
		tbl, _ := l.mustCreate(&CreateTableRequest{Name: name, Schema: schema, Location: location})
		return tbl
	}
	first := create("t", "")
	if first.RawPath != "t/" {
		t.Fatalf("first table's path %q, want t/", first.RawPath)
	}
	// A rename, as DuckDB's ALTER TABLE … RENAME writes it: same path.
	l.query(`UPDATE ducklake_table SET table_name = 'old' WHERE table_id = $1`, first.ID)
	second := create("t", "")
	if second.RawPath == first.RawPath || !strings.HasPrefix(second.RawPath, "t-") || !strings.HasSuffix(second.Path, "/"+second.RawPath) {
		t.Errorf("the new table's path %q (location %q) is not its own", second.RawPath, second.Path)
	}
	// A location the client chose that holds, or is held by, another live
	// table's files is refused.
	for _, loc := range []string{l.ns.Path + "t", l.ns.Path + "t/sub", strings.TrimSuffix(second.Path, "/")} {
		_, _, err := l.create(&CreateTableRequest{Name: "u", Schema: schema, Location: loc})
		if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "overlaps") {
			t.Errorf("create at %s: %v, want ErrForbidden (overlap)", loc, err)
		}
	}
	if chosen := create("u", l.ns.Path+"tt"); chosen.RawPath != "tt/" {
		t.Errorf("a chosen location became %q", chosen.RawPath)
	}
}
