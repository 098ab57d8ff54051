package materialize

import (
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/google/uuid"
)

// ErrUnrepresentable reports a DuckLake snapshot whose table state Iceberg
// metadata cannot express exactly, e.g. one inside the snapshot range of a
// file that DuckDB merged from several snapshots (partial_max), or one whose
// schema has a column type Iceberg lacks. Earlier and later snapshots may
// still be materialised; such snapshots are left out of the history.
var ErrUnrepresentable = errors.New("materialize: snapshot not expressible as Iceberg metadata")

// ErrUnsupported reports catalog content this materialiser does not handle
// at all: encrypted files, non-Parquet files (DuckLake's own deletion
// vectors included), a format version other than 2 and 3.
var ErrUnsupported = errors.New("materialize: unsupported DuckLake content")

// Options tune a materialisation.
type Options struct {
	// FormatVersion is the Iceberg table format version written: 2 (also
	// for 0) or 3, which has deletion vectors in Puffin files instead of
	// Parquet position delete files, row lineage and v3 manifests.
	FormatVersion int
	// Objects reads DuckLake's delete files, whose positions format version
	// 3 needs for its deletion vectors and version 2 for its translated
	// position delete files (see LoadDeletePositions); wrap it in a
	// PositionCache so that each is read once.
	Objects objstore.Reader
}

// File is one object the metadata references that the materialiser made.
type File struct {
	Location string // absolute, as referenced ("s3://bucket/…")
	Body     []byte
}

// Output is a materialised table: its metadata and every file it needs
// that was generated (manifests, manifest lists, Parquet files for inlined
// rows and deletes). Files are listed leaves first, the metadata JSON last,
// so writing them in order never publishes a dangling reference.
type Output struct {
	Metadata         *iceberg.TableMetadata
	MetadataJSON     []byte
	MetadataLocation string
	Files            []File
}

// Materialise reads table tableID's history up to DuckLake snapshot
// snapshotID from src and builds its Iceberg metadata.
func Materialise(ctx context.Context, src Source, tableID, snapshotID int64, opts Options) (*Output, error) {
	h, err := src.History(ctx, tableID, snapshotID)
	if err != nil {
		return nil, err
	}
	// Both versions need what DuckLake's delete files delete: version 3
	// for its deletion vectors, version 2 for the copies Iceberg readers
	// can read (see deleteItems).
	if err := LoadDeletePositions(ctx, opts.Objects, h, snapshotID); err != nil {
		return nil, fmt.Errorf("table %d: %w", tableID, err)
	}
	return Build(h, snapshotID, opts)
}

// item is one Iceberg data or delete file with the snapshot range it is
// live in: [begin, end), end 0 meaning still live at the horizon. begin and
// end are already moved onto existing snapshots.
type item struct {
	begin, end int64
	seq        int64 // data sequence number
	specID     int
	file       *iceberg.DataFile
}

func (it *item) content() iceberg.FileContent { return it.file.Content }

type span struct{ from, to int64 } // [from, to)

type builder struct {
	h       *History
	snap    int64
	version int
	snapIDs []int64 // existing snapshot ids ≤ snap, ascending

	location, metaDir, inlinedDir string

	schemas   []schemaVersion
	specs     *specPlan
	lastCol   int
	items     []*item
	bad       []span  // snapshots that cannot be expressed
	badReason []error // why, per span
	files     []File
	seen      map[string]bool

	// format version 3: what deletes rows of which data file
	dvSources map[*item][]dvSource
	dvTargets []*item // dvSources' keys in the order first seen
}

type schemaVersion struct {
	begin  int64
	fields []ducklake.Field
	schema *iceberg.Schema // nil when a type is not expressible
	err    error
}

// Build makes the Iceberg metadata of h's table as of snapshotID from an
// already read history.
func Build(h *History, snapshotID int64, opts Options) (*Output, error) {
	version := cmp.Or(opts.FormatVersion, 2)
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("%w: Iceberg format version %d (2 and 3 are materialised)", ErrUnsupported, version)
	}
	b := &builder{h: h, snap: snapshotID, version: version, seen: map[string]bool{}}
	for _, s := range h.Snapshots {
		if s.ID <= snapshotID {
			b.snapIDs = append(b.snapIDs, s.ID)
		}
	}
	if len(b.snapIDs) == 0 || b.snapIDs[len(b.snapIDs)-1] != snapshotID {
		return nil, fmt.Errorf("snapshot %d: %w", snapshotID, ducklake.ErrNotFound)
	}
	b.location = strings.TrimSuffix(h.Table.Path, "/")
	b.metaDir = b.location + "/metadata/"
	b.inlinedDir = b.location + "/__inlined__/"

	steps := []func() error{b.buildSchemas, b.buildSpecs, b.dataItems, b.deleteItems, b.inlinedDeleteItems, b.inlinedItems}
	if version >= 3 {
		steps = append(steps, b.deletionVectors)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("table %d (%s) at snapshot %d: %w", h.Table.ID, h.Table.Name, snapshotID, err)
		}
	}
	if why := b.unrepresentable(snapshotID); why != nil {
		return nil, fmt.Errorf("table %d (%s) at snapshot %d: %w: %w", h.Table.ID, h.Table.Name, snapshotID, ErrUnrepresentable, why)
	}
	out, err := b.walk()
	if err != nil {
		return nil, fmt.Errorf("table %d (%s) at snapshot %d: %w", h.Table.ID, h.Table.Name, snapshotID, err)
	}
	return out, nil
}

// clamp moves a DuckLake snapshot id onto the first existing snapshot at or
// after it (snapshots may have been expired); 0 when there is none up to
// the horizon.
func (b *builder) clamp(id int64) int64 {
	i, _ := slices.BinarySearch(b.snapIDs, id)
	if i == len(b.snapIDs) {
		return 0
	}
	return b.snapIDs[i]
}

// rng clamps a DuckLake [begin, end) range to the horizon; ok is false when
// no existing snapshot up to the horizon sees it.
func (b *builder) rng(begin, end int64) (int64, int64, bool) {
	if begin > b.snap {
		return 0, 0, false
	}
	cb := b.clamp(begin)
	if end == 0 || end > b.snap {
		return cb, 0, cb != 0
	}
	ce := b.clamp(end)
	return cb, ce, cb != 0 && cb != ce
}

func (b *builder) markBad(from, to int64, why error) {
	if to == 0 {
		to = math.MaxInt64
	}
	if from < to {
		b.bad = append(b.bad, span{from, to})
		b.badReason = append(b.badReason, why)
	}
}

func (b *builder) unrepresentable(s int64) error {
	for i, sp := range b.bad {
		if sp.from <= s && s < sp.to {
			return b.badReason[i]
		}
	}
	return nil
}

func (b *builder) fieldsAt(s int64) ([]ducklake.Field, error) {
	var cols []ducklake.Column
	for _, c := range b.h.Columns {
		if c.Begin <= s && (c.End == 0 || c.End > s) {
			cols = append(cols, c)
		}
	}
	slices.SortStableFunc(cols, func(x, y ducklake.Column) int { return cmp.Or(cmp.Compare(x.Order, y.Order), cmp.Compare(x.ID, y.ID)) })
	fields, err := ducklake.BuildFields(cols)
	if err != nil || len(b.h.Comments) == 0 {
		return fields, err
	}
	docs := map[int64]string{}
	for _, t := range b.h.Comments {
		if t.Begin <= s && (t.End == 0 || t.End > s) {
			docs[t.ColumnID] = t.Value
		}
	}
	setDocs(fields, docs)
	return fields, nil
}

// setDocs gives fields (and the fields of their structs) their comments.
func setDocs(fields []ducklake.Field, docs map[int64]string) {
	for i := range fields {
		fields[i].Doc = docs[fields[i].ID]
		if fields[i].Type.Kind == ducklake.KindStruct {
			setDocs(fields[i].Type.Fields, docs)
		}
	}
}

func (b *builder) schemaAt(s int64) *schemaVersion {
	var sv *schemaVersion
	for i := range b.schemas {
		if b.schemas[i].begin <= s {
			sv = &b.schemas[i]
		}
	}
	return sv
}

// buildSchemas makes one Iceberg schema per distinct column set, with the
// DuckLake schema_version of the snapshot that introduced it as schema id.
func (b *builder) buildSchemas() error {
	var bounds []int64
	for _, c := range b.h.Columns {
		b.lastCol = max(b.lastCol, int(c.ID))
		if c.Begin <= b.snap {
			bounds = append(bounds, b.clamp(c.Begin))
		}
		if c.End != 0 && c.End <= b.snap {
			bounds = append(bounds, b.clamp(c.End))
		}
	}
	// A comment change is a new Iceberg schema (a doc is part of a field).
	for _, t := range b.h.Comments {
		if t.Begin <= b.snap {
			bounds = append(bounds, b.clamp(t.Begin))
		}
		if t.End != 0 && t.End <= b.snap {
			bounds = append(bounds, b.clamp(t.End))
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	versionOf := map[int64]int64{}
	for _, s := range b.h.Snapshots {
		versionOf[s.ID] = s.SchemaVersion
	}
	used := map[int]bool{}
	for _, at := range bounds {
		if at == 0 {
			continue
		}
		fields, err := b.fieldsAt(at)
		if err != nil {
			return err
		}
		if len(fields) == 0 {
			continue
		}
		sv := schemaVersion{begin: at, fields: fields}
		id := int(versionOf[at])
		for used[id] {
			id++
		}
		sv.schema, sv.err = IcebergSchema(id, fields, b.version)
		if n := len(b.schemas); n > 0 && b.schemas[n-1].schema != nil && sv.schema != nil && b.schemas[n-1].schema.Equal(sv.schema) {
			continue // a change that does not show in Iceberg (a default)
		}
		if sv.schema != nil {
			used[id] = true
		}
		b.schemas = append(b.schemas, sv)
	}
	if len(b.schemas) == 0 {
		return errors.New("the table has no columns")
	}
	for i, sv := range b.schemas {
		if sv.err != nil {
			to := int64(0)
			if i+1 < len(b.schemas) {
				to = b.schemas[i+1].begin
			}
			b.markBad(sv.begin, to, sv.err)
		}
	}
	return nil
}

func (b *builder) buildSpecs() error {
	var infos []ducklake.PartitionInfo
	for _, p := range b.h.Partitions {
		if p.Begin <= b.snap {
			infos = append(infos, p)
		}
	}
	var clients []SpecVersion
	for _, v := range b.h.Extras.Specs {
		if v.Begin <= b.snap {
			clients = append(clients, v)
		}
	}
	var err error
	b.specs, err = planSpecs(infos, clients, b.fieldsAt, b.version)
	return err
}

func (b *builder) add(begin, end, seq int64, specID int, f *iceberg.DataFile) {
	b.items = append(b.items, &item{begin: begin, end: end, seq: seq, specID: specID, file: f})
}

// dataItems turns DuckLake data files into Iceberg data files with metrics.
func (b *builder) dataItems() error {
	stats := map[int64][]ducklake.FileColumnStats{}
	for _, st := range b.h.Stats {
		stats[st.DataFileID] = append(stats[st.DataFileID], st)
	}
	leavesAt := map[*schemaVersion]map[int64]leafColumn{}
	for i := range b.h.DataFiles {
		f := &b.h.DataFiles[i]
		begin, end, ok := b.rng(f.Begin, f.End)
		if !ok {
			continue
		}
		if err := checkFile(f.Path, f.Format, f.EncryptionKey); err != nil {
			return err
		}
		ms := b.specs.forFile(f.PartitionID, f.Begin)
		if ms == nil {
			return fmt.Errorf("data file %d names partition %d, which the table never had", f.ID, f.PartitionID)
		}
		ms, part, err := ms.tuple(f.PartitionValues, stats[f.ID])
		if err != nil {
			return fmt.Errorf("data file %d (%s): %w", f.ID, f.Path, err)
		}
		if f.PartialMax > f.Begin {
			b.markBad(f.Begin, f.PartialMax, fmt.Errorf("data file %s holds rows of snapshots %d..%d (merged); Iceberg cannot show the earlier ones alone", f.Path, f.Begin, f.PartialMax))
		}
		df := &iceberg.DataFile{Content: iceberg.ContentData, Path: f.Path, Format: iceberg.FormatParquet,
			Partition: part, RecordCount: f.RecordCount, FileSizeBytes: f.FileSizeBytes}
		if b.version >= 3 {
			rowID := f.RowIDStart
			df.FirstRowID = &rowID
		}
		if sv := b.schemaAt(begin); sv != nil && sv.schema != nil {
			leaves, ok := leavesAt[sv]
			if !ok {
				leaves = leafColumns(sv.fields, sv.schema)
				leavesAt[sv] = leaves
			}
			fileMetrics(df, stats[f.ID], sv.schema, leaves)
		}
		b.add(begin, end, f.Begin, ms.spec.ID, df)
	}
	return nil
}

func checkFile(path, format, key string) error {
	switch {
	case key != "":
		return fmt.Errorf("%w: %s is encrypted", ErrUnsupported, path)
	case !strings.EqualFold(format, "parquet"):
		return fmt.Errorf("%w: %s is %s, not Parquet", ErrUnsupported, path, format)
	}
	return nil
}

// fileMetrics fills Iceberg metrics from DuckLake's per-file column stats.
// DuckLake's value_count counts non-null values; Iceberg's includes nulls.
func fileMetrics(df *iceberg.DataFile, stats []ducklake.FileColumnStats, schema *iceberg.Schema, leaves map[int64]leafColumn) {
	if len(stats) > 0 {
		df.ColumnSizes = make(map[int]int64, len(stats))
		df.ValueCounts = make(map[int]int64, len(stats))
		df.NullValueCounts = make(map[int]int64, len(stats))
		df.LowerBounds = make(map[int][]byte, len(stats))
		df.UpperBounds = make(map[int][]byte, len(stats))
	}
	for _, st := range stats {
		id := int(st.ColumnID)
		nf := schema.FindField(id)
		if nf == nil {
			continue // a column dropped since
		}
		if st.ColumnSizeBytes >= 0 && nf.Type.IsPrimitive() {
			setLong(&df.ColumnSizes, id, st.ColumnSizeBytes)
		}
		if st.ValueCount >= 0 && st.NullCount >= 0 {
			setLong(&df.ValueCounts, id, st.ValueCount+st.NullCount)
		}
		if st.NullCount >= 0 {
			setLong(&df.NullValueCounts, id, st.NullCount)
		}
		leaf, ok := leaves[st.ColumnID]
		if !ok {
			continue
		}
		if (leaf.iceberg.ID == iceberg.TypeFloat || leaf.iceberg.ID == iceberg.TypeDouble) && !st.ContainsNaN {
			setLong(&df.NaNValueCounts, id, 0)
		}
		lo, hi := statBounds(leaf.duck, leaf.iceberg, st.Min, st.Max)
		if lo != nil {
			setBytes(&df.LowerBounds, id, lo)
		}
		if hi != nil {
			setBytes(&df.UpperBounds, id, hi)
		}
	}
}

func setLong(m *map[int]int64, k int, v int64) {
	if *m == nil {
		*m = map[int]int64{}
	}
	(*m)[k] = v
}

func setBytes(m *map[int][]byte, k int, v []byte) {
	if *m == nil {
		*m = map[int][]byte{}
	}
	(*m)[k] = v
}

// positionDeleteFile describes a position delete file that targets exactly
// one data file, with file_path bounds so readers can skip it for others.
func positionDeleteFile(path string, size, count int64, target *iceberg.DataFile) *iceberg.DataFile {
	p := []byte(target.Path)
	return &iceberg.DataFile{Content: iceberg.ContentPositionDeletes, Path: path, Format: iceberg.FormatParquet,
		Partition: target.Partition, RecordCount: count, FileSizeBytes: size, ReferencedDataFile: target.Path,
		LowerBounds: map[int][]byte{iceberg.PositionDeleteFilePathID: p},
		UpperBounds: map[int][]byte{iceberg.PositionDeleteFilePathID: p}}
}

// dataItemsByID maps DuckLake data file ids to the items serving them:
// the data files the deletes of the history apply to.
func (b *builder) dataItemsByID() map[int64]*item {
	byPath := map[string]*item{}
	for _, it := range b.items {
		if it.content() == iceberg.ContentData {
			byPath[it.file.Path] = it
		}
	}
	m := map[int64]*item{}
	for _, f := range b.h.DataFiles {
		if it := byPath[f.Path]; it != nil {
			m[f.ID] = it
		}
	}
	return m
}

// rngWithin is rng narrowed to the range of target, the data item a
// delete applies to; false when nothing of it is left.
func (b *builder) rngWithin(target *item, begin, end int64) (int64, int64, bool) {
	begin, end, ok := b.rng(begin, end)
	if !ok {
		return 0, 0, false
	}
	begin = max(begin, target.begin)
	if target.end != 0 && (end == 0 || end > target.end) {
		end = target.end
	}
	return begin, end, end == 0 || begin < end
}

// addPositionDeletes adds positions (sorted and deduplicated in place) as
// a position delete file of target, live over [begin, end) with sequence
// snapshot seq, written under the inlined directory as name(content hash).
func (b *builder) addPositionDeletes(target *item, begin, end, seq int64, positions []int64, name func(hash string) string) error {
	slices.Sort(positions)
	positions = slices.Compact(positions)
	body, err := WritePositionDeletes(target.file.Path, positions)
	if err != nil {
		return fmt.Errorf("position deletes of %s: %w", target.file.Path, err)
	}
	loc := b.inlinedDir + name(contentHash(body))
	b.addFile(loc, body)
	b.add(begin, end, seq, target.specID, positionDeleteFile(loc, int64(len(body)), int64(len(positions)), target.file))
	return nil
}

// TranslatedDeletePrefix begins the name of the copy of a DuckLake delete
// file that format version 2 serves (under <table>/__inlined__/, followed
// by the DuckLake delete_file_id, "-", a content hash and ".parquet"), so a
// commit that removes the copy can tell which DuckLake delete file it
// stands for (TranslatedDeleteFileID).
const TranslatedDeletePrefix = "ducklake-delete-"

// TranslatedDeleteFileID is the DuckLake delete_file_id a location served
// as a translated delete file stands for, if it is one.
func TranslatedDeleteFileID(location string) (int64, bool) {
	i := strings.LastIndex(location, "/__inlined__/"+TranslatedDeletePrefix)
	if i < 0 {
		return 0, false
	}
	rest := location[i+len("/__inlined__/"+TranslatedDeletePrefix):]
	id, hash, ok := strings.Cut(rest, "-")
	if !ok || !strings.HasSuffix(hash, ".parquet") {
		return 0, false
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// deleteItems serves DuckLake's positional delete files. They are Parquet
// files of (file_path, pos) rows, but DuckDB gives those columns the field
// ids 2147483646/2147483645, where Iceberg reserves 2147483546/2147483545;
// Java readers (Spark, Trino) go by field id and cannot read them. So
// version 2 serves a copy with Iceberg's ids, content-addressed and written
// once like every generated file, and version 3 deletion vectors.
func (b *builder) deleteItems() error {
	targets := b.dataItemsByID()
	for _, d := range b.h.DeleteFiles {
		target := targets[d.DataFileID]
		if target == nil {
			continue // its data file is not visible up to the horizon
		}
		begin, end, ok := b.rngWithin(target, d.Begin, d.End)
		if !ok {
			continue
		}
		if err := checkFile(d.Path, d.Format, d.EncryptionKey); err != nil {
			return err
		}
		if b.version >= 3 {
			if err := b.deleteFileDV(target, d); err != nil {
				return err
			}
			continue
		}
		if d.PartialMax > d.Begin {
			b.markBad(d.Begin, d.PartialMax, fmt.Errorf("delete file %s holds deletions of snapshots %d..%d; Iceberg cannot show the earlier ones alone", d.Path, d.Begin, d.PartialMax))
		}
		positions, ok := b.h.DeletePositions[d.ID]
		if !ok {
			return fmt.Errorf("delete file %s: its positions are needed to serve it to Iceberg readers (materialise with Options.Objects)", d.Path)
		}
		pos := make([]int64, len(positions))
		for i, p := range positions {
			pos[i] = p.Pos
		}
		if err := b.addPositionDeletes(target, begin, end, d.Begin, pos, func(hash string) string {
			return TranslatedDeletePrefix + strconv.FormatInt(d.ID, 10) + "-" + hash + ".parquet"
		}); err != nil {
			return err
		}
	}
	return nil
}

// inlinedDeleteItems writes the deletions DuckDB kept in Postgres as
// Parquet position delete files: one per data file and change, each
// holding every position deleted so far (so it replaces its predecessor).
func (b *builder) inlinedDeleteItems() error {
	byFile := map[int64][]InlinedDelete{}
	for _, d := range b.h.InlinedDeletes {
		if d.Begin <= b.snap {
			byFile[d.DataFileID] = append(byFile[d.DataFileID], d)
		}
	}
	targets := b.dataItemsByID()
	ids := make([]int64, 0, len(byFile))
	for id := range byFile {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		target := targets[id]
		if target == nil {
			continue
		}
		dels := byFile[id]
		slices.SortFunc(dels, func(x, y InlinedDelete) int { return cmp.Or(cmp.Compare(x.Begin, y.Begin), cmp.Compare(x.Pos, y.Pos)) })
		if err := b.cumulativeDeletes(target, len(dels), func(i int) (int64, int64) { return dels[i].Begin, dels[i].Pos }); err != nil {
			return err
		}
	}
	return nil
}

// cumulativeDeletes adds, for each distinct snapshot at which rows of
// target were deleted, a position delete file with all positions deleted
// up to then, live until the next such snapshot or until target ends.
// at(i) gives the i-th deletion (snapshot, position), sorted by snapshot.
func (b *builder) cumulativeDeletes(target *item, n int, at func(i int) (snap, pos int64)) error {
	if b.version >= 3 {
		b.pointDVs(target, n, at)
		return nil
	}
	var positions []int64
	for i := 0; i < n; {
		s, _ := at(i)
		for i < n {
			s2, p := at(i)
			if s2 != s {
				break
			}
			positions = append(positions, p)
			i++
		}
		next := int64(0)
		if i < n {
			next, _ = at(i)
		}
		begin, end, ok := b.rngWithin(target, s, next)
		if !ok {
			continue
		}
		if err := b.addPositionDeletes(target, begin, end, s, slices.Clone(positions), func(hash string) string {
			return fmt.Sprintf("%d-%s-deletes.parquet", s, hash)
		}); err != nil {
			return err
		}
	}
	return nil
}

// inlinedItems writes inlined rows to Parquet: one data file per schema
// version and inserting snapshot, unpartitioned (DuckLake does not
// partition inlined rows), with position deletes for rows ended since.
func (b *builder) inlinedItems() error {
	for _, d := range b.h.Inlined {
		rows := d.Rows
		slices.SortStableFunc(rows, func(x, y ducklake.InlinedRow) int {
			return cmp.Or(cmp.Compare(x.Begin, y.Begin), cmp.Compare(x.RowID, y.RowID))
		})
		for i := 0; i < len(rows); {
			// In format version 3 a file holds consecutive row ids only, so
			// that its first_row_id gives every row its DuckLake row id.
			j := i
			for j < len(rows) && rows[j].Begin == rows[i].Begin && (b.version < 3 || rows[j].RowID == rows[i].RowID+int64(j-i)) {
				j++
			}
			if err := b.inlinedBatch(d, rows[i:j]); err != nil {
				return fmt.Errorf("inlined rows of %s: %w", d.Name, err)
			}
			i = j
		}
	}
	return nil
}

func (b *builder) inlinedBatch(d ducklake.InlinedData, rows []ducklake.InlinedRow) error {
	insert := rows[0].Begin
	if insert > b.snap {
		return nil
	}
	// The batch ends when its last row is deleted.
	last := int64(0)
	for _, r := range rows {
		if r.End == 0 || r.End > b.snap {
			last = 0
			break
		}
		last = max(last, r.End)
	}
	begin, end, ok := b.rng(insert, last)
	if !ok {
		return nil
	}
	schema, err := IcebergSchema(0, d.Columns, b.version)
	if err != nil {
		return err
	}
	body, err := writeInlinedRows(d.Columns, schema, rows)
	if err != nil {
		return err
	}
	loc := b.inlinedDir + fmt.Sprintf("%d-%s.parquet", insert, contentHash(body))
	b.addFile(loc, body)
	df := &iceberg.DataFile{Content: iceberg.ContentData, Path: loc, Format: iceberg.FormatParquet,
		Partition: []any{}, RecordCount: int64(len(rows)), FileSizeBytes: int64(len(body))}
	if b.version >= 3 {
		rowID := rows[0].RowID
		df.FirstRowID = &rowID
	}
	rowMetrics(df, d.Columns, schema, rows)
	target := &item{begin: begin, end: end, seq: insert, specID: b.specs.unpartitioned.spec.ID, file: df}
	b.items = append(b.items, target)

	type del struct{ snap, pos int64 }
	var dels []del
	for pos, r := range rows {
		if r.End != 0 && r.End <= b.snap && (last == 0 || r.End < last) {
			dels = append(dels, del{r.End, int64(pos)})
		}
	}
	slices.SortFunc(dels, func(x, y del) int { return cmp.Or(cmp.Compare(x.snap, y.snap), cmp.Compare(x.pos, y.pos)) })
	return b.cumulativeDeletes(target, len(dels), func(i int) (int64, int64) { return dels[i].snap, dels[i].pos })
}

func (b *builder) addFile(loc string, body []byte) {
	if !b.seen[loc] {
		b.seen[loc] = true
		b.files = append(b.files, File{Location: loc, Body: body})
	}
}

// generatedName matches the names of the files materialize writes under
// <table>/metadata/ (walk.go, v3.go): snap-<s>-<hash>.avro,
// <s>-<hash>-m<n>.avro, <s>-<hash>-dv.puffin, v<n>-<hash>.metadata.json.
var generatedName = regexp.MustCompile(`^(snap-[0-9]+-[0-9a-f]{16}\.avro|[0-9]+-[0-9a-f]{16}-(m[0-9]+\.avro|dv\.puffin)|v[0-9]+-[0-9a-f]{16}\.metadata\.json)$`)

// Generated reports whether location may be a file materialize wrote (its
// Iceberg metadata, or Parquet under __inlined__/): served metadata
// references those, so whoever deletes files a client wrote must leave
// them alone even when a client names one as its own. It errs towards
// true: a client file with such a name is only kept.
func Generated(location string) bool {
	if strings.Contains(location, "/__inlined__/") {
		return true
	}
	return generatedName.MatchString(path.Base(location))
}

// contentHash names generated files: 16 hex digits of their SHA-256.
func contentHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:8])
}

// tableUUID is the DuckLake table's uuid, or one derived from its id and
// path when the catalog has none, so it never changes between calls.
func tableUUID(t ducklake.Table) string {
	if u, err := uuid.Parse(t.UUID); err == nil {
		return u.String()
	}
	sum := sha1.Sum([]byte("duckicelake table " + strconv.FormatInt(t.ID, 10) + " " + t.Path))
	u, _ := uuid.FromBytes(sum[:16])
	u[6] = (u[6] & 0x0f) | 0x50 // version 5 layout, name-based
	u[8] = (u[8] & 0x3f) | 0x80
	return u.String()
}
