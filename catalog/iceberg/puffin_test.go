package iceberg

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// goldenVectors are the deletion vectors of testdata/deletion-vectors.puffin,
// chosen to cover every container kind and the 64-bit key layer: a run
// container next to array containers, a gap between keys, positions past
// 2^32, a bitmap container (more than 4096 values in one 2^16 chunk), and a
// path JSON would escape as HTML.
func goldenVectors() []testVector {
	var a, d []int64
	for p := range int64(100) {
		a = append(a, p)
	}
	a = append(a, 1000, 70000)
	for p := int64(0); p < 10000; p += 2 {
		d = append(d, p)
	}
	return []testVector{
		{"s3://bucket/warehouse/t/data/a.parquet", a},
		{"s3://bucket/warehouse/t/data/b & <c>.parquet", []int64{5, 1<<32 | 7, 3 << 32, 3<<32 | 65536}},
		{"s3://bucket/warehouse/t/data/d.parquet", d},
	}
}

// testVector is a deletion vector to write: a data file and the positions
// deleted in it.
type testVector struct {
	path      string
	positions []int64
}

func writeGolden(t testing.TB) ([]byte, []PuffinBlobMetadata) {
	t.Helper()
	return writePuffin(t, goldenVectors())
}

// writePuffin writes vectors as one Puffin file, returning it and its
// blobs' metadata in order.
func writePuffin(t testing.TB, vectors []testVector) ([]byte, []PuffinBlobMetadata) {
	t.Helper()
	w := NewPuffinWriter("duckicelake test")
	var metas []PuffinBlobMetadata
	for _, g := range vectors {
		v, err := NewDeletionVector(g.positions...)
		if err != nil {
			t.Fatal(err)
		}
		m, err := w.AddDeletionVector(g.path, v)
		if err != nil {
			t.Fatal(err)
		}
		metas = append(metas, m)
	}
	out, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out, metas
}

// TestPuffinGolden pins the writer's bytes: the same vectors must always give
// the same file (content-addressed names depend on it).
func TestPuffinGolden(t *testing.T) {
	got, _ := writeGolden(t)
	testsupport.TestdataGolden(t, "deletion-vectors.puffin", got)
	again, _ := writeGolden(t)
	if !bytes.Equal(got, again) {
		t.Fatal("two runs gave different bytes")
	}
}

// TestDeletionVectorJavaBytes checks the blob of positions {1,3,5,7,9}
// against Java Iceberg's own serialisation of it (the test resource
// small-alternating-values-position-index.bin), byte for byte.
func TestDeletionVectorJavaBytes(t *testing.T) {
	const java = "0000002a" + // length of magic + vector: 42, big-endian
		"d1d33964" + // magic
		"0100000000000000" + // one 32-bit bitmap, little-endian
		"00000000" + // its key 0
		"3a300000" + "01000000" + // portable cookie 12346 (no run containers), one container
		"0000" + "0400" + // container key 0, cardinality-1 = 4
		"10000000" + // offset of the container: 16
		"01000300050007000900" + // array container
		"b3fb20be" // CRC-32 of magic + vector, big-endian
	v, err := NewDeletionVector(9, 7, 5, 3, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.AppendBlob(nil)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != java {
		t.Fatalf("blob\n got %x\nwant %s", got, java)
	}
	back, err := ParseDeletionVector(got)
	if err != nil {
		t.Fatal(err)
	}
	if p := slices.Collect(back.Positions()); !slices.Equal(p, []int64{1, 3, 5, 7, 9}) {
		t.Fatalf("positions %v", p)
	}
}

// TestPuffinStructure walks the golden file the way the Puffin spec
// describes it, without this package's parser, and checks every field.
func TestPuffinStructure(t *testing.T) {
	data, written := writeGolden(t)
	le := binary.LittleEndian
	if string(data[:4]) != "PFA1" || string(data[len(data)-4:]) != "PFA1" {
		t.Fatal("file does not start and end with the magic PFA1")
	}
	// Footer: Magic FooterPayload FooterPayloadSize Flags Magic.
	if flags := data[len(data)-8 : len(data)-4]; !bytes.Equal(flags, []byte{0, 0, 0, 0}) {
		t.Fatalf("flags %x: want all zero (payload uncompressed, reserved bits clear)", flags)
	}
	size := int(int32(le.Uint32(data[len(data)-12:])))
	footer := len(data) - 12 - size - 4
	if string(data[footer:footer+4]) != "PFA1" {
		t.Fatal("footer does not start with the magic")
	}
	payload := data[footer+4 : footer+4+size]
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(payload, &meta); err != nil {
		t.Fatalf("footer payload is not JSON: %v", err)
	}
	if !bytes.Contains(payload, []byte(`/b & <c>.parquet"`)) {
		t.Error("paths must be written without HTML escaping")
	}
	var props map[string]string
	if err := json.Unmarshal(meta["properties"], &props); err != nil || props["created-by"] != "duckicelake test" {
		t.Errorf("file properties %s: want created-by", meta["properties"])
	}
	var blobs []map[string]json.RawMessage
	if err := json.Unmarshal(meta["blobs"], &blobs); err != nil {
		t.Fatal(err)
	}
	golden := goldenVectors()
	if len(blobs) != len(golden) {
		t.Fatalf("%d blobs, want %d", len(blobs), len(golden))
	}
	next := 4 // blobs follow the leading magic back to back
	for i, b := range blobs {
		g := golden[i]
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range b {
				if !yield(k) {
					return
				}
			}
		})
		// compression-codec must be omitted for deletion-vector-v1.
		if want := []string{"fields", "length", "offset", "properties", "sequence-number", "snapshot-id", "type"}; !slices.Equal(keys, want) {
			t.Errorf("blob %d keys %v, want %v", i, keys, want)
		}
		var (
			typ                       string
			fields                    []int
			snap, seq, offset, length int64
			bp                        map[string]string
		)
		for k, dst := range map[string]any{"type": &typ, "fields": &fields, "snapshot-id": &snap, "sequence-number": &seq,
			"offset": &offset, "length": &length, "properties": &bp} {
			if err := json.Unmarshal(b[k], dst); err != nil {
				t.Fatalf("blob %d %s: %v", i, k, err)
			}
		}
		if typ != "deletion-vector-v1" || !slices.Equal(fields, []int{2147483645}) || snap != -1 || seq != -1 {
			t.Errorf("blob %d: type %q fields %v snapshot-id %d sequence-number %d", i, typ, fields, snap, seq)
		}
		if offset != int64(next) || offset != written[i].Offset || length != written[i].Length {
			t.Errorf("blob %d at %d+%d, want %d (writer said %d+%d)", i, offset, length, next, written[i].Offset, written[i].Length)
		}
		next += int(length)
		if len(bp) != 2 || bp["referenced-data-file"] != g.path || bp["cardinality"] != strconv.Itoa(len(g.positions)) {
			t.Errorf("blob %d properties %v", i, bp)
		}
		positions := walkBlob(t, data[offset:offset+length])
		if !slices.Equal(positions, g.positions) {
			t.Errorf("blob %d decodes to %d positions, want %d", i, len(positions), len(g.positions))
		}
	}
	if next != footer {
		t.Errorf("blobs end at %d, footer starts at %d", next, footer)
	}
}

// walkBlob decodes a deletion-vector-v1 blob by the spec and the Roaring
// format spec alone, and returns its positions in order.
func walkBlob(t *testing.T, blob []byte) []int64 {
	t.Helper()
	be, le := binary.BigEndian, binary.LittleEndian
	n := int(be.Uint32(blob))
	if n != len(blob)-8 {
		t.Fatalf("length field %d, want %d (magic + vector)", n, len(blob)-8)
	}
	if !bytes.Equal(blob[4:8], []byte{0xD1, 0xD3, 0x39, 0x64}) {
		t.Fatalf("magic %x", blob[4:8])
	}
	if crc := crc32.ChecksumIEEE(blob[4 : 4+n]); crc != be.Uint32(blob[4+n:]) {
		t.Fatalf("CRC-32 %08x, blob says %08x", crc, be.Uint32(blob[4+n:]))
	}
	v := blob[8 : 4+n]
	count := le.Uint64(v)
	v = v[8:]
	var out []int64
	last := int64(-1)
	for range count {
		key := int64(le.Uint32(v))
		if key <= last {
			t.Fatalf("key %d after %d", key, last)
		}
		last = key
		var lows []uint32
		lows, v = walkRoaring32(t, v[4:])
		for _, lo := range lows {
			out = append(out, key<<32|int64(lo))
		}
	}
	if len(v) != 0 {
		t.Fatalf("%d bytes after the last bitmap", len(v))
	}
	return out
}

// walkRoaring32 decodes one bitmap of the RoaringFormatSpec portable layout
// and returns its values and the bytes after it.
func walkRoaring32(t *testing.T, b []byte) ([]uint32, []byte) {
	t.Helper()
	le := binary.LittleEndian
	const serialCookieNoRun, serialCookie = 12346, 12347
	cookie := le.Uint32(b)
	var n int
	var runs []byte
	pos := 4
	hasOffsets := true
	switch {
	case cookie == serialCookieNoRun:
		n = int(le.Uint32(b[4:]))
		pos = 8
	case cookie&0xFFFF == serialCookie:
		n = int(cookie>>16) + 1
		runs = b[4 : 4+(n+7)/8]
		pos += (n + 7) / 8
		hasOffsets = n >= 4
	default:
		t.Fatalf("cookie %x", cookie)
	}
	keys, cards := make([]uint32, n), make([]int, n)
	for i := range n {
		keys[i] = uint32(le.Uint16(b[pos:]))
		cards[i] = int(le.Uint16(b[pos+2:])) + 1
		pos += 4
	}
	var offsets []int
	if hasOffsets {
		for range n {
			offsets = append(offsets, int(le.Uint32(b[pos:])))
			pos += 4
		}
	}
	var out []uint32
	for i := range n {
		if offsets != nil && offsets[i] != pos {
			t.Fatalf("container %d at %d, offset header says %d", i, pos, offsets[i])
		}
		hi := keys[i] << 16
		switch {
		case runs != nil && runs[i/8]&(1<<(i%8)) != 0:
			nr := int(le.Uint16(b[pos:]))
			pos += 2
			got := 0
			for range nr {
				start, l := uint32(le.Uint16(b[pos:])), uint32(le.Uint16(b[pos+2:]))
				for x := start; x <= start+l; x++ {
					out = append(out, hi|x)
					got++
				}
				pos += 4
			}
			if got != cards[i] {
				t.Fatalf("run container %d holds %d values, header says %d", i, got, cards[i])
			}
		case cards[i] > 4096:
			for w := range 1024 {
				word := le.Uint64(b[pos+8*w:])
				for bit := range 64 {
					if word&(1<<bit) != 0 {
						out = append(out, hi|uint32(64*w+bit))
					}
				}
			}
			pos += 8192
		default:
			for range cards[i] {
				out = append(out, hi|uint32(le.Uint16(b[pos:])))
				pos += 2
			}
		}
	}
	return out, b[pos:]
}

func TestParsePuffinRoundTrip(t *testing.T) {
	data, written := writeGolden(t)
	f, err := ParsePuffin(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata.Properties[PuffinCreatedBy] != "duckicelake test" || len(f.Metadata.Blobs) != len(written) {
		t.Fatalf("metadata %+v", f.Metadata)
	}
	for i, g := range goldenVectors() {
		v, err := f.DeletionVector(i)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Collect(v.Positions()); !slices.Equal(got, g.positions) {
			t.Errorf("blob %d: %d positions, want %d", i, len(got), len(g.positions))
		}
		for _, p := range g.positions {
			if !v.Contains(p) {
				t.Fatalf("blob %d lacks %d", i, p)
			}
		}
		if v.Contains(g.positions[len(g.positions)-1]+1) || v.Contains(-1) {
			t.Errorf("blob %d holds positions it should not", i)
		}
	}
	empty, err := NewPuffinWriter("").Finish()
	if err != nil {
		t.Fatal(err)
	}
	if want := "PFA1PFA1{\"blobs\":[]}\x0c\x00\x00\x00\x00\x00\x00\x00PFA1"; string(empty) != want {
		t.Errorf("empty file %q, want %q", empty, want)
	}
	if f, err := ParsePuffin(empty); err != nil || len(f.Metadata.Blobs) != 0 {
		t.Errorf("empty file: %v %+v", err, f)
	}
}

// TestPuffinIcebergGo reads the golden file with iceberg-go's Puffin reader
// and deletion-vector decoder (which check the blob metadata rules too).
func TestPuffinIcebergGo(t *testing.T) {
	data, _ := writeGolden(t)
	r, err := puffin.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Properties()[puffin.CreatedBy]; got != "duckicelake test" {
		t.Errorf("created-by %q", got)
	}
	golden := goldenVectors()
	blobs := r.Blobs()
	if len(blobs) != len(golden) {
		t.Fatalf("%d blobs", len(blobs))
	}
	for i, meta := range blobs {
		if meta.Type != puffin.BlobTypeDeletionVector || meta.SnapshotID != -1 || meta.SequenceNumber != -1 ||
			meta.Properties["referenced-data-file"] != golden[i].path {
			t.Errorf("blob %d metadata %+v", i, meta)
		}
		b, err := r.ReadBlob(i)
		if err != nil {
			t.Fatal(err)
		}
		bm, err := dv.DeserializeDV(b.Data, int64(len(golden[i].positions)))
		if err != nil {
			t.Fatalf("blob %d: %v", i, err)
		}
		var got []int64
		for p := range bm.Positions() {
			got = append(got, int64(p))
		}
		if !slices.Equal(got, golden[i].positions) {
			t.Errorf("blob %d: iceberg-go reads %d positions, want %d", i, len(got), len(golden[i].positions))
		}
		// And iceberg-go's own writer makes the same bytes from the same set.
		own := dv.NewRoaringPositionBitmap()
		for _, p := range golden[i].positions {
			own.Set(uint64(p))
		}
		own.RunLengthEncode()
		ser, err := dv.SerializeDV(own)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ser, b.Data) {
			t.Errorf("blob %d differs from iceberg-go's serialisation", i)
		}
	}
}

// TestPuffinPyIceberg reads the golden file with PyIceberg's Puffin reader
// and deletion-vector decoder (PyIceberg ≥ 0.10, pyroaring).
func TestPuffinPyIceberg(t *testing.T) {
	testsupport.Python(t)
	data, _ := writeGolden(t)
	path := filepath.Join(t.TempDir(), "dv.puffin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Properties map[string]string  `json:"properties"`
		Positions  map[string][]int64 `json:"positions"`
		Blobs      []struct {
			Type       string            `json:"type"`
			Fields     []int             `json:"fields"`
			SnapshotID int64             `json:"snapshot_id"`
			Properties map[string]string `json:"properties"`
		} `json:"blobs"`
	}
	testsupport.RunPython(t, &got, filepath.Join("testdata", "read_puffin.py"), path)
	if got.Properties["created-by"] != "duckicelake test" {
		t.Errorf("properties %v", got.Properties)
	}
	for i, g := range goldenVectors() {
		if !slices.Equal(got.Positions[g.path], g.positions) {
			t.Errorf("%s: PyIceberg reads %d positions, want %d", g.path, len(got.Positions[g.path]), len(g.positions))
		}
		if b := got.Blobs[i]; b.Type != BlobTypeDeletionVector || b.SnapshotID != -1 || b.Properties["cardinality"] != strconv.Itoa(len(g.positions)) {
			t.Errorf("blob %d as PyIceberg reads it: %+v", i, b)
		}
	}
}

func TestParseDeletionVectorRejects(t *testing.T) {
	v, _ := NewDeletionVector(1, 3, 1<<32|5)
	good, err := v.AppendBlob(nil)
	if err != nil {
		t.Fatal(err)
	}
	// reframe recomputes length and CRC around a (modified) vector.
	reframe := func(vector []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(4+len(vector)))
		b = append(b, 0xD1, 0xD3, 0x39, 0x64)
		b = append(b, vector...)
		return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[4:]))
	}
	vector := good[8 : len(good)-4]
	edit := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	cases := map[string][]byte{
		"empty":          nil,
		"short":          good[:10],
		"length field":   edit(func(b []byte) []byte { b[3]++; return b }),
		"magic":          edit(func(b []byte) []byte { b[4] = 0xD0; return b }),
		"crc":            edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }),
		"bit flip":       edit(func(b []byte) []byte { b[20] ^= 0x10; return b }),
		"truncated":      reframe(vector[:len(vector)-2]),
		"trailing bytes": reframe(append(slices.Clone(vector), 0)),
		"huge count":     reframe(append(binary.LittleEndian.AppendUint64(nil, 1<<40), vector[8:]...)),
		"count too big":  reframe(append(binary.LittleEndian.AppendUint64(nil, 3), vector[8:]...)),
		"top bit key": func() []byte {
			w := slices.Clone(vector)
			binary.LittleEndian.PutUint32(w[8:], 1<<31)
			return reframe(w)
		}(),
		"keys not ascending": func() []byte {
			two, _ := NewDeletionVector(1<<32|1, 2<<32|1)
			w := two.AppendVector(nil)
			first := w[8 : 8+(len(w)-8)/2]
			binary.LittleEndian.PutUint32(w[8+len(first):], 1) // second key = first key
			return reframe(w)
		}(),
	}
	for name, blob := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseDeletionVector(blob); !errors.Is(err, ErrBadDeletionVector) {
				t.Fatalf("err %v, want ErrBadDeletionVector", err)
			}
		})
	}
	if _, err := NewDeletionVector(-1); err == nil {
		t.Error("negative position accepted")
	}
}

func TestParsePuffinRejects(t *testing.T) {
	good, _ := writeGolden(t)
	edit := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	withFooter := func(js string) []byte {
		b := []byte("PFA1PFA1" + js)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(js)))
		return append(b, 0, 0, 0, 0, 'P', 'F', 'A', '1')
	}
	cases := map[string][]byte{
		"empty":             nil,
		"no leading magic":  edit(func(b []byte) []byte { b[0] = 'X'; return b }),
		"no trailing magic": edit(func(b []byte) []byte { b[len(b)-1] = 'X'; return b }),
		"compressed":        edit(func(b []byte) []byte { b[len(b)-8] = 1; return b }),
		"size too big":      edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(b)-12:], uint32(len(b))); return b }),
		"size negative":     edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(b)-12:], 0xFFFFFFFF); return b }),
		"size off by one":   edit(func(b []byte) []byte { b[len(b)-12]--; return b }),
		"not json":          withFooter(`{"blobs":[}`),
		"no blobs":          withFooter(`{}`),
		"blob past footer":  withFooter(`{"blobs":[{"type":"x","fields":[],"snapshot-id":1,"sequence-number":1,"offset":4,"length":1}]}`),
		"blob in magic":     withFooter(`{"blobs":[{"type":"x","fields":[],"snapshot-id":1,"sequence-number":1,"offset":0,"length":0}]}`),
		"untyped blob":      withFooter(`{"blobs":[{"fields":[],"snapshot-id":1,"sequence-number":1,"offset":4,"length":0}]}`),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParsePuffin(data); !errors.Is(err, ErrBadPuffin) {
				t.Fatalf("err %v, want ErrBadPuffin", err)
			}
		})
	}

	// Blob metadata that breaks the deletion-vector-v1 rules.
	f, err := ParsePuffin(good)
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*PuffinBlobMetadata){
		"snapshot id":  func(m *PuffinBlobMetadata) { m.SnapshotID = 7 },
		"compressed":   func(m *PuffinBlobMetadata) { m.CompressionCodec = "zstd" },
		"no data file": func(m *PuffinBlobMetadata) { delete(m.Properties, PuffinReferencedDataFile) },
		"cardinality":  func(m *PuffinBlobMetadata) { m.Properties[PuffinCardinality] = "3" },
		"type":         func(m *PuffinBlobMetadata) { m.Type = "apache-datasketches-theta-v1" },
	} {
		t.Run(name, func(t *testing.T) {
			g := *f
			g.Metadata.Blobs = slices.Clone(f.Metadata.Blobs)
			m := g.Metadata.Blobs[0]
			m.Properties = map[string]string{}
			for k, v := range f.Metadata.Blobs[0].Properties {
				m.Properties[k] = v
			}
			change(&m)
			g.Metadata.Blobs[0] = m
			if _, err := g.DeletionVector(0); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestDeletionVectorOr(t *testing.T) {
	a, _ := NewDeletionVector(1, 2, 5<<32)
	b, _ := NewDeletionVector(2, 3, 1<<32, 5<<32|1)
	a.Or(b)
	if got := slices.Collect(a.Positions()); !slices.Equal(got, []int64{1, 2, 3, 1 << 32, 5 << 32, 5<<32 | 1}) {
		t.Fatalf("union %v", got)
	}
	if a.Cardinality() != 6 {
		t.Fatalf("cardinality %d", a.Cardinality())
	}
	same, _ := NewDeletionVector(5<<32|1, 5<<32, 1<<32, 3, 2, 1)
	if !a.Equal(same) || !same.Equal(a) || a.Equal(b) || b.Equal(a) {
		t.Error("Equal disagrees with the positions")
	}
	var empty DeletionVector
	withEmptyBucket, _ := NewDeletionVector()
	withEmptyBucket.bucket(9, true)
	if !empty.Equal(withEmptyBucket) || !withEmptyBucket.Equal(&empty) || empty.Equal(a) {
		t.Error("Equal must ignore empty bitmaps")
	}
	var zero DeletionVector
	blob, err := zero.AppendBlob(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDeletionVector(blob)
	if err != nil || back.Cardinality() != 0 {
		t.Fatalf("empty vector: %v, %d", err, back.Cardinality())
	}
}

func FuzzParseDeletionVector(f *testing.F) {
	for _, g := range goldenVectors() {
		v, _ := NewDeletionVector(g.positions...)
		b, _ := v.AppendBlob(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, blob []byte) {
		v, err := ParseDeletionVector(blob)
		if err != nil {
			return
		}
		// What parses must serialise to a blob that parses to the same set.
		again, err := v.AppendBlob(nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ParseDeletionVector(again)
		if err != nil {
			t.Fatalf("re-serialised vector does not parse: %v", err)
		}
		if !slices.Equal(slices.Collect(v.Positions()), slices.Collect(w.Positions())) {
			t.Fatal("positions changed in a round trip")
		}
	})
}

func FuzzParsePuffin(f *testing.F) {
	good, _ := writeGolden(f)
	f.Add(good)
	empty, _ := NewPuffinWriter("").Finish()
	f.Add(empty)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePuffin(data)
		if err != nil {
			return
		}
		for i := range p.Metadata.Blobs {
			_ = p.Blob(i)
			_, _ = p.DeletionVector(i)
		}
	})
}

func BenchmarkDeletionVectorAppendBlob(b *testing.B) {
	v, _ := NewDeletionVector()
	for p := int64(0); p < 1_000_000; p += 3 {
		_ = v.Add(p)
	}
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = v.AppendBlob(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
