package materialize

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
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
	// Specs are the partition specs Iceberg clients set (sidecar
	// duckicelake_table_partition_spec and _field), oldest first.
	Specs []SpecVersion
	// Orders are the sort orders Iceberg clients set (sidecar
	// duckicelake_table_sort_order), oldest first; they are served with
	// the client's order ids and transforms.
	Orders []OrderVersion
	// Statistics and PartitionStatistics are the statistics files engines
	// registered (sidecar duckicelake_table_statistics), by snapshot id;
	// only those of snapshots the metadata lists are served.
	Statistics          []iceberg.StatisticsFile
	PartitionStatistics []iceberg.PartitionStatisticsFile
}

// OrderVersion is a sort order an Iceberg client made the default, with
// the snapshots it was the default in and the DuckLake sort written for it
// (SortID, 0 for none: DuckLake cannot sort by transforms). While that
// DuckLake sort is current, the client's order is.
type OrderVersion struct {
	Begin, End int64
	Order      iceberg.SortOrder
	SortID     int64
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

const (
	refTable            = "duckicelake_table_ref"
	specTable           = "duckicelake_table_partition_spec"
	partitionFieldTable = "duckicelake_table_partition_field"
	sortOrderTable      = "duckicelake_table_sort_order"
	statisticsTable     = "duckicelake_table_statistics"
)

// extras reads the table's Extras up to snapshot snap.
func (s *PGSource) extras(ctx context.Context, h *History, snap int64) error {
	e := &h.Extras
	var k, v string
	if err := s.eachSidecar(ctx, propertyTable, "read table properties", `SELECT key, value FROM `+s.t(propertyTable)+` WHERE table_id = $1`, []any{h.Table.ID},
		[]any{&k, &v}, func() error {
			if e.Properties == nil {
				e.Properties = map[string]string{}
			}
			e.Properties[k] = v
			return nil
		}); err != nil {
		return err
	}
	var (
		id, begin, end   int64
		expr, dir, nulls string
	)
	if err := ducklake.Each(ctx, s.db, "read sort orders", `SELECT i.sort_id, i.begin_snapshot, coalesce(i.end_snapshot, 0), e.expression,
			coalesce(e.sort_direction, 'ASC'), coalesce(e.null_order, 'NULLS_LAST')
		FROM `+s.t("ducklake_sort_info")+` i JOIN `+s.t("ducklake_sort_expression")+` e ON e.sort_id = i.sort_id AND e.table_id = i.table_id
		WHERE i.table_id = $1 AND i.begin_snapshot <= $2 ORDER BY i.begin_snapshot, i.sort_id, e.sort_key_index`, []any{h.Table.ID, snap},
		[]any{&id, &begin, &end, &expr, &dir, &nulls}, func() error {
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
		return err
	}
	if err := s.clientSpecs(ctx, h, snap); err != nil {
		return err
	}
	if err := s.clientOrders(ctx, h, snap); err != nil {
		return err
	}
	if err := s.statistics(ctx, h, snap); err != nil {
		return err
	}
	var (
		name, typ          string
		sid                int64
		refAge, snapAge    *int64
		minSnapshotsToKeep *int32
	)
	return s.eachSidecar(ctx, refTable, "read refs", `SELECT name, ref_type, snapshot_id, max_ref_age_ms, max_snapshot_age_ms, min_snapshots_to_keep
		FROM `+s.t(refTable)+` WHERE table_id = $1`, []any{h.Table.ID},
		[]any{&name, &typ, &sid, &refAge, &snapAge, &minSnapshotsToKeep}, func() error {
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
		})
}

// eachSidecar is ducklake.Each on a query of sidecar table, reading no
// rows on a catalog without it (one DuckDB made and serve never migrated).
func (s *PGSource) eachSidecar(ctx context.Context, table, what, sql string, args, dest []any, fn func() error) error {
	if ok, err := s.sidecarExists(ctx, table); err != nil || !ok {
		return err
	}
	return ducklake.Each(ctx, s.db, what, sql, args, dest, fn)
}

// clientSpecs reads the partition specs Iceberg clients set.
func (s *PGSource) clientSpecs(ctx context.Context, h *History, snap int64) error {
	var v SpecVersion
	if err := s.eachSidecar(ctx, specTable, "read partition specs", `SELECT begin_snapshot, coalesce(end_snapshot, 0), spec_id, coalesce(partition_id, 0), plain_spec_id, unpartitioned_spec_id
		FROM `+s.t(specTable)+` WHERE table_id = $1 AND begin_snapshot <= $2 ORDER BY begin_snapshot`, []any{h.Table.ID, snap},
		[]any{&v.Begin, &v.End, &v.Spec.ID, &v.PartitionID, &v.PlainID, &v.UnpartitionedID}, func() error {
			h.Extras.Specs = append(h.Extras.Specs, v)
			return nil
		}); err != nil {
		return err
	}
	if len(h.Extras.Specs) == 0 {
		return nil
	}
	byBegin := map[int64]*SpecVersion{}
	for i := range h.Extras.Specs {
		byBegin[h.Extras.Specs[i].Begin] = &h.Extras.Specs[i]
	}
	var (
		begin, col int64
		fieldID    int
		tr, name   string
	)
	return ducklake.Each(ctx, s.db, "read partition fields", `SELECT begin_snapshot, field_id, column_id, transform, name FROM `+s.t(partitionFieldTable)+`
		WHERE table_id = $1 AND begin_snapshot <= $2 AND field_id IS NOT NULL ORDER BY begin_snapshot, spec_position`, []any{h.Table.ID, snap},
		[]any{&begin, &fieldID, &col, &tr, &name}, func() error {
			t, err := iceberg.ParseTransform(tr)
			if err != nil {
				return err
			}
			if v := byBegin[begin]; v != nil {
				v.Spec.Fields = append(v.Spec.Fields, iceberg.PartitionField{SourceID: int(col), FieldID: fieldID, Name: name, Transform: t})
			}
			return nil
		})
}

// clientOrders reads the sort orders Iceberg clients set.
func (s *PGSource) clientOrders(ctx context.Context, h *History, snap int64) error {
	var (
		v      OrderVersion
		fields string
	)
	return s.eachSidecar(ctx, sortOrderTable, "read sort orders", `SELECT begin_snapshot, coalesce(end_snapshot, 0), order_id, coalesce(sort_id, 0), fields
		FROM `+s.t(sortOrderTable)+` WHERE table_id = $1 AND begin_snapshot <= $2 ORDER BY begin_snapshot`, []any{h.Table.ID, snap},
		[]any{&v.Begin, &v.End, &v.Order.OrderID, &v.SortID, &fields}, func() error {
			v.Order.Fields = nil
			if err := json.Unmarshal([]byte(fields), &v.Order.Fields); err != nil {
				return fmt.Errorf("sort order %d: %w", v.Order.OrderID, err)
			}
			h.Extras.Orders = append(h.Extras.Orders, v)
			return nil
		})
}

// statistics reads the statistics files set up to snapshot snap.
func (s *PGSource) statistics(ctx context.Context, h *History, snap int64) error {
	var (
		kind string
		file []byte
	)
	return s.eachSidecar(ctx, statisticsTable, "read statistics files", `SELECT kind, file FROM `+s.t(statisticsTable)+`
		WHERE table_id = $1 AND set_snapshot <= $2 ORDER BY snapshot_id, kind`, []any{h.Table.ID, snap},
		[]any{&kind, &file}, func() error {
			var err error
			switch kind {
			case "table":
				var f iceberg.StatisticsFile
				if err = json.Unmarshal(file, &f); err == nil {
					h.Extras.Statistics = append(h.Extras.Statistics, f)
				}
			case "partition":
				var f iceberg.PartitionStatisticsFile
				if err = json.Unmarshal(file, &f); err == nil {
					h.Extras.PartitionStatistics = append(h.Extras.PartitionStatistics, f)
				}
			}
			return err
		})
}

// applyOrders lists the table's sort orders up to the horizon in the order
// they appeared: the orders clients set, with their ids, and the sorts
// DuckDB set (SET SORTED BY) that are no client's, under their DuckLake
// sort id (or, should a client have used that id, the next free one).
// Orders by columns the current schema lacks cannot be listed. The
// default is the client's order while the DuckLake sort written for it is
// current, else the current DuckLake sort.
func (b *builder) applyOrders(md *iceberg.TableMetadata, schema *iceberg.Schema) {
	e := &b.h.Extras
	byName := map[string]int{}
	for _, f := range schema.Fields {
		byName[f.Name] = f.ID
		byName[`"`+strings.ReplaceAll(f.Name, `"`, `""`)+`"`] = f.ID
	}
	linked := map[int64]bool{}
	for _, v := range e.Orders {
		if v.Begin <= b.snap && v.SortID != 0 {
			linked[v.SortID] = true
		}
	}
	type event struct {
		begin  int64
		client *OrderVersion
		duck   *SortVersion
	}
	var events []event
	for i, v := range e.Orders {
		if v.Begin <= b.snap {
			events = append(events, event{begin: v.Begin, client: &e.Orders[i]})
		}
	}
	for i, sv := range e.SortOrders {
		if sv.Begin <= b.snap && !linked[int64(sv.Order.OrderID)] {
			events = append(events, event{begin: sv.Begin, duck: &e.SortOrders[i]})
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return cmp.Compare(a.begin, b.begin) })
	listed := map[int]bool{}
	for _, o := range md.SortOrders {
		listed[o.OrderID] = true
	}
	list := func(o iceberg.SortOrder) {
		if !listed[o.OrderID] {
			listed[o.OrderID] = true
			md.SortOrders = append(md.SortOrders, o)
		}
	}
	served := map[*SortVersion]int{}
	for _, ev := range events {
		if v := ev.client; v != nil {
			ok := true
			for _, f := range v.Order.Fields {
				ok = ok && schema.FindField(f.SourceID) != nil
			}
			if ok {
				list(v.Order)
			}
			continue
		}
		sv := ev.duck
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
		if listed[o.OrderID] {
			next := 0
			for id := range listed {
				next = max(next, id+1)
			}
			o.OrderID = next
		}
		served[sv] = o.OrderID
		list(o)
	}
	var current int64
	for _, sv := range e.SortOrders {
		if sv.Begin <= b.snap && (sv.End == 0 || sv.End > b.snap) {
			current = int64(sv.Order.OrderID)
		}
	}
	for i := len(e.Orders) - 1; i >= 0; i-- {
		v := e.Orders[i]
		if v.Begin <= b.snap && (v.End == 0 || v.End > b.snap) && v.SortID == current && listed[v.Order.OrderID] {
			md.DefaultSortOrderID = v.Order.OrderID
			return
		}
	}
	for i := range e.SortOrders {
		sv := &e.SortOrders[i]
		if id, ok := served[sv]; ok && int64(sv.Order.OrderID) == current {
			md.DefaultSortOrderID = id
			return
		}
	}
	// The current DuckLake sort was written for an earlier client order.
	for i := len(e.Orders) - 1; i >= 0 && current != 0; i-- {
		if v := e.Orders[i]; v.Begin <= b.snap && v.SortID == current && listed[v.Order.OrderID] {
			md.DefaultSortOrderID = v.Order.OrderID
			return
		}
	}
}

// applyExtras puts the table's properties, sort orders, refs and
// statistics files into md: sort orders whose expressions are plain
// columns of the current schema, refs and statistics files of snapshots md
// has.
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
	b.applyOrders(md, schema)
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
	for _, f := range e.Statistics {
		if md.SnapshotByID(f.SnapshotID) != nil {
			md.Statistics = append(md.Statistics, f)
		}
	}
	for _, f := range e.PartitionStatistics {
		if md.SnapshotByID(f.SnapshotID) != nil {
			md.PartitionStatistics = append(md.PartitionStatistics, f)
		}
	}
}
