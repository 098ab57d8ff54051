package materialize

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// unpartitionedSpecID is the Iceberg spec of unpartitioned files and of
// inlined rows (which DuckLake never partitions). DuckLake partition ids are
// catalog ids, allocated after the initial schema's 0, so none is 0.
const unpartitionedSpecID = 0

// fieldRule says how one DuckLake partition key becomes an Iceberg value.
type fieldRule uint8

const (
	rulePass     fieldRule = iota // identity or bucket: the DuckLake value as is
	ruleYear                      // calendar year → years since 1970
	ruleMonth                     // + year key → months since 1970-01
	ruleDay                       // + year, month keys → days since 1970-01-01
	ruleHour                      // + year, month, day keys → hours since epoch
	ruleVoid                      // not expressible: always null, never prunes
	ruleTruncate                  // truncate[W], derived from the file's statistics
)

type mappedField struct {
	rule       fieldRule
	srcDuck    ducklake.Type // source column's DuckLake type
	result     iceberg.Type
	key        int // position of the field's own key
	year       int // key positions of the coarser keys on the same column
	month, day int
	column     int64 // ruleTruncate: the source column, its type and the transform
	srcIce     iceberg.Type
	transform  iceberg.Transform
}

// mappedSpec is one DuckLake partition spec as an Iceberg spec.
type mappedSpec struct {
	spec   iceberg.PartitionSpec
	fields []mappedField // like spec.Fields
	keys   int           // DuckLake keys; a calendar key a finer one implies has no field
	// plain serves the files whose truncate values cannot be derived: the
	// spec without its truncate fields. nil when there are none.
	plain *mappedSpec
}

// bucketCompatible lists the source kinds whose DuckLake bucket(N) values
// equal Iceberg's bucket[N] (checked against DuckDB 1.5.5: the same
// murmur3 of the same bytes). DuckDB hashes uuid, decimal and uint32
// differently; those buckets become void.
var bucketCompatible = map[ducklake.Kind]bool{
	ducklake.KindInt8: true, ducklake.KindInt16: true, ducklake.KindInt32: true, ducklake.KindInt64: true,
	ducklake.KindDate: true, ducklake.KindTime: true, ducklake.KindTimestamp: true, ducklake.KindTimestampTZ: true,
	ducklake.KindVarchar: true, ducklake.KindBlob: true,
}

// mapPartitions turns every DuckLake partition spec of a table into an
// Iceberg spec. Field ids are unique across specs and reused for an
// equivalent field (same source, transform and name), as the spec requires.
// columnsAt returns the table's fields at a snapshot (for names and types).
func mapPartitions(infos []ducklake.PartitionInfo, columnsAt func(int64) ([]ducklake.Field, error), formatVersion int) (map[int64]*mappedSpec, []iceberg.PartitionSpec, int, error) {
	p, err := planSpecs(infos, nil, columnsAt, formatVersion)
	if err != nil {
		return nil, nil, 0, err
	}
	byID := map[int64]*mappedSpec{unpartitionedSpecID: p.unpartitioned}
	for id, ms := range p.duck {
		byID[id] = ms
	}
	return byID, p.list, p.lastID, nil
}

// mappedKey is one DuckLake partition key as an Iceberg field.
type mappedKey struct {
	mf      mappedField
	tr      iceberg.Transform
	src     *ducklake.Field
	srcType iceberg.Type
	implied bool // a calendar key a finer one on its column stands for
}

// mapKeys maps the keys of DuckLake partition info (the table's fields
// as of its begin snapshot).
func mapKeys(info ducklake.PartitionInfo, fields []ducklake.Field, formatVersion int) ([]mappedKey, error) {
	// Which key positions hold year/month/day of each column.
	temporal := map[int64]map[string]int{}
	for i, c := range info.Columns {
		if temporal[c.ColumnID] == nil {
			temporal[c.ColumnID] = map[string]int{}
		}
		temporal[c.ColumnID][c.Transform] = i
	}
	mapped := make([]mappedKey, len(info.Columns))
	for i, c := range info.Columns {
		src := findField(fields, c.ColumnID)
		if src == nil {
			return nil, fmt.Errorf("partition %d: column %d is not in the table at snapshot %d", info.ID, c.ColumnID, info.Begin)
		}
		srcType, err := IcebergType(*src, formatVersion)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", info.ID, err)
		}
		mf, tr, err := mapField(c, src, srcType, temporal[c.ColumnID])
		if err != nil {
			return nil, fmt.Errorf("partition %d key %d: %w", info.ID, i, err)
		}
		mf.key = i
		if mf.result, err = tr.ResultType(srcType); err != nil {
			return nil, fmt.Errorf("partition %d key %d: %w", info.ID, i, err)
		}
		mapped[i] = mappedKey{mf: mf, tr: tr, src: src, srcType: srcType}
	}
	// DuckLake needs year(ts) beside month(ts) for month(ts) to mean
	// Iceberg's month; Iceberg refuses the coarser fields as redundant
	// (PyIceberg will not write under such a spec). The finest calendar
	// field of a column stands for them: its value is computed from all
	// of them.
	for i := range mapped {
		k := mapped[i]
		if k.mf.rule < ruleYear || k.mf.rule > ruleDay {
			continue
		}
		for j, o := range mapped {
			if j != i && info.Columns[j].ColumnID == info.Columns[i].ColumnID && o.mf.rule > k.mf.rule && o.mf.rule <= ruleHour {
				mapped[i].implied = true
			}
		}
	}
	return mapped, nil
}

func findField(fields []ducklake.Field, id int64) *ducklake.Field {
	for i := range fields {
		if fields[i].ID == id {
			return &fields[i]
		}
		if f := findField(fields[i].Type.Fields, id); f != nil {
			return f
		}
	}
	return nil
}

func partitionName(column, duckTransform string, tr iceberg.Transform) string {
	switch tr.Kind {
	case iceberg.TransformIdentity:
		return column
	case iceberg.TransformBucket:
		return column + "_bucket_" + strconv.Itoa(tr.Param)
	case iceberg.TransformVoid:
		return column + "_" + strings.NewReplacer("(", "_", ")", "").Replace(duckTransform)
	}
	return column + "_" + tr.String()
}

func mapField(c ducklake.PartitionColumn, src *ducklake.Field, srcType iceberg.Type, temporal map[string]int) (mappedField, iceberg.Transform, error) {
	mf := mappedField{srcDuck: src.Type, year: -1, month: -1, day: -1}
	void := func() (mappedField, iceberg.Transform, error) {
		mf.rule = ruleVoid
		return mf, iceberg.Void, nil
	}
	if !srcType.IsPrimitive() {
		return mappedField{}, iceberg.Transform{}, fmt.Errorf("partition on nested column %q", src.Name)
	}
	at := func(name string) int {
		if i, ok := temporal[name]; ok {
			return i
		}
		return -1
	}
	mf.year, mf.month, mf.day = at("year"), at("month"), at("day")
	// DuckDB evaluates year(…) of a timestamptz in the session's time zone;
	// Iceberg in UTC. The values need not agree, so those keys are void.
	exactTime := src.Type.Kind == ducklake.KindDate || src.Type.Kind == ducklake.KindTimestamp ||
		src.Type.Kind == ducklake.KindTimestampS || src.Type.Kind == ducklake.KindTimestampMS ||
		src.Type.Kind == ducklake.KindTimestampNS
	switch t := c.Transform; {
	case t == "identity":
		mf.rule = rulePass
		return mf, iceberg.Identity, nil
	case strings.HasPrefix(t, "bucket(") && strings.HasSuffix(t, ")"):
		n, err := strconv.Atoi(t[len("bucket(") : len(t)-1])
		if err != nil || n <= 0 {
			return mappedField{}, iceberg.Transform{}, fmt.Errorf("bad transform %q", t)
		}
		if !bucketCompatible[src.Type.Kind] {
			return void()
		}
		mf.rule = rulePass
		return mf, iceberg.Bucket(n), nil
	case t == "year" && exactTime:
		mf.rule = ruleYear
		return mf, iceberg.Year, nil
	case t == "month" && exactTime && mf.year >= 0:
		mf.rule = ruleMonth
		return mf, iceberg.Month, nil
	case t == "day" && exactTime && mf.year >= 0 && mf.month >= 0:
		mf.rule = ruleDay
		return mf, iceberg.Day, nil
	case t == "hour" && src.Type.Kind != ducklake.KindDate && exactTime && mf.year >= 0 && mf.month >= 0 && mf.day >= 0:
		mf.rule = ruleHour
		return mf, iceberg.Hour, nil
	case t == "year", t == "month", t == "day", t == "hour":
		return void()
	}
	return mappedField{}, iceberg.Transform{}, fmt.Errorf("unknown transform %q", c.Transform)
}

// partitionTuple computes a data file's Iceberg partition values from its
// DuckLake partition values.
func (ms *mappedSpec) partitionTuple(values []ducklake.FilePartitionValue) ([]any, error) {
	if ms.keys == 0 {
		return []any{}, nil
	}
	if len(values) != ms.keys {
		return nil, fmt.Errorf("%d partition values for spec %d with %d keys", len(values), ms.spec.ID, ms.keys)
	}
	ints := make([]*int64, len(values)) // calendar fields, parsed lazily
	intAt := func(i int) (int64, bool, error) {
		if i < 0 || values[i].Null {
			return 0, false, nil
		}
		if ints[i] == nil {
			n, err := strconv.ParseInt(strings.TrimSpace(values[i].Value), 10, 64)
			if err != nil {
				return 0, false, fmt.Errorf("partition value %q: %w", values[i].Value, err)
			}
			ints[i] = &n
		}
		return *ints[i], true, nil
	}
	out := make([]any, len(ms.fields))
	for i, f := range ms.fields {
		if values[f.key].Null || f.rule == ruleVoid {
			continue
		}
		var err error
		switch f.rule {
		case rulePass:
			if ms.spec.Fields[i].Transform.Kind == iceberg.TransformBucket {
				var n int64
				n, _, err = intAt(f.key)
				out[i] = int32(n)
				break
			}
			var v any
			if v, err = ducklake.ParseDuckDBText(f.srcDuck, values[f.key].Value); err == nil {
				out[i], err = IcebergValue(f.srcDuck, v)
			}
		default:
			out[i], err = temporalValue(f, f.key, intAt)
		}
		if err != nil {
			return nil, fmt.Errorf("spec %d key %d: %w", ms.spec.ID, i, err)
		}
	}
	return out, nil
}

func temporalValue(f mappedField, i int, intAt func(int) (int64, bool, error)) (any, error) {
	parts := [4]int64{0, 1, 1, 0} // year, month, day, hour
	var need []int
	switch f.rule {
	case ruleYear:
		need = []int{i}
	case ruleMonth:
		need = []int{f.year, i}
	case ruleDay:
		need = []int{f.year, f.month, i}
	case ruleHour:
		need = []int{f.year, f.month, f.day, i}
	}
	for k, pos := range need {
		n, ok, err := intAt(pos)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil // a coarser key is null: so is the value
		}
		parts[k] = n
	}
	if f.rule == ruleYear {
		return int32(parts[0] - 1970), nil
	}
	if f.rule == ruleMonth {
		return int32((parts[0]-1970)*12 + parts[1] - 1), nil
	}
	day := time.Date(int(parts[0]), time.Month(parts[1]), int(parts[2]), 0, 0, 0, 0, time.UTC).Unix() / 86400
	if f.rule == ruleDay {
		return int32(day), nil
	}
	return int32(day*24 + parts[3]), nil
}
