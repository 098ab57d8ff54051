package catalog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	goiceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/testsupport/parquettest"
)

// eqTableRow is a row of TestIcebergGoEqualityDeletes' table; nil is NULL.
type eqTableRow struct {
	id   *int64
	name *string
	cat  string
}

func eqRowOf(id any, name any, cat string) eqTableRow {
	r := eqTableRow{cat: cat}
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

// eqRecord is rows as one record of schema's Arrow form (with field ids).
func eqRecord(t *testing.T, schema *goiceberg.Schema, rows []eqTableRow) arrow.RecordBatch {
	t.Helper()
	return icebergGoRecord(t, schema, func(b *array.RecordBuilder) {
		for _, r := range rows {
			for i, f := range b.Schema().Fields() {
				fb := b.Field(i)
				switch f.Name {
				case "id":
					if r.id == nil {
						fb.AppendNull()
					} else {
						fb.(*array.Int64Builder).Append(*r.id)
					}
				case "name":
					if r.name == nil {
						fb.AppendNull()
					} else {
						fb.(*array.StringBuilder).Append(*r.name)
					}
				case "cat":
					fb.(*array.StringBuilder).Append(r.cat)
				}
			}
		}
	})
}

// TestIcebergGoEqualityDeletes: iceberg-go's equality deletes (issue 15
// item 10; refused before) on a partitioned table: one row-delta snapshot
// adds a data file and an equality delete on (id, name) whose keys match
// rows of the new file (kept: same snapshot), of the older file of the
// delete's partition (deleted, NULL keys included, merged with the
// position delete that file already had) and of the other partition
// (kept: out of scope). DuckDB (ducklake), PyIceberg and DuckDB's iceberg
// extension read the same rows at every snapshot.
func TestIcebergGoEqualityDeletes(t *testing.T) {
	ns := "eq" + randomHex(4)
	env := writeEnv(t, ns)
	ctx := context.Background()
	cat := icebergGoCatalog(t, env, ns)
	schema := goiceberg.NewSchema(0,
		goiceberg.NestedField{ID: 1, Name: "id", Type: goiceberg.PrimitiveTypes.Int64},
		goiceberg.NestedField{ID: 2, Name: "name", Type: goiceberg.PrimitiveTypes.String},
		goiceberg.NestedField{ID: 3, Name: "cat", Type: goiceberg.PrimitiveTypes.String, Required: true},
	)
	spec := goiceberg.NewPartitionSpec(goiceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "cat", Transform: goiceberg.IdentityTransform{}})
	ident := table.Identifier{ns, "e"}
	tbl, err := cat.CreateTable(ctx, ident, schema, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(goiceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	sc := tbl.Schema()
	asTable := func(rows ...eqTableRow) arrow.Table {
		rec := eqRecord(t, sc, rows)
		defer rec.Release()
		return array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	}
	txn := tbl.NewTransaction()
	if err := txn.AppendTable(ctx, asTable(
		eqRowOf(1, "a", "x"), eqRowOf(2, "b", "x"), eqRowOf(3, nil, "x"), eqRowOf(nil, "d", "x"), eqRowOf(4, "e", "x"), eqRowOf(5, "f", "x"),
		eqRowOf(1, "a", "y"), eqRowOf(2, "b", "y"), eqRowOf(3, nil, "y"),
	), 1000, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatalf("append: %v", err)
	}
	// A position delete (merge-on-read) in partition x's file first.
	txn = tbl.NewTransaction()
	if err := txn.Delete(ctx, goiceberg.EqualTo(goiceberg.Reference("id"), int64(5)), nil); err != nil {
		t.Fatalf("delete id 5: %v", err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatalf("commit the position delete: %v", err)
	}
	if got := env.duck("SELECT count(*) FROM l." + ns + ".e")[0][0][0]; got != 8.0 {
		t.Fatalf("after the position delete DuckDB reads %v rows, want 8", got)
	}

	// One snapshot: a new data file in partition x, and equality deletes.
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		t.Fatalf("iceberg-go's FileIO %T cannot write", fs)
	}
	newPath := tbl.Location() + "/data/cat=x/same-snapshot.parquet"
	rec := eqRecord(t, sc, []eqTableRow{eqRowOf(1, "a", "x"), eqRowOf(3, nil, "x"), eqRowOf(9, "z", "x")})
	file := parquettest.File(t, rec)
	rec.Release()
	if err := wfs.WriteFile(newPath, file); err != nil {
		t.Fatalf("write %s: %v", newPath, err)
	}
	df, err := table.FileToDataFile(ctx, fs, newPath, sc, tbl.Spec(), 0, tbl.Properties())
	if err != nil {
		t.Fatal(err)
	}
	txn = tbl.NewTransaction()
	keys := eqRecord(t, sc, []eqTableRow{eqRowOf(1, "a", "x"), eqRowOf(3, nil, "x"), eqRowOf(nil, "d", "x"), eqRowOf(2, "b", "y")})
	deletes, err := txn.WriteEqualityDeletes(ctx, []int{1, 2}, func(yield func(arrow.RecordBatch, error) bool) { yield(keys, nil) })
	if err != nil {
		t.Fatalf("write equality deletes: %v", err)
	}
	if len(deletes) != 2 {
		t.Fatalf("iceberg-go wrote %d equality delete files, want one per partition", len(deletes))
	}
	if err := txn.NewRowDelta(nil).AddRows(df).AddDeletes(deletes...).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatalf("commit the equality deletes: %v", err)
	}

	// x: (1,a) (3,NULL) (NULL,d) deleted, (5,f) stays deleted, (2,b) (4,e)
	// kept; the new file whole; y: (2,b) deleted, (1,a) (3,NULL) kept.
	want := []string{"1 a x", "1 a y", "2 b x", "3 <nil> x", "3 <nil> y", "4 e x", "9 z x"}
	var got []string
	for _, r := range env.duck("SELECT id, name, cat FROM l." + ns + ".e")[0] {
		var s []string
		for _, v := range r {
			if f, ok := v.(float64); ok {
				v = int64(f)
			}
			s = append(s, fmt.Sprint(v))
		}
		got = append(got, strings.Join(s, " "))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("DuckDB reads\n %q\nwant %q", got, want)
	}
	// The x file's deletes are one DuckLake delete file: the position
	// delete's row and the equality delete's three.
	var counts []int64
	rows, err := env.pool.Query(ctx, `SELECT delete_count FROM ducklake_delete_file WHERE end_snapshot IS NULL ORDER BY 1`)
	if err == nil {
		counts, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err != nil || !slices.Equal(counts, []int64{1, 4}) {
		t.Errorf("live delete files' counts %v (%v), want [1 4]", counts, err)
	}
	// The client's equality delete files are no DuckLake files and are
	// scheduled for deletion.
	for _, d := range deletes {
		rel := strings.TrimPrefix(d.FilePath(), restDataPath)
		var n int
		if err := env.pool.QueryRow(ctx, `SELECT count(*) FROM ducklake_files_scheduled_for_deletion WHERE path = $1`, rel).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s scheduled %d times (%v), want once", rel, n, err)
		}
	}

	var truth, py struct {
		Current   []string            `json:"current"`
		Snapshots map[string][]string `json:"snapshots"`
	}
	pyiceberg(t, &truth, "truth", env.dsn, restDataPath, ns, "e")
	pyiceberg(t, &py, "read", env.url, "writer-"+ns+":pw", ns, "e")
	if len(truth.Current) != len(want) || !slices.Equal(py.Current, truth.Current) {
		t.Errorf("current rows: PyIceberg %q, DuckDB %q", py.Current, truth.Current)
	}
	for id, rows := range py.Snapshots {
		if w, ok := truth.Snapshots[id]; !ok || !slices.Equal(rows, w) {
			t.Errorf("snapshot %s: PyIceberg %q, DuckDB %q", id, rows, w)
		}
	}
	var ice struct {
		Current []string `json:"current"`
	}
	pyiceberg(t, &ice, "duckdb-iceberg", env.url, "writer-"+ns+":pw", ns, "e")
	if !slices.Equal(ice.Current, truth.Current) {
		t.Errorf("DuckDB iceberg reads %q, DuckDB ducklake %q", ice.Current, truth.Current)
	}
}
