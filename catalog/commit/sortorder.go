package commit

import (
	"context"
	"errors"
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

// sortFlag reads a sort field's direction or null order (a what): false
// for the default, named off or left out, true for on.
func sortFlag(what, v, off, on string) (bool, error) {
	switch v {
	case off, "":
		return false, nil
	case on:
		return true, nil
	}
	return false, invalid("sort %s %q", what, v)
}

// duckSort translates an Iceberg sort order into DuckLake sort keys.
// DuckLake sorts by plain top-level columns only: an order with a
// transform (bucket[16](id), day(ts)…) gets no keys, so DuckDB writes
// unsorted files rather than files in some other order, and the order
// itself lives in the sidecar (sortOrderTable).
func duckSort(order *iceberg.SortOrder, columns map[int64]ducklake.Field) ([]sortKey, error) {
	if order == nil {
		return nil, nil
	}
	var out []sortKey
	plain := true
	for _, f := range order.Fields {
		src, ok := columns[int64(f.SourceID)]
		if !ok {
			return nil, invalid("sort field: source column %d is not a top-level column of the table", f.SourceID)
		}
		if src.Type.Kind.Nested() {
			return nil, invalid("sort field: source column %q is %s, not a primitive", src.Name, src.Type.Kind)
		}
		if _, err := f.Transform.ResultType(icebergPrimitive(src)); err != nil {
			return nil, invalid("sort by %s(%s): %v", f.Transform, src.Name, err)
		}
		plain = plain && f.Transform.Kind == iceberg.TransformIdentity
		k := sortKey{column: src.ID, expression: sqlName(src.Name)}
		var err error
		if k.desc, err = sortFlag("direction", f.Direction, "asc", "desc"); err != nil {
			return nil, err
		}
		if k.nullsFirst, err = sortFlag("null order", f.NullOrder, "nulls-last", "nulls-first"); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if !plain {
		return nil, nil
	}
	return out, nil
}

// normOrder spells an order's defaults out, as it is stored and served.
func normOrder(o iceberg.SortOrder) iceberg.SortOrder {
	o.Fields = slices.Clone(o.Fields)
	for i := range o.Fields {
		if o.Fields[i].Direction == "" {
			o.Fields[i].Direction = "asc"
		}
		if o.Fields[i].NullOrder == "" {
			o.Fields[i].NullOrder = "nulls-last"
		}
	}
	return o
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

// replaceSort makes order the table's sort order unless it already is:
// DuckLake's sort (as ALTER TABLE … SET SORTED BY writes it; none for an
// order with transforms) and the sidecar's record of the client's order.
func (c *Catalog) replaceSort(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, order iceberg.SortOrder, keys []sortKey, columns map[int64]ducklake.Field) (bool, error) {
	cur, _, err := c.currentSort(ctx, tx, snap, tableID, columns)
	if err != nil {
		return false, err
	}
	changed := false
	if !slices.Equal(cur, keys) {
		if _, err := tx.Exec(ctx, `UPDATE `+c.t("ducklake_sort_info")+` SET end_snapshot = $1 WHERE table_id = $2 AND end_snapshot IS NULL`, snap.ID, tableID); err != nil {
			return false, fmt.Errorf("end the sort order of table %d: %w", tableID, err)
		}
		if len(keys) > 0 {
			if err := c.writeSort(ctx, tx, snap, tableID, keys); err != nil {
				return false, err
			}
		}
		changed = true
	}
	sortID, err := c.currentSortID(ctx, tx, snap, tableID)
	if err != nil {
		return false, err
	}
	v := orderVersion{order: normOrder(order), sortID: sortID}
	prev, err := c.currentOrder(ctx, tx, snap, tableID)
	if err != nil {
		return false, err
	}
	if prev != nil && prev.sortID == v.sortID && prev.order.OrderID == v.order.OrderID && slices.Equal(prev.order.Fields, v.order.Fields) {
		return changed, nil
	}
	if err := c.writeOrder(ctx, tx, snap, tableID, v); err != nil {
		return false, err
	}
	return true, nil
}

// currentSortID is the id of the table's DuckLake sort live at the
// snapshot being written (this one's included), 0 for none.
func (c *Catalog) currentSortID(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT sort_id FROM `+c.t("ducklake_sort_info")+`
		WHERE table_id = $1 AND begin_snapshot <= $2 AND (end_snapshot IS NULL OR end_snapshot > $2)
		ORDER BY begin_snapshot DESC LIMIT 1`, tableID, snap.ID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the sort order of table %d: %w", tableID, err)
	}
	return id, nil
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
