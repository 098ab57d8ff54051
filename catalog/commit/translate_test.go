package commit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

func TestDuckText(t *testing.T) {
	typ := func(s string) ducklake.Type {
		t.Helper()
		d, err := ducklake.ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	u := [16]byte{0x6a, 0x1f, 0x3a, 0x7c, 0x1b, 0x2c, 0x4d, 0x3e, 0x8f, 0x90, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc}
	// The wanted strings are what DuckDB 1.5.5 wrote for the same values
	// (ducklake_file_column_stats and ducklake_file_partition_value).
	cases := []struct {
		typ  string
		v    any
		mode textMode
		want string
		ok   bool
	}{
		{"boolean", true, forStats, "1", true},
		{"boolean", false, forPartition, "false", true},
		{"int32", int32(-7), forStats, "-7", true},
		{"int64", int64(1) << 40, forStats, "1099511627776", true},
		{"int16", int32(12), forStats, "12", true},
		{"float64", 1e20, forStats, "1e+20", true},
		{"float64", 2.5, forStats, "2.5", true},
		{"float32", float32(2.5), forStats, "2.5", true},
		{"float64", math.NaN(), forStats, "", false},
		{"float64", math.Inf(1), forStats, "", false},
		{"decimal(10,2)", iceberg.Decimal{Unscaled: big.NewInt(150)}, forPartition, "1.50", true},
		{"decimal(38,10)", iceberg.Decimal{Unscaled: big.NewInt(-10000000000)}, forStats, "-1.0000000000", true},
		{"date", int32(19782), forPartition, "2024-02-29", true},
		{"date", int32(-719162), forStats, "0001-01-01", true},
		{"date", int32(-719163), forStats, "", false},
		{"time", int64(45296789000), forStats, "12:34:56.789", true},
		{"time", int64(0), forStats, "00:00:00", true},
		{"timestamp", int64(1704067200500000), forStats, "2024-01-01 00:00:00.5", true},
		{"timestamp", int64(1704103200000000), forPartition, "2024-01-01 10:00:00", true},
		{"timestamptz", int64(1704103200123456), forStats, "2024-01-01 10:00:00.123456+00", true},
		{"timestamptz", int64(-1000000), forStats, "1969-12-31 23:59:59+00", true},
		{"varchar", "héllo", forStats, "héllo", true},
		{"blob", []byte{1, 0xff, 'a', 'b'}, forStats, "01FF6162", true},
		{"blob", []byte{}, forStats, "", true},
		{"uuid", u, forPartition, "6a1f3a7c-1b2c-4d3e-8f90-123456789abc", true},
		{"int32", "x", forStats, "", false},
	}
	for _, c := range cases {
		got, ok := duckText(typ(c.typ), c.v, c.mode)
		if got != c.want || ok != c.ok {
			t.Errorf("duckText(%s, %v) = %q, %v; want %q, %v", c.typ, c.v, got, ok, c.want, c.ok)
		}
	}
}

func field(id int, name string, typ iceberg.Type, required bool) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: typ, Required: required}
}

// TestReassignIDs: ids are renumbered depth first, as DuckDB numbers a new
// table's columns (PyIceberg numbers the top level first).
func TestReassignIDs(t *testing.T) {
	s := &iceberg.Schema{Fields: []iceberg.NestedField{
		field(1, "id", iceberg.Primitive(iceberg.TypeLong), true),
		field(2, "s", iceberg.StructOf(field(5, "a", iceberg.Primitive(iceberg.TypeInt), false), field(6, "b", iceberg.Primitive(iceberg.TypeString), false)), false),
		field(3, "li", iceberg.ListOf(7, false, iceberg.Primitive(iceberg.TypeInt)), false),
		field(4, "m", iceberg.MapOf(8, iceberg.Primitive(iceberg.TypeString), 9, true, iceberg.Primitive(iceberg.TypeDouble)), false),
	}, IdentifierFieldIDs: []int{1}}
	got, ids := reassignIDs(s)
	want := map[int]int{1: 1, 2: 2, 5: 3, 6: 4, 3: 5, 7: 6, 4: 7, 8: 8, 9: 9}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	cols, err := flatten(got.Fields)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, c := range cols {
		rows = append(rows, fmtCol(c))
	}
	wantRows := []string{"1:0:id:int64:false", "2:0:s:struct:true", "3:2:a:int32:true", "4:2:b:varchar:true",
		"5:0:li:list:true", "6:5:element:int32:true", "7:0:m:map:true", "8:7:key:varchar:false", "9:7:value:float64:false"}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("columns\n got %v\nwant %v", rows, wantRows)
	}
	if got.IdentifierFieldIDs[0] != 1 {
		t.Errorf("identifier ids %v", got.IdentifierFieldIDs)
	}
}

func fmtCol(c column) string {
	return fmt.Sprintf("%d:%d:%s:%s:%t", c.id, c.parent, c.name, c.typ, c.nullable)
}

func TestFlattenRejects(t *testing.T) {
	for name, fields := range map[string][]iceberg.NestedField{
		"fixed":      {field(1, "f", iceberg.FixedOf(4), false)},
		"ns":         {field(1, "f", iceberg.Primitive(iceberg.TypeTimestampNS), false)},
		"dup id":     {field(1, "a", iceberg.Primitive(iceberg.TypeInt), false), field(1, "b", iceberg.Primitive(iceberg.TypeInt), false)},
		"dup name":   {field(1, "a", iceberg.Primitive(iceberg.TypeInt), false), field(2, "a", iceberg.Primitive(iceberg.TypeInt), false)},
		"zero id":    {field(0, "a", iceberg.Primitive(iceberg.TypeInt), false)},
		"empty name": {field(1, "", iceberg.Primitive(iceberg.TypeInt), false)},
	} {
		if _, err := flatten(fields); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func duckFields(t *testing.T, cols ...ducklake.Column) map[int64]ducklake.Field {
	t.Helper()
	fs, err := ducklake.BuildFields(cols)
	if err != nil {
		t.Fatal(err)
	}
	return topLevel(fs)
}

func TestDuckPartition(t *testing.T) {
	top := duckFields(t,
		ducklake.Column{ID: 1, Order: 1, Name: "id", Type: "int64"},
		ducklake.Column{ID: 2, Order: 2, Name: "ts", Type: "timestamp"},
		ducklake.Column{ID: 3, Order: 3, Name: "cat", Type: "varchar"},
		ducklake.Column{ID: 4, Order: 4, Name: "tz", Type: "timestamptz"},
		ducklake.Column{ID: 5, Order: 5, Name: "u", Type: "uuid"},
		ducklake.Column{ID: 6, Order: 6, Name: "d", Type: "date"},
	)
	spec := func(fs ...iceberg.PartitionField) *iceberg.PartitionSpec { return &iceberg.PartitionSpec{Fields: fs} }
	pf := func(src int, tr iceberg.Transform, name string) iceberg.PartitionField {
		return iceberg.PartitionField{SourceID: src, Name: name, Transform: tr}
	}
	keys, truncs, err := duckPartition(spec(pf(2, iceberg.Day, "ts_day"), pf(1, iceberg.Bucket(8), "b"), pf(3, iceberg.Identity, "cat"), pf(3, iceberg.Truncate(2), "c2")), top)
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []duckKey{{2, "year"}, {2, "month"}, {2, "day"}, {1, "bucket(8)"}, {3, "identity"}}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Errorf("keys %v, want %v", keys, wantKeys)
	}
	if !reflect.DeepEqual(truncs, []truncField{{position: 3, column: 3, width: 2, name: "c2"}}) {
		t.Errorf("truncs %+v", truncs)
	}
	served := servedSpec(7, keys, top)
	var names []string
	for _, f := range served.Fields {
		names = append(names, f.Name+"="+f.Transform.String())
	}
	// The finest calendar field stands for the keys it implies, as
	// catalog/materialize serves them.
	if want := []string{"ts_day=day", "id_bucket_8=bucket[8]", "cat=identity"}; !reflect.DeepEqual(names, want) {
		t.Errorf("served spec %v, want %v", names, want)
	}
	// year and month asked for explicitly: no duplicates.
	keys, _, err = duckPartition(spec(pf(6, iceberg.Year, "y"), pf(6, iceberg.Month, "m")), top)
	if err != nil || !reflect.DeepEqual(keys, []duckKey{{6, "year"}, {6, "month"}}) {
		t.Errorf("year+month: %v %v", keys, err)
	}
	for name, s := range map[string]*iceberg.PartitionSpec{
		"timestamptz day": spec(pf(4, iceberg.Day, "d")),
		"uuid bucket":     spec(pf(5, iceberg.Bucket(4), "b")),
		"void":            spec(pf(1, iceberg.Void, "v")),
	} {
		if _, _, err := duckPartition(s, top); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
	for name, s := range map[string]*iceberg.PartitionSpec{
		"unknown column": spec(pf(99, iceberg.Identity, "x")),
		"hour of date":   spec(pf(6, iceberg.Hour, "h")),
		"identity twice": spec(pf(1, iceberg.Identity, "a"), pf(1, iceberg.Identity, "b")),
	} {
		if _, _, err := duckPartition(s, top); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestPartitionValues: Iceberg's counts since 1970 become DuckDB's
// calendar fields (checked against what DuckDB 1.5.5 stores for
// 2024-03-05 07:08:09: year 2024, month 3, day 5, hour 7).
func TestPartitionValues(t *testing.T) {
	top := duckFields(t,
		ducklake.Column{ID: 1, Order: 1, Name: "ts", Type: "timestamp"},
		ducklake.Column{ID: 2, Order: 2, Name: "id", Type: "int64"},
		ducklake.Column{ID: 3, Order: 3, Name: "cat", Type: "varchar"},
	)
	info := &ducklake.PartitionInfo{ID: 9, Columns: []ducklake.PartitionColumn{
		{KeyIndex: 0, ColumnID: 1, Transform: "year"}, {KeyIndex: 1, ColumnID: 1, Transform: "month"},
		{KeyIndex: 2, ColumnID: 1, Transform: "day"}, {KeyIndex: 3, ColumnID: 1, Transform: "hour"},
		{KeyIndex: 4, ColumnID: 2, Transform: "bucket(4)"}, {KeyIndex: 5, ColumnID: 3, Transform: "identity"},
	}}
	keys := []duckKey{{1, "year"}, {1, "month"}, {1, "day"}, {1, "hour"}, {2, "bucket(4)"}, {3, "identity"}}
	spec := servedSpec(9, keys, top)
	ts := int64(1709622489) * 1_000_000 // 2024-03-05 07:08:09 UTC
	var tuple []any
	for _, f := range spec.Fields {
		v, err := f.Transform.Apply(iceberg.Primitive(map[int]iceberg.TypeID{1: iceberg.TypeTimestamp, 2: iceberg.TypeLong, 3: iceberg.TypeString}[f.SourceID]),
			map[int]any{1: ts, 2: int64(42), 3: "books"}[f.SourceID])
		if err != nil {
			t.Fatal(err)
		}
		tuple = append(tuple, v)
	}
	got, err := partitionValues(spec, tuple, info, top)
	if err != nil {
		t.Fatal(err)
	}
	var strs []string
	for _, s := range got {
		strs = append(strs, *s)
	}
	bucket, _ := iceberg.Bucket(4).Apply(iceberg.Primitive(iceberg.TypeLong), int64(42))
	want := []string{"2024", "3", "5", "7", big.NewInt(int64(bucket.(int32))).String(), "books"}
	if !reflect.DeepEqual(strs, want) {
		t.Errorf("values %v, want %v", strs, want)
	}
	// Before 1970: floor, not truncation; coarser keys from finer fields.
	for _, c := range []struct {
		key  string
		tr   iceberg.Transform
		n    int32
		want string
	}{
		{"month", iceberg.Month, -1, "12"}, {"year", iceberg.Month, -1, "1969"}, {"year", iceberg.Month, 647, "2023"},
		{"hour", iceberg.Hour, -1, "23"}, {"day", iceberg.Hour, -1, "31"}, {"month", iceberg.Hour, -1, "12"},
		{"day", iceberg.Day, -1, "31"}, {"year", iceberg.Day, 19782, "2024"}, {"month", iceberg.Day, 19782, "2"},
		{"year", iceberg.Year, 54, "2024"},
	} {
		if s, err := keyValue(c.key, c.tr, c.n, top[1]); s != c.want {
			t.Errorf("%s from %s %d = %q (%v), want %s", c.key, c.tr, c.n, s, err, c.want)
		}
	}
	// Nulls stay NULL; a spec that does not match the keys is refused.
	tuple[len(tuple)-1] = nil
	if got, err := partitionValues(spec, tuple, info, top); err != nil || got[5] != nil {
		t.Errorf("null identity: %v %v", got, err)
	}
	spec.Fields[1].Transform = iceberg.Bucket(8)
	if _, err := partitionValues(spec, tuple, info, top); !errors.Is(err, ErrInvalid) {
		t.Errorf("mismatched spec: %v", err)
	}
}

func TestRequestDecoding(t *testing.T) {
	var tc TableCommit
	body := `{"identifier":{"namespace":["s"],"name":"t"},
		"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null},{"type":"assert-table-uuid","uuid":"u"}],
		"updates":[{"action":"set-properties","updates":{"a":"b"}},{"action":"add-snapshot","snapshot":{"snapshot-id":5,"timestamp-ms":1,"manifest-list":"s3://b/l.avro","summary":{"operation":"append"}}},
		{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":5}]}`
	if err := json.Unmarshal([]byte(body), &tc); err != nil {
		t.Fatal(err)
	}
	r := tc.Requirements[0]
	if !r.SnapshotIDSet || r.SnapshotID != nil || r.Ref != "main" {
		t.Errorf("requirement %+v", r)
	}
	if tc.Updates[1].Snapshot.SnapshotID != 5 || *tc.Updates[2].SnapshotID != 5 || tc.Updates[0].Updates["a"] != "b" {
		t.Errorf("updates %+v", tc.Updates)
	}
	for name, bad := range map[string]string{
		"unknown requirement":  `{"requirements":[{"type":"assert-whatever"}],"updates":[]}`,
		"missing snapshot-id":  `{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main"}],"updates":[]}`,
		"unknown action":       `{"requirements":[],"updates":[{"action":"make-it-so"}]}`,
		"add-schema no schema": `{"requirements":[],"updates":[{"action":"add-schema"}]}`,
		"ref of bad type":      `{"requirements":[],"updates":[{"action":"set-snapshot-ref","ref-name":"x","type":"leaf","snapshot-id":1}]}`,
	} {
		var tc TableCommit
		err := json.Unmarshal([]byte(bad), &tc)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestFoldUpdates(t *testing.T) {
	base := &iceberg.TableMetadata{FormatVersion: 2, TableUUID: "9b3d2c1e-0000-4000-8000-000000000001", Location: "s3://b/ns/t",
		Schemas: []*iceberg.Schema{{ID: 3}}, CurrentSchemaID: 3, PartitionSpecs: []iceberg.PartitionSpec{{ID: 0}},
		SortOrders: []iceberg.SortOrder{iceberg.Unsorted}, Refs: map[string]iceberg.SnapshotRef{"main": {SnapshotID: 7, Type: "branch"}},
		Snapshots: []iceberg.Snapshot{{SnapshotID: 5}, {SnapshotID: 7}}}
	cur := int64(7)
	base.CurrentSnapshotID = &cur
	snap := func(id int64) Update {
		return Update{Action: ActionAddSnapshot, Snapshot: &iceberg.Snapshot{SnapshotID: id, ManifestList: "s3://b/ns/t/metadata/l.avro", Summary: map[string]string{"operation": "append"}}}
	}
	ref := func(name, typ string, id int64) Update {
		return Update{Action: ActionSetSnapshotRef, RefName: name, Type: typ, SnapshotID: &id}
	}
	v3 := Update{Action: ActionUpgradeFormatVersion, FormatVersion: 3}
	stats := func(id int64) Update {
		return Update{Action: ActionSetStatistics, Statistics: &iceberg.StatisticsFile{SnapshotID: id, StatisticsPath: "s3://b/ns/t/metadata/s.stats"}}
	}
	unknown := int64(8)
	for name, c := range map[string]struct {
		updates []Update
		kind    error
	}{
		"append":                       {[]Update{snap(99), ref("main", "branch", 99)}, nil},
		"staged snapshot":              {[]Update{snap(99)}, ErrUnsupported},
		"branch write":                 {[]Update{snap(99), ref("dev", "branch", 99)}, ErrUnsupported},
		"rollback":                     {[]Update{ref("main", "branch", 3)}, ErrUnsupported},
		"tag":                          {[]Update{ref("v1", "tag", 7)}, nil},
		"tag of unknown":               {[]Update{ref("v1", "tag", 8)}, ErrInvalid},
		"v3":                           {[]Update{v3}, ErrUnsupported},
		"set-location elsewhere":       {[]Update{{Action: ActionSetLocation, Location: "s3://b/x"}}, ErrUnsupported},
		"set-location same":            {[]Update{{Action: ActionSetLocation, Location: "s3://b/ns/t/"}}, nil},
		"reserved property":            {[]Update{{Action: ActionSetProperties, Updates: map[string]string{"duckicelake.x": "1"}}}, ErrForbidden},
		"remove reserved":              {[]Update{{Action: ActionRemoveProperties, Removals: []string{"DuckIceLake.y"}}}, ErrForbidden},
		"remove current snapshot":      {[]Update{{Action: ActionRemoveSnapshots, SnapshotIDs: []int64{7}}}, ErrInvalid},
		"remove unknown snapshot":      {[]Update{{Action: ActionRemoveSnapshots, SnapshotIDs: []int64{8}}}, nil},
		"remove added snapshot":        {[]Update{snap(99), ref("main", "branch", 99), {Action: ActionRemoveSnapshots, SnapshotIDs: []int64{99}}}, ErrInvalid},
		"tag a removed snapshot":       {[]Update{{Action: ActionRemoveSnapshots, SnapshotIDs: []int64{5}}, ref("v1", "tag", 5)}, ErrInvalid},
		"statistics":                   {[]Update{stats(7), stats(5), {Action: ActionRemoveStatistics, SnapshotID: &cur}}, nil},
		"statistics of an added":       {[]Update{snap(99), ref("main", "branch", 99), stats(99)}, nil},
		"statistics of unknown":        {[]Update{stats(8)}, ErrInvalid},
		"statistics of removed":        {[]Update{{Action: ActionRemoveSnapshots, SnapshotIDs: []int64{5}}, stats(5)}, ErrInvalid},
		"statistics without file":      {[]Update{{Action: ActionSetStatistics}}, ErrInvalid},
		"remove unknown stats":         {[]Update{{Action: ActionRemovePartitionStatistics, SnapshotID: &unknown}}, nil},
		"other uuid":                   {[]Update{{Action: ActionAssignUUID, UUID: "9b3d2c1e-0000-4000-8000-000000000002"}}, ErrInvalid},
		"same uuid":                    {[]Update{{Action: ActionAssignUUID, UUID: "9B3D2C1E-0000-4000-8000-000000000001"}}, nil},
		"schema not made current":      {[]Update{{Action: ActionAddSchema, Schema: &iceberg.Schema{ID: 4}}}, ErrUnsupported},
		"replace (remove main)":        {[]Update{{Action: ActionRemoveSnapshotRef, RefName: "main"}, snap(99), ref("main", "branch", 99)}, nil},
		"remove main, then back":       {[]Update{{Action: ActionRemoveSnapshotRef, RefName: "main"}, ref("main", "branch", 5)}, ErrUnsupported},
		"remove main after a snapshot": {[]Update{snap(99), {Action: ActionRemoveSnapshotRef, RefName: "main"}, ref("main", "branch", 99)}, ErrInvalid},
		"encryption":                   {[]Update{{Action: ActionAddEncryptionKey}}, ErrUnsupported},
	} {
		_, err := foldUpdates(c.updates, base, 2)
		if c.kind == nil && err != nil || c.kind != nil && !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", name, err, c.kind)
		}
	}
}

func TestRemoveSnapshotsPlan(t *testing.T) {
	cur := int64(9)
	base := &iceberg.TableMetadata{FormatVersion: 2, CurrentSnapshotID: &cur,
		Snapshots: []iceberg.Snapshot{{SnapshotID: 2}, {SnapshotID: 4}, {SnapshotID: 5}, {SnapshotID: 9}},
		Refs: map[string]iceberg.SnapshotRef{
			"main": {SnapshotID: 9, Type: "branch"}, "t4": {SnapshotID: 4, Type: "tag"},
			"t5": {SnapshotID: 5, Type: "tag"}, "b2": {SnapshotID: 2, Type: "branch"},
		}}
	remove := func(ids ...int64) Update { return Update{Action: ActionRemoveSnapshots, SnapshotIDs: ids} }
	ref := func(name string, id int64) Update {
		return Update{Action: ActionSetSnapshotRef, RefName: name, Type: "tag", SnapshotID: &id}
	}
	for name, c := range map[string]struct {
		updates    []Update
		removed    []int64
		removeRefs []string
		refs       []string
		ranges     []expiryRange
	}{
		// Unknown ids are ignored, as Iceberg does; refs left dangling go.
		"unknown ids and dangling refs": {[]Update{remove(4, 3, 100, 4)}, []int64{4}, []string{"t4"}, nil, []expiryRange{{4, 5}}},
		// Adjacent stretches merge; each lasts until the next Iceberg snapshot.
		"adjacent": {[]Update{remove(5, 2), remove(4)}, []int64{2, 4, 5}, []string{"b2", "t5", "t4"}, nil, []expiryRange{{2, 9}}},
		// A ref moved off the snapshot before it goes stays.
		"ref moved first": {[]Update{ref("t4", 5), remove(4)}, []int64{4}, nil, []string{"t4"}, []expiryRange{{4, 5}}},
		// A ref set to the snapshot in the same commit goes with it.
		"ref set then removed": {[]Update{ref("new", 2), remove(2)}, []int64{2}, []string{"new", "b2"}, nil, []expiryRange{{2, 4}}},
	} {
		p, err := foldUpdates(c.updates, base, 2)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var refs []string
		for _, u := range p.refs {
			refs = append(refs, u.RefName)
		}
		if !reflect.DeepEqual(p.removeSnapshots, c.removed) || !reflect.DeepEqual(p.removeRefs, c.removeRefs) || !reflect.DeepEqual(refs, c.refs) {
			t.Errorf("%s: removes %v, refs removed %v, refs set %v; want %v, %v, %v", name, p.removeSnapshots, p.removeRefs, refs, c.removed, c.removeRefs, c.refs)
		}
		if got := expiryRanges(base, p.removeSnapshots); !reflect.DeepEqual(got, c.ranges) {
			t.Errorf("%s: ranges %v, want %v", name, got, c.ranges)
		}
	}
}

func TestOwnChange(t *testing.T) {
	names := []string{`"s"."t"`, `"s"."old name"`}
	for _, c := range []struct {
		change string
		own    bool
	}{
		{"inserted_into_table:12", true},
		{"altered_table:12", true},
		{"inlined_insert:12", true},
		{`created_table:"s"."t"`, true},
		{`created_table:"s"."old name"`, true},
		{`created_table:"s"."u"`, false},
		{"inserted_into_table:13", false},
		{"dropped_table:112", false},
		{`created_schema:"12"`, false},
		{`created_view:"s"."t"`, false},
	} {
		ch := ducklake.ParseChanges(c.change)
		if len(ch) != 1 || ownChange(ch[0], 12, names) != c.own {
			t.Errorf("%s: own %v, want %v", c.change, !c.own, c.own)
		}
	}
}
func TestNewSpecVersion(t *testing.T) {
	pf := func(src, id int, tr iceberg.Transform, name string) iceberg.PartitionField {
		return iceberg.PartitionField{SourceID: src, FieldID: id, Name: name, Transform: tr}
	}
	bucket := pf(1, 1000, iceberg.Bucket(16), "shard")
	trunc := pf(2, 1001, iceberg.Truncate(2), "prefix")
	spec := func(id int, fs ...iceberg.PartitionField) iceberg.PartitionSpec {
		return iceberg.PartitionSpec{ID: id, Fields: fs}
	}
	for _, c := range []struct {
		name                string
		spec                iceberg.PartitionSpec
		known               []iceberg.PartitionSpec
		prev                *specVersion
		wantPlain, wantUnpt int
	}{
		// A table created unpartitioned: spec 0 serves inlined rows too.
		{"unpartitioned", spec(0), []iceberg.PartitionSpec{spec(0)}, nil, 0, 0},
		// Created partitioned: an unpartitioned spec above every known id.
		{"bucket", spec(0, bucket), []iceberg.PartitionSpec{spec(0, bucket)}, nil, 0, 1},
		{"bucket and truncate", spec(0, bucket, trunc), []iceberg.PartitionSpec{spec(0, bucket, trunc)}, nil, 2, 1},
		// The plain spec is one the client already has.
		{"plain known", spec(3, bucket, trunc), []iceberg.PartitionSpec{spec(0), spec(2, bucket), spec(3, bucket, trunc)}, nil, 2, 0},
		{"truncate only", spec(4, trunc), []iceberg.PartitionSpec{spec(4, trunc)}, nil, 5, 5},
		// Once allocated, the unpartitioned spec stays, and new ids go
		// above the previous version's.
		{"keeps unpartitioned", spec(5, bucket, trunc), []iceberg.PartitionSpec{spec(0, bucket), spec(5, bucket, trunc)},
			&specVersion{spec: spec(0, bucket), plainID: 0, unpartitionedID: 7}, 0, 7},
		{"above previous", spec(1, pf(1, 1002, iceberg.Identity, "id"), trunc), []iceberg.PartitionSpec{spec(1, pf(1, 1002, iceberg.Identity, "id"), trunc)},
			&specVersion{spec: spec(0, bucket), plainID: 0, unpartitionedID: 4}, 5, 4},
	} {
		v := newSpecVersion(c.spec, 9, c.known, c.prev)
		if v.plainID != c.wantPlain || v.unpartitionedID != c.wantUnpt || v.partitionID != 9 || v.spec.ID != c.spec.ID {
			t.Errorf("%s: plain %d unpartitioned %d, want %d %d", c.name, v.plainID, v.unpartitionedID, c.wantPlain, c.wantUnpt)
		}
		if !v.equal(&v) || v.equal(nil) {
			t.Errorf("%s: equal", c.name)
		}
	}
}

func TestDuckSort(t *testing.T) {
	top := duckFields(t,
		ducklake.Column{ID: 1, Order: 1, Name: "id", Type: "int64"},
		ducklake.Column{ID: 2, Order: 2, Name: "Name", Type: "varchar"},
	)
	sf := func(src int, tr iceberg.Transform, dir, nulls string) iceberg.SortField {
		return iceberg.SortField{SourceID: src, Transform: tr, Direction: dir, NullOrder: nulls}
	}
	order := func(fs ...iceberg.SortField) *iceberg.SortOrder { return &iceberg.SortOrder{OrderID: 1, Fields: fs} }
	keys, err := duckSort(order(sf(1, iceberg.Identity, "desc", "nulls-first"), sf(2, iceberg.Identity, "", "")), top)
	if err != nil || !reflect.DeepEqual(keys, []sortKey{{1, "id", true, true}, {2, `"Name"`, false, false}}) {
		t.Errorf("plain order: %+v %v", keys, err)
	}
	// A transform DuckLake cannot sort by: no DuckLake keys at all (a
	// sort by id alone would be another order), the order is accepted.
	keys, err = duckSort(order(sf(1, iceberg.Bucket(16), "asc", "nulls-last"), sf(1, iceberg.Identity, "asc", "nulls-last")), top)
	if err != nil || keys != nil {
		t.Errorf("bucket order: %+v %v", keys, err)
	}
	for name, o := range map[string]*iceberg.SortOrder{
		"unknown column":  order(sf(9, iceberg.Identity, "asc", "nulls-last")),
		"day of a string": order(sf(2, iceberg.Day, "asc", "nulls-last")),
		"bad direction":   order(sf(1, iceberg.Identity, "up", "nulls-last")),
		"bad null order":  order(sf(1, iceberg.Truncate(4), "asc", "nulls-middle")),
	} {
		if _, err := duckSort(o, top); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if o := normOrder(*order(sf(1, iceberg.Bucket(16), "", ""))); o.Fields[0].Direction != "asc" || o.Fields[0].NullOrder != "nulls-last" {
		t.Errorf("normOrder: %+v", o)
	}
}

func TestCheckTableNameReservesMaskedNames(t *testing.T) {
	for _, name := range []string{"__mask_t", "__MASK_orders", "__mask_"} {
		if err := checkTableName(name); err == nil {
			t.Errorf("checkTableName(%q) accepted a name reserved for masking views", name)
		}
	}
	for _, name := range []string{"_mask_t", "mask", "t__mask_"} {
		if err := checkTableName(name); err != nil {
			t.Errorf("checkTableName(%q) = %v", name, err)
		}
	}
}
