package ducklake

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// InlinedTable is a ducklake_inlined_data_tables row: the Postgres table
// holding a DuckLake table's inlined rows for one schema version.
type InlinedTable struct {
	TableID       int64
	Name          string // e.g. ducklake_inlined_data_3_4
	SchemaVersion int64
}

// InlinedData is the content of one inlined data table visible at a snapshot.
type InlinedData struct {
	InlinedTable
	// Columns are the table's top-level columns at SchemaVersion, in the
	// inlined table's column order; Row.Values line up with them.
	Columns []Field
	Rows    []InlinedRow
}

// InlinedRow is one inlined row. Values follow the mapping documented in
// values.go (ParseDuckDBText).
type InlinedRow struct {
	RowID      int64 // the row's DuckLake row id
	Begin, End int64
	Values     []any
}

// InlinedTables lists the inlined data tables of table tableID, oldest
// schema version first.
func (r *Reader) InlinedTables(ctx context.Context, tableID int64) ([]InlinedTable, error) {
	rows, err := r.db.Query(ctx, `SELECT table_id, table_name, schema_version FROM `+r.t("ducklake_inlined_data_tables")+`
		WHERE table_id = $1 ORDER BY schema_version`, tableID)
	if err != nil {
		return nil, fmt.Errorf("read inlined data tables of table %d: %w", tableID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[InlinedTable])
	if err != nil {
		return nil, fmt.Errorf("read inlined data tables of table %d: %w", tableID, err)
	}
	return out, nil
}

// InlinedData reads the inlined rows of table tableID visible at snapshot
// snap, from every schema version's inlined table. Every row is returned or
// the call fails: a value that cannot be decoded is an error, never a
// silently dropped row.
func (r *Reader) InlinedData(ctx context.Context, snap, tableID int64) ([]InlinedData, error) {
	tables, err := r.InlinedTables(ctx, tableID)
	if err != nil {
		return nil, err
	}
	var out []InlinedData
	for _, it := range tables {
		ok, err := r.TableExists(ctx, it.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // flushed and dropped by DuckDB
		}
		d, err := r.inlinedData(ctx, snap, it)
		if err != nil {
			return nil, fmt.Errorf("inlined data %s: %w", it.Name, err)
		}
		if len(d.Rows) > 0 {
			out = append(out, d)
		}
	}
	return out, nil
}

func (r *Reader) inlinedData(ctx context.Context, snap int64, it InlinedTable) (InlinedData, error) {
	d := InlinedData{InlinedTable: it}
	// The columns of the schema version the inlined table was made for.
	var since int64
	err := r.db.QueryRow(ctx, `SELECT coalesce(
			(SELECT min(begin_snapshot) FROM `+r.t("ducklake_schema_versions")+` WHERE table_id = $1 AND schema_version = $2),
			(SELECT min(snapshot_id) FROM `+r.t("ducklake_snapshot")+` WHERE schema_version = $2), -1)`,
		it.TableID, it.SchemaVersion).Scan(&since)
	if err != nil {
		return d, fmt.Errorf("find schema version %d: %w", it.SchemaVersion, err)
	}
	if since < 0 {
		return d, fmt.Errorf("no snapshot has schema version %d", it.SchemaVersion)
	}
	fields, err := r.Columns(ctx, since, it.TableID)
	if err != nil {
		return d, err
	}
	byName := make(map[string]Field, len(fields))
	for _, f := range fields {
		byName[f.Name] = f
	}

	rows, err := r.db.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, r.schemaName, it.Name)
	if err != nil {
		return d, err
	}
	type pgCol struct{ Name, PGType string }
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[pgCol])
	if err != nil {
		return d, err
	}
	sel := []string{"row_id", "begin_snapshot", "end_snapshot"}
	for _, c := range cols {
		switch c.Name {
		case "row_id", "begin_snapshot", "end_snapshot":
			continue
		}
		f, ok := byName[c.Name]
		if !ok {
			return d, fmt.Errorf("column %q is not a column of table %d at schema version %d", c.Name, it.TableID, it.SchemaVersion)
		}
		d.Columns = append(d.Columns, f)
		expr := pgx.Identifier{c.Name}.Sanitize()
		if c.PGType == "time with time zone" {
			expr += "::text" // pgx has no binary timetz codec
		}
		sel = append(sel, expr)
	}

	rows, err = r.db.Query(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM `+r.t(pgx.Identifier{it.Name}.Sanitize())+`
		WHERE `+visible("")+` ORDER BY row_id`, snap)
	if err != nil {
		return d, err
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return d, err
		}
		var row InlinedRow
		var ok bool
		if row.RowID, ok = vals[0].(int64); !ok {
			return d, fmt.Errorf("row_id is %T", vals[0])
		}
		row.Begin, _ = vals[1].(int64)
		row.End, _ = vals[2].(int64)
		row.Values = make([]any, len(d.Columns))
		for i, f := range d.Columns {
			if row.Values[i], err = inlinedValue(f.Type, vals[3+i]); err != nil {
				return d, fmt.Errorf("row %d column %s: %w", row.RowID, f.Name, err)
			}
		}
		d.Rows = append(d.Rows, row)
	}
	return d, rows.Err()
}

// inlinedValue converts a value as pgx decoded it from an inlined data table
// into the Go value for DuckLake type t. The Postgres storage type per
// DuckDB type is in data_types.md ("Type Encoding for Data Inlining").
func inlinedValue(t Type, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if s, ok := v.(string); ok {
		// VARCHAR storage: DuckDB's text form (uint64, int128, dates,
		// timestamps, nested values; timetz cast to text by us).
		return ParseDuckDBText(t, s)
	}
	out, ok := v, false // a value pgx decodes to its own Go type is kept
	switch t.Kind {
	case KindBoolean:
		_, ok = v.(bool)
	case KindInt8:
		out, ok = narrow[int16, int8](v, math.MinInt8, math.MaxInt8)
	case KindInt16:
		_, ok = v.(int16)
	case KindInt32:
		_, ok = v.(int32)
	case KindInt64:
		_, ok = v.(int64)
	case KindUint8:
		out, ok = narrow[int32, uint8](v, 0, math.MaxUint8)
	case KindUint16:
		out, ok = narrow[int32, uint16](v, 0, math.MaxUint16)
	case KindUint32:
		out, ok = narrow[int64, uint32](v, 0, math.MaxUint32)
	case KindFloat32:
		_, ok = v.(float32)
	case KindFloat64:
		_, ok = v.(float64)
	case KindDecimal:
		if n, isNumeric := v.(pgtype.Numeric); isNumeric {
			return numericToDecimal(n, t.Scale)
		}
	case KindVarchar, KindJSON:
		// BYTEA storage: Postgres text cannot hold NUL bytes.
		if b, isBytes := v.([]byte); isBytes {
			return string(b), nil
		}
	case KindBlob:
		_, ok = v.([]byte)
	case KindUUID:
		_, ok = v.([16]byte)
	case KindTime:
		if tm, isTime := v.(pgtype.Time); isTime && tm.Valid {
			return TimeOfDay(tm.Microseconds), nil
		}
	case KindInterval:
		if iv, isInterval := v.(pgtype.Interval); isInterval && iv.Valid {
			return Interval{Months: iv.Months, Days: iv.Days, Micros: iv.Microseconds}, nil
		}
	}
	if ok {
		return out, nil
	}
	return nil, fmt.Errorf("unexpected %T for %s", v, t.Kind)
}

// narrow is v, a From (the wider integer Postgres stores the column as),
// as a To, when it lies within [lo, hi].
func narrow[From, To int16 | int32 | int64 | int8 | uint8 | uint16 | uint32](v any, lo, hi From) (any, bool) {
	n, ok := v.(From)
	if !ok || n < lo || n > hi {
		return nil, false
	}
	return To(n), true
}

func numericToDecimal(n pgtype.Numeric, scale int) (Decimal, error) {
	if !n.Valid || n.NaN || n.InfinityModifier != pgtype.Finite || n.Int == nil {
		return Decimal{}, fmt.Errorf("numeric %v is not a finite number", n)
	}
	// value = Int × 10^Exp; we want Unscaled × 10^-scale.
	v := new(big.Int).Set(n.Int)
	shift := int(n.Exp) + scale
	switch {
	case shift > 0:
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	case shift < 0:
		div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-shift)), nil)
		q, m := new(big.Int).QuoRem(v, div, new(big.Int))
		if m.Sign() != 0 {
			return Decimal{}, fmt.Errorf("numeric has more than %d fraction digits", scale)
		}
		v = q
	}
	return Decimal{Unscaled: v, Scale: scale}, nil
}
