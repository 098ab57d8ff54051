package materialize

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// Format version 3 differs from 2 in two ways here.
//
// Deletes are deletion vectors: for each data file and each stretch of
// snapshots over which its deleted rows stay the same, one
// deletion-vector-v1 blob holding every position deleted by then — from
// DuckLake delete files and from deletions kept in Postgres alike, since the
// spec allows at most one vector per data file in a snapshot. The vectors a
// snapshot adds share one Puffin file under <table>/metadata/.
//
// Row lineage comes from DuckLake's row ids: a data file's first_row_id is
// its row_id_start (an inlined file's, the row id of its first row; inlined
// rows are split into files of consecutive row ids), so _row_id reads as
// DuckLake's row id. Files DuckDB writes for UPDATE keep the updated rows'
// ids in _ducklake_internal_row_id, whose Parquet field id is _row_id's
// (2147483540): readers take those over first_row_id + position, as the
// spec says, and the ids survive updates.

// DeletedPosition is one row of a DuckLake delete file: position Pos of its
// data file, deleted at snapshot Snapshot (0 when the file does not say;
// then at the delete file's begin snapshot).
type DeletedPosition struct {
	Pos, Snapshot int64
}

// dvSource is a contribution to one data file's deleted rows: positions,
// each deleted from its snapshot on, while the source is live in
// [begin, end) (end 0: open). Raw DuckLake snapshot ids.
type dvSource struct {
	begin, end int64
	dels       []DeletedPosition
}

func (b *builder) addDVSource(target *item, src dvSource) {
	if b.dvSources == nil {
		b.dvSources = map[*item][]dvSource{}
	}
	if _, ok := b.dvSources[target]; !ok {
		b.dvTargets = append(b.dvTargets, target)
	}
	b.dvSources[target] = append(b.dvSources[target], src)
}

// deleteFileDV records DuckLake delete file d of target as a source of
// deletion vectors, from the positions LoadDeletePositions read. A file that
// holds deletions of several snapshots without saying which is which leaves
// those snapshots unrepresentable, as in format version 2.
func (b *builder) deleteFileDV(target *item, df ducklake.DeleteFile) error {
	positions, ok := b.h.DeletePositions[df.ID]
	if !ok {
		return fmt.Errorf("delete file %s: format version 3 needs its positions (materialise with Options.Objects)", df.Path)
	}
	dels := make([]DeletedPosition, len(positions))
	untimed := false
	for i, p := range positions {
		if p.Snapshot == 0 {
			p.Snapshot, untimed = df.Begin, true
		}
		dels[i] = p
	}
	if untimed && df.PartialMax > df.Begin {
		b.markBad(df.Begin, df.PartialMax, fmt.Errorf("delete file %s holds deletions of snapshots %d..%d without saying which; Iceberg cannot show the earlier ones alone", df.Path, df.Begin, df.PartialMax))
	}
	b.addDVSource(target, dvSource{begin: df.Begin, end: df.End, dels: dels})
	return nil
}

// pointDVs records deletions kept in Postgres (at(i) gives the i-th as
// snapshot, position) as a source of target's deletion vectors.
func (b *builder) pointDVs(target *item, n int, at func(i int) (snap, pos int64)) {
	dels := make([]DeletedPosition, n)
	for i := range n {
		s, p := at(i)
		dels[i] = DeletedPosition{Pos: p, Snapshot: s}
	}
	b.addDVSource(target, dvSource{dels: dels})
}

// deletionVectors turns the recorded sources into deletion-vector items:
// per data file, the snapshots where its deleted set may change split its
// life into stretches, each with the vector of what is deleted then
// (unchanged neighbours merged, empty stretches left out). The vectors
// beginning at one snapshot go into one Puffin file.
func (b *builder) deletionVectors() error {
	type dvItem struct {
		target     *item
		begin, end int64
		dv         *iceberg.DeletionVector
	}
	var dvs []dvItem
	for _, t := range b.dvTargets {
		srcs := b.dvSources[t]
		bounds := []int64{t.begin}
		addBound := func(raw int64) {
			if raw == 0 || raw > b.snap {
				return
			}
			if c := b.clamp(raw); c > t.begin && (t.end == 0 || c < t.end) {
				bounds = append(bounds, c)
			}
		}
		for _, src := range srcs {
			addBound(src.begin)
			addBound(src.end)
			for _, d := range src.dels {
				addBound(d.Snapshot)
			}
		}
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		last := -1 // index in dvs of t's previous vector, if it ends where the next stretch starts
		for i, s := range bounds {
			end := t.end
			if i+1 < len(bounds) {
				end = bounds[i+1]
			}
			dv := &iceberg.DeletionVector{}
			for _, src := range srcs {
				if src.begin > s || (src.end != 0 && src.end <= s) {
					continue
				}
				for _, d := range src.dels {
					if d.Snapshot <= s {
						if err := dv.Add(d.Pos); err != nil {
							return fmt.Errorf("deletes of %s: %w", t.file.Path, err)
						}
					}
				}
			}
			switch {
			case last >= 0 && dvs[last].dv.Equal(dv):
				dvs[last].end = end
			case dv.Cardinality() == 0:
				last = -1
			default:
				dvs = append(dvs, dvItem{t, s, end, dv})
				last = len(dvs) - 1
			}
		}
	}
	slices.SortFunc(dvs, func(x, y dvItem) int {
		return cmp.Or(cmp.Compare(x.begin, y.begin), cmp.Compare(x.target.file.Path, y.target.file.Path))
	})
	for i := 0; i < len(dvs); {
		j := i
		for j < len(dvs) && dvs[j].begin == dvs[i].begin {
			j++
		}
		w := iceberg.NewPuffinWriter("duckicelake")
		blobs := make([]iceberg.PuffinBlobMetadata, 0, j-i)
		for _, d := range dvs[i:j] {
			m, err := w.AddDeletionVector(d.target.file.Path, d.dv)
			if err != nil {
				return err
			}
			blobs = append(blobs, m)
		}
		body, err := w.Finish()
		if err != nil {
			return err
		}
		s := dvs[i].begin
		loc := b.metaDir + fmt.Sprintf("%d-%s-dv.puffin", s, contentHash(body))
		b.addFile(loc, body)
		for k, d := range dvs[i:j] {
			m := blobs[k]
			b.add(d.begin, d.end, s, d.target.specID, &iceberg.DataFile{
				Content: iceberg.ContentPositionDeletes, Path: loc, Format: iceberg.FormatPuffin,
				Partition: d.target.file.Partition, RecordCount: d.dv.Cardinality(), FileSizeBytes: int64(len(body)),
				ReferencedDataFile: d.target.file.Path, ContentOffset: &m.Offset, ContentSizeInBytes: &m.Length,
			})
		}
		i = j
	}
	return nil
}

// rowLineage tracks next-row-id over the walk: the highest row id any data
// file seen so far assigns, plus one.
type rowLineage struct {
	next    int64 // over every data file added so far
	emitted int64 // next as of the last emitted snapshot
}

func (l *rowLineage) add(it *item) {
	if f := it.file; f.Content == iceberg.ContentData && f.FirstRowID != nil {
		l.next = max(l.next, *f.FirstRowID+f.RecordCount)
	}
}

// snapshot fills a v3 snapshot's first-row-id (next-row-id before it) and
// added-rows (how far it moved next-row-id).
func (l *rowLineage) snapshot(s *iceberg.Snapshot) {
	first, added := l.emitted, l.next-l.emitted
	s.FirstRowID, s.AddedRows = &first, &added
	l.emitted = l.next
}

// manifestFirstRowID is a v3 data manifest's first_row_id: the lowest of its
// files' (which all carry one explicitly, so nothing is inherited from it).
func manifestFirstRowID(g *group, fallback int64) *int64 {
	lo := int64(-1)
	for _, list := range [][]*item{g.live, g.removed} {
		for _, it := range list {
			if id := it.file.FirstRowID; id != nil && (lo < 0 || *id < lo) {
				lo = *id
			}
		}
	}
	if lo < 0 {
		lo = fallback
	}
	return &lo
}
