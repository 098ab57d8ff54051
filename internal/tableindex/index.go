package tableindex

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

// Table is one table as the index knows it.
type Table struct {
	ID, SchemaID int64
	UUID         string // ducklake_table.table_uuid: stable across renames
	Namespace    string // the schema's name
	Name         string
	// Bucket and Prefix are the table's directory: Prefix is its key
	// prefix, ending in '/', or "" for a table at the root of a bucket.
	Bucket, Prefix string
}

// FileKind is what a File is to its table.
type FileKind uint8

// The kinds of files a table references.
const (
	DataFile FileKind = iota + 1
	DeleteFile
)

func (k FileKind) String() string {
	switch k {
	case DataFile:
		return "data file"
	case DeleteFile:
		return "delete file"
	}
	return "file"
}

// File is a data or delete file that table TableID references by an
// absolute path.
type File struct {
	TableID     int64
	Kind        FileKind
	Bucket, Key string
	// End is the snapshot from which the file is no longer part of the
	// table's current state (0: it still is). A file that ended stays the
	// table's: time travel to an older snapshot reads it until DuckLake's
	// expiry deletes its row.
	End int64
}

// Unindexed is a table or file the loader could not place in any bucket:
// a local path (DuckLake on a file system), or a location
// internal/objstore refuses.
type Unindexed struct {
	TableID int64
	Path    string
	Reason  string
}

// Source is what an Index is built from: the catalog at one snapshot.
type Source struct {
	Snapshot int64
	Tables   []Table
	Files    []File
	// Unindexed lists what the loader skipped, for logs: their keys match
	// nothing, so a caller that needs a table refuses them.
	Unindexed []Unindexed
}

// Via is how a key matched its table.
type Via uint8

// The ways a key matches. ViaDirectory: the key lies in (or is) the
// table's directory. ViaDataFile, ViaDeleteFile: the key is a file the
// table references by an absolute path.
const (
	ViaDirectory Via = iota + 1
	ViaDataFile
	ViaDeleteFile
)

func (v Via) String() string {
	switch v {
	case ViaDirectory:
		return "directory"
	case ViaDataFile:
		return "data file"
	case ViaDeleteFile:
		return "delete file"
	}
	return "none"
}

// Match is a lookup's answer.
type Match struct {
	// Table is the most specific table claiming the key: the one
	// referencing it as a file, else the one with the longest directory
	// containing it. It points into the Index; do not modify it.
	Table *Table
	Via   Via
	// FileEnd is File.End for a match by file (0: current).
	FileEnd int64
	// Shared reports that another table claims the key too: Table's
	// directory lies inside another table's, or another table's directory
	// is the same, or the file lies in another table's directory or is
	// referenced by several tables. Who may do what with such a key is the
	// caller's decision; failing closed means checking every claimant or
	// refusing.
	Shared bool
}

// Index maps bucket and key to a table, at one snapshot. It is immutable:
// any number of goroutines may use it. The nil *Index is the empty index
// at no snapshot (Snapshot -1): every lookup misses.
type Index struct {
	snapshot  int64
	tables    []Table // by ID
	byID      map[int64]*Table
	byUUID    map[string]*Table
	buckets   map[string]*bucket
	unindexed []Unindexed
	files     int
}

type bucket struct {
	// dirs maps a directory prefix (ending in '/', or "") to its entry.
	dirs map[string]entry
	// files maps the key of a file referenced by absolute path to its
	// entry; nil when the bucket has none.
	files map[string]entry
	// maxDir is the length of the longest directory prefix: a lookup
	// does not probe longer prefixes of a key.
	maxDir int
	// depths has bit n set when some directory has n segments (n '/'s;
	// bit 63 stands for 63 and more): a lookup probes only prefixes of
	// those depths, so a deep key under a lake whose tables all sit at
	// data/<schema>/<table>/ costs one or two map probes, not one per
	// segment.
	depths uint64
	// root is whether "" is a directory (a table at the bucket's root).
	root bool
	// sorted lists the directory prefixes in order, for Under.
	sorted []string
}

type entry struct {
	table  *Table
	via    Via
	end    int64
	shared bool
	// others are the further tables on the same directory, or referencing
	// the same file (Claimants reports them).
	others []*Table
}

// Build builds the index of src. Tables are kept by id; a table without a
// bucket is ignored, and files of tables src does not list are dropped, as
// are files inside their own table's directory (the directory covers them).
// Build does not retain src's slices.
func Build(src Source) *Index {
	x := &Index{
		snapshot:  src.Snapshot,
		tables:    make([]Table, 0, len(src.Tables)),
		buckets:   make(map[string]*bucket),
		unindexed: slices.Clone(src.Unindexed),
	}
	for _, t := range src.Tables {
		if t.Bucket == "" {
			continue
		}
		if t.Prefix != "" && !strings.HasSuffix(t.Prefix, "/") {
			t.Prefix += "/" // a directory: "t" must not cover "t2/x"
		}
		x.tables = append(x.tables, t)
	}
	slices.SortStableFunc(x.tables, func(a, b Table) int { return cmp.Compare(a.ID, b.ID) })
	x.tables = slices.CompactFunc(x.tables, func(a, b Table) bool { return a.ID == b.ID })
	x.byID = make(map[int64]*Table, len(x.tables))
	x.byUUID = make(map[string]*Table, len(x.tables))

	// Directories first, so that files can be checked against them.
	perBucket := make(map[string]int)
	for i := range x.tables {
		perBucket[x.tables[i].Bucket]++
	}
	for i := range x.tables {
		t := &x.tables[i]
		x.byID[t.ID] = t
		if t.UUID != "" {
			x.byUUID[t.UUID] = t
		}
		b := x.buckets[t.Bucket]
		if b == nil {
			b = &bucket{dirs: make(map[string]entry, perBucket[t.Bucket])}
			x.buckets[t.Bucket] = b
		}
		if e, dup := b.dirs[t.Prefix]; dup {
			// Two tables on one directory: the first (lowest id) answers,
			// marked shared.
			e.shared = true
			e.others = append(e.others, t)
			b.dirs[t.Prefix] = e
			continue
		}
		b.dirs[t.Prefix] = entry{table: t, via: ViaDirectory}
		b.maxDir = max(b.maxDir, len(t.Prefix))
		b.depths |= depthBit(strings.Count(t.Prefix, "/"))
		b.root = b.root || t.Prefix == ""
	}
	// A directory inside another table's is shared with it.
	for _, b := range x.buckets {
		for prefix, e := range b.dirs {
			if prefix == "" {
				continue
			}
			if _, ok := b.lookupDir(prefix[:len(prefix)-1]); ok {
				e.shared = true
				b.dirs[prefix] = e
			}
		}
	}

	for _, f := range src.Files {
		t := x.byID[f.TableID]
		if t == nil || f.Bucket == "" || f.Key == "" {
			continue
		}
		b := x.buckets[f.Bucket]
		if b == nil {
			b = &bucket{dirs: map[string]entry{}}
			x.buckets[f.Bucket] = b
		}
		dir, inDir := b.lookupDir(f.Key)
		if inDir && dir.table == t {
			continue // the table's own directory covers it
		}
		via := ViaDataFile
		if f.Kind == DeleteFile {
			via = ViaDeleteFile
		}
		e := entry{table: t, via: via, end: f.End, shared: inDir}
		if b.files == nil {
			b.files = make(map[string]entry)
		}
		if prev, dup := b.files[f.Key]; dup {
			if prev.table != t {
				prev.shared = true
				if !slices.Contains(prev.others, t) {
					prev.others = append(prev.others, t)
				}
			} else if prev.end != 0 && (e.end == 0 || e.end > prev.end) {
				prev.end = e.end // the same file twice: it lasts as long as the longer
			}
			b.files[f.Key] = prev
			continue
		}
		b.files[f.Key] = e
		x.files++
	}
	for _, b := range x.buckets {
		b.sorted = make([]string, 0, len(b.dirs))
		for prefix := range b.dirs {
			b.sorted = append(b.sorted, prefix)
		}
		slices.Sort(b.sorted)
	}
	return x
}

// depthBit is the bit of depths for a directory of n segments.
func depthBit(n int) uint64 { return 1 << min(n, 63) }

// lookupDir finds the table with the longest directory that is a prefix of
// key (a directory ends in '/', so "t" is not in "t/" and "t2/x" is not in
// "t/").
func (b *bucket) lookupDir(key string) (entry, bool) {
	end := min(len(key), b.maxDir)
	depth := strings.Count(key[:end], "/")
	for ; depth > 0; depth-- {
		i := strings.LastIndexByte(key[:end], '/')
		if b.depths&depthBit(depth) != 0 {
			if e, ok := b.dirs[key[:i+1]]; ok {
				return e, true
			}
		}
		end = i
	}
	if b.root {
		return b.dirs[""], true
	}
	return entry{}, false
}

// Lookup finds the table key belongs to in bucket. A key equal to a
// table's directory ("data/s/t/", a list prefix) is the table's; a key
// that merely starts like one ("data/s/t" without the slash, or
// "data/s/t2/x") is not. It allocates nothing.
func (x *Index) Lookup(bucketName, key []byte) (Match, bool) {
	if x == nil {
		return Match{}, false
	}
	b := x.buckets[string(bucketName)]
	if b == nil {
		return Match{}, false
	}
	if b.files != nil {
		if e, ok := b.files[string(key)]; ok {
			return e.match(), true
		}
	}
	// The same walk as lookupDir, on bytes: m[string(b)] does not
	// allocate.
	end := min(len(key), b.maxDir)
	depth := bytes.Count(key[:end], []byte{'/'})
	for ; depth > 0; depth-- {
		i := bytes.LastIndexByte(key[:end], '/')
		if b.depths&depthBit(depth) != 0 {
			if e, ok := b.dirs[string(key[:i+1])]; ok {
				return e.match(), true
			}
		}
		end = i
	}
	if b.root {
		return b.dirs[""].match(), true
	}
	return Match{}, false
}

// Claimants calls fn for every table that claims key in bucket, until fn
// returns false: the tables referencing it as a file, and every table whose
// directory contains it, at any depth, including several tables on one
// directory. It is what a decision needs when Lookup says Shared: failing
// closed means every claimant must allow.
func (x *Index) Claimants(bucketName, key []byte, fn func(*Table) bool) {
	if x == nil {
		return
	}
	b := x.buckets[string(bucketName)]
	if b == nil {
		return
	}
	emit := func(e entry) bool {
		if !fn(e.table) {
			return false
		}
		for _, t := range e.others {
			if !fn(t) {
				return false
			}
		}
		return true
	}
	if b.files != nil {
		if e, ok := b.files[string(key)]; ok && !emit(e) {
			return
		}
	}
	end := min(len(key), b.maxDir)
	for i := bytes.LastIndexByte(key[:end], '/'); i >= 0; i = bytes.LastIndexByte(key[:i], '/') {
		if e, ok := b.dirs[string(key[:i+1])]; ok && !emit(e) {
			return
		}
	}
	if b.root {
		emit(b.dirs[""])
	}
}

// Under calls fn for every table whose directory a listing of prefix in
// bucket would show files of — the directory starts with prefix — until fn
// returns false. The table a prefix lies inside is Lookup's (or
// Claimants') to report.
func (x *Index) Under(bucketName, prefix []byte, fn func(*Table) bool) {
	if x == nil {
		return
	}
	b := x.buckets[string(bucketName)]
	if b == nil {
		return
	}
	i, _ := slices.BinarySearch(b.sorted, string(prefix))
	for ; i < len(b.sorted) && strings.HasPrefix(b.sorted[i], string(prefix)); i++ {
		e := b.dirs[b.sorted[i]]
		if !fn(e.table) {
			return
		}
		for _, t := range e.others {
			if !fn(t) {
				return
			}
		}
	}
}

func (e entry) match() Match {
	return Match{Table: e.table, Via: e.via, FileEnd: e.end, Shared: e.shared}
}

// Snapshot is the DuckLake snapshot the index was built at; -1 for the nil
// index.
func (x *Index) Snapshot() int64 {
	if x == nil {
		return -1
	}
	return x.snapshot
}

// Table finds a table by id.
func (x *Index) Table(id int64) (*Table, bool) {
	if x == nil {
		return nil, false
	}
	t, ok := x.byID[id]
	return t, ok
}

// TableByUUID finds a table by its UUID (a bound credential's table).
func (x *Index) TableByUUID(uuid string) (*Table, bool) {
	if x == nil {
		return nil, false
	}
	t, ok := x.byUUID[uuid]
	return t, ok
}

// Tables is the number of tables indexed.
func (x *Index) Tables() int {
	if x == nil {
		return 0
	}
	return len(x.tables)
}

// Files is the number of file entries: absolute-path files outside their
// own table's directory.
func (x *Index) Files() int {
	if x == nil {
		return 0
	}
	return x.files
}

// Unindexed is what the loader could not index (see Source.Unindexed).
func (x *Index) Unindexed() []Unindexed {
	if x == nil {
		return nil
	}
	return x.unindexed
}
