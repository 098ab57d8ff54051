package commit

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// declaredTarget is the one data file a position delete file says it
// refers to (referenced_data_file or equal file_path bounds), or "".
func declaredTarget(f *iceberg.DataFile) string {
	if f.ReferencedDataFile != "" {
		return normLocation(f.ReferencedDataFile)
	}
	lo, hi := f.LowerBounds[iceberg.PositionDeleteFilePathID], f.UpperBounds[iceberg.PositionDeleteFilePathID]
	if lo != nil && string(lo) == string(hi) {
		return normLocation(string(lo))
	}
	return ""
}

// addDelete registers the position delete file f as the delete file of
// the one data file it refers to. DuckDB's iceberg extension writes neither
// referenced_data_file nor file_path bounds, so then the file's file_path
// column tells. DuckLake keeps one delete file per data file: a file that
// spans data files, or whose data file already has a delete file, is
// refused.
func (c *Catalog) addDelete(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, f *iceberg.DataFile,
	data map[string]*liveData, removedDelete map[int64]bool) error {
	target := declaredTarget(f)
	if target == "" {
		var err error
		if target, err = c.readTarget(ctx, f); err != nil {
			return err
		}
	}
	d := data[target]
	if d == nil {
		return conflict("position delete file %s targets data file %s, which is not part of the table", f.Path, target)
	}
	if d.deleteID != 0 && !removedDelete[d.deleteID] {
		return unsupported("position delete file %s targets data file %s, which already has delete file %s; DuckLake keeps one delete file per data file, so write one file with every deleted position and remove the old one in the same commit",
			f.Path, target, d.deletePath)
	}
	return c.insertDelete(ctx, tx, snap, t, d, f.Path, f.RecordCount, f.FileSizeBytes)
}

// readTarget reads the file_path column of position delete file f: the one
// data file all its rows name.
func (c *Catalog) readTarget(ctx context.Context, f *iceberg.DataFile) (string, error) {
	lo, hi := f.LowerBounds[iceberg.PositionDeleteFilePathID], f.UpperBounds[iceberg.PositionDeleteFilePathID]
	several := func() error {
		return unsupported("position delete file %s references several data files (no referenced_data_file, file_path bounds %q..%q); DuckLake keeps one delete file per data file, so write one position delete file per data file",
			f.Path, lo, hi)
	}
	if lo != nil || hi != nil {
		// Unequal bounds already say the rows name several files.
		return "", several()
	}
	if c.objects == nil {
		return "", unsupported("position delete file %s names no data file (no referenced_data_file or file_path bounds) and this catalog has no object reader to read it", f.Path)
	}
	body, err := c.objects.ReadObject(ctx, f.Path, c.maxObjectBytes)
	if err != nil {
		return "", objectError("position delete file", f.Path, err)
	}
	paths, _, err := readPositionDeletes(ctx, body)
	if err != nil {
		return "", invalid("position delete file %s: %v", f.Path, err)
	}
	if len(paths) == 0 {
		return "", invalid("position delete file %s has no file_path column or no rows", f.Path)
	}
	for _, p := range paths[1:] {
		if p != paths[0] {
			return "", several()
		}
	}
	return normLocation(paths[0]), nil
}

// insertDelete registers the delete file at path as data file d's.
func (c *Catalog) insertDelete(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, d *liveData, location string, count, size int64) error {
	id := snap.fileID()
	path, rel := relPath(t.Path, location)
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_delete_file")+` (delete_file_id, table_id, begin_snapshot, end_snapshot, data_file_id,
			path, path_is_relative, format, delete_count, file_size_bytes, footer_size, encryption_key, partial_max)
		VALUES ($1, $2, $3, NULL, $4, $5, $6, 'parquet', $7, $8, NULL, NULL, NULL)`,
		id, t.ID, snap.ID, d.id, path, rel, count, size); err != nil {
		return fmt.Errorf("insert delete file %s: %w", location, err)
	}
	d.deleteID, d.deletePath, d.deleteBegin = id, location, snap.ID
	return nil
}

// readPositionDeletes reads a Parquet position delete file: its file_path
// column (nil when it has none, as in some DuckLake delete files) and its
// pos column.
func readPositionDeletes(ctx context.Context, body []byte) (paths []string, pos []int64, err error) {
	defer func() {
		// The Parquet reader panics on some corrupt input; a bad client file
		// must fail the commit, not the process.
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt Parquet file: %v", p)
		}
	}()
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, err
	}
	sc := pf.MetaData().Schema
	posCol := sc.ColumnIndexByName("pos")
	if posCol < 0 {
		return nil, nil, errors.New("no pos column")
	}
	err = readColumn(ctx, fr, posCol, func(a arrow.Array) error {
		ints, ok := a.(*array.Int64)
		if !ok {
			return fmt.Errorf("pos is %s, want int64", a.DataType())
		}
		for i := range ints.Len() {
			if ints.IsNull(i) {
				return errors.New("null pos")
			}
			pos = append(pos, ints.Value(i))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	pathCol := sc.ColumnIndexByName("file_path")
	if pathCol < 0 {
		return nil, pos, nil
	}
	paths = make([]string, 0, len(pos))
	err = readColumn(ctx, fr, pathCol, func(a arrow.Array) error {
		for i := range a.Len() {
			if a.IsNull(i) {
				return errors.New("null file_path")
			}
			switch s := a.(type) {
			case *array.String:
				paths = append(paths, s.Value(i))
			case *array.Binary:
				paths = append(paths, string(s.Value(i)))
			default:
				return fmt.Errorf("file_path is %s, want string", a.DataType())
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(paths) != len(pos) {
		return nil, nil, fmt.Errorf("file_path has %d rows, pos %d", len(paths), len(pos))
	}
	return paths, pos, nil
}

func readColumn(ctx context.Context, fr *pqarrow.FileReader, col int, each func(arrow.Array) error) error {
	cr, err := fr.GetColumn(ctx, col)
	if err != nil {
		return err
	}
	chunked, err := cr.NextBatch(fr.ParquetReader().NumRows())
	if err != nil {
		return err
	}
	defer chunked.Release()
	for _, a := range chunked.Chunks() {
		if err := each(a); err != nil {
			return err
		}
	}
	return nil
}
