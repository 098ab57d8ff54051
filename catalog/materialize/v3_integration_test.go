package materialize_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	goiceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// TestMaterialiseV3MatchesDuckDB runs the DuckDB scenario of
// TestMaterialiseMatchesDuckDB (file and inlined inserts, inlined deletions
// and delete files, UPDATE, schema change, partitions; then a flush that
// rewrites history) and materialises every snapshot of every table as
// format version 3: deletes become deletion vectors in Puffin files, rows
// carry lineage, TIMESTAMP_NS is timestamp_ns. iceberg-go, PyIceberg and
// DuckDB's iceberg extension must read exactly the rows DuckDB reads, and
// iceberg-go's _row_id must be DuckLake's rowid.
func TestMaterialiseV3MatchesDuckDB(t *testing.T) {
	ctx := context.Background()
	dsn, data, conn := newLake(t)
	py := testsupport.Python(t)
	var rep duckReport
	scenario(t, &rep, "write", dsn, data)
	v3Scenario(t, py, &rep, "merge", dsn, data)

	r := ducklake.NewReader(conn, "")
	v3 := materialize.Options{FormatVersion: 3, Objects: materialize.NewPositionCache(objstore.NewDir(), 0)}
	mat := materialize.NewMaterializer(materialize.Config{Source: materialize.NewPGSource(conn, ""), Writer: objstore.NewDir(), Options: v3})
	last := rep.Snapshots[len(rep.Snapshots)-1].ID
	lastMeta, requests := matchDuckDB(t, r, mat, &rep, func(name string, snap int64, res *materialize.Result) {
		if res.Metadata.FormatVersion != 3 || res.Metadata.NextRowID == nil {
			t.Fatalf("%s at %d: format version %d", name, snap, res.Metadata.FormatVersion)
		}
	})
	if ns := lastMeta["ns"]; ns == nil || ns.Metadata.SchemaByID(ns.Metadata.CurrentSchemaID).Fields[1].Type.ID != iceberg.TypeTimestampNS {
		t.Error("ns: column t is not timestamp_ns")
	}
	checkDeletionVectors(t, lastMeta["ev"])
	checkDeletionVectors(t, lastMeta["idp"])
	ev, err := r.TableByName(ctx, last, "main", "ev")
	if err != nil {
		t.Fatal(err)
	}
	checkMergedDV(t, conn, lastMeta["ev"], ev.ID, last)
	checkRowIDs(t, py, dsn, data, lastMeta)
	readers(t, requests)

	// After the flush, DuckDB's delete files record the snapshot of each
	// deletion: format version 3 reads them and can show snapshots that
	// format version 2 must refuse.
	var after duckReport
	scenario(t, &after, "flush", dsn, data)
	refused := map[int]int{}
	var afterRequests []readRequest
	for _, version := range []int{2, 3} {
		fresh := materialize.NewMaterializer(materialize.Config{Source: materialize.NewPGSource(conn, ""), Writer: objstore.NewDir(),
			Options: materialize.Options{FormatVersion: version, Objects: objstore.NewDir()}})
		newest := after.Snapshots[len(after.Snapshots)-1].ID
		refused[version] = matchAfterFlush(t, r, fresh, &after, fmt.Sprintf("after flush, v%d", version),
			func(name string, snap int64, res *materialize.Result, want []int64) {
				if version == 3 && snap == newest {
					afterRequests = append(afterRequests, readRequest{Metadata: res.MetadataLocation, Snapshot: res.Metadata.CurrentSnapshot().SnapshotID,
						want: want, what: fmt.Sprintf("after flush: %s at %d", name, snap)})
					if name == "ev" {
						checkDeletionVectors(t, res)
					}
				}
			})
	}
	t.Logf("after the flush, (table, snapshot) pairs refused as unrepresentable: v2 %d, v3 %d", refused[2], refused[3])
	if refused[3] > refused[2] {
		t.Errorf("format version 3 refuses %d snapshots, version 2 only %d", refused[3], refused[2])
	}
	readers(t, afterRequests)
}

// checkDeletionVectors: the current snapshot's deletes are all deletion
// vectors (no Parquet position delete files added in v3), at most one per
// data file, each a blob of a Puffin file whose footer agrees with the
// manifest entry.
func checkDeletionVectors(t *testing.T, res *materialize.Result) {
	t.Helper()
	tasks := planFiles(t, res)
	dvs := 0
	for _, task := range tasks {
		if len(task.DeleteFiles) != 0 {
			t.Errorf("%s: position delete files %v in a v3 table", task.File.FilePath(), task.DeleteFiles[0].FilePath())
		}
		if len(task.DeletionVectorFiles) > 1 {
			t.Errorf("%s: %d deletion vectors", task.File.FilePath(), len(task.DeletionVectorFiles))
		}
		if task.FirstRowID == nil {
			t.Errorf("%s: no first_row_id", task.File.FilePath())
		}
		for _, dv := range task.DeletionVectorFiles {
			dvs++
			body, err := os.ReadFile(dv.FilePath())
			if err != nil {
				t.Fatal(err)
			}
			p, err := iceberg.ParsePuffin(body)
			if err != nil {
				t.Fatal(err)
			}
			if dv.FileFormat() != goiceberg.PuffinFile || *dv.ReferencedDataFile() != task.File.FilePath() || dv.FileSizeBytes() != int64(len(body)) {
				t.Errorf("DV entry %+v for %s", dv, task.File.FilePath())
			}
			for i, b := range p.Metadata.Blobs {
				if b.Offset == *dv.ContentOffset() {
					v, err := p.DeletionVector(i)
					if err != nil || b.Length != *dv.ContentSizeInBytes() || v.Cardinality() != dv.Count() {
						t.Errorf("blob %d of %s: %v, length %d, cardinality %d; entry says %d, %d", i, dv.FilePath(), err, b.Length, v.Cardinality(), *dv.ContentSizeInBytes(), dv.Count())
					}
				}
			}
		}
	}
	if dvs == 0 {
		t.Errorf("%s: no live deletion vectors", res.MetadataLocation)
	}
}

// checkMergedDV: for every data file of the table that has both a live
// DuckLake delete file and deletions DuckDB kept in Postgres at snap, its
// one deletion vector holds exactly the union of both (the delete file read
// here with the Parquet reader, the inlined ones from the catalog).
func checkMergedDV(t *testing.T, q ducklake.Querier, res *materialize.Result, tableID, snap int64) {
	t.Helper()
	ctx := context.Background()
	h, err := materialize.NewPGSource(q, "").History(ctx, tableID, snap)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int64]bool{} // data file path → positions
	hasFile, hasInlined := map[string]bool{}, map[string]bool{}
	paths := map[int64]string{}
	for _, f := range h.DataFiles {
		paths[f.ID] = f.Path
	}
	add := func(path string, pos int64) {
		if want[path] == nil {
			want[path] = map[int64]bool{}
		}
		want[path][pos] = true
	}
	for _, d := range h.DeleteFiles {
		if d.Begin <= snap && (d.End == 0 || d.End > snap) {
			hasFile[paths[d.DataFileID]] = true
			for _, p := range readColumn(t, d.Path, "pos") {
				add(paths[d.DataFileID], p.(int64))
			}
		}
	}
	for _, d := range h.InlinedDeletes {
		hasInlined[paths[d.DataFileID]] = true
		add(paths[d.DataFileID], d.Pos)
	}
	tasks := planFiles(t, res)
	merged := 0
	for _, task := range tasks {
		path := task.File.FilePath()
		if !hasFile[path] || !hasInlined[path] {
			continue
		}
		if len(task.DeletionVectorFiles) != 1 {
			t.Errorf("%s: %d deletion vectors", path, len(task.DeletionVectorFiles))
			continue
		}
		dv := task.DeletionVectorFiles[0]
		body, err := os.ReadFile(dv.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		v, err := iceberg.ParseDeletionVector(body[*dv.ContentOffset() : *dv.ContentOffset()+*dv.ContentSizeInBytes()])
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Collect(v.Positions())
		exp := slices.Sorted(maps.Keys(want[path]))
		if !slices.Equal(got, exp) {
			t.Errorf("%s: deletion vector %v, want delete file ∪ inlined deletions %v", path, got, exp)
		}
		merged++
	}
	if merged == 0 {
		t.Error("no data file has deletions of both kinds: the scenario does not exercise merging")
	}
	t.Logf("%d deletion vectors merge a DuckLake delete file with inlined deletions", merged)
}

// checkRowIDs: iceberg-go's _row_id (row lineage: first_row_id + position,
// or the file's own _row_id column) is DuckLake's rowid for every row.
func checkRowIDs(t *testing.T, py, dsn, data string, meta map[string]*materialize.Result) {
	t.Helper()
	names := []string{"ev", "idp", "ym"}
	var duck map[string][][2]int64
	v3Scenario(t, py, &duck, "rowids", append([]string{dsn, data}, names...)...)
	ctx := context.Background()
	for _, name := range names {
		res := meta[name]
		at, err := loadTable(t, res.MetadataLocation).Scan(table.WithSelectedFields("id"), table.WithRowLineage()).ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("%s: iceberg-go scan with row lineage: %v", name, err)
		}
		ids := at.Schema().FieldIndices("id")
		rowIDs := at.Schema().FieldIndices("_row_id")
		if len(ids) != 1 || len(rowIDs) != 1 {
			at.Release()
			t.Fatalf("%s: scan schema %s", name, at.Schema())
		}
		var got [][2]int64
		idCol, ridCol := at.Column(ids[0]).Data().Chunks(), at.Column(rowIDs[0]).Data().Chunks()
		for i := range idCol {
			rid := ridCol[i].(*array.Int64)
			for j := range rid.Len() {
				var id int64
				switch c := idCol[i].(type) {
				case *array.Int64:
					id = c.Value(j)
				case *array.Int32:
					id = int64(c.Value(j))
				}
				if rid.IsNull(j) {
					t.Errorf("%s: id %d has a null _row_id", name, id)
				}
				got = append(got, [2]int64{id, rid.Value(j)})
			}
		}
		at.Release()
		slices.SortFunc(got, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		if !slices.Equal(got, duck[name]) {
			t.Errorf("%s: (id, _row_id) per iceberg-go\n%v\nDuckLake (id, rowid)\n%v", name, clip(got), clip(duck[name]))
		}
	}
}

// v3Scenario runs testdata/v3_scenario.py mode args and decodes its report.
func v3Scenario(t *testing.T, py string, out any, mode string, args ...string) {
	t.Helper()
	testsupport.RunJSON(t, exec.Command(py, append([]string{filepath.Join("testdata", "v3_scenario.py"), mode}, args...)...), out)
}

func clip(v [][2]int64) string {
	if len(v) > 12 {
		return fmt.Sprint(v[:12]) + fmt.Sprintf(" … (%d rows)", len(v))
	}
	return fmt.Sprint(v)
}
