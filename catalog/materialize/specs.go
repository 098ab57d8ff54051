package materialize

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// SpecVersion is a partition spec an Iceberg client made the default
// (sidecar duckicelake_table_partition_spec and _field, written by
// catalog/commit), with the snapshots it was the default in. It is served
// as the client set it: its id, field ids, names and truncate fields,
// which DuckLake's partition keys cannot hold.
type SpecVersion struct {
	Begin, End int64 // End 0: still the default
	Spec       iceberg.PartitionSpec
	// PartitionID is the DuckLake partition holding the spec's keys; 0
	// for none (unpartitioned, or truncate fields only).
	PartitionID int64
	// PlainID serves the files whose truncate values cannot be derived
	// from their statistics: the spec without its truncate fields.
	PlainID int
	// UnpartitionedID serves inlined rows and files without partition
	// values.
	UnpartitionedID int
}

// specPlan is how a table's DuckLake files get Iceberg specs.
type specPlan struct {
	list          []iceberg.PartitionSpec // every spec served
	byID          map[int]*mappedSpec
	lastID        int                   // the highest partition field id
	duck          map[int64]*mappedSpec // DuckLake partitions no client spec names, by partition id
	client        []clientSpec          // oldest first
	unpartitioned *mappedSpec
}

type clientSpec struct {
	v  SpecVersion
	ms *mappedSpec
}

// planSpecs maps the table's DuckLake partitions and client specs (both
// begun by the horizon) to Iceberg specs. A client spec is served under
// its own ids; a DuckLake partition no client spec names (DuckDB's ALTER
// TABLE … SET PARTITIONED BY) under its partition id with generated field
// names and ids. Ids are given in the order the specs appeared, each new
// one above all earlier ones, so they stay what they were when later
// specs come.
func planSpecs(infos []ducklake.PartitionInfo, clients []SpecVersion, columnsAt func(int64) ([]ducklake.Field, error), formatVersion int) (*specPlan, error) {
	p := &specPlan{byID: map[int]*mappedSpec{}, duck: map[int64]*mappedSpec{}, lastID: iceberg.PartitionFieldIDStart - 1}
	infoByID := map[int64]ducklake.PartitionInfo{}
	for _, info := range infos {
		infoByID[info.ID] = info
	}
	named := map[int64]bool{}
	for _, v := range clients {
		fields, err := columnsAt(v.Begin)
		if err != nil {
			return nil, err
		}
		ms := clientMapped(v, infoByID, fields, formatVersion)
		if ms != nil {
			named[v.PartitionID] = true
		}
		p.client = append(p.client, clientSpec{v, ms})
	}
	unpartID := unpartitionedSpecID
	if n := len(p.client); n > 0 {
		unpartID = p.client[n-1].v.UnpartitionedID
	}
	p.unpartitioned = &mappedSpec{spec: iceberg.PartitionSpec{ID: unpartID}}
	p.serve(p.unpartitioned)

	type event struct {
		begin  int64
		client *clientSpec
		info   *ducklake.PartitionInfo
	}
	var events []event
	for i := range p.client {
		if p.client[i].ms != nil {
			events = append(events, event{begin: p.client[i].v.Begin, client: &p.client[i]})
		}
	}
	for i := range infos {
		if !named[infos[i].ID] {
			events = append(events, event{begin: infos[i].Begin, info: &infos[i]})
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return cmp.Compare(a.begin, b.begin) })

	type fieldKey struct {
		source    int
		transform iceberg.Transform
		name      string
	}
	ids := map[fieldKey]int{}
	for _, e := range events {
		if c := e.client; c != nil {
			p.serve(c.ms)
			if c.ms.plain != nil {
				p.serve(c.ms.plain)
			}
			for _, f := range c.v.Spec.Fields {
				p.lastID = max(p.lastID, f.FieldID)
				ids[fieldKey{f.SourceID, f.Transform, f.Name}] = f.FieldID
			}
			continue
		}
		info := *e.info
		fields, err := columnsAt(info.Begin)
		if err != nil {
			return nil, err
		}
		keys, err := mapKeys(info, fields, formatVersion)
		if err != nil {
			return nil, err
		}
		id := int(info.ID)
		if p.byID[id] != nil {
			id = p.nextSpecID()
		}
		ms := &mappedSpec{spec: iceberg.PartitionSpec{ID: id}, keys: len(info.Columns)}
		names := map[string]bool{}
		for i, k := range keys {
			if k.implied {
				continue
			}
			name := partitionName(k.src.Name, info.Columns[i].Transform, k.tr)
			for base, n := name, 2; names[name]; n++ {
				name = base + "_" + strconv.Itoa(n)
			}
			names[name] = true
			key := fieldKey{int(info.Columns[i].ColumnID), k.tr, name}
			fid, ok := ids[key]
			if !ok {
				p.lastID++
				fid = p.lastID
				ids[key] = fid
			}
			ms.fields = append(ms.fields, k.mf)
			ms.spec.Fields = append(ms.spec.Fields, iceberg.PartitionField{SourceID: int(info.Columns[i].ColumnID), FieldID: fid, Name: name, Transform: k.tr})
		}
		p.duck[info.ID] = ms
		p.serve(ms)
	}
	return p, nil
}

// serve lists ms, unless a spec with its id is listed already (a client
// spec made the default again, a plain spec shared).
func (p *specPlan) serve(ms *mappedSpec) {
	if p.byID[ms.spec.ID] != nil {
		return
	}
	p.byID[ms.spec.ID] = ms
	p.list = append(p.list, ms.spec)
}

func (p *specPlan) nextSpecID() int {
	next := 0
	for id := range p.byID {
		next = max(next, id+1)
	}
	return next
}

// clientMapped maps a client spec onto the keys of its DuckLake
// partition: each field is the key of the same column and transform (the
// finest calendar key stands for the coarser ones DuckLake keeps), or a
// truncate field. nil when a field has no such key (DuckLake's partition
// is not what the sidecar says), so the partition is served as DuckLake
// has it.
func clientMapped(v SpecVersion, infos map[int64]ducklake.PartitionInfo, fields []ducklake.Field, formatVersion int) *mappedSpec {
	var keys []mappedKey
	var info ducklake.PartitionInfo
	if v.PartitionID != 0 {
		var ok bool
		if info, ok = infos[v.PartitionID]; !ok {
			return nil
		}
		var err error
		if keys, err = mapKeys(info, fields, formatVersion); err != nil {
			return nil
		}
	}
	ms := &mappedSpec{spec: v.Spec, keys: len(info.Columns)}
	plain := &mappedSpec{spec: iceberg.PartitionSpec{ID: v.PlainID}, keys: len(info.Columns)}
	for _, f := range v.Spec.Fields {
		if f.Transform.Kind == iceberg.TransformTruncate {
			src := findField(fields, int64(f.SourceID))
			if src == nil {
				return nil
			}
			srcType, err := IcebergType(*src, formatVersion)
			if err != nil {
				return nil
			}
			result, err := f.Transform.ResultType(srcType)
			if err != nil {
				return nil
			}
			ms.fields = append(ms.fields, mappedField{rule: ruleTruncate, srcDuck: src.Type, srcIce: srcType, result: result, key: -1,
				column: int64(f.SourceID), transform: f.Transform})
			continue
		}
		i := slices.IndexFunc(keys, func(k mappedKey) bool {
			return int(k.src.ID) == f.SourceID && k.tr == f.Transform && k.mf.rule != ruleVoid && !k.implied
		})
		if i < 0 {
			return nil
		}
		ms.fields = append(ms.fields, keys[i].mf)
		plain.fields = append(plain.fields, keys[i].mf)
		plain.spec.Fields = append(plain.spec.Fields, f)
	}
	if len(plain.fields) != len(ms.fields) {
		ms.plain = plain
	}
	return ms
}

// forFile is the spec a DuckLake data file of partition partitionID (0:
// none) added at snapshot begin is served under: the client spec that was
// the default then if it has that partition, else the client spec of that
// partition begun last before it (or first after it), else DuckLake's.
func (p *specPlan) forFile(partitionID, begin int64) *mappedSpec {
	var before, after *clientSpec
	for i := range p.client {
		c := &p.client[i]
		if c.ms == nil || c.v.PartitionID != partitionID {
			continue
		}
		if c.v.Begin <= begin {
			before = c
		} else if after == nil {
			after = c
		}
	}
	switch {
	case before != nil:
		return before.ms
	case after != nil && partitionID != 0:
		return after.ms
	case partitionID == 0:
		return p.unpartitioned
	}
	return p.duck[partitionID]
}

// defaultSpec is the id of the spec current at snapshot snap, whose
// DuckLake partition is current (0: none).
func (p *specPlan) defaultSpec(snap, current int64) int {
	for i := len(p.client) - 1; i >= 0; i-- {
		c := p.client[i]
		if c.ms != nil && c.v.Begin <= snap && (c.v.End == 0 || c.v.End > snap) && c.v.PartitionID == current {
			return c.v.Spec.ID
		}
	}
	if current == 0 {
		return p.unpartitioned.spec.ID
	}
	return p.forFile(current, snap).spec.ID
}

// tuple is a data file's spec and partition tuple: ms's, with truncate
// values derived from the file's statistics, or the plain spec's when one
// cannot be. A file written by DuckDB may hold values of several
// truncate buckets; a made-up value would make readers skip it wrongly.
func (ms *mappedSpec) tuple(values []ducklake.FilePartitionValue, stats []ducklake.FileColumnStats) (*mappedSpec, []any, error) {
	if ms.plain == nil {
		t, err := ms.partitionTuple(values)
		return ms, t, err
	}
	base, err := ms.plain.partitionTuple(values)
	if err != nil {
		return nil, nil, err
	}
	out := make([]any, 0, len(ms.fields))
	k := 0
	for _, f := range ms.fields {
		if f.rule != ruleTruncate {
			out = append(out, base[k])
			k++
			continue
		}
		v, ok := truncateFromStats(f, stats)
		if !ok {
			return ms.plain, base, nil
		}
		out = append(out, v)
	}
	return ms, out, nil
}

// truncateFromStats derives a file's truncate value: every value of the
// column in it lies between its lower and upper bound, and truncation
// keeps order, so when both bounds truncate to the same value every row
// does. A file of only nulls has the null value; one with nulls and
// values, or without complete statistics, has none.
func truncateFromStats(f mappedField, stats []ducklake.FileColumnStats) (any, bool) {
	i := slices.IndexFunc(stats, func(s ducklake.FileColumnStats) bool { return s.ColumnID == f.column })
	if i < 0 {
		return nil, false
	}
	st := stats[i]
	switch {
	case st.NullCount < 0 || st.ValueCount < 0:
		return nil, false
	case st.ValueCount == 0 && st.NullCount > 0:
		return nil, true
	case st.NullCount > 0 || st.Min == nil || st.Max == nil:
		return nil, false
	}
	lo, ok1 := statValue(f.srcDuck, *st.Min)
	hi, ok2 := statValue(f.srcDuck, *st.Max)
	if !ok1 || !ok2 {
		return nil, false
	}
	tlo, err1 := f.transform.Apply(f.srcIce, lo)
	thi, err2 := f.transform.Apply(f.srcIce, hi)
	if err1 != nil || err2 != nil || !sameValue(tlo, thi) {
		return nil, false
	}
	return tlo, true
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case iceberg.Decimal:
		y, ok := b.(iceberg.Decimal)
		return ok && x.Unscaled != nil && y.Unscaled != nil && x.Unscaled.Cmp(y.Unscaled) == 0
	}
	return a == b
}
