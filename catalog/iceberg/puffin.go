package iceberg

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Puffin blob types and property keys (puffin-spec.md).
const (
	BlobTypeDeletionVector = "deletion-vector-v1"

	PuffinCreatedBy          = "created-by"           // file property
	PuffinReferencedDataFile = "referenced-data-file" // deletion-vector-v1 property
	PuffinCardinality        = "cardinality"          // deletion-vector-v1 property
)

// RowPositionFieldID is the reserved field id of the _pos metadata column,
// the field a deletion vector is computed for.
const RowPositionFieldID = 2147483645

// puffinMagic opens a Puffin file and opens and closes its footer.
var puffinMagic = [4]byte{'P', 'F', 'A', '1'}

// ErrBadPuffin reports bytes that are not a Puffin file this package reads.
var ErrBadPuffin = errors.New("iceberg: malformed Puffin file")

// PuffinBlobMetadata is a BlobMetadata of a Puffin footer.
type PuffinBlobMetadata struct {
	Type             string            `json:"type"`
	Fields           []int             `json:"fields"`
	SnapshotID       int64             `json:"snapshot-id"`
	SequenceNumber   int64             `json:"sequence-number"`
	Offset           int64             `json:"offset"`
	Length           int64             `json:"length"`
	CompressionCodec string            `json:"compression-codec,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
}

// PuffinFileMetadata is the JSON payload of a Puffin footer.
type PuffinFileMetadata struct {
	Blobs      []PuffinBlobMetadata `json:"blobs"`
	Properties map[string]string    `json:"properties,omitempty"`
}

// PuffinWriter builds a Puffin file in memory: the magic, the blobs in the
// order added, and the footer. Blobs and the footer are written
// uncompressed, so the same blobs give the same bytes.
type PuffinWriter struct {
	buf  []byte
	meta PuffinFileMetadata
}

// NewPuffinWriter starts a Puffin file whose footer names createdBy (e.g.
// "duckicelake 1.2") as the writing application; "" leaves it out.
func NewPuffinWriter(createdBy string) *PuffinWriter {
	w := &PuffinWriter{buf: append(make([]byte, 0, 4<<10), puffinMagic[:]...)}
	if createdBy != "" {
		w.meta.Properties = map[string]string{PuffinCreatedBy: createdBy}
	}
	return w
}

// AddBlob appends data as a blob described by meta, whose Offset and Length
// it sets, and returns the metadata as the footer will hold it. Fields is
// written as [] when nil. data must be stored as meta.CompressionCodec says.
func (w *PuffinWriter) AddBlob(meta PuffinBlobMetadata, data []byte) PuffinBlobMetadata {
	meta.Offset, meta.Length = int64(len(w.buf)), int64(len(data))
	if meta.Fields == nil {
		meta.Fields = []int{}
	}
	w.buf = append(w.buf, data...)
	w.meta.Blobs = append(w.meta.Blobs, meta)
	return meta
}

// AddDeletionVector appends dv as the deletion-vector-v1 blob of data file
// referencedDataFile (its location exactly as the manifests give it). As
// the spec requires, snapshot-id and sequence-number are -1 (inherited from
// the manifest entry), properties carry referenced-data-file and
// cardinality, and the blob is not compressed; fields is [_pos], as Java's
// writer has it. The result's Offset and Length are the manifest entry's
// content_offset and content_size_in_bytes.
func (w *PuffinWriter) AddDeletionVector(referencedDataFile string, dv *DeletionVector) (PuffinBlobMetadata, error) {
	start := len(w.buf)
	buf, err := dv.AppendBlob(w.buf)
	if err != nil {
		return PuffinBlobMetadata{}, fmt.Errorf("deletion vector of %s: %w", referencedDataFile, err)
	}
	w.buf = buf
	meta := PuffinBlobMetadata{
		Type:           BlobTypeDeletionVector,
		Fields:         []int{RowPositionFieldID},
		SnapshotID:     -1,
		SequenceNumber: -1,
		Offset:         int64(start),
		Length:         int64(len(buf) - start),
		Properties: map[string]string{
			PuffinReferencedDataFile: referencedDataFile,
			PuffinCardinality:        strconv.FormatInt(dv.Cardinality(), 10),
		},
	}
	w.meta.Blobs = append(w.meta.Blobs, meta)
	return meta, nil
}

// Finish appends the footer (magic, the FileMetadata JSON, its length as a
// 4-byte little-endian integer, 4 flag bytes all zero for an uncompressed
// payload, magic) and returns the file. The writer must not be used after.
func (w *PuffinWriter) Finish() ([]byte, error) {
	meta := w.meta
	if meta.Blobs == nil {
		meta.Blobs = []PuffinBlobMetadata{}
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false) // paths with & or < stay readable; both forms are valid JSON
	if err := enc.Encode(meta); err != nil {
		return nil, fmt.Errorf("puffin footer: %w", err)
	}
	payload := bytes.TrimSuffix(js.Bytes(), []byte("\n"))
	if len(payload) > math.MaxInt32 {
		return nil, fmt.Errorf("puffin footer: payload of %d bytes exceeds the size field", len(payload))
	}
	out := append(w.buf, puffinMagic[:]...)
	out = append(out, payload...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(payload)))
	out = append(out, 0, 0, 0, 0) // flags: footer not compressed
	out = append(out, puffinMagic[:]...)
	w.buf = nil
	return out, nil
}

// PuffinFile is a parsed Puffin file; it aliases the bytes it was parsed from.
type PuffinFile struct {
	Metadata PuffinFileMetadata
	data     []byte
}

// ParsePuffin reads the footer of a Puffin file and checks that every blob
// lies between the leading magic and the footer. Compressed footers are
// refused (this package never writes them).
func ParsePuffin(data []byte) (*PuffinFile, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadPuffin, fmt.Sprintf(format, args...))
	}
	const trailer = 4 + 4 + 4 // payload size, flags, magic
	if len(data) < 4+4+trailer {
		return nil, bad("%d bytes is too short", len(data))
	}
	if !bytes.Equal(data[:4], puffinMagic[:]) || !bytes.Equal(data[len(data)-4:], puffinMagic[:]) {
		return nil, bad("no PFA1 magic at start and end")
	}
	flags := data[len(data)-8 : len(data)-4]
	if flags[0]&1 != 0 {
		return nil, bad("compressed footer payload")
	}
	size := int64(int32(binary.LittleEndian.Uint32(data[len(data)-12:])))
	footerStart := int64(len(data)) - trailer - size - 4
	if size < 0 || footerStart < 4 {
		return nil, bad("footer payload size %d does not fit a %d-byte file", size, len(data))
	}
	if !bytes.Equal(data[footerStart:footerStart+4], puffinMagic[:]) {
		return nil, bad("no PFA1 magic at the start of the footer")
	}
	f := &PuffinFile{data: data[:footerStart]}
	if err := json.Unmarshal(data[footerStart+4:footerStart+4+size], &f.Metadata); err != nil {
		return nil, bad("footer payload: %v", err)
	}
	if f.Metadata.Blobs == nil {
		return nil, bad("footer payload has no blobs list")
	}
	for i, b := range f.Metadata.Blobs {
		if b.Type == "" {
			return nil, bad("blob %d has no type", i)
		}
		if b.Offset < 4 || b.Length < 0 || b.Offset > footerStart || b.Length > footerStart-b.Offset {
			return nil, bad("blob %d at [%d, +%d) is outside the blob area [4, %d)", i, b.Offset, b.Length, footerStart)
		}
	}
	return f, nil
}

// Blob returns the stored bytes of blob i of Metadata.Blobs.
func (f *PuffinFile) Blob(i int) []byte {
	b := f.Metadata.Blobs[i]
	return f.data[b.Offset : b.Offset+b.Length]
}

// DeletionVector decodes blob i as a deletion-vector-v1 blob and checks it
// against its metadata: the spec's -1 snapshot id and sequence number, no
// compression, and a cardinality property that matches.
func (f *PuffinFile) DeletionVector(i int) (*DeletionVector, error) {
	b := f.Metadata.Blobs[i]
	switch {
	case b.Type != BlobTypeDeletionVector:
		return nil, fmt.Errorf("%w: blob %d is %q", ErrBadPuffin, i, b.Type)
	case b.CompressionCodec != "":
		return nil, fmt.Errorf("%w: blob %d is compressed (%s)", ErrBadPuffin, i, b.CompressionCodec)
	case b.SnapshotID != -1 || b.SequenceNumber != -1:
		return nil, fmt.Errorf("%w: blob %d has snapshot-id %d, sequence-number %d (want -1)", ErrBadPuffin, i, b.SnapshotID, b.SequenceNumber)
	case b.Properties[PuffinReferencedDataFile] == "":
		return nil, fmt.Errorf("%w: blob %d has no %s", ErrBadPuffin, i, PuffinReferencedDataFile)
	}
	dv, err := ParseDeletionVector(f.Blob(i))
	if err != nil {
		return nil, fmt.Errorf("blob %d: %w", i, err)
	}
	if c := b.Properties[PuffinCardinality]; c != strconv.FormatInt(dv.Cardinality(), 10) {
		return nil, fmt.Errorf("%w: blob %d has cardinality %q, its vector holds %d", ErrBadDeletionVector, i, c, dv.Cardinality())
	}
	return dv, nil
}
