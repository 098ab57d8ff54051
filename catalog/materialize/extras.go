package materialize

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// Extras is Iceberg table state besides files and columns: what Iceberg
// clients commit (catalog/commit) and DuckDB's SET SORTED BY.
type Extras struct {
	// Properties are the table properties (sidecar
	// duckicelake_table_property); keys starting with "duckicelake." are
	// the catalog's own and not served.
	Properties map[string]string
	// SortOrders are the table's sort orders (ducklake_sort_info), oldest
	// first; an order's id is its DuckLake sort id.
	SortOrders []SortVersion
	// Refs are tags and read-only branches besides main (sidecar
	// duckicelake_table_ref), by name.
	Refs map[string]iceberg.SnapshotRef
}

// SortVersion is a sort order with the snapshots it was current in.
type SortVersion struct {
	Begin, End int64
	Order      iceberg.SortOrder
	// Columns are the sort keys' column names as DuckLake stores them (SQL
	// expressions); an expression that is no plain column of the table
	// makes the order unservable.
	Expressions []string
}

const refTable = "duckicelake_table_ref"

// extras reads the table's Extras up to snapshot snap.
func (s *PGSource) extras(ctx context.Context, h *History, snap int64) error {
	e := &h.Extras
	props, err := s.exists(ctx, propertyTable)
	if err != nil {
		return err
	}
	if props {
		rows, err := s.db.Query(ctx, `SELECT key, value FROM `+s.t(propertyTable)+` WHERE table_id = $1`, h.Table.ID)
		if err != nil {
			return fmt.Errorf("read table properties: %w", err)
		}
		var k, v string
		if _, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
			if e.Properties == nil {
				e.Properties = map[string]string{}
			}
			e.Properties[k] = v
			return nil
		}); err != nil {
			return fmt.Errorf("read table properties: %w", err)
		}
	}
	rows, err := s.db.Query(ctx, `SELECT i.sort_id, i.begin_snapshot, coalesce(i.end_snapshot, 0), e.expression,
			coalesce(e.sort_direction, 'ASC'), coalesce(e.null_order, 'NULLS_LAST')
		FROM `+s.t("ducklake_sort_info")+` i JOIN `+s.t("ducklake_sort_expression")+` e ON e.sort_id = i.sort_id AND e.table_id = i.table_id
		WHERE i.table_id = $1 AND i.begin_snapshot <= $2 ORDER BY i.begin_snapshot, i.sort_id, e.sort_key_index`, h.Table.ID, snap)
	if err != nil {
		return fmt.Errorf("read sort orders: %w", err)
	}
	var (
		id, begin, end   int64
		expr, dir, nulls string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &begin, &end, &expr, &dir, &nulls}, func() error {
		if n := len(e.SortOrders); n == 0 || e.SortOrders[n-1].Order.OrderID != int(id) {
			e.SortOrders = append(e.SortOrders, SortVersion{Begin: begin, End: end, Order: iceberg.SortOrder{OrderID: int(id)}})
		}
		sv := &e.SortOrders[len(e.SortOrders)-1]
		f := iceberg.SortField{Transform: iceberg.Identity, Direction: "asc", NullOrder: "nulls-last"}
		if strings.EqualFold(dir, "DESC") {
			f.Direction = "desc"
		}
		if strings.EqualFold(nulls, "NULLS_FIRST") {
			f.NullOrder = "nulls-first"
		}
		sv.Order.Fields = append(sv.Order.Fields, f)
		sv.Expressions = append(sv.Expressions, expr)
		return nil
	}); err != nil {
		return fmt.Errorf("read sort orders: %w", err)
	}
	refs, err := s.exists(ctx, refTable)
	if err != nil || !refs {
		return err
	}
	rows, err = s.db.Query(ctx, `SELECT name, ref_type, snapshot_id, max_ref_age_ms, max_snapshot_age_ms, min_snapshots_to_keep
		FROM `+s.t(refTable)+` WHERE table_id = $1`, h.Table.ID)
	if err != nil {
		return fmt.Errorf("read refs: %w", err)
	}
	var (
		name, typ          string
		sid                int64
		refAge, snapAge    *int64
		minSnapshotsToKeep *int32
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ, &sid, &refAge, &snapAge, &minSnapshotsToKeep}, func() error {
		if e.Refs == nil {
			e.Refs = map[string]iceberg.SnapshotRef{}
		}
		r := iceberg.SnapshotRef{SnapshotID: sid, Type: typ, MaxRefAgeMS: refAge, MaxSnapshotAgeMS: snapAge}
		if minSnapshotsToKeep != nil {
			n := int(*minSnapshotsToKeep)
			r.MinSnapshotsToKeep = &n
		}
		e.Refs[name] = r
		return nil
	}); err != nil {
		return fmt.Errorf("read refs: %w", err)
	}
	return nil
}

// applyExtras puts the table's properties, sort orders and refs into md:
// sort orders whose expressions are plain columns of the current schema,
// refs to snapshots md has.
func (b *builder) applyExtras(md *iceberg.TableMetadata, schema *iceberg.Schema) {
	e := &b.h.Extras
	for k, v := range e.Properties {
		if strings.HasPrefix(strings.ToLower(k), "duckicelake.") {
			continue
		}
		if md.Properties == nil {
			md.Properties = map[string]string{}
		}
		if _, own := md.Properties[k]; !own {
			md.Properties[k] = v
		}
	}
	byName := map[string]int{}
	for _, f := range schema.Fields {
		byName[f.Name] = f.ID
		byName[`"`+strings.ReplaceAll(f.Name, `"`, `""`)+`"`] = f.ID
	}
	for _, sv := range e.SortOrders {
		if sv.Begin > b.snap {
			continue
		}
		o := sv.Order
		o.Fields = slices.Clone(o.Fields)
		ok := true
		for i, expr := range sv.Expressions {
			id, found := byName[expr]
			ok = ok && found
			o.Fields[i].SourceID = id
		}
		if !ok {
			continue // an expression DuckDB may sort by, which Iceberg cannot name
		}
		md.SortOrders = append(md.SortOrders, o)
		if sv.End == 0 || sv.End > b.snap {
			md.DefaultSortOrderID = o.OrderID
		}
	}
	names := slices.Sorted(maps.Keys(e.Refs))
	for _, name := range names {
		r := e.Refs[name]
		if name == iceberg.MainBranch || md.SnapshotByID(r.SnapshotID) == nil {
			continue
		}
		if md.Refs == nil {
			md.Refs = map[string]iceberg.SnapshotRef{}
		}
		md.Refs[name] = r
	}
}
