package commit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/governance"
)

// Namespace is the DuckLake schema a table lives in.
type Namespace struct {
	ID   int64
	Name string
	// Path is the schema's resolved location, ending in "/"
	// ("s3://lake/data/sales/").
	Path string
}

// tablePlan is a new table, checked and translated: what CreateTable
// writes and StageTable answers.
type tablePlan struct {
	name string
	uuid string
	placement
	schema        *iceberg.Schema
	columns       []column
	fields        []ducklake.Field // top level, as DuckLake will hold them
	keys          []duckKey
	spec          *iceberg.PartitionSpec  // the client's, source ids as the columns'; nil: unpartitioned
	known         []iceberg.PartitionSpec // the specs the client knows (see newSpecVersion)
	sort          []sortKey
	order         *iceberg.SortOrder // the client's, source ids as the columns'; nil: unsorted
	properties    map[string]string
	formatVersion int // 0: the catalog's default (2)

	partitionID int64 // the DuckLake partition writeTable made, 0 for none
}

// planTable checks a new table's definition. With reassign, field ids are
// renumbered as DuckDB numbers a new table's columns (what a create
// request gets); without, the ids are kept (a create transaction's
// add-schema, whose ids the client's data files may already carry).
func planTable(ns Namespace, name, location string, schema *iceberg.Schema, spec *iceberg.PartitionSpec,
	order *iceberg.SortOrder, props map[string]string, reassign bool, maxFormat int) (*tablePlan, error) {
	if err := checkTableName(name); err != nil {
		return nil, err
	}
	if schema == nil || len(schema.Fields) == 0 {
		return nil, invalid("a table needs a schema with at least one column")
	}
	p := &tablePlan{name: name, properties: map[string]string{}}
	ids := map[int]int{}
	if reassign {
		schema, ids = reassignIDs(schema)
	}
	p.schema = schema
	var err error
	if p.columns, err = flatten(schema.Fields); err != nil {
		return nil, err
	}
	if p.fields, err = ducklake.BuildFields(columnRows(p.columns, 0, 0)); err != nil {
		return nil, invalid("schema: %v", err)
	}
	remap := func(id int) int {
		if n, ok := ids[id]; ok {
			return n
		}
		if reassign {
			return -1 // not a field of the schema
		}
		return id
	}
	top := topLevel(p.fields)
	if spec != nil {
		s := *spec
		s.Fields = slices.Clone(s.Fields)
		for i := range s.Fields {
			s.Fields[i].SourceID = remap(s.Fields[i].SourceID)
			if reassign {
				// A create request's spec gets fresh ids, as Iceberg's
				// TableMetadata.newTableMetadata assigns them.
				s.Fields[i].FieldID = iceberg.PartitionFieldIDStart + i
			}
		}
		if reassign {
			s.ID = 0
		}
		if p.keys, _, err = duckPartition(&s, top); err != nil {
			return nil, err
		}
		p.spec = &s
	}
	if order != nil {
		o := normOrder(*order)
		for i := range o.Fields {
			o.Fields[i].SourceID = remap(o.Fields[i].SourceID)
		}
		if reassign {
			o.OrderID = 0
			if len(o.Fields) > 0 {
				o.OrderID = 1 // Iceberg's initial sort order id
			}
		}
		if p.sort, err = duckSort(&o, top); err != nil {
			return nil, err
		}
		p.order = &o
	}
	for k, v := range props {
		if err := checkProperty(k); err != nil {
			return nil, err
		}
		if k == "format-version" {
			switch n, err := strconv.Atoi(v); {
			case err != nil || n < 1:
				return nil, invalid("format-version %q", v)
			case n == 1:
				return nil, unsupported("format-version 1: this catalog serves Iceberg format versions 2 to %d", maxFormat)
			case n > maxFormat:
				return nil, unsupported("format-version %s: this catalog serves Iceberg format versions up to %d", v, maxFormat)
			case n > 2:
				p.formatVersion = n
			}
			continue // chooses the format; not a property
		}
		p.properties[k] = v
	}
	if p.placement, err = place(ns, name, location); err != nil {
		return nil, err
	}
	p.uuid = uuid.NewString()
	return p, nil
}

func checkTableName(name string) error {
	switch {
	case name == "":
		return invalid("empty table name")
	case len(name) > 1024:
		return invalid("table name is %d bytes, at most 1024", len(name))
	case name == "." || name == "..", strings.ContainsRune(name, '/'):
		return invalid("table name %q cannot be a path segment of the table's location", name)
	case governance.IsMaskedName(name):
		return invalid("table name %q: names starting with %q are reserved for governance's masking views", name, governance.MaskedNamePrefix)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return invalid("table name %q contains a control character", name)
		}
	}
	return nil
}

func checkProperty(key string) error {
	if reservedProperty(key) {
		return newError(ErrForbidden, "table property %q: keys starting with %q are reserved for duckicelake", key, reservedPrefix)
	}
	return nil
}

// columnRows turns planned columns into ducklake_column rows (for
// BuildFields) as of snapshot begin.
func columnRows(cols []column, tableID, begin int64) []ducklake.Column {
	out := make([]ducklake.Column, len(cols))
	for i, c := range cols {
		out[i] = ducklake.Column{ID: c.id, Begin: begin, TableID: tableID, Order: c.id, Name: c.name, Type: c.typ,
			NullsAllowed: c.nullable, ParentColumn: c.parent}
	}
	return out
}

// insertColumn writes one ducklake_column row as DuckDB writes them: no
// default ('NULL' literal), dialect duckdb; nested parents have an empty
// default value type.
func (c *Catalog) insertColumn(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID, order int64, col column) error {
	var parent any
	if col.parent != 0 {
		parent = col.parent
	}
	valueType := "literal"
	if col.nested {
		valueType = ""
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_column")+` (column_id, begin_snapshot, end_snapshot, table_id, column_order,
			column_name, column_type, initial_default, default_value, nulls_allowed, parent_column, default_value_type, default_value_dialect)
		VALUES ($1, $2, NULL, $3, $4, $5, $6, NULL, 'NULL', $7, $8, $9, 'duckdb')`,
		col.id, snap.ID, tableID, order, col.name, col.typ, col.nullable, parent, valueType)
	if err != nil {
		return fmt.Errorf("insert column %d (%s): %w", col.id, col.name, err)
	}
	if col.doc != "" {
		return c.setColumnDoc(ctx, tx, snap, tableID, col.id, col.doc)
	}
	return nil
}

// columnDocs reads the live comments of table tableID's columns by id.
func (c *Catalog) columnDocs(ctx context.Context, tx pgx.Tx, tableID int64) (map[int64]string, error) {
	rows, err := tx.Query(ctx, `SELECT column_id, coalesce("value", '') FROM `+c.t("ducklake_column_tag")+`
		WHERE table_id = $1 AND "key" = 'comment' AND end_snapshot IS NULL`, tableID)
	if err != nil {
		return nil, fmt.Errorf("read column comments of table %d: %w", tableID, err)
	}
	docs := map[int64]string{}
	var (
		id  int64
		doc string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &doc}, func() error { docs[id] = doc; return nil }); err != nil {
		return nil, fmt.Errorf("read column comments of table %d: %w", tableID, err)
	}
	return docs, nil
}

// setColumnDoc makes doc the column's comment from the snapshot on, as
// DuckDB's COMMENT ON COLUMN does (an empty doc removes it).
func (c *Catalog) setColumnDoc(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID, columnID int64, doc string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM `+c.t("ducklake_column_tag")+`
		WHERE table_id = $1 AND column_id = $2 AND "key" = 'comment' AND begin_snapshot = $3`, tableID, columnID, snap.ID); err != nil {
		return fmt.Errorf("comment on column %d: %w", columnID, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE `+c.t("ducklake_column_tag")+` SET end_snapshot = $3
		WHERE table_id = $1 AND column_id = $2 AND "key" = 'comment' AND end_snapshot IS NULL`, tableID, columnID, snap.ID); err != nil {
		return fmt.Errorf("comment on column %d: %w", columnID, err)
	}
	if doc == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_column_tag")+` (table_id, column_id, begin_snapshot, end_snapshot, "key", "value")
		VALUES ($1, $2, $3, NULL, 'comment', $4)`, tableID, columnID, snap.ID, doc); err != nil {
		return fmt.Errorf("comment on column %d: %w", columnID, err)
	}
	return nil
}

// CreateTable checks req and writes the new table into tx as part of
// snap: the table, its columns (ids renumbered depth first from 1, as
// DuckDB numbers them), partitioning, sort order and properties. A staged
// create (req.StageCreate) must go to StageTable instead.
func (c *Catalog) CreateTable(ctx context.Context, tx pgx.Tx, snap *Snapshot, ns Namespace, req *CreateTableRequest) (ducklake.Table, error) {
	p, err := planTable(ns, req.Name, req.Location, req.Schema, req.PartitionSpec, req.WriteOrder, req.Properties, true, c.maxFormat)
	if err != nil {
		return ducklake.Table{}, err
	}
	return c.writeTable(ctx, tx, snap, ns, p)
}

func (c *Catalog) writeTable(ctx context.Context, tx pgx.Tx, snap *Snapshot, ns Namespace, p *tablePlan) (ducklake.Table, error) {
	// The messages are Iceberg's own, which clients match on.
	switch taken, err := c.names.NameKind(ctx, tx, ns.ID, p.name); {
	case err != nil:
		return ducklake.Table{}, err
	case taken == ducklake.ObjectTable:
		return ducklake.Table{}, newError(ErrExists, "Table already exists: %s.%s", ns.Name, p.name)
	case taken == ducklake.ObjectView:
		return ducklake.Table{}, newError(ErrExists, "View with same name already exists: %s.%s", ns.Name, p.name)
	}
	// No two live tables share files (see overlaps).
	if err := c.settle(ctx, tx, snap.ID, ns, p); err != nil {
		return ducklake.Table{}, err
	}
	id := snap.catalogID()
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_table")+` (table_id, table_uuid, begin_snapshot, end_snapshot, schema_id, table_name, path, path_is_relative)
		VALUES ($1, $2, $3, NULL, $4, $5, $6, true)`, id, p.uuid, snap.ID, ns.ID, p.name, p.path); err != nil {
		return ducklake.Table{}, fmt.Errorf("insert table %q: %w", p.name, err)
	}
	for _, col := range p.columns {
		if err := c.insertColumn(ctx, tx, snap, id, col.id, col); err != nil {
			return ducklake.Table{}, err
		}
	}
	if len(p.keys) > 0 {
		var err error
		if p.partitionID, err = c.writePartition(ctx, tx, snap, id, p.keys); err != nil {
			return ducklake.Table{}, err
		}
	}
	// A table id an earlier, failed catalog used must not inherit sidecar
	// state.
	for _, tbl := range []string{specTable, partitionFieldTable, sortOrderTable} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(tbl)+` WHERE table_id = $1`, id); err != nil {
			return ducklake.Table{}, fmt.Errorf("clear %s: %w", tbl, err)
		}
	}
	if sv := p.specVersion(); sv != nil {
		sv.partitionID = p.partitionID
		if err := c.writeSpec(ctx, tx, snap, id, *sv); err != nil {
			return ducklake.Table{}, err
		}
	}
	var sortID int64
	if len(p.sort) > 0 {
		if err := c.writeSort(ctx, tx, snap, id, p.sort); err != nil {
			return ducklake.Table{}, err
		}
		var err error
		if sortID, err = c.currentSortID(ctx, tx, snap, id); err != nil {
			return ducklake.Table{}, err
		}
	}
	if p.order != nil {
		if err := c.writeOrder(ctx, tx, snap, id, orderVersion{order: *p.order, sortID: sortID}); err != nil {
			return ducklake.Table{}, err
		}
	}
	// A table id an earlier, failed catalog used must not inherit sidecar
	// state.
	for _, tbl := range []string{propertyTable, refTable, statisticsTable} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(tbl)+` WHERE table_id = $1`, id); err != nil {
			return ducklake.Table{}, fmt.Errorf("clear %s: %w", tbl, err)
		}
	}
	props := p.properties
	if p.formatVersion > 2 {
		props = maps.Clone(props)
		props[formatVersionProperty] = strconv.Itoa(p.formatVersion)
	}
	if err := c.setProperties(ctx, tx, id, props, nil); err != nil {
		return ducklake.Table{}, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_schema_versions")+` (begin_snapshot, schema_version, table_id) VALUES ($1, $2, $3)`,
		snap.ID, snap.NewSchemaVersion(), id); err != nil {
		return ducklake.Table{}, fmt.Errorf("insert schema version: %w", err)
	}
	snap.schemaChanged = true
	snap.change("created_table:" + ducklake.QuoteName(ns.Name) + "." + ducklake.QuoteName(p.name))
	return ducklake.Table{ID: id, UUID: p.uuid, Begin: snap.ID, SchemaID: ns.ID, Name: p.name, RawPath: p.path,
		PathIsRelative: true, Path: p.location + "/"}, nil
}

// StageTable answers a staged create (stage-create: true): the metadata
// the table will have, written nowhere. The client commits it later with
// assert-create and the updates that rebuild this metadata.
//
// A staged table's location follows create's rules, checked against the
// tables live at snapshot snap: a location the client chose may not
// overlap another live table's (the answer may carry credentials for it,
// and the client writes there before any commit checks it), and a default
// one that does moves to a path of its own, as create moves it.
func (c *Catalog) StageTable(ctx context.Context, q ducklake.Querier, snap int64, ns Namespace, req *CreateTableRequest, now time.Time) (*iceberg.TableMetadata, error) {
	p, err := planTable(ns, req.Name, req.Location, req.Schema, req.PartitionSpec, req.WriteOrder, req.Properties, true, c.maxFormat)
	if err != nil {
		return nil, err
	}
	if err := c.settle(ctx, q, snap, ns, p); err != nil {
		return nil, err
	}
	return p.metadata(now), nil
}

// metadata is the Iceberg metadata of a planned table without snapshots.
func (p *tablePlan) metadata(now time.Time) *iceberg.TableMetadata {
	schema := *p.schema
	schema.ID = 0
	md := &iceberg.TableMetadata{
		FormatVersion:   max(p.formatVersion, 2),
		TableUUID:       p.uuid,
		Location:        p.location,
		LastUpdatedMS:   now.UnixMilli(),
		Schemas:         []*iceberg.Schema{&schema},
		LastColumnID:    schema.HighestFieldID(),
		PartitionSpecs:  []iceberg.PartitionSpec{{ID: 0}},
		LastPartitionID: iceberg.PartitionFieldIDStart - 1,
		SortOrders:      []iceberg.SortOrder{iceberg.Unsorted},
		Properties:      maps.Clone(p.properties),
	}
	if md.FormatVersion >= 3 {
		var first int64 // row lineage: the first row ids are DuckLake's, from 0
		md.NextRowID = &first
	}
	if sv := p.specVersion(); sv != nil {
		// Only the client's spec: the ones served beside it are given ids
		// when the table is committed, and PyIceberg's create transaction
		// re-adds the default spec and makes "the last added" (the
		// highest id) the default.
		md.PartitionSpecs = []iceberg.PartitionSpec{sv.spec}
		md.DefaultSpecID = sv.spec.ID
		md.LastPartitionID = iceberg.PartitionFieldIDStart - 1
		for _, f := range sv.spec.Fields {
			md.LastPartitionID = max(md.LastPartitionID, f.FieldID)
		}
	}
	if p.order != nil && len(p.order.Fields) > 0 {
		md.SortOrders = append(md.SortOrders, *p.order)
		md.DefaultSortOrderID = p.order.OrderID
	}
	return md
}

// specVersion is the sidecar record of the new table's spec; nil when the
// client gave none.
func (p *tablePlan) specVersion() *specVersion {
	if p.spec == nil {
		return nil
	}
	known := p.known
	if known == nil {
		known = []iceberg.PartitionSpec{*p.spec}
	}
	v := newSpecVersion(*p.spec, 0, known, nil)
	return &v
}

// errNoTable is returned by lookups of a table that does not exist.
var errNoTable = errors.New("no such table")
