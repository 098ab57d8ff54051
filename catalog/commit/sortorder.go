package commit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// sortKey is one ducklake_sort_expression row.
type sortKey struct {
	column     int64
	expression string // the column name, as DuckDB writes SET SORTED BY
	desc       bool
	nullsFirst bool
}

// duckSort translates an Iceberg sort order: DuckLake sorts by plain
// top-level columns only.
func duckSort(order *iceberg.SortOrder, columns map[int64]ducklake.Field) ([]sortKey, error) {
	if order == nil {
		return nil, nil
	}
	var out []sortKey
	for _, f := range order.Fields {
		src, ok := columns[int64(f.SourceID)]
		if !ok {
			return nil, invalid("sort field: source column %d is not a top-level column of the table", f.SourceID)
		}
		if f.Transform.Kind != iceberg.TransformIdentity {
			return nil, unsupported("sort by %s(%s): DuckLake sorts by plain columns only", f.Transform, src.Name)
		}
		k := sortKey{column: src.ID, expression: sqlName(src.Name)}
		switch f.Direction {
		case "asc", "":
		case "desc":
			k.desc = true
		default:
			return nil, invalid("sort direction %q", f.Direction)
		}
		switch f.NullOrder {
		case "nulls-last", "":
		case "nulls-first":
			k.nullsFirst = true
		default:
			return nil, invalid("sort null order %q", f.NullOrder)
		}
		out = append(out, k)
	}
	return out, nil
}

// sqlName writes a column name as a SQL expression: bare when DuckDB
// would read it back as the same name, quoted otherwise.
func sqlName(name string) string {
	bare := name != ""
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			bare = false
		}
	}
	if bare {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func (p *tablePlan) sortOrder(id int) iceberg.SortOrder {
	o := iceberg.SortOrder{OrderID: id}
	for _, k := range p.sort {
		o.Fields = append(o.Fields, sortField(k))
	}
	return o
}

func sortField(k sortKey) iceberg.SortField {
	f := iceberg.SortField{Transform: iceberg.Identity, SourceID: int(k.column), Direction: "asc", NullOrder: "nulls-last"}
	if k.desc {
		f.Direction = "desc"
	}
	if k.nullsFirst {
		f.NullOrder = "nulls-first"
	}
	return f
}

// writeSort stores a sort order for table tableID beginning at the
// snapshot, with a new catalog id, as ALTER TABLE … SET SORTED BY does.
func (c *Catalog) writeSort(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, keys []sortKey) error {
	id := snap.catalogID()
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_sort_info")+` (sort_id, table_id, begin_snapshot, end_snapshot)
		VALUES ($1, $2, $3, NULL)`, id, tableID, snap.ID); err != nil {
		return fmt.Errorf("insert sort order %d: %w", id, err)
	}
	for i, k := range keys {
		dir, nulls := "ASC", "NULLS_LAST"
		if k.desc {
			dir = "DESC"
		}
		if k.nullsFirst {
			nulls = "NULLS_FIRST"
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_sort_expression")+` (sort_id, table_id, sort_key_index, expression, dialect, sort_direction, null_order)
			VALUES ($1, $2, $3, $4, 'duckdb', $5, $6)`, id, tableID, i, k.expression, dir, nulls); err != nil {
			return fmt.Errorf("insert sort order %d key %d: %w", id, i, err)
		}
	}
	return nil
}

// currentSort reads the table's sort keys live at the snapshot being
// written (column ids resolved from the expressions by name).
func (c *Catalog) currentSort(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, columns map[int64]ducklake.Field) ([]sortKey, bool, error) {
	rows, err := tx.Query(ctx, `SELECT e.expression, coalesce(e.sort_direction, 'ASC'), coalesce(e.null_order, 'NULLS_LAST')
		FROM `+c.t("ducklake_sort_info")+` i JOIN `+c.t("ducklake_sort_expression")+` e ON e.sort_id = i.sort_id AND e.table_id = i.table_id
		WHERE i.table_id = $1 AND i.begin_snapshot <= $2 AND (i.end_snapshot IS NULL OR i.end_snapshot > $2)
		ORDER BY e.sort_key_index`, tableID, snap.ID)
	if err != nil {
		return nil, false, fmt.Errorf("read the sort order of table %d: %w", tableID, err)
	}
	byName := map[string]int64{}
	for id, f := range columns {
		byName[sqlName(f.Name)] = id
	}
	var (
		out              []sortKey
		expr, dir, nulls string
	)
	_, err = pgx.ForEachRow(rows, []any{&expr, &dir, &nulls}, func() error {
		out = append(out, sortKey{column: byName[expr], expression: expr, desc: strings.EqualFold(dir, "DESC"), nullsFirst: strings.EqualFold(nulls, "NULLS_FIRST")})
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("read the sort order of table %d: %w", tableID, err)
	}
	return out, len(out) > 0, nil
}

// replaceSort ends the table's current sort order and stores keys (none:
// unsorted), unless they are what it already has.
func (c *Catalog) replaceSort(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, keys []sortKey, columns map[int64]ducklake.Field) (bool, error) {
	cur, _, err := c.currentSort(ctx, tx, snap, tableID, columns)
	if err != nil {
		return false, err
	}
	if slices.Equal(cur, keys) {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE `+c.t("ducklake_sort_info")+` SET end_snapshot = $1 WHERE table_id = $2 AND end_snapshot IS NULL`, snap.ID, tableID); err != nil {
		return false, fmt.Errorf("end the sort order of table %d: %w", tableID, err)
	}
	if len(keys) > 0 {
		if err := c.writeSort(ctx, tx, snap, tableID, keys); err != nil {
			return false, err
		}
	}
	return true, nil
}

// setProperties applies property updates and removals to the sidecar.
func (c *Catalog) setProperties(ctx context.Context, tx pgx.Tx, tableID int64, updates map[string]string, removals []string) error {
	for _, k := range removals {
		if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(propertyTable)+` WHERE table_id = $1 AND key = $2`, tableID, k); err != nil {
			return fmt.Errorf("remove table property: %w", err)
		}
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range updates {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(propertyTable)+` (table_id, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (table_id, key) DO UPDATE SET value = excluded.value`, tableID, k, updates[k]); err != nil {
			return fmt.Errorf("set table property: %w", err)
		}
	}
	return nil
}

// writeTruncFields stores the truncate fields of a partitioning beginning
// at the snapshot (the previous ones end there).
func (c *Catalog) writeTruncFields(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, fields []truncField) error {
	if _, err := tx.Exec(ctx, `UPDATE `+c.t(partitionFieldTable)+` SET end_snapshot = $1 WHERE table_id = $2 AND end_snapshot IS NULL`, snap.ID, tableID); err != nil {
		return fmt.Errorf("end truncate partition fields: %w", err)
	}
	for _, f := range fields {
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(partitionFieldTable)+` (table_id, begin_snapshot, end_snapshot, spec_position, column_id, transform, name)
			VALUES ($1, $2, NULL, $3, $4, $5, $6)`, tableID, snap.ID, f.position, f.column, iceberg.Truncate(f.width).String(), f.name); err != nil {
			return fmt.Errorf("insert truncate partition field %q: %w", f.name, err)
		}
	}
	return nil
}
