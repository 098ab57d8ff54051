package commit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// specVersion is the partition spec an Iceberg client made the default, as
// the sidecar records it (specTable and partitionFieldTable): DuckLake's
// partition keys keep neither field names nor field ids nor truncate
// fields. catalog/materialize serves it under the client's ids.
//
// Files whose partition values the spec cannot give exactly are served
// under specs of their own, listed beside the client's so that clients
// never pick their ids for new specs:
//   - plainID: the spec without its truncate fields, for files whose
//     truncate values cannot be derived from their statistics (written by
//     DuckDB, which ignores the sidecar); the spec's own id when it has no
//     truncate field.
//   - unpartitionedID: an unpartitioned spec, for DuckLake's inlined rows
//     and files without partition values. Once allocated it stays.
type specVersion struct {
	spec            iceberg.PartitionSpec // source ids are table column ids
	partitionID     int64                 // the DuckLake partition of its keys; 0 for none
	plainID         int
	unpartitionedID int
}

func (v *specVersion) equal(o *specVersion) bool {
	return o != nil && v.spec.ID == o.spec.ID && slices.Equal(v.spec.Fields, o.spec.Fields) &&
		v.partitionID == o.partitionID && v.plainID == o.plainID && v.unpartitionedID == o.unpartitionedID
}

// plainFields are a spec's fields without truncate fields.
func plainFields(fields []iceberg.PartitionField) []iceberg.PartitionField {
	return slices.DeleteFunc(slices.Clone(fields), func(f iceberg.PartitionField) bool {
		return f.Transform.Kind == iceberg.TransformTruncate
	})
}

// newSpecVersion allocates the ids of the specs served beside spec. known
// are the specs the client knows (the table's served specs and those this
// commit adds): a new id is above all of them, so it can never be one the
// client already gave a different spec. prev is the table's current
// version, nil for none.
func newSpecVersion(spec iceberg.PartitionSpec, partitionID int64, known []iceberg.PartitionSpec, prev *specVersion) specVersion {
	v := specVersion{spec: spec, partitionID: partitionID, unpartitionedID: -1, plainID: -1}
	next := spec.ID + 1
	for _, k := range known {
		next = max(next, k.ID+1)
	}
	if prev != nil {
		next = max(next, prev.spec.ID+1, prev.plainID+1, prev.unpartitionedID+1)
	}
	switch {
	case prev != nil:
		v.unpartitionedID = prev.unpartitionedID
	case len(spec.Fields) == 0:
		v.unpartitionedID = spec.ID
	default:
		for _, k := range known {
			if len(k.Fields) == 0 {
				v.unpartitionedID = k.ID
				break
			}
		}
	}
	if v.unpartitionedID < 0 {
		v.unpartitionedID = next
		next++
	}
	plain := plainFields(spec.Fields)
	switch {
	case len(plain) == len(spec.Fields):
		v.plainID = spec.ID
	case len(plain) == 0:
		v.plainID = v.unpartitionedID
	default:
		for _, k := range known {
			if slices.Equal(k.Fields, plain) {
				v.plainID = k.ID
				break
			}
		}
		if prev != nil && v.plainID < 0 && slices.Equal(plainFields(prev.spec.Fields), plain) {
			v.plainID = prev.plainID
		}
		if v.plainID < 0 {
			v.plainID = next
		}
	}
	return v
}

// currentSpec reads the table's spec version live at the snapshot being
// written; nil when the sidecar has none.
func (c *Catalog) currentSpec(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64) (*specVersion, error) {
	var (
		v     specVersion
		begin int64
	)
	switch ok, err := c.liveRow(ctx, tx, snap, specTable, "begin_snapshot, spec_id, coalesce(partition_id, 0), plain_spec_id, unpartitioned_spec_id",
		tableID, "partition spec", &begin, &v.spec.ID, &v.partitionID, &v.plainID, &v.unpartitionedID); {
	case err != nil || !ok:
		return nil, err
	}
	var (
		fieldID  *int
		col      int64
		tr, name string
	)
	if err := ducklake.Each(ctx, tx, fmt.Sprintf("read the partition fields of table %d", tableID), `SELECT field_id, column_id, transform, name FROM `+c.t(partitionFieldTable)+`
		WHERE table_id = $1 AND begin_snapshot = $2 ORDER BY spec_position`, []any{tableID, begin}, []any{&fieldID, &col, &tr, &name}, func() error {
		t, err := iceberg.ParseTransform(tr)
		if err != nil {
			return err
		}
		if fieldID == nil {
			return fmt.Errorf("partition field %q has no field id", name)
		}
		v.spec.Fields = append(v.spec.Fields, iceberg.PartitionField{SourceID: int(col), FieldID: *fieldID, Name: name, Transform: t})
		return nil
	}); err != nil {
		return nil, err
	}
	return &v, nil
}

// liveRow scans into dest the columns cols of the sidecar table's row for
// table tableID live at the snapshot being written (the latest, should
// several be); false when there is none. what names the row in errors.
func (c *Catalog) liveRow(ctx context.Context, tx pgx.Tx, snap *Snapshot, table, cols string, tableID int64, what string, dest ...any) (bool, error) {
	err := tx.QueryRow(ctx, `SELECT `+cols+` FROM `+c.t(table)+`
		WHERE table_id = $1 AND begin_snapshot <= $2 AND (end_snapshot IS NULL OR end_snapshot > $2)
		ORDER BY begin_snapshot DESC LIMIT 1`, tableID, snap.ID).Scan(dest...)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the %s of table %d: %w", what, tableID, err)
	}
	return true, nil
}

// writeSpec makes v the table's spec version from the snapshot on.
func (c *Catalog) writeSpec(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, v specVersion) error {
	for _, tbl := range []string{specTable, partitionFieldTable} {
		if _, err := tx.Exec(ctx, `UPDATE `+c.t(tbl)+` SET end_snapshot = $1 WHERE table_id = $2 AND end_snapshot IS NULL`, snap.ID, tableID); err != nil {
			return fmt.Errorf("end the partition spec of table %d: %w", tableID, err)
		}
	}
	var part any
	if v.partitionID != 0 {
		part = v.partitionID
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(specTable)+` (table_id, begin_snapshot, end_snapshot, spec_id, partition_id, plain_spec_id, unpartitioned_spec_id)
		VALUES ($1, $2, NULL, $3, $4, $5, $6)`, tableID, snap.ID, v.spec.ID, part, v.plainID, v.unpartitionedID); err != nil {
		return fmt.Errorf("insert partition spec %d: %w", v.spec.ID, err)
	}
	for i, f := range v.spec.Fields {
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(partitionFieldTable)+` (table_id, begin_snapshot, end_snapshot, spec_position, column_id, transform, name, field_id)
			VALUES ($1, $2, NULL, $3, $4, $5, $6, $7)`, tableID, snap.ID, i, f.SourceID, f.Transform.String(), f.Name, f.FieldID); err != nil {
			return fmt.Errorf("insert partition field %q: %w", f.Name, err)
		}
	}
	return nil
}

// specPartitions maps every spec id the sidecar ever served for the table
// to the DuckLake partition its files go to (0: none, unpartitioned).
func (c *Catalog) specPartitions(ctx context.Context, tx pgx.Tx, tableID int64) (map[int]int64, error) {
	m := map[int]int64{}
	var (
		spec, plain, unpart int
		part                int64
	)
	if err := ducklake.Each(ctx, tx, fmt.Sprintf("read the partition specs of table %d", tableID), `SELECT spec_id, coalesce(partition_id, 0), plain_spec_id, unpartitioned_spec_id FROM `+c.t(specTable)+`
		WHERE table_id = $1 ORDER BY begin_snapshot`, []any{tableID}, []any{&spec, &part, &plain, &unpart}, func() error {
		m[spec], m[plain], m[unpart] = part, part, 0
		return nil
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// orderVersion is the sort order an Iceberg client made the default, as
// the sidecar records it (sortOrderTable), with the DuckLake sort written
// for it (0: none, the order has transforms DuckLake cannot sort by).
type orderVersion struct {
	order  iceberg.SortOrder // source ids are table column ids
	sortID int64
}

func (c *Catalog) currentOrder(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64) (*orderVersion, error) {
	var (
		v      orderVersion
		fields string
	)
	switch ok, err := c.liveRow(ctx, tx, snap, sortOrderTable, "order_id, coalesce(sort_id, 0), fields", tableID, "sort order",
		&v.order.OrderID, &v.sortID, &fields); {
	case err != nil || !ok:
		return nil, err
	}
	if err := json.Unmarshal([]byte(fields), &v.order.Fields); err != nil {
		return nil, fmt.Errorf("read the sort order of table %d: %w", tableID, err)
	}
	return &v, nil
}

// writeOrder makes v the table's sort order version from the snapshot on.
func (c *Catalog) writeOrder(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, v orderVersion) error {
	if _, err := tx.Exec(ctx, `UPDATE `+c.t(sortOrderTable)+` SET end_snapshot = $1 WHERE table_id = $2 AND end_snapshot IS NULL`, snap.ID, tableID); err != nil {
		return fmt.Errorf("end the sort order of table %d: %w", tableID, err)
	}
	fields := v.order.Fields
	if fields == nil {
		fields = []iceberg.SortField{}
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return fmt.Errorf("sort order %d: %w", v.order.OrderID, err)
	}
	var sortID any
	if v.sortID != 0 {
		sortID = v.sortID
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(sortOrderTable)+` (table_id, begin_snapshot, end_snapshot, order_id, sort_id, fields)
		VALUES ($1, $2, NULL, $3, $4, $5)`, tableID, snap.ID, v.order.OrderID, sortID, string(body)); err != nil {
		return fmt.Errorf("insert sort order %d: %w", v.order.OrderID, err)
	}
	return nil
}
