package materialize_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	goiceberg "github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// matchDuckDB materialises every table of rep at each of its snapshots
// with mat (check, unless nil, judges each result first) and holds what
// iceberg-go reads there, and at every snapshot inside the newest metadata
// (time travel), to what DuckDB read. It returns the results at the last
// snapshot and a read request, for the other readers, per result that has
// an Iceberg snapshot.
func matchDuckDB(t *testing.T, r *ducklake.Reader, mat *materialize.Materializer, rep *duckReport,
	check func(name string, snap int64, res *materialize.Result)) (lastMeta map[string]*materialize.Result, requests []readRequest) {
	t.Helper()
	last := rep.Snapshots[len(rep.Snapshots)-1].ID
	lastMeta = map[string]*materialize.Result{}
	for _, s := range rep.Snapshots {
		for name, want := range s.Tables {
			res, err := materializeAt(t, r, mat, name, s.ID)
			if err != nil {
				t.Fatalf("%s at %d: %v", name, s.ID, err)
			}
			if check != nil {
				check(name, s.ID, res)
			}
			if s.ID == last {
				lastMeta[name] = res
			}
			cur := res.Metadata.CurrentSnapshot()
			if cur == nil {
				if len(want) != 0 {
					t.Errorf("%s at %d: no Iceberg snapshot, DuckDB has %d rows", name, s.ID, len(want))
				}
				continue
			}
			if got := scanIDs(t, res.MetadataLocation, 0); !slices.Equal(got, want) {
				t.Errorf("%s at %d: iceberg-go reads ids %v,\n DuckDB %v", name, s.ID, got, want)
			}
			requests = append(requests, readRequest{Metadata: res.MetadataLocation, Snapshot: cur.SnapshotID, want: want,
				what: fmt.Sprintf("%s at %d", name, s.ID)})
		}
	}
	for name, res := range lastMeta {
		for _, s := range res.Metadata.Snapshots {
			want, _ := rep.ids(s.SnapshotID, name)
			if got := scanIDs(t, res.MetadataLocation, s.SnapshotID); !slices.Equal(got, want) {
				t.Errorf("%s time travel to %d: iceberg-go %v, DuckDB %v", name, s.SnapshotID, got, want)
			}
		}
	}
	return lastMeta, requests
}

// materializeAt materialises table name (of schema main) at snapshot snap.
func materializeAt(t *testing.T, r *ducklake.Reader, mat *materialize.Materializer, name string, snap int64) (*materialize.Result, error) {
	t.Helper()
	ctx := context.Background()
	tbl, err := r.TableByName(ctx, snap, "main", name)
	if err != nil {
		t.Fatal(err)
	}
	return mat.Materialize(ctx, tbl.ID, snap)
}

// matchAfterFlush is matchDuckDB on history DuckDB's flush rewrote: a
// snapshot before the newest may be refused as unrepresentable (it returns
// how many were), every other must read what DuckDB read; each, unless
// nil, sees every result that has an Iceberg snapshot. label starts the
// failure messages.
func matchAfterFlush(t *testing.T, r *ducklake.Reader, mat *materialize.Materializer, after *duckReport, label string,
	each func(name string, snap int64, res *materialize.Result, want []int64)) (refused int) {
	t.Helper()
	newest := after.Snapshots[len(after.Snapshots)-1].ID
	for _, s := range after.Snapshots {
		for name, want := range s.Tables {
			res, err := materializeAt(t, r, mat, name, s.ID)
			if errors.Is(err, materialize.ErrUnrepresentable) && s.ID != newest {
				refused++
				continue
			}
			if err != nil {
				t.Fatalf("%s: %s at %d: %v", label, name, s.ID, err)
			}
			if res.Metadata.CurrentSnapshot() == nil {
				if len(want) != 0 {
					t.Errorf("%s: %s at %d: no snapshot, DuckDB has %d rows", label, name, s.ID, len(want))
				}
				continue
			}
			if got := scanIDs(t, res.MetadataLocation, 0); !slices.Equal(got, want) {
				t.Errorf("%s: %s at %d: iceberg-go %v, DuckDB %v", label, name, s.ID, got, want)
			}
			if each != nil {
				each(name, s.ID, res, want)
			}
		}
	}
	return refused
}

// newLake is a fresh DuckLake catalog in Postgres, its data files in a
// temporary directory, for the DuckDB scenario (the test is Missing
// without the venv's Python).
func newLake(t *testing.T) (dsn, data string, conn *pgx.Conn) {
	t.Helper()
	dsn = pgtest.Database(t)
	testsupport.Python(t)
	data = filepath.Join(t.TempDir(), "lake") + "/"
	conn = pgtest.Connect(t, dsn)
	if _, err := ducklake.Init(context.Background(), conn, ducklake.InitOptions{DataPath: data}); err != nil {
		t.Fatal(err)
	}
	return dsn, data, conn
}

func scenario(t *testing.T, out any, args ...string) {
	t.Helper()
	testsupport.RunPython(t, out, filepath.Join("testdata", "scenario.py"), args...)
}

// duckReport is what DuckDB reads: per snapshot, the sorted ids of each
// table that exists then.
type duckReport struct {
	Snapshots []struct {
		ID     int64              `json:"id"`
		Tables map[string][]int64 `json:"tables"`
	} `json:"snapshots"`
}

func (r *duckReport) ids(snap int64, name string) ([]int64, bool) {
	for _, s := range r.Snapshots {
		if s.ID == snap {
			ids, ok := s.Tables[name]
			return ids, ok
		}
	}
	return nil, false
}

// loadTable opens the table of metadata file metadataLocation with
// iceberg-go.
func loadTable(t *testing.T, metadataLocation string) *table.Table {
	t.Helper()
	tbl, err := table.NewFromLocation(context.Background(), table.Identifier{"main", "t"}, metadataLocation, icebergio.LoadFSFunc(nil, metadataLocation), nil)
	if err != nil {
		t.Fatalf("iceberg-go loads %s: %v", metadataLocation, err)
	}
	return tbl
}

// planFiles is iceberg-go's plan of the current snapshot of res's table:
// its data files, each with the deletes that apply to it.
func planFiles(t *testing.T, res *materialize.Result) []table.FileScanTask {
	t.Helper()
	tasks, err := loadTable(t, res.MetadataLocation).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// scanIDs reads the id column of snapshot snap (0: current) with
// iceberg-go, which applies the position deletes.
func scanIDs(t *testing.T, metadataLocation string, snap int64) []int64 {
	t.Helper()
	ctx := context.Background()
	tbl := loadTable(t, metadataLocation)
	var opts []table.ScanOption
	if snap != 0 {
		opts = append(opts, table.WithSnapshotID(snap))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("iceberg-go scans %s at %d: %v", metadataLocation, snap, err)
	}
	defer at.Release()
	return int64Column(t, at, "id")
}

func int64Column(t *testing.T, at arrow.Table, name string) []int64 {
	t.Helper()
	idx := at.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %s in %s", name, at.Schema())
	}
	ids := []int64{}
	for _, chunk := range at.Column(idx[0]).Data().Chunks() {
		switch c := chunk.(type) {
		case *array.Int64:
			for i := range c.Len() {
				ids = append(ids, c.Value(i))
			}
		case *array.Int32:
			for i := range c.Len() {
				ids = append(ids, int64(c.Value(i)))
			}
		case *array.Date32:
			for i := range c.Len() {
				ids = append(ids, int64(c.Value(i)))
			}
		default:
			t.Fatalf("column %s is %T", name, chunk)
		}
	}
	slices.Sort(ids)
	return ids
}

type readRequest struct {
	Metadata string `json:"metadata"`
	Snapshot int64  `json:"snapshot"`
	Prune    []any  `json:"prune,omitempty"`
	want     []int64
	what     string
}

type readResult struct {
	PyIceberg      []int64  `json:"pyiceberg"`
	PyIcebergCols  []string `json:"pyiceberg_columns"`
	PyIcebergError string   `json:"pyiceberg_error"`
	DuckDB         []int64  `json:"duckdb"`
	DuckDBError    string   `json:"duckdb_error"`
	Prune          []any    `json:"prune"`
}

// TestMaterialiseMatchesDuckDB builds tables with a real DuckDB 1.5 on a
// real Postgres over many snapshots (and one table of the DuckDB types whose
// Iceberg form is least obvious: unsigned ints, HUGEINT, TIMESTAMP_MS/_S), materialises every snapshot of every
// table, and reads each back with iceberg-go, PyIceberg and DuckDB's iceberg
// extension: every reader must see exactly the rows DuckDB sees.
func TestMaterialiseMatchesDuckDB(t *testing.T) {
	dsn, data, conn := newLake(t)
	var rep duckReport
	scenario(t, &rep, "write", dsn, data)

	r := ducklake.NewReader(conn, "")
	mat := materialize.NewMaterializer(materialize.Config{Source: materialize.NewPGSource(conn, ""), Writer: objstore.NewDir(), Options: materialize.Options{Objects: objstore.NewDir()}})
	last := rep.Snapshots[len(rep.Snapshots)-1].ID
	lastMeta, requests := matchDuckDB(t, r, mat, &rep, nil)
	for name, res := range lastMeta {
		if name != "odd" && len(res.Metadata.Snapshots) < 2 {
			t.Errorf("%s: only %d Iceberg snapshots", name, len(res.Metadata.Snapshots))
		}
	}

	checkPartitions(t, lastMeta)
	checkStored(t, lastMeta["ev"])
	checkDeleteKinds(t, lastMeta["ev"])

	// PyIceberg and DuckDB's iceberg extension, on the same metadata; one
	// request also checks that PyIceberg prunes on the identity partition.
	for i := range requests {
		if strings.Contains(requests[i].what, "idp at") && requests[i].what == fmt.Sprintf("idp at %d", last) {
			requests[i].Prune = []any{"cat", "k0"}
		}
	}
	readers(t, requests)

	// DuckDB's flush moves inlined rows and deletions into Parquet files and
	// rewrites history; the current snapshot must still read the same, and
	// every earlier one either the same or be refused as unrepresentable.
	var after duckReport
	scenario(t, &after, "flush", dsn, data)
	fresh := materialize.NewMaterializer(materialize.Config{Source: materialize.NewPGSource(conn, ""), Writer: objstore.NewDir(), Options: materialize.Options{Objects: objstore.NewDir()}})
	refused := matchAfterFlush(t, r, fresh, &after, "after flush", nil)
	t.Logf("after the flush, %d (table, snapshot) pairs are refused as unrepresentable", refused)
}

func readers(t *testing.T, requests []readRequest) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "requests.json")
	b, _ := json.Marshal(requests)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var results []readResult
	scenario(t, &results, "read", path)
	if len(results) != len(requests) {
		t.Fatalf("%d results for %d requests", len(results), len(requests))
	}
	pruned := 0
	defer func() {
		t.Logf("PyIceberg and DuckDB iceberg_scan read %d (table, snapshot) pairs; %d pruning checks", len(results), pruned)
	}()
	for i, res := range results {
		req := requests[i]
		if res.PyIcebergError != "" || !slices.Equal(res.PyIceberg, req.want) {
			t.Errorf("%s: PyIceberg %v %s,\n DuckDB %v", req.what, res.PyIceberg, res.PyIcebergError, req.want)
		}
		if res.DuckDBError != "" || !slices.Equal(res.DuckDB, req.want) {
			t.Errorf("%s: DuckDB iceberg_scan %v %s,\n DuckDB %v", req.what, res.DuckDB, res.DuckDBError, req.want)
		}
		if req.Prune != nil {
			if len(res.Prune) != 3 {
				t.Errorf("%s: no pruning report", req.what)
				continue
			}
			full, planned := res.Prune[0].(float64), res.Prune[1].(float64)
			if planned >= full || planned == 0 {
				t.Errorf("%s: PyIceberg plans %v of %v files for cat = 'k0'", req.what, planned, full)
			}
			pruned++
		}
	}
}

// checkPartitions reads every partitioned data file and checks that its
// Iceberg partition tuple is what Iceberg's transforms give for each row:
// the year/month recomputation and the bucket pass-through.
func checkPartitions(t *testing.T, meta map[string]*materialize.Result) {
	t.Helper()
	for _, tc := range []struct {
		table  string
		source string // source column read from the file
		field  string // partition field name
		tr     iceberg.Transform
		src    iceberg.Type
	}{
		{"ev", "id", "id_bucket_4", iceberg.Bucket(4), iceberg.Primitive(iceberg.TypeLong)},
		{"ev", "ts", "ts_year", iceberg.Year, iceberg.Primitive(iceberg.TypeTimestamp)},
		{"ym", "d", "d_month", iceberg.Month, iceberg.Primitive(iceberg.TypeDate)},
	} {
		res := meta[tc.table]
		md := res.Metadata
		spec := md.PartitionSpecs[len(md.PartitionSpecs)-1]
		fieldID := -1
		for _, f := range spec.Fields {
			if f.Name == tc.field && f.Transform == tc.tr {
				fieldID = f.FieldID
			}
		}
		if fieldID < 0 {
			t.Errorf("%s: no partition field %s %s in %+v", tc.table, tc.field, tc.tr, spec)
			continue
		}
		files := liveDataFiles(t, res)
		checked := 0
		for _, df := range files {
			if strings.Contains(df.FilePath(), "/__inlined__/") {
				continue
			}
			want := df.Partition()[fieldID]
			for _, v := range readColumn(t, df.FilePath(), tc.source) {
				if v == nil {
					continue
				}
				got, err := tc.tr.Apply(tc.src, v)
				if err != nil {
					t.Fatal(err)
				}
				if gd, ok := want.(goiceberg.Date); ok {
					want = int32(gd)
				}
				if got != want {
					t.Errorf("%s %s: a row with %s = %v has %s %v, the file's partition says %v", tc.table, df.FilePath(), tc.source, v, tc.field, got, want)
					break
				}
			}
			checked++
		}
		if checked == 0 {
			t.Errorf("%s: no partitioned data file checked", tc.table)
		}
	}
}

func liveDataFiles(t *testing.T, res *materialize.Result) []goiceberg.DataFile {
	t.Helper()
	var out []goiceberg.DataFile
	for _, task := range planFiles(t, res) {
		out = append(out, task.File)
	}
	return out
}

// readColumn reads one column of a Parquet file as Iceberg Go values.
func readColumn(t *testing.T, path, column string) []any {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	at, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	idx := at.Schema().FieldIndices(column)
	if len(idx) != 1 {
		t.Fatalf("%s has no column %s", path, column)
	}
	var out []any
	for _, chunk := range at.Column(idx[0]).Data().Chunks() {
		for i := range chunk.Len() {
			if chunk.IsNull(i) {
				out = append(out, nil)
				continue
			}
			switch c := chunk.(type) {
			case *array.Int64:
				out = append(out, c.Value(i))
			case *array.Int32:
				out = append(out, c.Value(i))
			case *array.Date32:
				out = append(out, int32(c.Value(i)))
			case *array.Timestamp:
				unit := c.DataType().(*arrow.TimestampType).Unit
				out = append(out, int64(c.Value(i))*map[arrow.TimeUnit]int64{arrow.Second: 1e6, arrow.Millisecond: 1e3, arrow.Microsecond: 1}[unit])
			default:
				t.Fatalf("%s.%s is %T", path, column, chunk)
			}
		}
	}
	return out
}

// checkStored: every file the metadata references exists where it says,
// and the generated Parquet files carry Iceberg field ids.
func checkStored(t *testing.T, res *materialize.Result) {
	t.Helper()
	if _, err := os.Stat(res.MetadataLocation); err != nil {
		t.Errorf("metadata file: %v", err)
	}
	sawInlined := false
	for _, df := range liveDataFiles(t, res) {
		if _, err := os.Stat(df.FilePath()); err != nil {
			t.Errorf("data file %s: %v", df.FilePath(), err)
		}
		if !strings.Contains(df.FilePath(), "/__inlined__/") {
			continue
		}
		sawInlined = true
		rdr, err := file.OpenParquetFile(df.FilePath(), false)
		if err != nil {
			t.Fatal(err)
		}
		sc := rdr.MetaData().Schema
		for i := range sc.NumColumns() {
			if sc.Column(i).ColumnPath().String() == "id" && sc.Column(i).SchemaNode().FieldID() != 1 {
				t.Errorf("%s: id has field id %d", df.FilePath(), sc.Column(i).SchemaNode().FieldID())
			}
		}
		rdr.Close()
	}
	if !sawInlined {
		t.Error("ev has no live inlined data file to check")
	}
}

// checkDeleteKinds: the scenario must exercise both kinds of position
// deletes, DuckLake's own delete files and the ones written for deletions
// DuckDB kept in Postgres, each applied to a live data file.
func checkDeleteKinds(t *testing.T, res *materialize.Result) {
	t.Helper()
	tasks := planFiles(t, res)
	ducklakeDeletes, ours := 0, 0
	for _, task := range tasks {
		for _, d := range task.DeleteFiles {
			// Format version 2 serves DuckLake's delete files as
			// translated copies beside the ones for inlined deletions.
			if _, translated := materialize.TranslatedDeleteFileID(d.FilePath()); !translated && strings.Contains(d.FilePath(), "/__inlined__/") {
				ours++
			} else {
				ducklakeDeletes++
			}
		}
	}
	if ducklakeDeletes == 0 || ours == 0 {
		t.Errorf("live position deletes: %d DuckLake delete files, %d written for inlined deletions; want both", ducklakeDeletes, ours)
	}
}
