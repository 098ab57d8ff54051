package iceberg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// ErrBadDeletionVector reports a deletion-vector-v1 blob that breaks the
// Puffin spec: bad framing, magic or CRC, or a malformed bitmap.
var ErrBadDeletionVector = errors.New("iceberg: malformed deletion vector")

// dvMagic opens every deletion-vector-v1 blob (after its length).
var dvMagic = [4]byte{0xD1, 0xD3, 0x39, 0x64}

// DeletionVector is a set of deleted row positions of one data file, held
// the way the deletion-vector-v1 blob stores it: positions split into a
// 32-bit key (the high half) and a 32-bit Roaring bitmap of low halves per
// key. Positions are non-negative (the spec wants the top bit clear). The
// zero value is empty and ready to use; it is not safe for concurrent use.
type DeletionVector struct {
	keys []uint32          // ascending
	maps []*roaring.Bitmap // maps[i] holds the low halves under keys[i]
}

// NewDeletionVector returns a vector holding positions.
func NewDeletionVector(positions ...int64) (*DeletionVector, error) {
	dv := &DeletionVector{}
	for _, p := range positions {
		if err := dv.Add(p); err != nil {
			return nil, err
		}
	}
	return dv, nil
}

// bucket returns the bitmap under key, made if create is set.
func (dv *DeletionVector) bucket(key uint32, create bool) *roaring.Bitmap {
	// Positions mostly arrive in order and nearly all fit in key 0: look at
	// the last bucket first.
	if n := len(dv.keys); n > 0 && dv.keys[n-1] == key {
		return dv.maps[n-1]
	}
	i, ok := slices.BinarySearch(dv.keys, key)
	if ok {
		return dv.maps[i]
	}
	if !create {
		return nil
	}
	bm := roaring.New()
	dv.keys = slices.Insert(dv.keys, i, key)
	dv.maps = slices.Insert(dv.maps, i, bm)
	return bm
}

// Add marks position pos deleted.
func (dv *DeletionVector) Add(pos int64) error {
	if pos < 0 {
		return fmt.Errorf("iceberg: deletion vector position %d is negative", pos)
	}
	dv.bucket(uint32(uint64(pos)>>32), true).Add(uint32(pos))
	return nil
}

// Contains reports whether position pos is deleted.
func (dv *DeletionVector) Contains(pos int64) bool {
	if pos < 0 {
		return false
	}
	bm := dv.bucket(uint32(uint64(pos)>>32), false)
	return bm != nil && bm.Contains(uint32(pos))
}

// Or adds every position of other.
func (dv *DeletionVector) Or(other *DeletionVector) {
	for i, k := range other.keys {
		dv.bucket(k, true).Or(other.maps[i])
	}
}

// Equal reports whether dv and other hold the same positions.
func (dv *DeletionVector) Equal(other *DeletionVector) bool {
	i, j := 0, 0
	for {
		for i < len(dv.maps) && dv.maps[i].IsEmpty() {
			i++
		}
		for j < len(other.maps) && other.maps[j].IsEmpty() {
			j++
		}
		if i == len(dv.maps) || j == len(other.maps) {
			return i == len(dv.maps) && j == len(other.maps)
		}
		if dv.keys[i] != other.keys[j] || !dv.maps[i].Equals(other.maps[j]) {
			return false
		}
		i, j = i+1, j+1
	}
}

// Cardinality is the number of deleted positions.
func (dv *DeletionVector) Cardinality() int64 {
	var n uint64
	for _, bm := range dv.maps {
		n += bm.GetCardinality()
	}
	return int64(n)
}

// Positions yields the deleted positions in ascending order.
func (dv *DeletionVector) Positions() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for i, k := range dv.keys {
			it := dv.maps[i].Iterator()
			for it.HasNext() {
				if !yield(int64(k)<<32 | int64(it.Next())) {
					return
				}
			}
		}
	}
}

// appender lets roaring's WriteTo append to a byte slice.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// AppendVector appends the vector in the Roaring "portable" 64-bit layout
// the spec prescribes: the number of 32-bit bitmaps (8 bytes,
// little-endian), then per bitmap in ascending key order its key (4 bytes,
// little-endian) and the bitmap in the 32-bit portable format. Empty
// bitmaps are left out. The bitmaps are run-compressed first where that is
// smaller (as Java's writer does), which changes only their representation.
func (dv *DeletionVector) AppendVector(dst []byte) []byte {
	n := 0
	for _, bm := range dv.maps {
		if !bm.IsEmpty() {
			n++
		}
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(n))
	a := appender{b: dst}
	for i, bm := range dv.maps {
		if bm.IsEmpty() {
			continue
		}
		bm.RunOptimize()
		a.b = binary.LittleEndian.AppendUint32(a.b, dv.keys[i])
		_, _ = bm.WriteTo(&a) // appender never fails
	}
	return a.b
}

// AppendBlob appends the deletion-vector-v1 blob: the combined length of
// magic and vector (4 bytes, big-endian), the magic D1 D3 39 64, the vector
// (see AppendVector) and the CRC-32 of magic and vector (4 bytes,
// big-endian). It fails only for a vector too large for the length field.
func (dv *DeletionVector) AppendBlob(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // length, filled in below
	dst = append(dst, dvMagic[:]...)
	dst = dv.AppendVector(dst)
	n := len(dst) - start - 4
	if n > math.MaxInt32 {
		return dst[:start], fmt.Errorf("iceberg: deletion vector of %d bytes exceeds the blob length field", n)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start+4:])), nil
}

// ParseDeletionVector decodes a deletion-vector-v1 blob (as AppendBlob
// writes it), checking length, magic and CRC, and that keys ascend and
// positions keep the top bit clear.
func ParseDeletionVector(blob []byte) (*DeletionVector, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadDeletionVector, fmt.Sprintf(format, args...))
	}
	if len(blob) < 4+4+8+4 {
		return nil, bad("%d bytes is too short", len(blob))
	}
	n := binary.BigEndian.Uint32(blob)
	if uint64(n) != uint64(len(blob))-8 {
		return nil, bad("length field %d, but %d bytes of magic and vector", n, len(blob)-8)
	}
	body := blob[4 : len(blob)-4]
	if !bytes.Equal(body[:4], dvMagic[:]) {
		return nil, bad("magic %x", body[:4])
	}
	if got, want := crc32.ChecksumIEEE(body), binary.BigEndian.Uint32(blob[len(blob)-4:]); got != want {
		return nil, bad("CRC-32 %08x, blob says %08x", got, want)
	}
	return parseVector(body[4:], bad)
}

func parseVector(v []byte, bad func(string, ...any) error) (*DeletionVector, error) {
	count := binary.LittleEndian.Uint64(v)
	v = v[8:]
	// Each bitmap takes at least a key and an 8-byte header: a count the
	// rest cannot hold is corrupt, and must not size an allocation.
	if count > uint64(len(v)/12) {
		return nil, bad("%d bitmaps in %d bytes", count, len(v))
	}
	dv := &DeletionVector{keys: make([]uint32, 0, count), maps: make([]*roaring.Bitmap, 0, count)}
	for i := range count {
		if len(v) < 4 {
			return nil, bad("bitmap %d: no key", i)
		}
		key := binary.LittleEndian.Uint32(v)
		if key > math.MaxInt32 {
			return nil, bad("bitmap %d: key %d sets the top bit of a position", i, key)
		}
		if n := len(dv.keys); n > 0 && key <= dv.keys[n-1] {
			return nil, bad("bitmap %d: key %d after %d", i, key, dv.keys[n-1])
		}
		r := bytes.NewReader(v[4:])
		bm := roaring.New()
		if _, err := bm.ReadFrom(r); err != nil {
			return nil, bad("bitmap %d (key %d): %v", i, key, err)
		}
		if err := bm.Validate(); err != nil {
			return nil, bad("bitmap %d (key %d): %v", i, key, err)
		}
		v = v[len(v)-r.Len():]
		dv.keys = append(dv.keys, key)
		dv.maps = append(dv.maps, bm)
	}
	if len(v) != 0 {
		return nil, bad("%d bytes after the last bitmap", len(v))
	}
	return dv, nil
}
