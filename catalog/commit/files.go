package commit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// inlinedDir is where catalog/materialize writes the Parquet files it
// makes of rows and deletions DuckDB keeps in Postgres; they are no
// DuckLake files, so a client cannot remove them.
const inlinedDir = "/__inlined__/"

// fileChange is what one Iceberg snapshot does to a table's files.
type fileChange struct {
	addData    []addedFile
	addDeletes []addedFile
	// addEqDeletes are equality delete files, which DuckLake has no
	// place for: they become position deletes (equality.go).
	addEqDeletes []addedFile
	removeData   []string
	removeDelete []string
	// removeDVs names the data files whose deletion vector (format
	// version 3) the snapshot removes: a vector lives inside a Puffin file
	// shared by many, so it goes by its data file, not by path.
	removeDVs []string
}

type addedFile struct {
	file *iceberg.DataFile
	spec iceberg.PartitionSpec
}

// Manifests holds what clients wrote for the snapshots of a commit: the
// manifest lists and the manifests those snapshots added. Reading them is
// the slow part of a commit (object storage round trips), so the catalog
// does it before its Postgres transaction begins, holding no locks.
type Manifests struct {
	lists     map[objstore.Location]*iceberg.ManifestListFile
	manifests map[objstore.Location]*iceberg.ManifestRead
}

func newManifests() *Manifests {
	return &Manifests{lists: map[objstore.Location]*iceberg.ManifestListFile{}, manifests: map[objstore.Location]*iceberg.ManifestRead{}}
}

// CommitDir checks, before anything is read, every location a commit to
// target names that the catalog would read: the table's directory (an
// existing table's, or where a table the commit creates goes: its
// namespace's path and name, or its set-location, within the namespace and
// overlapping no live table at snapshot snap) and the manifest list of each
// snapshot it adds, within that directory. The refusals do not depend on
// what object storage holds.
func (c *Catalog) CommitDir(ctx context.Context, q ducklake.Querier, snap int64, target Target, req *TableCommit) (TableDir, error) {
	var dir TableDir
	if target.Table != nil {
		var err error
		if dir, err = tableDirOf(target.Table.Path); err != nil {
			return TableDir{}, err
		}
	} else {
		if err := checkTableName(target.Name); err != nil {
			return TableDir{}, err
		}
		var requested string
		for _, u := range req.Updates {
			if u.Action == ActionSetLocation {
				requested = u.Location
			}
		}
		pl, err := place(target.Namespace, target.Name, requested)
		if err != nil {
			return TableDir{}, err
		}
		// A default location another table holds gets a path of its own
		// when the table is created, where these files are not.
		if dir, err = c.claim(ctx, q, snap, pl, pl.location); err != nil {
			return TableDir{}, err
		}
	}
	for _, u := range req.Updates {
		if u.Action == ActionAddSnapshot && u.Snapshot != nil {
			if _, err := dir.inside("manifest list", u.Snapshot.ManifestList); err != nil {
				return TableDir{}, err
			}
		}
	}
	return dir, nil
}

// ReadManifests reads the manifest lists of the snapshots req adds and the
// manifests each of those snapshots added, refusing any that is not inside
// dir (see CommitDir).
func (c *Catalog) ReadManifests(ctx context.Context, dir TableDir, req *TableCommit) (*Manifests, error) {
	m := newManifests()
	for i := range req.Updates {
		u := &req.Updates[i]
		if u.Action != ActionAddSnapshot || u.Snapshot == nil {
			continue
		}
		if err := m.read(ctx, c, dir, u.Snapshot); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Manifests) read(ctx context.Context, c *Catalog, dir TableDir, s *iceberg.Snapshot) error {
	listLoc, err := dir.inside("manifest list", s.ManifestList)
	if err != nil {
		return err
	}
	if c.objects == nil {
		return unsupported("this catalog has no storage client to read manifests with, so it cannot take snapshots")
	}
	if _, ok := m.lists[listLoc]; ok {
		return nil
	}
	list, err := c.readManifestList(ctx, s.ManifestList, dir)
	if err != nil {
		return err
	}
	m.lists[listLoc] = list
	for _, mf := range list.Files {
		if mf.AddedSnapshotID != s.SnapshotID {
			continue
		}
		loc, err := dir.inside("manifest", mf.Path)
		if err != nil {
			return err
		}
		if _, ok := m.manifests[loc]; ok {
			continue
		}
		man, err := c.readManifest(ctx, mf, dir)
		if err != nil {
			return err
		}
		m.manifests[loc] = man
	}
	return nil
}

// readManifestList reads the manifest list at path, which must be inside
// dir.
func (c *Catalog) readManifestList(ctx context.Context, path string, dir TableDir) (*iceberg.ManifestListFile, error) {
	loc, err := dir.inside("manifest list", path)
	if err != nil {
		return nil, err
	}
	data, err := c.objects.Get(ctx, loc, c.maxObjectBytes)
	if err != nil {
		return nil, objectError("manifest list", path, err)
	}
	list, err := iceberg.ReadManifestList(data)
	if err != nil {
		return nil, invalid("manifest list %s: %v", path, err)
	}
	return list, nil
}

// readManifest reads the manifest mf names, which must be inside dir, and
// gives it the spec id the manifest list says it was written under.
func (c *Catalog) readManifest(ctx context.Context, mf iceberg.ManifestFile, dir TableDir) (*iceberg.ManifestRead, error) {
	loc, err := dir.inside("manifest", mf.Path)
	if err != nil {
		return nil, err
	}
	data, err := c.objects.Get(ctx, loc, c.maxObjectBytes)
	if err != nil {
		return nil, objectError("manifest", mf.Path, err)
	}
	man, err := iceberg.ReadManifest(data)
	if err != nil {
		return nil, invalid("manifest %s: %v", mf.Path, err)
	}
	if len(man.Spec.Fields) > 0 && man.Spec.ID != mf.PartitionSpecID {
		return nil, invalid("manifest %s: partition spec %d in the file, %d in the manifest list", mf.Path, man.Spec.ID, mf.PartitionSpecID)
	}
	man.Spec.ID = mf.PartitionSpecID
	return man, nil
}

// addLive adds a live file (an ADDED or EXISTING entry) to ch: a data file
// or a position delete file inside dir, written under spec.
func (ch *fileChange) addLive(f iceberg.DataFile, spec iceberg.PartitionSpec, dir TableDir) error {
	loc, err := dir.inside("file", f.Path)
	if err != nil {
		return err
	}
	f.Path = loc.String()
	switch f.Content {
	case iceberg.ContentData:
		ch.addData = append(ch.addData, addedFile{file: &f, spec: spec})
	case iceberg.ContentPositionDeletes:
		ch.addDeletes = append(ch.addDeletes, addedFile{file: &f, spec: spec})
	case iceberg.ContentEqualityDeletes:
		ch.addEqDeletes = append(ch.addEqDeletes, addedFile{file: &f, spec: spec})
	default:
		return invalid("file %s has content %d", f.Path, f.Content)
	}
	return nil
}

// snapshotChanges collects the files snapshot s adds and removes. Only
// manifests added by s are read: carried-over manifests hold earlier
// snapshots' files, which is what lets a commit apply to a head that moved
// on (a DuckDB insert since the client's read stays in the table).
func (c *Catalog) snapshotChanges(ctx context.Context, m *Manifests, dir TableDir, s *iceberg.Snapshot) (*fileChange, error) {
	if err := m.read(ctx, c, dir, s); err != nil { // a no-op when prefetched
		return nil, err
	}
	listLoc, err := dir.inside("manifest list", s.ManifestList)
	if err != nil {
		return nil, err
	}
	list := m.lists[listLoc]
	ch := &fileChange{}
	for _, mf := range list.Files {
		if mf.AddedSnapshotID != s.SnapshotID {
			continue
		}
		loc, err := dir.inside("manifest", mf.Path)
		if err != nil {
			return nil, err
		}
		man := m.manifests[loc]
		spec := man.Spec
		for _, e := range man.Entries {
			ours := e.SnapshotID == nil || *e.SnapshotID == s.SnapshotID
			f := *e.File
			f.Path = spell(f.Path)
			switch {
			case e.Status == iceberg.StatusAdded && !ours:
				return nil, invalid("manifest %s: %s is ADDED by snapshot %d in a manifest of snapshot %d", mf.Path, f.Path, *e.SnapshotID, s.SnapshotID)
			case e.Status == iceberg.StatusAdded:
				if err := ch.addLive(f, spec, dir); err != nil {
					return nil, err
				}
			case e.Status == iceberg.StatusDeleted && ours:
				if f.Content == iceberg.ContentData {
					ch.removeData = append(ch.removeData, f.Path)
				} else if strings.EqualFold(f.Format, iceberg.FormatPuffin) {
					ch.removeDVs = append(ch.removeDVs, spell(f.ReferencedDataFile))
				} else {
					ch.removeDelete = append(ch.removeDelete, f.Path)
				}
			}
		}
	}
	return ch, nil
}

func objectError(what, location string, err error) error {
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return invalid("%s %s does not exist", what, location)
	case errors.Is(err, objstore.ErrTooLarge), errors.Is(err, objstore.ErrBadLocation): // a directory, say
		return invalid("%s %s: %v", what, location, err)
	}
	return fmt.Errorf("read %s %s: %w", what, location, err)
}

// liveData is a data file of the table live at the snapshot being written.
type liveData struct {
	id, begin   int64
	partitionID int64
	deleteID    int64 // its live delete file, 0 when none
	deletePath  string
	deleteBegin int64
}

type liveDelete struct {
	id, begin, dataFileID int64
}

// liveFiles indexes the table's live data and delete files by resolved
// path.
func (c *Catalog) liveFiles(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table) (map[string]*liveData, map[string]*liveDelete, error) {
	data := map[string]*liveData{}
	byID := map[int64]*liveData{}
	rows, err := tx.Query(ctx, `SELECT data_file_id, begin_snapshot, path, coalesce(path_is_relative, true), coalesce(partition_id, 0)
		FROM `+c.t("ducklake_data_file")+` WHERE table_id = $1 AND begin_snapshot <= $2 AND (end_snapshot IS NULL OR end_snapshot > $2)`, t.ID, snap.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("read the data files of table %d: %w", t.ID, err)
	}
	var (
		id, begin, part, dataID int64
		path                    string
		rel                     bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &begin, &path, &rel, &part}, func() error {
		f := &liveData{id: id, begin: begin, partitionID: part}
		data[resolve(t.Path, path, rel)] = f
		byID[id] = f
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the data files of table %d: %w", t.ID, err)
	}
	dels := map[string]*liveDelete{}
	rows, err = tx.Query(ctx, `SELECT delete_file_id, begin_snapshot, coalesce(path, ''), coalesce(path_is_relative, true), data_file_id
		FROM `+c.t("ducklake_delete_file")+` WHERE table_id = $1 AND begin_snapshot <= $2 AND (end_snapshot IS NULL OR end_snapshot > $2)`, t.ID, snap.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("read the delete files of table %d: %w", t.ID, err)
	}
	_, err = pgx.ForEachRow(rows, []any{&id, &begin, &path, &rel, &dataID}, func() error {
		p := resolve(t.Path, path, rel)
		dels[p] = &liveDelete{id: id, begin: begin, dataFileID: dataID}
		if f := byID[dataID]; f != nil {
			f.deleteID, f.deletePath, f.deleteBegin = id, p, begin
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read the delete files of table %d: %w", t.ID, err)
	}
	return data, dels, nil
}

func resolve(base, path string, relative bool) string {
	if relative {
		return base + path
	}
	return path
}

// leaf is a primitive column of the table with its DuckLake and Iceberg
// types, for statistics.
type leaf struct {
	duck ducklake.Type
	ice  iceberg.Type
}

// tableShape is what registering files needs to know about the table at
// the snapshot being written.
type tableShape struct {
	top        map[int64]ducklake.Field
	leaves     map[int64]leaf
	partitions map[int64]*ducklake.PartitionInfo
	// specParts maps the spec ids the sidecar records to their DuckLake
	// partition (0: unpartitioned); other spec ids are DuckLake partition
	// ids, as catalog/materialize serves partitionings DuckDB set.
	specParts map[int]int64
}

func (c *Catalog) shape(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table) (*tableShape, error) {
	cols, err := c.columnsAt(ctx, tx, snap, t.ID)
	if err != nil {
		return nil, err
	}
	fields, err := ducklake.BuildFields(cols)
	if err != nil {
		return nil, fmt.Errorf("table %d: %w", t.ID, err)
	}
	sh := &tableShape{top: topLevel(fields), leaves: map[int64]leaf{}, partitions: map[int64]*ducklake.PartitionInfo{}}
	for _, col := range cols {
		dt, err := ducklake.ParseType(col.Type)
		if err != nil || dt.Kind.Nested() {
			continue
		}
		it, err := materialize.IcebergType(ducklake.Field{ID: col.ID, Name: col.Name, Type: dt, Nullable: col.NullsAllowed}, 2)
		if err != nil {
			continue // a type Iceberg lacks: no statistics from Iceberg clients
		}
		sh.leaves[col.ID] = leaf{duck: dt, ice: it}
	}
	specs, err := c.reader(tx).PartitionSpecs(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	for i := range specs {
		sh.partitions[specs[i].ID] = &specs[i]
	}
	if sh.specParts, err = c.specPartitions(ctx, tx, t.ID); err != nil {
		return nil, err
	}
	return sh, nil
}

// partitionOf is the DuckLake partition a file (a data file, or an
// equality delete file's scope) written under a.spec belongs to and its
// values there: nil for an unpartitioned spec, and for a spec of truncate
// fields only, which has no DuckLake partition (its files are
// unpartitioned there, and catalog/materialize derives their values from
// their statistics). specAlias maps the specs the commit adds.
func (sh *tableShape) partitionOf(a addedFile, specAlias map[int]int64) (*ducklake.PartitionInfo, []*string, error) {
	f := a.file
	if len(a.spec.Fields) == 0 {
		return nil, nil, nil
	}
	specPart, ok := specAlias[a.spec.ID]
	if !ok {
		specPart, ok = sh.specParts[a.spec.ID]
	}
	if !ok {
		specPart = int64(a.spec.ID)
	}
	if specPart == 0 && ok {
		return nil, nil, nil
	}
	info := sh.partitions[specPart]
	if info == nil {
		return nil, nil, invalid("file %s is written for partition spec %d, which the table does not have", f.Path, a.spec.ID)
	}
	values, err := partitionValues(a.spec, f.Partition, info, sh.top)
	if err != nil {
		return nil, nil, fmt.Errorf("file %s: %w", f.Path, err)
	}
	return info, values, nil
}

// notLive refuses removing p, a what that is no longer part of the table.
// A path under the inlined directory names no file but rows DuckDB keeps
// in Postgres; held says how, and what Iceberg cannot do to them.
func notLive(what, p, held string) error {
	if strings.Contains(p, inlinedDir) {
		return unsupported("%s %s %s through Iceberg (flush them with DuckDB's ducklake_flush_inlined_data first)", what, p, held)
	}
	return conflict("%s %s is no longer part of the table", what, p)
}

// applyFiles registers a snapshot's file changes in DuckLake rows.
func (c *Catalog) applyFiles(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, ch *fileChange, operation string, specAlias map[int]int64) error {
	data, dels, err := c.liveFiles(ctx, tx, snap, t)
	if err != nil {
		return err
	}
	sh, err := c.shape(ctx, tx, snap, t)
	if err != nil {
		return err
	}
	removedDelete := map[int64]bool{}
	endDelete := func(id, begin int64, path string) error {
		if err := c.endRow(ctx, tx, snap, "ducklake_delete_file", "delete_file_id", id, begin); err != nil {
			return err
		}
		removedDelete[id] = true
		delete(dels, path)
		return nil
	}
	for _, p := range ch.removeDelete {
		d := dels[p]
		if d == nil {
			// Format version 2 serves each DuckLake delete file as a copy
			// Iceberg readers can read, named by its delete_file_id.
			if id, ok := materialize.TranslatedDeleteFileID(p); ok {
				for dp, dd := range dels {
					if dd.id == id {
						d, p = dd, dp
						break
					}
				}
			}
		}
		if d == nil {
			return notLive("delete file", p, "stands for deletions DuckDB keeps in Postgres; they cannot be removed")
		}
		if err := endDelete(d.id, d.begin, p); err != nil {
			return err
		}
	}
	for _, p := range ch.removeData {
		f := data[p]
		if f == nil {
			return notLive("data file", p, "holds rows DuckDB keeps in Postgres (inlined); they cannot be rewritten")
		}
		if err := c.endRow(ctx, tx, snap, "ducklake_data_file", "data_file_id", f.id, f.begin); err != nil {
			return err
		}
		if f.deleteID != 0 && !removedDelete[f.deleteID] {
			if err := endDelete(f.deleteID, f.deleteBegin, f.deletePath); err != nil {
				return err
			}
		}
		delete(data, p)
	}

	stats := newStatsAcc()
	var addedRows, addedBytes int64
	nextRowID, err := c.nextRowID(ctx, tx, t.ID)
	if err != nil {
		return err
	}
	for _, a := range ch.addData {
		f := a.file
		if !strings.EqualFold(f.Format, iceberg.FormatParquet) {
			return unsupported("data file %s is %s; DuckLake tables hold Parquet files only", f.Path, f.Format)
		}
		if f.KeyMetadata != nil {
			return unsupported("data file %s is encrypted; this catalog does not take encrypted files", f.Path)
		}
		if _, dup := data[f.Path]; dup {
			return conflict("data file %s is already part of the table", f.Path)
		}
		var partID any
		info, values, err := sh.partitionOf(a, specAlias)
		if err != nil {
			return err
		}
		if info != nil {
			partID = info.ID
		}
		id := snap.fileID()
		path, rel := relTo(t.Path, f.Path)
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_data_file")+` (data_file_id, table_id, begin_snapshot, end_snapshot, file_order,
				path, path_is_relative, file_format, record_count, file_size_bytes, footer_size, row_id_start, partition_id,
				encryption_key, mapping_id, partial_max)
			VALUES ($1, $2, $3, NULL, NULL, $4, $5, 'parquet', $6, $7, NULL, $8, $9, NULL, NULL, NULL)`,
			id, t.ID, snap.ID, path, rel, f.RecordCount, f.FileSizeBytes, nextRowID, partID); err != nil {
			return fmt.Errorf("insert data file %s: %w", f.Path, err)
		}
		for k, v := range values {
			if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_file_partition_value")+` (data_file_id, table_id, partition_key_index, partition_value)
				VALUES ($1, $2, $3, $4)`, id, t.ID, k, v); err != nil {
				return fmt.Errorf("insert partition value of %s: %w", f.Path, err)
			}
		}
		if err := c.insertFileStats(ctx, tx, t.ID, id, f, sh.leaves, stats); err != nil {
			return err
		}
		data[f.Path] = &liveData{id: id, begin: snap.ID}
		nextRowID += f.RecordCount
		addedRows += f.RecordCount
		addedBytes += f.FileSizeBytes
	}

	// A deletion vector replaces its data file's previous one, which holds
	// a subset of its positions (the spec's rule for writers): removing the
	// old vector is then part of adding the new. Removing one with no
	// successor would bring deleted rows back, which DuckLake cannot record.
	replaced := map[string]bool{}
	for _, a := range ch.addDeletes {
		if strings.EqualFold(a.file.Format, iceberg.FormatPuffin) {
			replaced[spell(a.file.ReferencedDataFile)] = true
		}
	}
	for _, p := range ch.removeDVs {
		if !replaced[p] && data[p] != nil {
			return unsupported("the snapshot removes the deletion vector of %s without adding another; that would restore deleted rows, which DuckLake cannot record", p)
		}
	}
	for _, a := range ch.addDeletes {
		f := a.file
		if f.KeyMetadata != nil {
			return unsupported("delete file %s is encrypted; this catalog does not take encrypted files", f.Path)
		}
		var err error
		switch {
		case strings.EqualFold(f.Format, iceberg.FormatParquet):
			err = c.addDelete(ctx, tx, snap, t, f, data, removedDelete)
		case strings.EqualFold(f.Format, iceberg.FormatPuffin):
			err = c.addDeletionVector(ctx, tx, snap, t, f, data, removedDelete)
		default:
			err = unsupported("delete file %s is %s; only Parquet position delete files and Puffin deletion vectors are taken", f.Path, f.Format)
		}
		if err != nil {
			return err
		}
	}

	if err := c.addEqualityDeletes(ctx, tx, snap, t, sh, ch, data, removedDelete, specAlias); err != nil {
		return err
	}

	if len(ch.addData) > 0 {
		if err := c.updateTableStats(ctx, tx, t.ID, addedRows, addedBytes, nextRowID, stats, sh.leaves); err != nil {
			return err
		}
	}
	tid := fmt.Sprint(t.ID)
	switch {
	case operation == iceberg.OpReplace && (len(ch.addData) > 0 || len(ch.removeData) > 0):
		snap.change("compacted_table:" + tid)
	default:
		if len(ch.addData) > 0 {
			snap.change("inserted_into_table:" + tid)
		}
		if len(ch.removeData) > 0 || len(ch.addDeletes) > 0 || len(ch.addEqDeletes) > 0 || len(ch.removeDelete) > 0 {
			snap.change("deleted_from_table:" + tid)
		}
	}
	return nil
}

// endRow ends a versioned row at the snapshot, or deletes it when this
// very snapshot created it (it was never visible).
func (c *Catalog) endRow(ctx context.Context, tx pgx.Tx, snap *Snapshot, table, idColumn string, id, begin int64) error {
	var err error
	if begin == snap.ID {
		_, err = tx.Exec(ctx, `DELETE FROM `+c.t(table)+` WHERE `+idColumn+` = $1`, id)
		if err == nil && table == "ducklake_data_file" {
			for _, side := range []string{"ducklake_file_column_stats", "ducklake_file_partition_value"} {
				if _, err = tx.Exec(ctx, `DELETE FROM `+c.t(side)+` WHERE data_file_id = $1`, id); err != nil {
					break
				}
			}
		}
	} else {
		_, err = tx.Exec(ctx, `UPDATE `+c.t(table)+` SET end_snapshot = $1 WHERE `+idColumn+` = $2 AND end_snapshot IS NULL`, snap.ID, id)
	}
	if err != nil {
		return fmt.Errorf("end %s %d: %w", table, id, err)
	}
	return nil
}

// nextRowID is the first row id of the next file (ducklake_table_stats).
func (c *Catalog) nextRowID(ctx context.Context, tx pgx.Tx, tableID int64) (int64, error) {
	var n *int64
	err := tx.QueryRow(ctx, `SELECT next_row_id FROM `+c.t("ducklake_table_stats")+` WHERE table_id = $1`, tableID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && n == nil {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the table stats of table %d: %w", tableID, err)
	}
	return *n, nil
}

// colAcc accumulates one column's statistics over the files a commit
// adds, for ducklake_table_column_stats.
type colAcc struct {
	hasNull, hasNaN bool
	nanKnown        bool
	min, max        any // Iceberg values; nil: none seen
	unbounded       bool
}

type statsAcc map[int64]*colAcc

func newStatsAcc() statsAcc { return statsAcc{} }

func (s statsAcc) col(id int64) *colAcc {
	a := s[id]
	if a == nil {
		a = &colAcc{}
		s[id] = a
	}
	return a
}

// insertFileStats writes ducklake_file_column_stats rows for the primitive
// columns the manifest entry has metrics for. DuckLake counts non-null
// values where Iceberg counts all values.
func (c *Catalog) insertFileStats(ctx context.Context, tx pgx.Tx, tableID, fileID int64, f *iceberg.DataFile, leaves map[int64]leaf, acc statsAcc) error {
	batch := &pgx.Batch{}
	for id, l := range leaves {
		k := int(id)
		size, hasSize := f.ColumnSizes[k]
		vc, hasVC := f.ValueCounts[k]
		nc, hasNC := f.NullValueCounts[k]
		lo, hasLo := f.LowerBounds[k]
		hi, hasHi := f.UpperBounds[k]
		if !hasSize && !hasVC && !hasNC && !hasLo && !hasHi {
			continue
		}
		var sizeArg, valuesArg, nullsArg, minArg, maxArg, nanArg any
		if hasSize {
			sizeArg = size
		}
		if hasVC && hasNC {
			valuesArg = vc - nc
		}
		if hasNC {
			nullsArg = nc
		}
		a := acc.col(id)
		a.hasNull = a.hasNull || !hasNC || nc > 0
		nonNull := !hasVC || !hasNC || vc > nc
		var loV, hiV any
		if hasLo {
			if v, err := iceberg.DecodeBinary(l.ice, lo); err == nil {
				if s, ok := duckText(l.duck, v, forStats); ok {
					minArg, loV = s, v
				}
			}
		}
		if hasHi {
			if v, err := iceberg.DecodeBinary(l.ice, hi); err == nil {
				if s, ok := duckText(l.duck, v, forStats); ok {
					maxArg, hiV = s, v
				}
			}
		}
		if nonNull && (loV == nil || hiV == nil) {
			a.unbounded = true
		}
		a.widen(l.ice, loV, hiV)
		if l.ice.ID == iceberg.TypeFloat || l.ice.ID == iceberg.TypeDouble {
			if n, ok := f.NaNValueCounts[k]; ok {
				nanArg = n > 0
				a.hasNaN = a.hasNaN || n > 0
			} else {
				a.hasNaN = true // unknown: assume the worst
			}
			a.nanKnown = true
		}
		batch.Queue(`INSERT INTO `+c.t("ducklake_file_column_stats")+` (data_file_id, table_id, column_id, column_size_bytes, value_count,
				null_count, min_value, max_value, contains_nan, extra_stats)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL)`, fileID, tableID, id, sizeArg, valuesArg, nullsArg, minArg, maxArg, nanArg)
	}
	if batch.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("insert column stats of %s: %w", f.Path, err)
	}
	return nil
}

func (a *colAcc) widen(t iceberg.Type, lo, hi any) {
	if lo != nil {
		if a.min == nil {
			a.min = lo
		} else if c, err := iceberg.CompareValues(t, lo, a.min); err == nil && c < 0 {
			a.min = lo
		}
	}
	if hi != nil {
		if a.max == nil {
			a.max = hi
		} else if c, err := iceberg.CompareValues(t, hi, a.max); err == nil && c > 0 {
			a.max = hi
		}
	}
}

// updateTableStats folds the added files into ducklake_table_stats and
// ducklake_table_column_stats, as a DuckDB insert does.
func (c *Catalog) updateTableStats(ctx context.Context, tx pgx.Tx, tableID, rows, bytes, nextRowID int64, acc statsAcc, leaves map[int64]leaf) error {
	tag, err := tx.Exec(ctx, `UPDATE `+c.t("ducklake_table_stats")+` SET record_count = coalesce(record_count, 0) + $2,
		next_row_id = $3, file_size_bytes = coalesce(file_size_bytes, 0) + $4 WHERE table_id = $1`, tableID, rows, nextRowID, bytes)
	if err == nil && tag.RowsAffected() == 0 {
		_, err = tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_table_stats")+` (table_id, record_count, next_row_id, file_size_bytes)
			VALUES ($1, $2, $3, $4)`, tableID, rows, nextRowID, bytes)
	}
	if err != nil {
		return fmt.Errorf("update the table stats of table %d: %w", tableID, err)
	}
	for id, a := range acc {
		l := leaves[id]
		var (
			hasNull, hasNaN *bool
			minS, maxS      *string
		)
		err := tx.QueryRow(ctx, `SELECT contains_null, contains_nan, min_value, max_value FROM `+c.t("ducklake_table_column_stats")+`
			WHERE table_id = $1 AND column_id = $2`, tableID, id).Scan(&hasNull, &hasNaN, &minS, &maxS)
		exists := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read the column stats of table %d: %w", tableID, err)
		}
		null := a.hasNull || exists && (hasNull == nil || *hasNull)
		var nan any
		if a.nanKnown {
			nan = a.hasNaN || exists && (hasNaN == nil || *hasNaN)
		}
		var minArg, maxArg any
		if !a.unbounded {
			lo, hi := a.min, a.max
			if exists {
				// An existing unknown bound stays unknown; a known one widens.
				lo = mergeBound(l, minS, lo, -1)
				hi = mergeBound(l, maxS, hi, 1)
			}
			if lo != nil {
				if s, ok := duckText(l.duck, lo, forStats); ok {
					minArg = s
				}
			}
			if hi != nil {
				if s, ok := duckText(l.duck, hi, forStats); ok {
					maxArg = s
				}
			}
		}
		if exists {
			_, err = tx.Exec(ctx, `UPDATE `+c.t("ducklake_table_column_stats")+` SET contains_null = $3, contains_nan = $4, min_value = $5, max_value = $6
				WHERE table_id = $1 AND column_id = $2`, tableID, id, null, nan, minArg, maxArg)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_table_column_stats")+` (table_id, column_id, contains_null, contains_nan, min_value, max_value, extra_stats)
				VALUES ($1, $2, $3, $4, $5, $6, NULL)`, tableID, id, null, nan, minArg, maxArg)
		}
		if err != nil {
			return fmt.Errorf("update the column stats of table %d: %w", tableID, err)
		}
	}
	return nil
}

// mergeBound combines a stored bound (DuckDB text, nil: unknown) with a
// new one; dir -1 keeps the smaller, 1 the larger. An unknown or
// unreadable stored bound makes the result unknown (nil).
func mergeBound(l leaf, stored *string, v any, dir int) any {
	if stored == nil {
		return nil
	}
	old, ok := statValue(l.duck, *stored)
	if !ok {
		return nil
	}
	if v == nil {
		return old
	}
	c, err := iceberg.CompareValues(l.ice, v, old)
	if err != nil {
		return nil
	}
	if c*dir > 0 {
		return v
	}
	return old
}

// statValue parses a DuckDB statistics value into the Iceberg value of
// the column's Iceberg type.
func statValue(t ducklake.Type, s string) (any, bool) {
	var v any
	var err error
	if t.Kind == ducklake.KindBlob {
		v, err = hex.DecodeString(s)
	} else {
		v, err = ducklake.ParseDuckDBText(t, s)
	}
	if err != nil {
		return nil, false
	}
	iv, err := materialize.IcebergValue(t, v)
	return iv, err == nil && iv != nil
}

// endContents ends every row of table t in snap — its live data files
// (with their delete files) and its inlined rows — as a replace
// transaction's removal of main asks: the replacement's snapshot then adds
// only the new files, and time travel still reads the rows before.
func (c *Catalog) endContents(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table) error {
	data, _, err := c.liveFiles(ctx, tx, snap, t)
	if err != nil {
		return err
	}
	ch := &fileChange{removeData: slices.Sorted(maps.Keys(data))}
	if err := c.applyFiles(ctx, tx, snap, t, ch, iceberg.OpDelete, nil); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT table_name FROM `+c.t("ducklake_inlined_data_tables")+` WHERE table_id = $1 ORDER BY schema_version`, t.ID)
	if err != nil {
		return fmt.Errorf("inlined data tables of table %d: %w", t.ID, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("inlined data tables of table %d: %w", t.ID, err)
	}
	ended := false
	for _, name := range names {
		tag, err := tx.Exec(ctx, `UPDATE `+c.t(pgx.Identifier{name}.Sanitize())+` SET end_snapshot = $1 WHERE end_snapshot IS NULL`, snap.ID)
		if err != nil {
			return fmt.Errorf("end the inlined rows of table %d: %w", t.ID, err)
		}
		ended = ended || tag.RowsAffected() > 0
	}
	if ended {
		snap.change("deleted_from_table:" + strconv.FormatInt(t.ID, 10))
	}
	return nil
}
