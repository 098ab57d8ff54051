package commit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// declaredTarget is the one data file a position delete file says it
// refers to (referenced_data_file or equal file_path bounds), or "".
func declaredTarget(f *iceberg.DataFile) string {
	if f.ReferencedDataFile != "" {
		return spell(f.ReferencedDataFile)
	}
	lo, hi := f.LowerBounds[iceberg.PositionDeleteFilePathID], f.UpperBounds[iceberg.PositionDeleteFilePathID]
	if lo != nil && string(lo) == string(hi) {
		return spell(string(lo))
	}
	return ""
}

// addDelete registers the position delete file f. DuckLake keeps one delete
// file per data file holding every deleted position, so a file naming no
// single target is read (DuckDB's iceberg extension writes neither
// referenced_data_file nor bounds); one that names several data files is
// split, and one whose data file already has a delete file is merged with
// it, into files written beside f.
func (c *Catalog) addDelete(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, f *iceberg.DataFile,
	data map[string]*liveData, removedDelete map[int64]bool) error {
	hasDelete := func(d *liveData) bool { return d.deleteID != 0 && !removedDelete[d.deleteID] }
	target := declaredTarget(f)
	if d := data[target]; d != nil && !hasDelete(d) {
		return c.insertDelete(ctx, tx, snap, t, d, f.Path, f.RecordCount, f.FileSizeBytes)
	}
	if target != "" && data[target] == nil {
		return conflict("position delete file %s targets data file %s, which is not part of the table", f.Path, target)
	}
	body, err := c.get(ctx, "position delete file", f.Path,
		fmt.Sprintf("position delete file %s names no single data file (no referenced_data_file or equal file_path bounds) and", f.Path))
	if err != nil {
		return err
	}
	pd, err := materialize.ReadPositionDeletes(ctx, body)
	if err != nil {
		return invalid("position delete file %s: %v", f.Path, err)
	}
	paths, pos := pd.Paths, pd.Pos
	if paths == nil {
		return invalid("position delete file %s has no file_path column", f.Path)
	}
	byTarget := map[string][]int64{}
	for i, p := range paths {
		p = spell(p)
		byTarget[p] = append(byTarget[p], pos[i])
	}
	if target != "" && (len(byTarget) != 1 || byTarget[target] == nil) {
		return invalid("position delete file %s declares data file %s but its rows name %d data files", f.Path, target, len(byTarget))
	}
	return c.addPositions(ctx, tx, snap, t, f, data, removedDelete, byTarget, true)
}

// addDeletionVector registers a format version 3 deletion vector: blob
// [content_offset, +content_size_in_bytes) of Puffin file f, for its
// referenced data file. DuckLake holds Parquet delete files only, so the
// positions are written as one beside f (merged with the data file's
// existing deletes, of which the vector is a superset by the spec).
func (c *Catalog) addDeletionVector(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, f *iceberg.DataFile,
	data map[string]*liveData, removedDelete map[int64]bool) error {
	target := spell(f.ReferencedDataFile)
	if target == "" || f.ContentOffset == nil || f.ContentSizeInBytes == nil {
		return invalid("deletion vector %s has no referenced_data_file, content_offset or content_size_in_bytes", f.Path)
	}
	if data[target] == nil {
		return conflict("deletion vector in %s targets data file %s, which is not part of the table", f.Path, target)
	}
	body, err := c.get(ctx, "Puffin file", f.Path, "deletion vector in "+f.Path+":")
	if err != nil {
		return err
	}
	off, n := *f.ContentOffset, *f.ContentSizeInBytes
	if off < 0 || n <= 0 || off > int64(len(body)) || n > int64(len(body))-off {
		return invalid("deletion vector in %s: blob at %d+%d lies outside the file's %d bytes", f.Path, off, n, len(body))
	}
	dv, err := iceberg.ParseDeletionVector(body[off : off+n])
	if err != nil {
		return invalid("deletion vector in %s: %v", f.Path, err)
	}
	positions := slices.Collect(dv.Positions())
	if int64(len(positions)) != f.RecordCount {
		return invalid("deletion vector in %s for %s: record_count %d, the vector holds %d positions", f.Path, target, f.RecordCount, len(positions))
	}
	return c.addPositions(ctx, tx, snap, t, f, data, removedDelete, map[string][]int64{target: positions}, false)
}

// addPositions records the positions byTarget deletes, per data file, for
// delete file f: f itself when it is a Parquet file (asIs) of one data file
// that has no deletes yet, else Parquet files written beside f holding each
// data file's deletes merged with those it had.
func (c *Catalog) addPositions(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, f *iceberg.DataFile,
	data map[string]*liveData, removedDelete map[int64]bool, byTarget map[string][]int64, asIs bool) error {
	hasDelete := func(d *liveData) bool { return d.deleteID != 0 && !removedDelete[d.deleteID] }
	targets := make([]string, 0, len(byTarget))
	for p := range byTarget {
		if data[p] == nil {
			return conflict("position delete file %s targets data file %s, which is not part of the table", f.Path, p)
		}
		targets = append(targets, p)
	}
	slices.Sort(targets)
	if len(targets) == 0 {
		return invalid("position delete file %s has no rows", f.Path)
	}
	if d := data[targets[0]]; asIs && len(targets) == 1 && !hasDelete(d) {
		return c.insertDelete(ctx, tx, snap, t, d, f.Path, int64(len(byTarget[targets[0]])), f.FileSizeBytes)
	}
	for _, p := range targets {
		d := data[p]
		positions := byTarget[p]
		if hasDelete(d) {
			if strings.Contains(d.deletePath, inlinedDir) {
				return unsupported("position delete file %s targets data file %s, whose deletions DuckDB keeps in Postgres; flush them with DuckDB's ducklake_flush_inlined_data first", f.Path, p)
			}
			old, err := c.get(ctx, "delete file", d.deletePath, "delete file "+d.deletePath+":")
			if err != nil {
				return err
			}
			oldDeletes, err := materialize.ReadPositionDeletes(ctx, old)
			if err != nil {
				return fmt.Errorf("delete file %s: %w", d.deletePath, err)
			}
			positions = append(positions, oldDeletes.Pos...)
			if err := c.endRow(ctx, tx, snap, "ducklake_delete_file", "delete_file_id", d.deleteID, d.deleteBegin); err != nil {
				return err
			}
			if d.deleteBegin == snap.ID {
				// Registered by this same commit, so no snapshot ever saw
				// it: endRow deleted its row, and the file goes.
				if err := c.scheduleReplaced(ctx, tx, d.deleteID, d.deletePath); err != nil {
					return err
				}
			}
			removedDelete[d.deleteID] = true
		}
		slices.Sort(positions)
		positions = slices.Compact(positions)
		out, err := materialize.WritePositionDeletes(p, positions)
		if err != nil {
			return fmt.Errorf("write the position deletes of %s: %w", p, err)
		}
		// Deterministic, so a retried commit writes the same object.
		// Beside f, so inside the table's location as f is.
		loc := strings.TrimSuffix(strings.TrimSuffix(f.Path, ".parquet"), ".puffin") + "-" + strconv.FormatInt(d.id, 10) + ".parquet"
		if err := c.put(ctx, loc, out); err != nil {
			return fmt.Errorf("write delete file %s: %w", loc, err)
		}
		if err := c.insertDelete(ctx, tx, snap, t, d, loc, int64(len(positions)), int64(len(out))); err != nil {
			return err
		}
	}
	// The client's file is replaced by the ones written above and never
	// registered: it goes too.
	return c.replaceClientFile(ctx, tx, snap, f.Path)
}

// replaceClientFile schedules a delete file the client wrote and the
// commit does not register for deletion (under a file id of its own, which
// DuckDB's cleanup removes the row by), once per snapshot.
func (c *Catalog) replaceClientFile(ctx context.Context, tx pgx.Tx, snap *Snapshot, location string) error {
	if snap.replaced[location] {
		return nil
	}
	if snap.replaced == nil {
		snap.replaced = map[string]bool{}
	}
	snap.replaced[location] = true
	return c.scheduleReplaced(ctx, tx, snap.fileID(), location)
}

// scheduleReplaced schedules a delete file that no snapshot references for
// deletion (ducklake_files_scheduled_for_deletion, which DuckDB's
// ducklake_cleanup_old_files empties), in the commit's transaction: if the
// commit fails, nothing was scheduled and the client's files stay as they
// were.
func (c *Catalog) scheduleReplaced(ctx context.Context, tx pgx.Tx, id int64, location string) error {
	md, err := c.reader(tx).Metadata(ctx)
	if err != nil {
		return err
	}
	return c.scheduleDeletion(ctx, tx, md.DataPath, id, location)
}

// insertDelete registers the delete file at path as data file d's.
func (c *Catalog) insertDelete(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, d *liveData, location string, count, size int64) error {
	id := snap.fileID()
	path, rel := relTo(t.Path, location)
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_delete_file")+` (delete_file_id, table_id, begin_snapshot, end_snapshot, data_file_id,
			path, path_is_relative, format, delete_count, file_size_bytes, footer_size, encryption_key, partial_max)
		VALUES ($1, $2, $3, NULL, $4, $5, $6, 'parquet', $7, $8, NULL, NULL, NULL)`,
		id, t.ID, snap.ID, d.id, path, rel, count, size); err != nil {
		return fmt.Errorf("insert delete file %s: %w", location, err)
	}
	d.deleteID, d.deletePath, d.deleteBegin = id, location, snap.ID
	return nil
}

// get reads the object at location, a file of the table (a what, for the
// errors): one the commit checked to be inside the table's location
// (addLive), or one DuckLake records as the table's. Without an object
// reader it is refused, the refusal beginning with unreadable.
func (c *Catalog) get(ctx context.Context, what, location, unreadable string) ([]byte, error) {
	if c.objects == nil {
		return nil, unsupported("%s this catalog has no object reader to read it", unreadable)
	}
	loc, err := objstore.Parse(location)
	if err != nil {
		return nil, objectError(what, location, err)
	}
	body, err := c.objects.Get(ctx, loc, c.maxObjectBytes)
	if err != nil {
		return nil, objectError(what, location, err)
	}
	return body, nil
}

// put writes location, a file of the table beside one the commit checked.
func (c *Catalog) put(ctx context.Context, location string, body []byte) error {
	loc, err := objstore.Parse(location)
	if err != nil {
		return err
	}
	return c.objects.Put(ctx, loc, body)
}
