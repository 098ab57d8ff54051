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
		spec.Fields = append(spec.Fields, iceberg.PartitionField{SourceID: int(k.column), FieldID: iceberg.PartitionFieldIDStart + i, Name: name, Transform: tr})
	}
	return spec
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
// values, one per key; nil entries are NULL.
func partitionValues(spec iceberg.PartitionSpec, tuple []any, info *ducklake.PartitionInfo, columns map[int64]ducklake.Field) ([]*string, error) {
	// Fields the sidecar keeps (truncate) have no DuckLake key.
	var fields []int
	for i, f := range spec.Fields {
		if f.Transform.Kind != iceberg.TransformTruncate {
			fields = append(fields, i)
		}
	}
	if len(fields) != len(info.Columns) || len(tuple) != len(spec.Fields) {
		return nil, invalid("partition spec %d has %d fields, the table's partitioning %d keys", spec.ID, len(fields), len(info.Columns))
	}
	out := make([]*string, len(info.Columns))
	for k, key := range info.Columns {
		f := spec.Fields[fields[k]]
		v := tuple[fields[k]]
		if int64(f.SourceID) != key.ColumnID || !transformMatches(f.Transform, key.Transform) {
			return nil, invalid("partition field %q (%s of column %d) is not key %d of the table's partitioning (%s of column %d)",
				f.Name, f.Transform, f.SourceID, k, key.Transform, key.ColumnID)
		}
		if v == nil {
			continue
		}
		s, err := keyValue(key.Transform, v, columns[key.ColumnID])
		if err != nil {
			return nil, fmt.Errorf("partition field %q: %w", f.Name, err)
		}
		out[k] = &s
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

// keyValue is the DuckLake value of one partition key for an Iceberg
// partition value: identity values in DuckDB's text, buckets as is, and
// calendar fields as DuckDB stores them (the year, the month of the year,
// the day of the month, the hour of the day) rather than Iceberg's counts
// since 1970.
func keyValue(transform string, v any, src ducklake.Field) (string, error) {
	n, isInt := v.(int32)
	switch {
	case transform == "identity":
		s, ok := duckText(src.Type, v, forPartition)
		if !ok {
			return "", unsupported("identity value %v of a %s column has no DuckDB text form here", v, src.Type)
		}
		return s, nil
	case strings.HasPrefix(transform, "bucket(") && isInt:
		return strconv.Itoa(int(n)), nil
	case transform == "year" && isInt:
		return strconv.Itoa(1970 + int(n)), nil
	case transform == "month" && isInt:
		return strconv.Itoa(int(floorMod(int64(n), 12)) + 1), nil
	case transform == "day" && isInt:
		return strconv.Itoa(time.Unix(int64(n)*86400, 0).UTC().Day()), nil
	case transform == "hour" && isInt:
		return strconv.Itoa(int(floorMod(int64(n), 24))), nil
	}
	return "", invalid("%T is not a value of a %s partition key", v, transform)
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
