package materialize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/duckicelake/duckicelake/internal/bounded"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// maxDeleteFileBytes bounds one DuckLake delete file read for format
// version 3 (its positions become a deletion vector in memory).
const maxDeleteFileBytes = 256 << 20

// LoadDeletePositions reads into h.DeletePositions the positions of every
// delete file of h that a snapshot up to snapshotID can see, with the
// snapshot each was deleted at where the file records it (DuckDB writes
// _ducklake_internal_snapshot_id when one file gathers the deletions of
// several snapshots). Build needs them for format version 3.
func LoadDeletePositions(ctx context.Context, r objstore.Reader, h *History, snapshotID int64) error {
	if h.DeletePositions == nil {
		h.DeletePositions = map[int64][]DeletedPosition{}
	}
	for _, d := range h.DeleteFiles {
		if d.Begin > snapshotID || h.DeletePositions[d.ID] != nil {
			continue
		}
		if err := checkFile(d.Path, d.Format, d.EncryptionKey); err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("delete file %s: no object reader to read it with", d.Path)
		}
		var pos []DeletedPosition
		var err error
		if pr, ok := r.(*PositionCache); ok {
			pos, err = pr.positions(ctx, d.Path)
		} else {
			pos, err = loadPositions(ctx, r, d.Path)
		}
		if err != nil {
			return err
		}
		if pos == nil {
			pos = []DeletedPosition{}
		}
		h.DeletePositions[d.ID] = pos
	}
	return nil
}

func loadPositions(ctx context.Context, r objstore.Reader, location string) ([]DeletedPosition, error) {
	loc, err := objstore.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("delete file: %w", err)
	}
	body, err := r.Get(ctx, loc, maxDeleteFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read delete file %s: %w", location, err)
	}
	pos, err := readDeletePositions(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("delete file %s: %w", location, err)
	}
	return pos, nil
}

// PositionCache is an objstore.Reader that remembers what the delete files
// it read delete. A file at a location never changes, so with one in
// Options.Objects each delete file is read and parsed once, not on every
// snapshot of its table. It holds at most max positions (least recently
// used files go first) and is safe for concurrent use.
type PositionCache struct {
	r objstore.Reader

	mu sync.Mutex
	// lru weighs each file by its positions.
	lru bounded.LRU[string, []DeletedPosition]
}

// NewPositionCache caches the positions of delete files read through r,
// up to max positions in all (0 means 1<<22, about 64 MiB).
func NewPositionCache(r objstore.Reader, max int) *PositionCache {
	if max <= 0 {
		max = 1 << 22
	}
	c := &PositionCache{r: r}
	c.lru.Max, c.lru.Weight = max, func(p []DeletedPosition) int { return len(p) }
	return c
}

// Get reads loc through the underlying reader, uncached.
func (c *PositionCache) Get(ctx context.Context, loc objstore.Location, max int64) ([]byte, error) {
	return c.r.Get(ctx, loc, max)
}

// positions returns the positions of the delete file at location; callers
// must not modify them.
func (c *PositionCache) positions(ctx context.Context, location string) ([]DeletedPosition, error) {
	c.mu.Lock()
	pos, ok := c.lru.Get(location)
	c.mu.Unlock()
	if ok {
		return pos, nil
	}
	pos, err := loadPositions(ctx, c.r, location)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if _, ok := c.lru.Get(location); !ok {
		c.lru.Put(location, pos)
	}
	c.mu.Unlock()
	return pos, nil
}

// ducklakeSnapshotColumn is the column DuckDB adds to a delete file that
// holds deletions of several snapshots.
const ducklakeSnapshotColumn = "_ducklake_internal_snapshot_id"

// PositionDeletes is the content of a Parquet position delete file.
type PositionDeletes struct {
	// Pos are the deleted row positions, in file order.
	Pos []int64
	// Paths is the file_path column, like Pos; nil when the file has none
	// (as some of DuckLake's delete files).
	Paths []string
	// Snapshots is DuckDB's _ducklake_internal_snapshot_id column, like
	// Pos (0 where null); nil when the file has none.
	Snapshots []int64
}

// ReadPositionDeletes reads a Parquet position delete file, an untrusted
// one too: a corrupt file is an error, never a panic.
func ReadPositionDeletes(ctx context.Context, body []byte) (_ *PositionDeletes, err error) {
	defer func() {
		// The Parquet reader panics on some corrupt input; a bad file must
		// fail the build or the commit, not the process.
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt Parquet file: %v", p)
		}
	}()
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	sc := pf.MetaData().Schema
	posCol := sc.ColumnIndexByName("pos")
	if posCol < 0 {
		return nil, errors.New("no pos column")
	}
	pos, valid, err := readInt64Column(ctx, fr, posCol)
	if err != nil {
		return nil, fmt.Errorf("pos: %w", err)
	}
	for i := range pos {
		if !valid[i] {
			return nil, fmt.Errorf("row %d: null position", i)
		}
	}
	out := &PositionDeletes{Pos: pos}
	if snapCol := sc.ColumnIndexByName(ducklakeSnapshotColumn); snapCol >= 0 {
		snaps, _, err := readInt64Column(ctx, fr, snapCol)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ducklakeSnapshotColumn, err)
		}
		if len(snaps) != len(pos) {
			return nil, fmt.Errorf("%s has %d rows, pos %d", ducklakeSnapshotColumn, len(snaps), len(pos))
		}
		out.Snapshots = snaps
	}
	if pathCol := sc.ColumnIndexByName("file_path"); pathCol >= 0 {
		if out.Paths, err = readStringColumn(ctx, fr, pathCol); err != nil {
			return nil, fmt.Errorf("file_path: %w", err)
		}
		if len(out.Paths) != len(pos) {
			return nil, fmt.Errorf("file_path has %d rows, pos %d", len(out.Paths), len(pos))
		}
	}
	return out, nil
}

// readDeletePositions reads the positions (and snapshots, when the file
// has them) of a Parquet position delete file.
func readDeletePositions(ctx context.Context, body []byte) ([]DeletedPosition, error) {
	pd, err := ReadPositionDeletes(ctx, body)
	if err != nil {
		return nil, err
	}
	out := make([]DeletedPosition, len(pd.Pos))
	for i, p := range pd.Pos {
		out[i].Pos = p
		if pd.Snapshots != nil {
			out[i].Snapshot = pd.Snapshots[i]
		}
	}
	return out, nil
}

// readChunks reads all of leaf column col; the caller releases it.
func readChunks(ctx context.Context, fr *pqarrow.FileReader, col int) (*arrow.Chunked, error) {
	cr, err := fr.GetColumn(ctx, col)
	if err != nil {
		return nil, err
	}
	return cr.NextBatch(fr.ParquetReader().NumRows())
}

// readInt64Column reads leaf column col: values, and whether each is non-null.
func readInt64Column(ctx context.Context, fr *pqarrow.FileReader, col int) ([]int64, []bool, error) {
	chunked, err := readChunks(ctx, fr, col)
	if err != nil {
		return nil, nil, err
	}
	defer chunked.Release()
	if chunked.DataType().ID() != arrow.INT64 {
		return nil, nil, fmt.Errorf("type %s, want int64", chunked.DataType())
	}
	vals := make([]int64, 0, chunked.Len())
	valid := make([]bool, 0, chunked.Len())
	for _, c := range chunked.Chunks() {
		a := c.(*array.Int64)
		for i := range a.Len() {
			vals = append(vals, a.Value(i))
			valid = append(valid, a.IsValid(i))
		}
	}
	return vals, valid, nil
}

// readStringColumn reads leaf column col of strings (or binary), none null.
func readStringColumn(ctx context.Context, fr *pqarrow.FileReader, col int) ([]string, error) {
	chunked, err := readChunks(ctx, fr, col)
	if err != nil {
		return nil, err
	}
	defer chunked.Release()
	out := make([]string, 0, chunked.Len())
	for _, c := range chunked.Chunks() {
		for i := range c.Len() {
			if c.IsNull(i) {
				return nil, fmt.Errorf("row %d: null", len(out))
			}
			switch s := c.(type) {
			case *array.String:
				out = append(out, s.Value(i))
			case *array.Binary:
				out = append(out, string(s.Value(i)))
			default:
				return nil, fmt.Errorf("type %s, want string", c.DataType())
			}
		}
	}
	return out, nil
}
