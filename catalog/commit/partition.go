package commit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// duckKey is one DuckLake partition key: ducklake_partition_column.
type duckKey struct {
	column    int64
	transform string // identity, bucket(N), year, month, day, hour
}

// truncField is a truncate[W] partition field, which DuckLake cannot hold:
// it lives in the sidecar table duckicelake_table_partition_field.
type truncField struct {
	position int // index in the Iceberg spec
	column   int64
	width    int
	name     string
}

// bucketCompatible lists the DuckLake kinds whose bucket(N) DuckDB computes
// exactly as Iceberg's bucket[N] (the same murmur3 of the same bytes), as
// catalog/materialize maps them; any other kind would read back as void.
var bucketCompatible = map[ducklake.Kind]bool{
	ducklake.KindInt8: true, ducklake.KindInt16: true, ducklake.KindInt32: true, ducklake.KindInt64: true,
	ducklake.KindDate: true, ducklake.KindTime: true, ducklake.KindTimestamp: true, ducklake.KindTimestampTZ: true,
	ducklake.KindVarchar: true, ducklake.KindBlob: true,
}

// calendarKinds are the source kinds whose calendar fields DuckDB computes
// as Iceberg's temporal transforms do (timestamptz is evaluated in DuckDB's
// session time zone, so it is not one of them).
var calendarKinds = map[ducklake.Kind]bool{
	ducklake.KindDate: true, ducklake.KindTimestamp: true, ducklake.KindTimestampS: true,
	ducklake.KindTimestampMS: true, ducklake.KindTimestampNS: true,
}

// temporalLevels orders the calendar transforms; a DuckLake month key is a
// month of the year, so it needs the year key to mean what Iceberg's month
// means, and so on down to hours.
var temporalLevels = []string{"year", "month", "day", "hour"}

func temporalLevel(tr iceberg.Transform) int {
	switch tr.Kind {
	case iceberg.TransformYear:
		return 0
	case iceberg.TransformMonth:
		return 1
	case iceberg.TransformDay:
		return 2
	case iceberg.TransformHour:
		return 3
	}
	return -1
}

// duckPartition translates an Iceberg partition spec into DuckLake
// partition keys (and truncate fields for the sidecar). columns are the
// table's top-level columns by id as they will be at the snapshot. An
// Iceberg month, day or hour field brings the coarser calendar keys of its
// column with it, so the spec the catalog serves back has those fields too.
func duckPartition(spec *iceberg.PartitionSpec, columns map[int64]ducklake.Field) ([]duckKey, []truncField, error) {
	if spec == nil {
		return nil, nil, nil
	}
	// The finest calendar level asked for, per column.
	finest := map[int64]int{}
	for _, f := range spec.Fields {
		if l := temporalLevel(f.Transform); l >= 0 {
			if cur, ok := finest[int64(f.SourceID)]; !ok || l > cur {
				finest[int64(f.SourceID)] = l
			}
		}
	}
	var keys []duckKey
	var truncs []truncField
	emitted := map[duckKey]bool{}
	emit := func(k duckKey) {
		if !emitted[k] {
			emitted[k] = true
			keys = append(keys, k)
		}
	}
	for i, f := range spec.Fields {
		src, ok := columns[int64(f.SourceID)]
		if !ok {
			return nil, nil, invalid("partition field %q: source column %d is not a top-level column of the table", f.Name, f.SourceID)
		}
		if src.Type.Kind.Nested() {
			return nil, nil, invalid("partition field %q: source column %q is %s, not a primitive", f.Name, src.Name, src.Type.Kind)
		}
		col := int64(f.SourceID)
		switch f.Transform.Kind {
		case iceberg.TransformIdentity:
			if emitted[duckKey{col, "identity"}] {
				return nil, nil, invalid("partition spec has identity(%s) twice", src.Name)
			}
			emit(duckKey{col, "identity"})
		case iceberg.TransformBucket:
			if !bucketCompatible[src.Type.Kind] {
				return nil, nil, unsupported("partition field %q: DuckDB hashes %s values differently from Iceberg, so bucket[%d] of column %q cannot be shared; partition by another transform",
					f.Name, src.Type.Kind, f.Transform.Param, src.Name)
			}
			emit(duckKey{col, "bucket(" + strconv.Itoa(f.Transform.Param) + ")"})
		case iceberg.TransformYear, iceberg.TransformMonth, iceberg.TransformDay, iceberg.TransformHour:
			if !calendarKinds[src.Type.Kind] {
				why := "is not a date or timestamp"
				if src.Type.Kind == ducklake.KindTimestampTZ {
					why = "is a timestamptz, whose calendar fields DuckDB computes in its session time zone rather than UTC"
				}
				return nil, nil, unsupported("partition field %q: column %q %s; %s partitioning cannot be shared with DuckDB", f.Name, src.Name, why, f.Transform)
			}
			if f.Transform.Kind == iceberg.TransformHour && src.Type.Kind == ducklake.KindDate {
				return nil, nil, invalid("partition field %q: hour of a date", f.Name)
			}
			for l := 0; l <= finest[col]; l++ {
				emit(duckKey{col, temporalLevels[l]})
			}
		case iceberg.TransformTruncate:
			if _, err := f.Transform.ResultType(icebergPrimitive(src)); err != nil {
				return nil, nil, invalid("partition field %q: %v", f.Name, err)
			}
			truncs = append(truncs, truncField{position: i, column: col, width: f.Transform.Param, name: f.Name})
		case iceberg.TransformVoid:
			return nil, nil, unsupported("partition field %q: void transforms cannot be stored in DuckLake; drop the field from a new spec instead", f.Name)
		default:
			return nil, nil, invalid("partition field %q: transform %s", f.Name, f.Transform)
		}
	}
	return keys, truncs, nil
}

func icebergPrimitive(f ducklake.Field) iceberg.Type {
	t, err := icebergOf(ducklake.Column{ID: f.ID, Name: f.Name, Type: f.Type.String(), NullsAllowed: f.Nullable})
	if err != nil {
		return iceberg.Type{}
	}
	return t
}

// servedSpec is the Iceberg spec catalog/materialize serves for DuckLake
// keys: one field per key, named as it names them, ids from 1000 on.
func servedSpec(id int, keys []duckKey, columns map[int64]ducklake.Field) iceberg.PartitionSpec {
	spec := iceberg.PartitionSpec{ID: id}
	names := map[string]bool{}
	for i, k := range keys {
		if impliedKey(keys, i) {
			continue
		}
		col := columns[k.column]
		var tr iceberg.Transform
		name := col.Name
		switch {
		case k.transform == "identity":
			tr = iceberg.Identity
		case strings.HasPrefix(k.transform, "bucket("):
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(k.transform, "bucket("), ")"))
			tr = iceberg.Bucket(n)
			name += "_bucket_" + strconv.Itoa(n)
		default:
			tr, _ = iceberg.ParseTransform(k.transform)
			name += "_" + k.transform
		}
		for base, n := name, 2; names[name]; n++ {
			name = base + "_" + strconv.Itoa(n)
		}
		names[name] = true
		spec.Fields = append(spec.Fields, iceberg.PartitionField{SourceID: int(k.column), FieldID: iceberg.PartitionFieldIDStart + len(spec.Fields), Name: name, Transform: tr})
	}
	return spec
}

// calendarLevel is the level of a DuckLake calendar transform (year 0 …
// hour 3), -1 for others.
func calendarLevel(transform string) int {
	for l, name := range temporalLevels {
		if transform == name {
			return l
		}
	}
	return -1
}

// impliedKey reports whether calendar key i has a finer calendar key on
// the same column: catalog/materialize serves only the finest as an Iceberg
// field (Iceberg refuses the coarser ones as redundant) and derives its
// value from all of them.
func impliedKey(keys []duckKey, i int) bool {
	l := calendarLevel(keys[i].transform)
	if l < 0 {
		return false
	}
	for j, k := range keys {
		if j != i && k.column == keys[i].column && calendarLevel(k.transform) > l {
			return true
		}
	}
	return false
}

// topLevel indexes the top-level fields of a table by column id.
func topLevel(fields []ducklake.Field) map[int64]ducklake.Field {
	m := make(map[int64]ducklake.Field, len(fields))
	for _, f := range fields {
		m[f.ID] = f
	}
	return m
}

// writePartition stores DuckLake partition keys as a new partition spec of
// table tableID beginning at the snapshot, with a new catalog id.
func (c *Catalog) writePartition(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, keys []duckKey) (int64, error) {
	id := snap.catalogID()
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_partition_info")+` (partition_id, table_id, begin_snapshot, end_snapshot)
		VALUES ($1, $2, $3, NULL)`, id, tableID, snap.ID); err != nil {
		return 0, fmt.Errorf("insert partition %d: %w", id, err)
	}
	for i, k := range keys {
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_partition_column")+` (partition_id, table_id, partition_key_index, column_id, "transform")
			VALUES ($1, $2, $3, $4, $5)`, id, tableID, i, k.column, k.transform); err != nil {
			return 0, fmt.Errorf("insert partition %d key %d: %w", id, i, err)
		}
	}
	return id, nil
}

// partitionValues turns a data file's Iceberg partition tuple (written under
// spec, the Iceberg form of DuckLake spec info) into DuckLake partition
// values, one per key; nil entries are NULL. A calendar key the spec has no
// field for comes from the finest calendar field of its column (Iceberg's
// day holds the year and month DuckLake keeps as keys of their own).
func partitionValues(spec iceberg.PartitionSpec, tuple []any, info *ducklake.PartitionInfo, columns map[int64]ducklake.Field) ([]*string, error) {
	if len(tuple) != len(spec.Fields) {
		return nil, invalid("partition tuple of %d values for spec %d with %d fields", len(tuple), spec.ID, len(spec.Fields))
	}
	keys := make([]duckKey, len(info.Columns))
	for k, c := range info.Columns {
		keys[k] = duckKey{column: c.ColumnID, transform: c.Transform}
	}
	used := make([]bool, len(spec.Fields))
	// field finds the spec field for key k: the same transform of the same
	// column, or for an implied calendar key the column's finest one.
	field := func(k int) int {
		key := keys[k]
		for i, f := range spec.Fields {
			if int64(f.SourceID) == key.column && transformMatches(f.Transform, key.transform) {
				return i
			}
		}
		if !impliedKey(keys, k) {
			return -1
		}
		best, bestLevel := -1, calendarLevel(key.transform)
		for i, f := range spec.Fields {
			if l := temporalLevel(f.Transform); int64(f.SourceID) == key.column && l > bestLevel {
				best, bestLevel = i, l
			}
		}
		return best
	}
	out := make([]*string, len(keys))
	for k, key := range keys {
		i := field(k)
		if i < 0 {
			return nil, invalid("the table's partitioning has key %d (%s of column %d), which partition spec %d has no field for", k, key.transform, key.column, spec.ID)
		}
		used[i] = true
		v := tuple[i]
		if v == nil {
			continue
		}
		s, err := keyValue(key.transform, spec.Fields[i].Transform, v, columns[key.column])
		if err != nil {
			return nil, fmt.Errorf("partition field %q: %w", spec.Fields[i].Name, err)
		}
		out[k] = &s
	}
	for i, f := range spec.Fields {
		if !used[i] && f.Transform.Kind != iceberg.TransformTruncate {
			return nil, invalid("partition field %q (%s of column %d) is no key of the table's partitioning", f.Name, f.Transform, f.SourceID)
		}
	}
	return out, nil
}

func transformMatches(tr iceberg.Transform, duck string) bool {
	switch tr.Kind {
	case iceberg.TransformIdentity:
		return duck == "identity"
	case iceberg.TransformBucket:
		return duck == "bucket("+strconv.Itoa(tr.Param)+")"
	case iceberg.TransformYear, iceberg.TransformMonth, iceberg.TransformDay, iceberg.TransformHour:
		return duck == tr.String()
	}
	return false
}

// keyValue is the DuckLake value of one partition key from the value of
// Iceberg partition field tr: identity values in DuckDB's text, buckets as
// is, and calendar fields as DuckDB stores them (the year, the month of the
// year, the day of the month, the hour of the day) rather than Iceberg's
// counts since 1970; a coarser key is derived from a finer field.
func keyValue(transform string, tr iceberg.Transform, v any, src ducklake.Field) (string, error) {
	if transform == "identity" {
		s, ok := duckText(src.Type, v, forPartition)
		if !ok {
			return "", unsupported("identity value %v of a %s column has no DuckDB text form here", v, src.Type)
		}
		return s, nil
	}
	n, isInt := v.(int32)
	if !isInt {
		return "", invalid("%T is not a value of a %s partition field", v, tr)
	}
	if strings.HasPrefix(transform, "bucket(") {
		return strconv.Itoa(int(n)), nil
	}
	var y, m, d, h int64
	switch tr.Kind {
	case iceberg.TransformYear:
		y = 1970 + int64(n)
	case iceberg.TransformMonth:
		y, m = 1970+floorDiv(int64(n), 12), floorMod(int64(n), 12)+1
	case iceberg.TransformDay, iceberg.TransformHour:
		days := int64(n)
		if tr.Kind == iceberg.TransformHour {
			days, h = floorDiv(int64(n), 24), floorMod(int64(n), 24)
		}
		t := time.Unix(days*86400, 0).UTC()
		y, m, d = int64(t.Year()), int64(t.Month()), int64(t.Day())
	default:
		return "", invalid("partition field %s cannot give a %s key", tr, transform)
	}
	switch transform {
	case "year":
		return strconv.FormatInt(y, 10), nil
	case "month":
		return strconv.FormatInt(m, 10), nil
	case "day":
		return strconv.FormatInt(d, 10), nil
	case "hour":
		return strconv.FormatInt(h, 10), nil
	}
	return "", invalid("partition key transform %q", transform)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
