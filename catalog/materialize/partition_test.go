package materialize

import (
	"fmt"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

func partitionFields(t *testing.T) func(int64) ([]ducklake.Field, error) {
	t.Helper()
	cols := []ducklake.Column{
		{ID: 1, Order: 1, Name: "id", Type: "int64", NullsAllowed: true},
		{ID: 2, Order: 2, Name: "ts", Type: "timestamp", NullsAllowed: true},
		{ID: 3, Order: 3, Name: "tz", Type: "timestamptz", NullsAllowed: true},
		{ID: 4, Order: 4, Name: "d", Type: "date", NullsAllowed: true},
		{ID: 5, Order: 5, Name: "u", Type: "uuid", NullsAllowed: true},
		{ID: 6, Order: 6, Name: "cat", Type: "varchar", NullsAllowed: true},
		{ID: 7, Order: 7, Name: "amount", Type: "decimal(9,2)", NullsAllowed: true},
	}
	fields, err := ducklake.BuildFields(cols)
	if err != nil {
		t.Fatal(err)
	}
	return func(int64) ([]ducklake.Field, error) { return fields, nil }
}

func pcols(spec ...string) []ducklake.PartitionColumn {
	var out []ducklake.PartitionColumn
	for i := 0; i < len(spec); i += 2 {
		var id int64
		fmt.Sscan(spec[i], &id)
		out = append(out, ducklake.PartitionColumn{KeyIndex: int64(i / 2), ColumnID: id, Transform: spec[i+1]})
	}
	return out
}

func pvals(vals ...string) []ducklake.FilePartitionValue {
	out := make([]ducklake.FilePartitionValue, len(vals))
	for i, v := range vals {
		out[i] = ducklake.FilePartitionValue{KeyIndex: int64(i), Value: v, Null: v == "NULL"}
	}
	return out
}

func TestPartitionMapping(t *testing.T) {
	for _, c := range []struct {
		name   string
		cols   []ducklake.PartitionColumn
		want   string // fields as name:transform
		values []ducklake.FilePartitionValue
		tuple  string
	}{
		{"year and bucket", pcols("2", "year", "1", "bucket(4)"), "[ts_year:year id_bucket_4:bucket[4]]",
			pvals("2024", "3"), "[54 3]"},
		// The finest calendar field stands for the coarser keys it needs:
		// Iceberg (PyIceberg on write) refuses them as redundant.
		{"year month day hour", pcols("2", "year", "2", "month", "2", "day", "2", "hour"), "[ts_hour:hour]",
			pvals("1970", "2", "1", "5"), fmt.Sprint([]any{int32(31*24 + 5)})},
		{"before the epoch", pcols("4", "year", "4", "month"), "[d_month:month]",
			pvals("1969", "12"), "[-1]"},
		{"calendar keys among others", pcols("6", "identity", "4", "year", "1", "bucket(4)", "4", "month", "4", "day"), "[cat:identity id_bucket_4:bucket[4] d_day:day]",
			pvals("k", "2024", "3", "2", "29"), "[k 3 19782]"},
		{"years of two columns", pcols("2", "year", "4", "year", "4", "month"), "[ts_year:year d_month:month]",
			pvals("2024", "2000", "1"), "[54 360]"},
		{"month without year is void", pcols("2", "month"), "[ts_month:void]", pvals("3"), "[<nil>]"},
		{"day without month is void", pcols("2", "year", "2", "day"), "[ts_year:year ts_day:void]", pvals("2000", "9"), "[30 <nil>]"},
		{"timestamptz is void (DuckDB uses the session zone)", pcols("3", "year"), "[tz_year:void]", pvals("2024"), "[<nil>]"},
		{"uuid bucket is void (DuckDB hashes differently)", pcols("5", "bucket(8)"), "[u_bucket_8:void]", pvals("1"), "[<nil>]"},
		{"decimal bucket is void", pcols("7", "bucket(8)"), "[amount_bucket_8:void]", pvals("1"), "[<nil>]"},
		{"identity", pcols("6", "identity", "4", "identity"), "[cat:identity d:identity]", pvals("k0", "2024-01-15"), "[k0 19737]"},
		{"null values", pcols("6", "identity", "2", "year", "2", "month"), "[cat:identity ts_month:month]",
			pvals("NULL", "NULL", "NULL"), "[<nil> <nil>]"},
	} {
		specs, list, last, err := mapPartitions([]ducklake.PartitionInfo{{ID: 5, Begin: 1, Columns: c.cols}}, partitionFields(t), 2)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for _, f := range specs[5].spec.Fields {
			got = append(got, f.Name+":"+f.Transform.String())
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("%s: fields %v, want %s", c.name, got, c.want)
		}
		if len(list) != 2 || list[0].ID != 0 || len(list[0].Fields) != 0 || last != iceberg.PartitionFieldIDStart-1+len(got) {
			t.Errorf("%s: specs %v, last id %d", c.name, list, last)
		}
		tuple, err := specs[5].partitionTuple(c.values)
		if err != nil || fmt.Sprint(tuple) != c.tuple {
			t.Errorf("%s: tuple %v, %v; want %s", c.name, tuple, err, c.tuple)
		}
		// The tuple must encode under the spec's partition type.
		schema, _ := IcebergSchema(0, mustFields(t), 2)
		pt, err := specs[5].spec.PartitionType(schema)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range pt.Fields {
			if tuple[i] != nil {
				if _, err := iceberg.AppendBinary(nil, f.Type, tuple[i]); err != nil {
					t.Errorf("%s: value %v for %s: %v", c.name, tuple[i], f.Type, err)
				}
			}
		}
	}
}

func mustFields(t *testing.T) []ducklake.Field {
	f, _ := partitionFields(t)(0)
	return f
}

func TestPartitionFieldIDs(t *testing.T) {
	// An equivalent field keeps its id in a later spec; a new one gets the
	// next id, unique across specs.
	infos := []ducklake.PartitionInfo{
		{ID: 3, Begin: 1, End: 4, Columns: pcols("2", "year", "1", "bucket(4)")},
		{ID: 8, Begin: 4, Columns: pcols("1", "bucket(4)", "6", "identity")},
	}
	specs, list, last, err := mapPartitions(infos, partitionFields(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(id int64) (out []int) {
		for _, f := range specs[id].spec.Fields {
			out = append(out, f.FieldID)
		}
		return out
	}
	if fmt.Sprint(ids(3)) != "[1000 1001]" || fmt.Sprint(ids(8)) != "[1001 1002]" || last != 1002 || len(list) != 3 {
		t.Errorf("spec 3 ids %v, spec 8 ids %v, last %d", ids(3), ids(8), last)
	}
	if _, err := specs[8].partitionTuple(pvals("1")); err == nil {
		t.Error("a short partition tuple was accepted")
	}
	if _, err := specs[3].partitionTuple(pvals("twenty", "1")); err == nil {
		t.Error("a non-numeric year was accepted")
	}
}

func strp(s string) *string { return &s }

// TestClientSpecs: a spec an Iceberg client set is served with its names,
// field ids and spec id; its truncate field gets each file's value from the
// file's statistics when both bounds truncate alike, and otherwise the file
// is served under the plain spec (never a made-up value). A partitioning
// DuckDB sets later keeps its partition id and gets field ids above the
// client's.
func TestClientSpecs(t *testing.T) {
	shard := iceberg.PartitionField{SourceID: 1, FieldID: 1000, Name: "shard", Transform: iceberg.Bucket(4)}
	prefix := iceberg.PartitionField{SourceID: 6, FieldID: 1001, Name: "prefix", Transform: iceberg.Truncate(2)}
	day := iceberg.PartitionField{SourceID: 2, FieldID: 1002, Name: "when", Transform: iceberg.Day}
	infos := []ducklake.PartitionInfo{
		{ID: 3, Begin: 1, End: 5, Columns: pcols("1", "bucket(4)", "2", "year", "2", "month", "2", "day")},
		{ID: 8, Begin: 5, Columns: pcols("6", "identity")},
	}
	clients := []SpecVersion{{Begin: 1, End: 5, Spec: iceberg.PartitionSpec{ID: 0, Fields: []iceberg.PartitionField{shard, prefix, day}},
		PartitionID: 3, PlainID: 2, UnpartitionedID: 1}}
	p, err := planSpecs(infos, clients, partitionFields(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, s := range p.list {
		list = append(list, fmt.Sprint(s.ID, s.Fields))
	}
	want := "[1 [] 0 [{1 1000 shard bucket[4]} {6 1001 prefix truncate[2]} {2 1002 when day}] 2 [{1 1000 shard bucket[4]} {2 1002 when day}] 8 [{6 1003 cat identity}]]"
	if fmt.Sprint(list) != want || p.lastID != 1003 {
		t.Errorf("specs %v (last id %d), want %s", list, p.lastID, want)
	}
	if d := p.defaultSpec(4, 3); d != 0 {
		t.Errorf("default at 4: %d", d)
	}
	if d := p.defaultSpec(6, 8); d != 8 {
		t.Errorf("default at 6: %d", d)
	}
	if d := p.defaultSpec(6, 0); d != 1 {
		t.Errorf("default unpartitioned: %d", d)
	}
	if ms := p.forFile(0, 2); ms.spec.ID != 1 {
		t.Errorf("unpartitioned file: spec %d", ms.spec.ID)
	}
	stat := func(min, max string, values, nulls int64) []ducklake.FileColumnStats {
		st := ducklake.FileColumnStats{ColumnID: 6, ValueCount: values, NullCount: nulls}
		if min != "" {
			st.Min, st.Max = strp(min), strp(max)
		}
		return []ducklake.FileColumnStats{st}
	}
	vals := pvals("3", "2024", "3", "5")
	for _, c := range []struct {
		name  string
		stats []ducklake.FileColumnStats
		spec  int
		tuple string
	}{
		{"one prefix", stat("abc", "abz", 10, 0), 0, "[3 ab 19787]"},
		{"short values", stat("a", "a", 10, 0), 0, "[3 a 19787]"},
		{"two prefixes", stat("abz", "acb", 10, 0), 2, "[3 19787]"},
		{"nulls and values", stat("abc", "abz", 10, 1), 2, "[3 19787]"},
		{"only nulls", stat("", "", 0, 4), 0, "[3 <nil> 19787]"},
		{"no statistics", nil, 2, "[3 19787]"},
		{"unknown null count", stat("abc", "abz", 10, -1), 2, "[3 19787]"},
	} {
		ms := p.forFile(3, 2)
		got, tuple, err := ms.tuple(vals, c.stats)
		if err != nil || got.spec.ID != c.spec || fmt.Sprint(tuple) != c.tuple {
			t.Errorf("%s: spec %d tuple %v (%v), want %d %s", c.name, got.spec.ID, tuple, err, c.spec, c.tuple)
		}
	}
	// A client spec DuckLake's partition does not match (the sidecar and
	// DuckLake disagree) is not served; the partition is, as DuckLake has it.
	clients[0].Spec.Fields = []iceberg.PartitionField{{SourceID: 1, FieldID: 1000, Name: "shard", Transform: iceberg.Bucket(8)}}
	if p, err = planSpecs(infos, clients, partitionFields(t), 2); err != nil {
		t.Fatal(err)
	}
	if ms := p.forFile(3, 2); ms.spec.ID != 3 || ms.spec.Fields[0].Name != "id_bucket_4" {
		t.Errorf("mismatched client spec: served %v", ms.spec)
	}
}
