package materialize

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// Parquet files for rows DuckDB kept in Postgres are written with Iceberg's
// Parquet mapping (Appendix A): field ids on every column, 3-level lists
// and maps, int32/int64-backed decimals where they fit, UUID as
// fixed_len_byte_array(16). The writer settings are fixed so that the same
// rows always give the same bytes.

func fieldIDMeta(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
}

func arrowField(f iceberg.NestedField) (arrow.Field, error) {
	t, err := arrowType(f.Type)
	if err != nil {
		return arrow.Field{}, fmt.Errorf("column %s: %w", f.Name, err)
	}
	return arrow.Field{Name: f.Name, Type: t, Nullable: !f.Required, Metadata: fieldIDMeta(f.ID)}, nil
}

func arrowType(t iceberg.Type) (arrow.DataType, error) {
	switch t.ID {
	case iceberg.TypeBoolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case iceberg.TypeInt:
		return arrow.PrimitiveTypes.Int32, nil
	case iceberg.TypeLong:
		return arrow.PrimitiveTypes.Int64, nil
	case iceberg.TypeFloat:
		return arrow.PrimitiveTypes.Float32, nil
	case iceberg.TypeDouble:
		return arrow.PrimitiveTypes.Float64, nil
	case iceberg.TypeDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case iceberg.TypeDate:
		return arrow.FixedWidthTypes.Date32, nil
	case iceberg.TypeTime:
		return arrow.FixedWidthTypes.Time64us, nil
	case iceberg.TypeTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case iceberg.TypeTimestampTZ:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case iceberg.TypeTimestampNS:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, nil
	case iceberg.TypeTimestampTZNS:
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, nil
	case iceberg.TypeString:
		return arrow.BinaryTypes.String, nil
	case iceberg.TypeBinary:
		return arrow.BinaryTypes.Binary, nil
	case iceberg.TypeUUID:
		return extensions.NewUUIDType(), nil
	case iceberg.TypeFixed:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Length}, nil
	case iceberg.TypeList:
		e, err := arrowField(*t.Element)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(e), nil
	case iceberg.TypeMap:
		k, err := arrowField(*t.Key)
		if err != nil {
			return nil, err
		}
		v, err := arrowField(*t.Value)
		if err != nil {
			return nil, err
		}
		return arrow.MapOfFields(k, v), nil
	case iceberg.TypeStruct:
		fields := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			var err error
			if fields[i], err = arrowField(f); err != nil {
				return nil, err
			}
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("no Parquet form for %s", t)
}

func writerProps() (*parquet.WriterProperties, pqarrow.ArrowWriterProperties) {
	return parquet.NewWriterProperties(
			parquet.WithCreatedBy("duckicelake"),
			parquet.WithCompression(compress.Codecs.Zstd),
			parquet.WithStoreDecimalAsInteger(true),
			parquet.WithDictionaryDefault(false),
			parquet.WithStats(true),
		),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator))
}

func writeRecord(sc *arrow.Schema, rec arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	props, aprops := writerProps()
	w, err := pqarrow.NewFileWriter(sc, &buf, props, aprops)
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WritePositionDeletes writes an Iceberg position delete file: (file_path,
// pos) rows for one data file, positions ascending, with the reserved
// Iceberg field ids.
func WritePositionDeletes(dataFile string, positions []int64) ([]byte, error) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "file_path", Type: arrow.BinaryTypes.String, Metadata: fieldIDMeta(iceberg.PositionDeleteFilePathID)},
		{Name: "pos", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldIDMeta(iceberg.PositionDeletePosID)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	paths := b.Field(0).(*array.StringBuilder)
	pos := b.Field(1).(*array.Int64Builder)
	for _, p := range positions {
		paths.Append(dataFile)
		pos.Append(p)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeRecord(sc, rec)
}

// writeInlinedRows writes inlined rows (values as the DuckLake reader gives
// them for columns) to Parquet under schema, the columns' Iceberg schema.
func writeInlinedRows(columns []ducklake.Field, schema *iceberg.Schema, rows []ducklake.InlinedRow) ([]byte, error) {
	fields := make([]arrow.Field, len(schema.Fields))
	for i, f := range schema.Fields {
		var err error
		if fields[i], err = arrowField(f); err != nil {
			return nil, err
		}
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		if len(r.Values) != len(columns) {
			return nil, fmt.Errorf("row %d has %d values for %d columns", r.RowID, len(r.Values), len(columns))
		}
		for i, c := range columns {
			if err := appendValue(b.Field(i), c.Type, schema.Fields[i].Type, r.Values[i]); err != nil {
				return nil, fmt.Errorf("row %d column %s: %w", r.RowID, c.Name, err)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeRecord(sc, rec)
}

// appendValue appends one value of DuckLake type dt (Iceberg type it).
func appendValue(b array.Builder, dt ducklake.Type, it iceberg.Type, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch it.ID {
	case iceberg.TypeList:
		elems, ok := v.([]any)
		if !ok || len(dt.Fields) != 1 {
			return fmt.Errorf("list value is %T", v)
		}
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		for _, e := range elems {
			if err := appendValue(lb.ValueBuilder(), dt.Fields[0].Type, it.Element.Type, e); err != nil {
				return err
			}
		}
		return nil
	case iceberg.TypeMap:
		entries, ok := v.([]ducklake.MapEntry)
		if !ok || len(dt.Fields) != 2 {
			return fmt.Errorf("map value is %T", v)
		}
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		for _, e := range entries {
			if err := appendValue(mb.KeyBuilder(), dt.Fields[0].Type, it.Key.Type, e.Key); err != nil {
				return err
			}
			if err := appendValue(mb.ItemBuilder(), dt.Fields[1].Type, it.Value.Type, e.Value); err != nil {
				return err
			}
		}
		return nil
	case iceberg.TypeStruct:
		vals, ok := v.([]any)
		if !ok || len(vals) != len(dt.Fields) || len(vals) != len(it.Fields) {
			return fmt.Errorf("struct value is %T", v)
		}
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, fv := range vals {
			if err := appendValue(sb.FieldBuilder(i), dt.Fields[i].Type, it.Fields[i].Type, fv); err != nil {
				return err
			}
		}
		return nil
	}
	iv, err := IcebergValue(dt, v)
	if err != nil {
		return err
	}
	bad := fmt.Errorf("%T for %s", iv, it)
	ok := false
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		ok = iceberg.PutValue(iv, bb.Append)
	case *array.Int32Builder:
		ok = iceberg.PutValue(iv, bb.Append)
	case *array.Int64Builder:
		ok = iceberg.PutValue(iv, bb.Append)
	case *array.Float32Builder:
		ok = iceberg.PutValue(iv, bb.Append)
	case *array.Float64Builder:
		ok = iceberg.PutValue(iv, bb.Append)
	case *array.Decimal128Builder:
		x, isDec := iv.(iceberg.Decimal)
		if ok = isDec && x.Unscaled.BitLen() <= 127; ok {
			bb.Append(decimal128.FromBigInt(x.Unscaled))
		}
	case *array.Date32Builder:
		ok = iceberg.PutValue(iv, func(x int32) { bb.Append(arrow.Date32(x)) })
	case *array.Time64Builder:
		ok = iceberg.PutValue(iv, func(x int64) { bb.Append(arrow.Time64(x)) })
	case *array.TimestampBuilder:
		ok = iceberg.PutValue(iv, func(x int64) { bb.Append(arrow.Timestamp(x)) })
	case *array.StringBuilder:
		ok = iceberg.PutValue(iv, bb.Append)
	case *array.BinaryBuilder:
		ok = iceberg.PutValue(iv, bb.Append)
	case *extensions.UUIDBuilder:
		ok = iceberg.PutValue(iv, func(x [16]byte) { bb.Append(x) }) // Append takes uuid.UUID
	default:
		return fmt.Errorf("no builder for %s (%T)", it, b)
	}
	if !ok {
		return bad
	}
	return nil
}

// rowMetrics computes Iceberg metrics of inlined rows for the top-level
// primitive columns: counts with nulls, NaN counts and exact bounds.
func rowMetrics(df *iceberg.DataFile, columns []ducklake.Field, schema *iceberg.Schema, rows []ducklake.InlinedRow) {
	for i, c := range columns {
		it := schema.Fields[i].Type
		if !it.IsPrimitive() {
			continue
		}
		id := int(c.ID)
		var nulls, nans int64
		var lo, hi any
		for _, r := range rows {
			v, err := IcebergValue(c.Type, r.Values[i])
			if err != nil {
				return // cannot happen after a successful write; keep no metrics
			}
			if v == nil {
				nulls++
				continue
			}
			if f, ok := v.(float32); ok && f != f {
				nans++
				continue
			}
			if f, ok := v.(float64); ok && math.IsNaN(f) {
				nans++
				continue
			}
			if lo == nil {
				lo, hi = v, v
				continue
			}
			if n, err := iceberg.CompareValues(it, v, lo); err == nil && n < 0 {
				lo = v
			}
			if n, err := iceberg.CompareValues(it, v, hi); err == nil && n > 0 {
				hi = v
			}
		}
		setLong(&df.ValueCounts, id, int64(len(rows)))
		setLong(&df.NullValueCounts, id, nulls)
		if it.ID == iceberg.TypeFloat || it.ID == iceberg.TypeDouble {
			setLong(&df.NaNValueCounts, id, nans)
		}
		if lo != nil {
			if b := lowerBound(it, lo); b != nil {
				setBytes(&df.LowerBounds, id, b)
			}
			if b := upperBound(it, hi); b != nil {
				setBytes(&df.UpperBounds, id, b)
			}
		}
	}
}
