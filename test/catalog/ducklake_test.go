// Package catalog_test checks duckicelake's DuckLake catalog access against a
// real DuckDB 1.5.x (the venv's, see scripts/venv.sh) on a real Postgres
// (DUCKICELAKE_TEST_PG_DSN, see scripts/pg.sh).
package catalog_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestDuckDBAttachesInitCatalog runs the real `duckicelake init` binary, then
// a real DuckDB ATTACHes the catalog and writes and reads through it.
func TestDuckDBAttachesInitCatalog(t *testing.T) {
	dsn := pgtest.Database(t)
	root := testsupport.Root(t)
	bin := filepath.Join(t.TempDir(), "duckicelake")
	build := exec.Command("go", "build", "-o", bin, "./cmd/duckicelake")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(t.TempDir(), "data") + "/"
	for i, want := range []string{"created DuckLake 1.0 catalog", "exists"} {
		out, err := exec.Command(bin, "init", "--dsn", dsn, "--data-path", data).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("init run %d: %v\n%s", i+1, err, out)
		}
	}

	var report struct {
		Agg       []string `json:"agg"`
		Snapshots []int64  `json:"snapshots"`
	}
	testsupport.RunPython(t, &report, "ducklake_scenario.py", "attach", dsn, data)
	if want := []string{"1002", "502503", `"n10"`, `"two"`}; !slices.Equal(report.Agg, want) {
		t.Errorf("DuckDB read back %q, want %q", report.Agg, want)
	}
	if !slices.Equal(report.Snapshots, []int64{0, 1, 2, 3}) {
		t.Errorf("snapshots = %v, want 0..3 (create table, two inserts)", report.Snapshots)
	}

	// Our reader sees the same 1002 rows: two inlined, a thousand in a file.
	ctx := context.Background()
	r := ducklake.NewReader(pgtest.Connect(t, dsn), "")
	cur, err := r.CurrentSnapshot(ctx)
	if err != nil || cur.ID != 3 {
		t.Fatalf("CurrentSnapshot = %+v, %v", cur, err)
	}
	tbl, err := r.TableByName(ctx, cur.ID, "main", "t")
	if err != nil {
		t.Fatal(err)
	}
	if n := liveRows(t, r, cur.ID, tbl.ID); n != 1002 {
		t.Errorf("reader counts %d rows, DuckDB 1002", n)
	}
}

// liveRows counts the rows of a table at a snapshot from metadata alone:
// data file rows minus deleted positions, plus visible inlined rows.
func liveRows(t *testing.T, r *ducklake.Reader, snap, tableID int64) int64 {
	t.Helper()
	ctx := context.Background()
	files, err := r.DataFiles(ctx, snap, tableID)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		n += f.RecordCount - int64(len(f.InlinedDeletes))
		if f.Delete != nil {
			n -= f.Delete.DeleteCount
		}
	}
	inl, err := r.InlinedData(ctx, snap, tableID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range inl {
		n += int64(len(d.Rows))
	}
	return n
}

type scenarioReport struct {
	DataPath  string `json:"data_path"`
	Snapshots []struct {
		ID     int64 `json:"id"`
		Tables map[string]struct {
			Count int64        `json:"count"`
			Files [][2]*string `json:"files"`
			Rows  [][]string   `json:"rows"`
		} `json:"tables"`
	} `json:"snapshots"`
	Describe map[string][][2]string `json:"describe"`
	Comments []string               `json:"comments"` // of table small, then of its column name
}

// TestReaderMatchesDuckDB builds a catalog with a real DuckDB (inlined and
// file-backed inserts, UPDATE, DELETE with inlined deletions and delete files,
// a partitioned table, nested types, a file added by absolute path, a dropped
// table) and checks that, at every snapshot, the reader sees what DuckDB sees.
func TestReaderMatchesDuckDB(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	scratch := t.TempDir()
	data := filepath.Join(scratch, "data") + "/"
	conn := pgtest.Connect(t, dsn)
	if _, err := ducklake.Init(ctx, conn, ducklake.InitOptions{DataPath: data}); err != nil {
		t.Fatal(err)
	}
	var rep scenarioReport
	testsupport.RunPython(t, &rep, "ducklake_scenario.py", "scenario", dsn, data, scratch)

	r := ducklake.NewReader(conn, "")
	snaps, err := r.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != len(rep.Snapshots) {
		t.Fatalf("reader sees %d snapshots, DuckDB %d", len(snaps), len(rep.Snapshots))
	}
	sawInlinedDeletes, sawDeleteFile, sawAbsolute := false, false, false
	for i, s := range rep.Snapshots {
		if snaps[i].ID != s.ID {
			t.Fatalf("snapshot %d: id %d, DuckDB %d", i, snaps[i].ID, s.ID)
		}
		for _, name := range []string{"small", "big", "ext"} {
			want, exists := s.Tables[name]
			tbl, err := r.TableByName(ctx, s.ID, "s1", name)
			if !exists {
				if !errors.Is(err, ducklake.ErrNotFound) {
					t.Errorf("snapshot %d: table %s: %v, want ErrNotFound", s.ID, name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("snapshot %d: %v", s.ID, err)
			}
			if n := liveRows(t, r, s.ID, tbl.ID); n != want.Count {
				t.Errorf("snapshot %d: %s has %d rows by the reader, %d by DuckDB", s.ID, name, n, want.Count)
			}
			files, err := r.DataFiles(ctx, s.ID, tbl.ID)
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]*string
			for _, f := range files {
				pair := [2]*string{&f.Path, nil}
				if f.Delete != nil {
					pair[1] = &f.Delete.Path
					sawDeleteFile = true
				}
				got = append(got, pair)
				sawInlinedDeletes = sawInlinedDeletes || len(f.InlinedDeletes) > 0
				sawAbsolute = sawAbsolute || !f.PathIsRelative
				if !f.PathIsRelative && f.Path != f.RawPath {
					t.Errorf("absolute path %q resolved to %q", f.RawPath, f.Path)
				}
			}
			if g, w := pairs(got), pairs(want.Files); !slices.Equal(g, w) {
				t.Errorf("snapshot %d: %s files:\n reader %q\n DuckDB %q", s.ID, name, g, w)
			}
			if want.Rows != nil {
				if g := inlinedRows(t, r, s.ID, tbl.ID); !slices.EqualFunc(g, want.Rows, slices.Equal) {
					t.Errorf("snapshot %d: %s rows:\n reader %q\n DuckDB %q", s.ID, name, g, want.Rows)
				}
			}
		}
	}
	if !sawInlinedDeletes || !sawDeleteFile || !sawAbsolute {
		t.Errorf("scenario lacks coverage: inlined deletes %v, delete files %v, absolute paths %v", sawInlinedDeletes, sawDeleteFile, sawAbsolute)
	}

	last := rep.Snapshots[len(rep.Snapshots)-1].ID
	checkTypes(t, r, last, rep.Describe)
	checkPartitionsAndStats(t, r, last)
	checkTagsAndMappings(t, r, rep.Snapshots[len(rep.Snapshots)-2].ID, rep.Comments)
}

// checkTagsAndMappings: DuckDB keeps COMMENT ON as a "comment" tag, and
// ducklake_add_data_files of a Parquet file without field ids as a name
// mapping. snap is the last snapshot at which table ext exists.
func checkTagsAndMappings(t *testing.T, r *ducklake.Reader, snap int64, comments []string) {
	ctx := context.Background()
	small, err := r.TableByName(ctx, snap, "s1", "small")
	if err != nil {
		t.Fatal(err)
	}
	tags, err := r.Tags(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(comments) != 2 || len(tags) != 1 || tags[0].ObjectID != small.ID || tags[0].Key != "comment" || tags[0].Value != comments[0] {
		t.Errorf("Tags = %+v, DuckDB comments %q", tags, comments)
	}
	fields, err := r.Columns(ctx, snap, small.ID)
	if err != nil {
		t.Fatal(err)
	}
	ctags, err := r.ColumnTags(ctx, snap, small.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ctags) != 1 || ctags[0].ColumnID != fields[1].ID || ctags[0].Key != "comment" || ctags[0].Value != comments[1] {
		t.Errorf("ColumnTags = %+v, want the comment %q on column %d", ctags, comments[1], fields[1].ID)
	}

	ext, err := r.TableByName(ctx, snap, "s1", "ext")
	if err != nil {
		t.Fatal(err)
	}
	extFields, err := r.Columns(ctx, snap, ext.ID)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := r.NameMappings(ctx, ext.ID)
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.DataFiles(ctx, snap, ext.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 1 || maps[0].Type != "map_by_name" || len(maps[0].Entries) != 2 || len(files) != 1 || files[0].MappingID != maps[0].ID {
		t.Fatalf("NameMappings = %+v, files %+v", maps, files)
	}
	for i, e := range maps[0].Entries {
		if e.SourceName != extFields[i].Name || e.TargetFieldID != extFields[i].ID {
			t.Errorf("mapping entry %+v, want %s -> %d", e, extFields[i].Name, extFields[i].ID)
		}
	}
}

func pairs(ps [][2]*string) []string {
	var out []string
	for _, p := range ps {
		s := *p[0] + " | "
		if p[1] != nil {
			s += *p[1]
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// duckdbType translates DuckDB's DESCRIBE spelling into DuckLake's.
var duckdbType = map[string]string{
	"INTEGER": "int32", "BIGINT": "int64", "VARCHAR": "varchar", "INTEGER[]": "list(int32)",
	"STRUCT(a INTEGER, b VARCHAR[])": "struct(a int32, b list(varchar))", "MAP(VARCHAR, INTEGER)": "map(varchar, int32)",
	"DATE": "date", "TIMESTAMP WITH TIME ZONE": "timestamptz", "TIMESTAMP": "timestamp", "DECIMAL(10,2)": "decimal(10,2)",
	"UUID": "uuid", "BLOB": "blob", "DOUBLE": "float64", "FLOAT": "float32", "UBIGINT": "uint64", "HUGEINT": "int128",
	"TINYINT": "int8", "USMALLINT": "uint16", "UINTEGER": "uint32", "JSON": "json", "BOOLEAN": "boolean", "TIME": "time",
}

func checkTypes(t *testing.T, r *ducklake.Reader, snap int64, describe map[string][][2]string) {
	ctx := context.Background()
	for name, cols := range describe {
		tbl, err := r.TableByName(ctx, snap, "s1", name)
		if err != nil {
			t.Fatal(err)
		}
		fields, err := r.Columns(ctx, snap, tbl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(fields) != len(cols) {
			t.Fatalf("%s: %d columns, DuckDB %d", name, len(fields), len(cols))
		}
		for i, c := range cols {
			want, ok := duckdbType[c[1]]
			if !ok {
				t.Fatalf("no DuckLake spelling for DuckDB type %s", c[1])
			}
			if fields[i].Name != c[0] || fields[i].Type.String() != want {
				t.Errorf("%s column %d = %s %s, DuckDB %s %s", name, i, fields[i].Name, fields[i].Type, c[0], want)
			}
		}
	}
}

func checkPartitionsAndStats(t *testing.T, r *ducklake.Reader, snap int64) {
	ctx := context.Background()
	big, err := r.TableByName(ctx, snap, "s1", "big")
	if err != nil {
		t.Fatal(err)
	}
	fields, err := r.Columns(ctx, snap, big.ID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Partition(ctx, snap, big.ID)
	if err != nil || p == nil || len(p.Columns) != 1 || p.Columns[0].ColumnID != fields[1].ID || p.Columns[0].Transform != "identity" {
		t.Fatalf("Partition = %+v, %v; want identity on p (column %d)", p, err, fields[1].ID)
	}
	files, err := r.DataFiles(ctx, snap, big.ID)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := r.FileColumnStats(ctx, snap, big.ID)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[int64]map[int64]ducklake.FileColumnStats{}
	for _, s := range stats {
		if byFile[s.DataFileID] == nil {
			byFile[s.DataFileID] = map[int64]ducklake.FileColumnStats{}
		}
		byFile[s.DataFileID][s.ColumnID] = s
	}
	for _, f := range files {
		if f.PartitionID != p.ID || len(f.PartitionValues) != 1 {
			t.Errorf("file %s: partition %d values %+v, want spec %d with one value", f.Path, f.PartitionID, f.PartitionValues, p.ID)
			continue
		}
		// DuckDB writes partitioned files under hive-style p=<value>/ folders.
		if want := "/p=" + f.PartitionValues[0].Value + "/"; !strings.Contains(f.Path, want) {
			t.Errorf("file %s: partition value %q does not match its folder", f.Path, f.PartitionValues[0].Value)
		}
		pStats, idStats := byFile[f.ID][fields[1].ID], byFile[f.ID][fields[0].ID]
		if pStats.Min == nil || *pStats.Min != f.PartitionValues[0].Value || *pStats.Max != f.PartitionValues[0].Value {
			t.Errorf("file %s: p stats %v..%v, partition value %s", f.Path, pStats.Min, pStats.Max, f.PartitionValues[0].Value)
		}
		if idStats.ValueCount != f.RecordCount || idStats.NullCount != 0 || idStats.Min == nil || idStats.Max == nil {
			t.Errorf("file %s: id stats %+v, %d records", f.Path, idStats, f.RecordCount)
			continue
		}
		lo, _ := strconv.ParseInt(*idStats.Min, 10, 64)
		hi, _ := strconv.ParseInt(*idStats.Max, 10, 64)
		if lo > hi || hi-lo+1 < f.RecordCount {
			t.Errorf("file %s: id range %d..%d cannot hold %d distinct ids", f.Path, lo, hi, f.RecordCount)
		}
	}
}

// inlinedRows reads a table's inlined rows at snap and renders them like
// ducklake_scenario.py's render(), ordered by the first column. Rows from
// older schema versions are lined up with the columns at snap by column id,
// as a reader of the table sees them (a column added later reads as NULL).
func inlinedRows(t *testing.T, r *ducklake.Reader, snap, tableID int64) [][]string {
	t.Helper()
	ctx := context.Background()
	current, err := r.Columns(ctx, snap, tableID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := r.InlinedData(ctx, snap, tableID)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id  int64
		out []string
	}
	var rows []row
	for _, d := range data {
		for _, ir := range d.Rows {
			byID := map[int64]any{}
			for i, c := range d.Columns {
				byID[c.ID] = ir.Values[i]
			}
			out := make([]string, len(current))
			for i, c := range current {
				out[i] = render(c.Type, byID[c.ID])
			}
			id, _ := strconv.ParseInt(out[0], 10, 64)
			rows = append(rows, row{id, out})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].id < rows[j].id })
	out := [][]string{}
	for _, r := range rows {
		out = append(out, r.out)
	}
	return out
}

// render is the Go twin of ducklake_scenario.py's render().
func render(t ducklake.Type, v any) string {
	if v == nil {
		return "NULL"
	}
	clock := func(h, m, s, us int64) string {
		out := fmt.Sprintf("%02d:%02d:%02d", h, m, s)
		if us != 0 {
			out += fmt.Sprintf(".%06d", us)
		}
		return out
	}
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int8, int16, int32, int64, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x)
	case *big.Int:
		return x.String()
	case float32:
		return pyFloat(float64(x))
	case float64:
		return pyFloat(x)
	case ducklake.Decimal:
		return x.String()
	case ducklake.Date:
		return x.String()
	case ducklake.TimeOfDay:
		us := int64(x)
		return clock(us/3600e6, us/60e6%60, us/1e6%60, us%1e6)
	case time.Time:
		return x.Format(time.DateOnly) + " " + clock(int64(x.Hour()), int64(x.Minute()), int64(x.Second()), int64(x.Nanosecond()/1000))
	case [16]byte:
		h := hex.EncodeToString(x[:])
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	case []byte:
		return "0x" + hex.EncodeToString(x)
	case string:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(x)
		return strings.TrimSuffix(b.String(), "\n")
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			if t.Kind == ducklake.KindStruct {
				parts[i] = t.Fields[i].Name + ": " + render(t.Fields[i].Type, e)
			} else {
				parts[i] = render(t.Fields[0].Type, e)
			}
		}
		if t.Kind == ducklake.KindStruct {
			return "{" + strings.Join(parts, ", ") + "}"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []ducklake.MapEntry:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmt.Sprint(e.Key) + ": " + render(t.Fields[1].Type, e.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprintf("<%T %v>", v, v)
}

// pyFloat formats like Python's repr(float).
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}
