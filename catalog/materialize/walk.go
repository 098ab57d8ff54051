package materialize

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// A group is a set of files under one spec and content that shares one
// manifest. Files added by a snapshot start a group of level 0; the
// manifest is rewritten only when one of its files goes away, and otherwise
// carried into every later manifest list as is. When more than mergeFanIn
// groups of one level pile up they are merged into one group of the next
// level (like Iceberg's manifest merging), which keeps manifest lists at
// O(mergeFanIn × log n) entries instead of one per commit ever made.
type groupKey struct {
	content iceberg.ManifestContent
	addedAt int64 // the oldest snapshot whose files the group holds
	specID  int
	level   int
}

const mergeFanIn = 10

type group struct {
	key      groupKey
	live     []*item
	removed  []*item // removed since the last manifest was written
	dirty    bool    // files came or went since then
	manifest iceberg.ManifestFile
}

type writerKey struct {
	content iceberg.ManifestContent
	specID  int
	schema  *iceberg.Schema
}

// summaryCounts accumulates the changes between two emitted snapshots.
type summaryCounts struct {
	addedData, removedData, addedDeletes, removedDeletes     int64
	addedRecords, removedRecords, addedPosDel, removedPosDel int64
	addedSize, removedSize                                   int64
	addedDVs, removedDVs                                     int64 // deletion vectors, among the delete files
	compacted                                                bool
}

func (c *summaryCounts) record(it *item, added bool) {
	f := it.file
	switch {
	case f.Content == iceberg.ContentData && added:
		c.addedData++
		c.addedRecords += f.RecordCount
		c.addedSize += f.FileSizeBytes
	case f.Content == iceberg.ContentData:
		c.removedData++
		c.removedRecords += f.RecordCount
		c.removedSize += f.FileSizeBytes
	case added:
		c.addedDeletes++
		c.addedPosDel += f.RecordCount
		c.addedSize += f.FileSizeBytes
	default:
		c.removedDeletes++
		c.removedPosDel += f.RecordCount
		c.removedSize += f.FileSizeBytes
	}
	if f.Format == iceberg.FormatPuffin && added {
		c.addedDVs++
	} else if f.Format == iceberg.FormatPuffin {
		c.removedDVs++
	}
}

func (c *summaryCounts) operation() string {
	switch {
	case c.compacted:
		return iceberg.OpReplace
	case c.addedData > 0 && c.removedData == 0 && c.addedDeletes == 0 && c.removedDeletes == 0:
		return iceberg.OpAppend
	case c.addedData > 0:
		return iceberg.OpOverwrite
	}
	return iceberg.OpDelete
}

// walk visits every snapshot at which the table's files change, keeping one
// manifest per group, and emits a manifest list and snapshot for each
// snapshot Iceberg can express.
func (b *builder) walk() (*Output, error) {
	addAt := map[int64][]*item{}
	removeAt := map[int64][]*item{}
	var bounds []int64
	for _, it := range b.items {
		addAt[it.begin] = append(addAt[it.begin], it)
		bounds = append(bounds, it.begin)
		if it.end != 0 {
			removeAt[it.end] = append(removeAt[it.end], it)
			bounds = append(bounds, it.end)
		}
	}
	// Where a stretch of unrepresentable snapshots ends, the changes made
	// inside it show for the first time, even if no file changes there.
	for _, sp := range b.bad {
		if sp.to <= b.snap {
			if c := b.clamp(sp.to); c != 0 {
				bounds = append(bounds, c)
			}
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)

	snapByID := make(map[int64]*ducklake.Snapshot, len(b.h.Snapshots))
	for i := range b.h.Snapshots {
		snapByID[b.h.Snapshots[i].ID] = &b.h.Snapshots[i]
	}
	writers := map[writerKey]*iceberg.ManifestWriter{}
	groups := map[groupKey]*group{}
	groupOf := make(map[*item]*group, len(b.items))
	md := &iceberg.TableMetadata{FormatVersion: b.version}
	var (
		parent  *int64
		pending summaryCounts // changes since the last emitted snapshot
		totals  summaryCounts // running totals (added minus removed)
		keys    []groupKey
		tableID = strconv.FormatInt(b.h.Table.ID, 10)
		lineage rowLineage // format version 3
	)
	for _, s := range bounds {
		for _, it := range removeAt[s] {
			g := groupOf[it]
			g.live = slices.DeleteFunc(g.live, func(x *item) bool { return x == it })
			g.removed = append(g.removed, it)
			g.dirty = true
			pending.record(it, false)
			totals.record(it, false)
		}
		for _, it := range addAt[s] {
			key := groupKey{manifestContent(it), s, it.specID, 0}
			g := groups[key]
			if g == nil {
				g = &group{key: key}
				groups[key] = g
			}
			g.live = append(g.live, it)
			g.dirty = true
			groupOf[it] = g
			pending.record(it, true)
			totals.record(it, true)
			lineage.add(it)
		}
		mergeGroups(groups, groupOf)
		if sn := snapByID[s]; sn != nil {
			for _, c := range ducklake.ParseChanges(sn.Changes) {
				pending.compacted = pending.compacted || (c.Kind == "compacted_table" && c.Target == tableID)
			}
		}
		sv := b.schemaAt(s)
		if b.unrepresentable(s) != nil || sv == nil || sv.schema == nil {
			continue // changes carry over to the next snapshot Iceberg can show
		}
		keys = keys[:0]
		for k, g := range groups {
			if len(g.live) == 0 && g.manifest.Path == "" {
				delete(groups, k) // came and went unseen
				continue
			}
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareGroupKeys)
		files := make([]iceberg.ManifestFile, 0, len(keys))
		n := 0
		for _, k := range keys {
			g := groups[k]
			if g.dirty {
				mf, err := b.writeGroup(writers, g, s, sv.schema, n)
				if err != nil {
					return nil, err
				}
				if b.version >= 3 && k.content == iceberg.ManifestData {
					mf.FirstRowID = manifestFirstRowID(g, lineage.emitted)
				}
				g.manifest = mf
				n++
			}
			files = append(files, g.manifest)
		}
		listInfo := iceberg.ManifestListInfo{FormatVersion: b.version, SnapshotID: s, ParentSnapshotID: parent, SequenceNumber: s}
		if b.version >= 3 {
			first := lineage.emitted
			listInfo.FirstRowID = &first
		}
		list, err := iceberg.WriteManifestList(listInfo, files)
		if err != nil {
			return nil, fmt.Errorf("manifest list of snapshot %d: %w", s, err)
		}
		listLoc := b.metaDir + fmt.Sprintf("snap-%d-%s.avro", s, contentHash(list))
		b.addFile(listLoc, list)
		snap := iceberg.Snapshot{SnapshotID: s, ParentSnapshotID: parent, SequenceNumber: s, ManifestList: listLoc,
			Summary: summary(&pending, &totals, snapByID[s]), SchemaID: &sv.schema.ID}
		if sn := snapByID[s]; sn != nil {
			snap.TimestampMS = sn.Time.UnixMilli()
		}
		if b.version >= 3 {
			lineage.snapshot(&snap)
		}
		md.Snapshots = append(md.Snapshots, snap)
		md.SnapshotLog = append(md.SnapshotLog, iceberg.SnapshotLogEntry{SnapshotID: s, TimestampMS: snap.TimestampMS})
		parent = &snap.SnapshotID
		pending = summaryCounts{}
		for _, k := range keys {
			g := groups[k]
			g.removed, g.dirty = nil, false
			if len(g.live) == 0 {
				delete(groups, k) // its manifest recorded the removals
			}
		}
	}
	if b.version >= 3 {
		next := lineage.emitted
		md.NextRowID = &next
	}
	return b.finish(md)
}

func manifestContent(it *item) iceberg.ManifestContent {
	if it.content() == iceberg.ContentData {
		return iceberg.ManifestData
	}
	return iceberg.ManifestDeletes
}

func compareGroupKeys(x, y groupKey) int {
	return cmp.Or(cmp.Compare(x.content, y.content), cmp.Compare(x.addedAt, y.addedAt), cmp.Compare(x.specID, y.specID), cmp.Compare(x.level, y.level))
}

// mergeGroups merges the groups of a level into one of the next level
// whenever a (content, spec) has more than mergeFanIn of them.
func mergeGroups(groups map[groupKey]*group, groupOf map[*item]*group) {
	type shape struct {
		content iceberg.ManifestContent
		specID  int
		level   int
	}
	count := map[shape]int{}
	for k := range groups {
		count[shape{k.content, k.specID, k.level}]++
	}
	for len(count) > 0 {
		var full []shape
		for sh, n := range count {
			if n > mergeFanIn {
				full = append(full, sh)
			}
		}
		if len(full) == 0 {
			return
		}
		clear(count)
		for _, sh := range full {
			var members []*group
			for k, g := range groups {
				if k.content == sh.content && k.specID == sh.specID && k.level == sh.level {
					members = append(members, g)
				}
			}
			slices.SortFunc(members, func(x, y *group) int { return cmp.Compare(x.key.addedAt, y.key.addedAt) })
			merged := &group{key: groupKey{sh.content, members[0].key.addedAt, sh.specID, sh.level + 1}, dirty: true}
			for _, g := range members {
				merged.live = append(merged.live, g.live...)
				merged.removed = append(merged.removed, g.removed...)
				delete(groups, g.key)
			}
			for _, it := range merged.live {
				groupOf[it] = merged
			}
			groups[merged.key] = merged
			next := shape{sh.content, sh.specID, sh.level + 1}
			for k := range groups {
				if k.content == next.content && k.specID == next.specID && k.level == next.level {
					count[next]++
				}
			}
		}
	}
}

// writeGroup writes group g's manifest as of snapshot s: files added at s
// as ADDED, older live files as EXISTING, files removed since the group's
// last manifest as DELETED.
// All entries carry explicit snapshot ids and sequence numbers, so the
// manifest means the same in every manifest list that carries it.
func (b *builder) writeGroup(writers map[writerKey]*iceberg.ManifestWriter, g *group, s int64, schema *iceberg.Schema, n int) (iceberg.ManifestFile, error) {
	wk := writerKey{g.key.content, g.key.specID, schema}
	mw := writers[wk]
	if mw == nil {
		spec := b.specs.byID[g.key.specID].spec
		var err error
		mw, err = iceberg.NewManifestWriter(iceberg.ManifestInfo{FormatVersion: b.version, Content: g.key.content, Schema: schema, Spec: spec})
		if err != nil {
			return iceberg.ManifestFile{}, fmt.Errorf("manifest of spec %d: %w", g.key.specID, err)
		}
		writers[wk] = mw
	}
	entries := make([]iceberg.ManifestEntry, 0, len(g.live)+len(g.removed))
	for _, it := range g.live {
		status := iceberg.StatusExisting
		if it.begin == s {
			status = iceberg.StatusAdded
		}
		entries = append(entries, iceberg.ManifestEntry{Status: status, SnapshotID: &it.begin, SequenceNumber: &it.seq, FileSequenceNumber: &it.begin, File: it.file})
	}
	for _, it := range g.removed {
		entries = append(entries, iceberg.ManifestEntry{Status: iceberg.StatusDeleted, SnapshotID: &s, SequenceNumber: &it.seq, FileSequenceNumber: &it.begin, File: it.file})
	}
	body, mf, err := mw.Write(entries, s)
	if err != nil {
		return mf, fmt.Errorf("manifest of snapshot %d: %w", s, err)
	}
	mf.Path = b.metaDir + fmt.Sprintf("%d-%s-m%d.avro", s, contentHash(body), n)
	mf.SequenceNumber, mf.AddedSnapshotID = s, s
	b.addFile(mf.Path, body)
	return mf, nil
}

func summary(c, totals *summaryCounts, sn *ducklake.Snapshot) map[string]string {
	m := map[string]string{"operation": c.operation()}
	put := func(k string, v int64) {
		if v != 0 {
			m[k] = strconv.FormatInt(v, 10)
		}
	}
	put("added-data-files", c.addedData)
	put("deleted-data-files", c.removedData)
	put("added-delete-files", c.addedDeletes)
	put("added-position-delete-files", c.addedDeletes-c.addedDVs)
	put("added-dvs", c.addedDVs)
	put("removed-delete-files", c.removedDeletes)
	put("removed-position-delete-files", c.removedDeletes-c.removedDVs)
	put("removed-dvs", c.removedDVs)
	put("added-records", c.addedRecords)
	put("deleted-records", c.removedRecords)
	put("added-position-deletes", c.addedPosDel)
	put("removed-position-deletes", c.removedPosDel)
	put("added-files-size", c.addedSize)
	put("removed-files-size", c.removedSize)
	m["total-data-files"] = strconv.FormatInt(totals.addedData-totals.removedData, 10)
	m["total-delete-files"] = strconv.FormatInt(totals.addedDeletes-totals.removedDeletes, 10)
	m["total-records"] = strconv.FormatInt(totals.addedRecords-totals.removedRecords, 10)
	m["total-position-deletes"] = strconv.FormatInt(totals.addedPosDel-totals.removedPosDel, 10)
	m["total-equality-deletes"] = "0"
	m["total-files-size"] = strconv.FormatInt(totals.addedSize-totals.removedSize, 10)
	if sn != nil {
		if sn.Author != "" {
			m["ducklake.author"] = sn.Author
		}
		if sn.CommitMessage != "" {
			m["ducklake.commit-message"] = sn.CommitMessage
		}
	}
	return m
}

// finish assembles the table metadata around the emitted snapshots and
// names it by the last snapshot that changed it (data, schema or spec), so
// a table left alone by later commits keeps the same metadata file.
func (b *builder) finish(md *iceberg.TableMetadata) (*Output, error) {
	md.TableUUID = tableUUID(b.h.Table)
	md.Location = b.location
	version := int64(0)
	if n := len(md.Snapshots); n > 0 {
		cur := md.Snapshots[n-1].SnapshotID
		md.CurrentSnapshotID = &cur
		md.LastSequenceNumber = cur
		md.Refs = map[string]iceberg.SnapshotRef{iceberg.MainBranch: {SnapshotID: cur, Type: "branch"}}
		version = cur
	}
	for _, sv := range b.schemas {
		if sv.schema != nil {
			md.Schemas = append(md.Schemas, sv.schema)
			b.lastCol = max(b.lastCol, sv.schema.HighestFieldID())
		}
	}
	cur := b.schemaAt(b.snap)
	md.CurrentSchemaID = cur.schema.ID
	version = max(version, cur.begin)
	md.LastColumnID = b.lastCol
	md.PartitionSpecs = b.specs.list
	md.LastPartitionID = b.specs.lastID
	var current int64
	for _, p := range b.h.Partitions {
		if p.Begin <= b.snap && (p.End == 0 || p.End > b.snap) {
			current = p.ID
		}
		if p.Begin <= b.snap {
			version = max(version, b.clamp(p.Begin))
		}
		if p.End != 0 && p.End <= b.snap {
			version = max(version, b.clamp(p.End))
		}
	}
	md.DefaultSpecID = b.specs.defaultSpec(b.snap, current)
	for _, v := range b.h.Extras.Specs {
		if v.Begin <= b.snap {
			version = max(version, b.clamp(v.Begin))
		}
	}
	// Changes no row above shows (properties, sort orders and refs live
	// in sidecar rows) are logged under the table's id all the same.
	version = max(version, b.lastLoggedChange())
	md.SortOrders = []iceberg.SortOrder{iceberg.Unsorted}
	if len(b.h.NameMappings) > 0 {
		md.Properties = map[string]string{"schema.name-mapping.default": nameMapping(cur.schema, b.h.NameMappings)}
	}
	b.applyExtras(md, cur.schema)
	for _, s := range b.h.Snapshots {
		if s.ID == version {
			md.LastUpdatedMS = s.Time.UnixMilli()
		}
	}
	md.MetadataLog = metadataLog(b.h.MetadataLog, version, md.Properties)
	if err := md.Validate(); err != nil {
		return nil, err
	}
	body, err := md.MarshalIndent()
	if err != nil {
		return nil, err
	}
	loc := b.metaDir + fmt.Sprintf("v%d-%s.metadata.json", version, contentHash(body))
	b.addFile(loc, body)
	return &Output{Metadata: md, MetadataJSON: body, MetadataLocation: loc, Files: b.files}, nil
}

// defaultPreviousVersions is Iceberg's default for
// write.metadata.previous-versions-max.
const defaultPreviousVersions = 100

// lastLoggedChange is the latest snapshot up to the one built whose
// changes_made names the table's id (0 for none).
func (b *builder) lastLoggedChange() int64 {
	id := strconv.FormatInt(b.h.Table.ID, 10)
	var last int64
	for _, s := range b.h.Snapshots {
		if s.ID > b.snap || s.ID < b.h.Table.Begin || !strings.Contains(s.Changes, id) {
			continue
		}
		for _, c := range ducklake.ParseChanges(s.Changes) {
			if c.Target == id {
				last = s.ID
			}
		}
	}
	return last
}

// metadataLog is the metadata-log of the metadata of version (the last
// snapshot that changed the table): the files recorded of earlier
// versions, at most write.metadata.previous-versions-max of them, newest
// kept.
func metadataLog(logged []LoggedMetadata, version int64, props map[string]string) []iceberg.MetadataLogEntry {
	keep := defaultPreviousVersions
	if v, err := strconv.Atoi(props["write.metadata.previous-versions-max"]); err == nil && v >= 0 {
		keep = v
	}
	var out []iceberg.MetadataLogEntry
	for _, m := range logged {
		if m.Snapshot < version {
			out = append(out, m.MetadataLogEntry)
		}
	}
	return out[max(0, len(out)-keep):]
}

// nameMapping is the table property readers use for files without field
// ids: every field by its current name, plus the names DuckLake's mappings
// give it in added files (Appendix C, name mapping serialization).
func nameMapping(schema *iceberg.Schema, mappings []ducklake.NameMapping) string {
	extra := map[int][]string{}
	for _, m := range mappings {
		for _, e := range m.Entries {
			extra[int(e.TargetFieldID)] = append(extra[int(e.TargetFieldID)], e.SourceName)
		}
	}
	type mapped struct {
		FieldID int      `json:"field-id"`
		Names   []string `json:"names"`
		Fields  []mapped `json:"fields,omitempty"`
	}
	var fieldsOf func(t iceberg.Type) []mapped
	one := func(f iceberg.NestedField) mapped {
		names := []string{f.Name}
		more := slices.Clone(extra[f.ID])
		slices.Sort(more)
		for _, n := range slices.Compact(more) {
			if n != f.Name {
				names = append(names, n)
			}
		}
		return mapped{FieldID: f.ID, Names: names, Fields: fieldsOf(f.Type)}
	}
	fieldsOf = func(t iceberg.Type) []mapped {
		var out []mapped
		switch t.ID {
		case iceberg.TypeStruct:
			for _, f := range t.Fields {
				out = append(out, one(f))
			}
		case iceberg.TypeList:
			out = append(out, one(*t.Element))
		case iceberg.TypeMap:
			out = append(out, one(*t.Key), one(*t.Value))
		}
		return out
	}
	b, _ := json.Marshal(fieldsOf(schema.AsStruct())) // plain structs: cannot fail
	return string(b)
}
