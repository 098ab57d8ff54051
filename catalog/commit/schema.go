package commit

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// evolveSchema changes table tableID's columns into target, matching
// columns by field id as Iceberg does: new ids are added columns, missing
// ids dropped ones, and a changed name, type (a promotion) or nullability
// ends the column's row and begins a new one with the same id, which is
// how DuckDB records ALTER TABLE. It reports whether anything changed.
func (c *Catalog) evolveSchema(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, target *iceberg.Schema) (bool, error) {
	cur, err := c.columnsAt(ctx, tx, snap, tableID)
	if err != nil {
		return false, err
	}
	want, err := flatten(target.Fields)
	if err != nil {
		return false, err
	}
	maxID, err := c.maxColumnID(ctx, tx, tableID)
	if err != nil {
		return false, err
	}
	part, err := c.reader(tx).Partition(ctx, snap.ID, tableID)
	if err != nil {
		return false, err
	}
	partCols := map[int64]bool{}
	if part != nil {
		for _, k := range part.Columns {
			partCols[k.ColumnID] = true
		}
	}
	docs, err := c.columnDocs(ctx, tx, tableID)
	if err != nil {
		return false, err
	}
	curByID := make(map[int64]ducklake.Column, len(cur))
	for _, col := range cur {
		curByID[col.ID] = col
	}
	wantByID := make(map[int64]bool, len(want))
	order := map[int64]int64{} // column id -> column_order after the change
	changed := false
	for _, w := range want {
		wantByID[w.id] = true
		old, exists := curByID[w.id]
		if !exists {
			if w.id <= maxID {
				return false, invalid("field %q has id %d, which the table has used before; new fields need ids above %d", w.name, w.id, maxID)
			}
			if err := c.insertColumn(ctx, tx, snap, tableID, w.id, w); err != nil {
				return false, err
			}
			order[w.id] = w.id
			changed = true
			continue
		}
		order[w.id] = old.Order
		if old.ParentColumn != w.parent {
			return false, unsupported("field %q (id %d) moves to another parent; DuckLake cannot move columns between structs", w.name, w.id)
		}
		typ := old.Type
		oldIce, err := icebergOf(old)
		if err != nil {
			return false, invalid("field %q (id %d): the table's type %s: %v", w.name, w.id, old.Type, err)
		}
		if !sameKind(oldIce, w.ice) {
			if !oldIce.IsPrimitive() || !w.ice.IsPrimitive() || !promotion(oldIce, w.ice) {
				return false, invalid("field %q (id %d): cannot change type %s to %s", w.name, w.id, oldIce, w.ice)
			}
			typ = w.typ
		}
		if old.NullsAllowed && !w.nullable {
			return false, invalid("field %q (id %d): an optional field cannot become required", w.name, w.id)
		}
		if docs[w.id] != w.doc {
			if err := c.setColumnDoc(ctx, tx, snap, tableID, w.id, w.doc); err != nil {
				return false, err
			}
			changed = true
		}
		if old.Name == w.name && typ == old.Type && old.NullsAllowed == w.nullable {
			continue
		}
		changed = true
		if old.Begin == snap.ID {
			_, err = tx.Exec(ctx, `UPDATE `+c.t("ducklake_column")+` SET column_name = $3, column_type = $4, nulls_allowed = $5
				WHERE table_id = $1 AND column_id = $2 AND begin_snapshot = $6`, tableID, w.id, w.name, typ, w.nullable, snap.ID)
		} else {
			if _, err = tx.Exec(ctx, `UPDATE `+c.t("ducklake_column")+` SET end_snapshot = $3 WHERE table_id = $1 AND column_id = $2 AND end_snapshot IS NULL`,
				tableID, w.id, snap.ID); err == nil {
				_, err = tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_column")+` (column_id, begin_snapshot, end_snapshot, table_id, column_order,
						column_name, column_type, initial_default, default_value, nulls_allowed, parent_column, default_value_type, default_value_dialect)
					SELECT column_id, $3, NULL, table_id, column_order, $4, $5, initial_default, default_value, $6, parent_column,
						default_value_type, default_value_dialect
					FROM `+c.t("ducklake_column")+` WHERE table_id = $1 AND column_id = $2 AND end_snapshot = $3`,
					tableID, w.id, snap.ID, w.name, typ, w.nullable)
			}
		}
		if err != nil {
			return false, fmt.Errorf("alter column %d (%s): %w", w.id, w.name, err)
		}
	}
	for _, old := range cur {
		if wantByID[old.ID] {
			continue
		}
		if partCols[old.ID] {
			return false, invalid("column %q (id %d) partitions the table and cannot be dropped; change the partition spec first", old.Name, old.ID)
		}
		var err error
		if old.Begin == snap.ID {
			_, err = tx.Exec(ctx, `DELETE FROM `+c.t("ducklake_column")+` WHERE table_id = $1 AND column_id = $2 AND begin_snapshot = $3`, tableID, old.ID, snap.ID)
		} else {
			_, err = tx.Exec(ctx, `UPDATE `+c.t("ducklake_column")+` SET end_snapshot = $3 WHERE table_id = $1 AND column_id = $2 AND end_snapshot IS NULL`, tableID, old.ID, snap.ID)
		}
		if err != nil {
			return false, fmt.Errorf("drop column %d (%s): %w", old.ID, old.Name, err)
		}
		changed = true
	}
	// DuckLake orders columns by column_order; the target's order must be
	// the one that results, or the schema served back would differ.
	byParent := map[int64][]int64{}
	for _, w := range want {
		byParent[w.parent] = append(byParent[w.parent], w.id)
	}
	for _, ids := range byParent {
		if !slices.IsSortedFunc(ids, func(a, b int64) int { return int(order[a] - order[b]) }) {
			return false, unsupported("the new schema reorders columns; DuckLake cannot move a column (add new columns at the end)")
		}
	}
	return changed, nil
}
