package iceberg

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
)

// ErrBadAvro reports an Avro file this package cannot read: not an object
// container, a malformed schema or value, an unknown codec, or data that
// does not match its schema. Manifests and manifest lists come from clients,
// so every length and count is checked against what is left of the input.
var ErrBadAvro = errors.New("iceberg: bad Avro file")

func badAvro(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadAvro, fmt.Sprintf(format, args...))
}

// Limits on what a client-written Avro file may ask of the reader.
const (
	maxAvroDecoded = 256 << 20 // bytes of decompressed block data per file
	maxAvroDepth   = 64        // nesting of schemas and values
	maxAvroItems   = 1 << 24   // items of one array or map
)

type avroKind uint8

const (
	kindNull avroKind = iota + 1
	kindBoolean
	kindInt
	kindLong
	kindFloat
	kindDouble
	kindBytes
	kindString
	kindRecord
	kindEnum
	kindArray
	kindMap
	kindUnion
	kindFixed
)

// avroType is a parsed Avro schema node with the Iceberg field-id
// properties kept.
type avroType struct {
	kind     avroKind
	name     string          // named types: full name
	fields   []avroReadField // record
	items    *avroType       // array
	values   *avroType       // map
	branches []*avroType     // union
	size     int             // fixed
	symbols  int             // enum
}

type avroReadField struct {
	name string
	id   int // Iceberg field id; -1 when the schema has none
	typ  *avroType
}

// field returns the index of the record field called name, or -1.
func (t *avroType) field(name string) int {
	for i := range t.fields {
		if t.fields[i].name == name {
			return i
		}
	}
	return -1
}

// parseAvroSchema parses an Avro schema in JSON form. Named types are
// resolved within this schema only.
func parseAvroSchema(schemaJSON []byte) (*avroType, error) {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(schemaJSON))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, badAvro("schema: %v", err)
	}
	p := schemaParser{named: map[string]*avroType{}}
	return p.parse(raw, "", 0)
}

type schemaParser struct {
	named map[string]*avroType
}

func (p *schemaParser) parse(raw any, namespace string, depth int) (*avroType, error) {
	if depth > maxAvroDepth {
		return nil, badAvro("schema nested deeper than %d", maxAvroDepth)
	}
	switch v := raw.(type) {
	case string:
		return p.byName(v, namespace)
	case []any:
		u := &avroType{kind: kindUnion}
		for _, b := range v {
			t, err := p.parse(b, namespace, depth+1)
			if err != nil {
				return nil, err
			}
			u.branches = append(u.branches, t)
		}
		if len(u.branches) == 0 {
			return nil, badAvro("empty union")
		}
		return u, nil
	case map[string]any:
		typ, _ := v["type"].(string)
		switch typ {
		case "record", "error":
			name, ns := fullName(v, namespace)
			t := &avroType{kind: kindRecord, name: name}
			if name != "" {
				p.named[name] = t // before the fields: a record may refer to itself
			}
			fields, _ := v["fields"].([]any)
			for _, f := range fields {
				fm, ok := f.(map[string]any)
				if !ok {
					return nil, badAvro("record %s: field is not an object", name)
				}
				fname, _ := fm["name"].(string)
				ft, err := p.parse(fm["type"], ns, depth+1)
				if err != nil {
					return nil, fmt.Errorf("field %s.%s: %w", name, fname, err)
				}
				t.fields = append(t.fields, avroReadField{name: fname, id: intProp(fm["field-id"]), typ: ft})
			}
			return t, nil
		case "enum":
			name, _ := fullName(v, namespace)
			syms, _ := v["symbols"].([]any)
			t := &avroType{kind: kindEnum, name: name, symbols: len(syms)}
			if name != "" {
				p.named[name] = t
			}
			return t, nil
		case "fixed":
			name, _ := fullName(v, namespace)
			size := intProp(v["size"])
			if size < 0 || size > 1<<20 {
				return nil, badAvro("fixed %s of size %d", name, size)
			}
			t := &avroType{kind: kindFixed, name: name, size: size}
			if name != "" {
				p.named[name] = t
			}
			return t, nil
		case "array":
			items, err := p.parse(v["items"], namespace, depth+1)
			if err != nil {
				return nil, err
			}
			return &avroType{kind: kindArray, items: items}, nil
		case "map":
			values, err := p.parse(v["values"], namespace, depth+1)
			if err != nil {
				return nil, err
			}
			return &avroType{kind: kindMap, values: values}, nil
		case "":
			// {"type": {...}} wraps another schema.
			return p.parse(v["type"], namespace, depth+1)
		default:
			// A primitive with attributes, e.g. {"type":"long","logicalType":…}.
			return p.byName(typ, namespace)
		}
	}
	return nil, badAvro("schema node of JSON type %T", raw)
}

var avroPrimitives = map[string]avroKind{
	"null": kindNull, "boolean": kindBoolean, "int": kindInt, "long": kindLong,
	"float": kindFloat, "double": kindDouble, "bytes": kindBytes, "string": kindString,
}

func (p *schemaParser) byName(name, namespace string) (*avroType, error) {
	if k, ok := avroPrimitives[name]; ok {
		return &avroType{kind: k}, nil
	}
	if t, ok := p.named[name]; ok {
		return t, nil
	}
	if namespace != "" && !strings.Contains(name, ".") {
		if t, ok := p.named[namespace+"."+name]; ok {
			return t, nil
		}
	}
	return nil, badAvro("unknown type %q", name)
}

func fullName(v map[string]any, namespace string) (name, ns string) {
	name, _ = v["name"].(string)
	if s, ok := v["namespace"].(string); ok {
		namespace = s
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name, name[:i]
	}
	if namespace != "" && name != "" {
		return namespace + "." + name, namespace
	}
	return name, namespace
}

// intProp reads an integer schema attribute (a JSON number or a numeric
// string, as some writers emit field ids); -1 when absent or malformed.
func intProp(v any) int {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.Atoi(x.String()); err == nil {
			return n
		}
	case string:
		if n, err := strconv.Atoi(x); err == nil {
			return n
		}
	}
	return -1
}

// avroFile is a decoded object container file.
type avroFile struct {
	meta    map[string][]byte
	schema  *avroType
	records []any // one value per record, see decode
}

var avroOCFMagic = []byte{'O', 'b', 'j', 1}

// readAvroFile reads an Avro object container file: its metadata, writer
// schema and every record.
func readAvroFile(data []byte) (*avroFile, error) {
	if !bytes.HasPrefix(data, avroOCFMagic) {
		return nil, badAvro("not an Avro object container file")
	}
	d := avroDecoder{buf: data[len(avroOCFMagic):]}
	f := &avroFile{meta: map[string][]byte{}}
	if err := d.readMap(func(key string) error {
		v, err := d.readBytes()
		if err != nil {
			return err
		}
		f.meta[key] = bytes.Clone(v)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	sync, err := d.take(16)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	schemaJSON, ok := f.meta["avro.schema"]
	if !ok {
		return nil, badAvro("header has no avro.schema")
	}
	if f.schema, err = parseAvroSchema(schemaJSON); err != nil {
		return nil, err
	}
	codec := string(f.meta["avro.codec"])
	decoded := 0
	for len(d.buf) > 0 {
		count, err := d.readLong()
		if err != nil {
			return nil, err
		}
		size, err := d.readLong()
		if err != nil {
			return nil, err
		}
		if count < 0 || size < 0 || size > int64(len(d.buf)) {
			return nil, badAvro("block of %d records in %d bytes, %d left", count, size, len(d.buf))
		}
		raw, _ := d.take(int(size))
		marker, err := d.take(16)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(marker, sync) {
			return nil, badAvro("block sync marker does not match the header's")
		}
		block, err := decompressAvroBlock(codec, raw, maxAvroDecoded-decoded)
		if err != nil {
			return nil, err
		}
		decoded += len(block)
		bd := avroDecoder{buf: block}
		if count > int64(len(block))+1 && minAvroSize(f.schema, 0) > 0 {
			return nil, badAvro("block claims %d records in %d bytes", count, len(block))
		}
		for i := int64(0); i < count; i++ {
			v, err := bd.decode(f.schema, 0)
			if err != nil {
				return nil, fmt.Errorf("record %d: %w", len(f.records), err)
			}
			f.records = append(f.records, v)
			if len(f.records) > maxAvroItems {
				return nil, badAvro("more than %d records", maxAvroItems)
			}
		}
		if len(bd.buf) != 0 {
			return nil, badAvro("%d bytes left over in a block", len(bd.buf))
		}
	}
	return f, nil
}

func decompressAvroBlock(codec string, raw []byte, limit int) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch codec {
	case "", "null":
		out = raw
	case "deflate":
		out, err = io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(raw)), int64(limit)+1))
	case "snappy":
		if len(raw) < 4 {
			return nil, badAvro("snappy block without its checksum")
		}
		body := raw[:len(raw)-4]
		n, e := snappy.DecodedLen(body)
		if e != nil || n > limit {
			return nil, badAvro("snappy block: %v (%d bytes)", e, n)
		}
		if out, err = snappy.Decode(nil, body); err == nil && crc32.ChecksumIEEE(out) != binary.BigEndian.Uint32(raw[len(raw)-4:]) {
			return nil, badAvro("snappy block checksum mismatch")
		}
	case "zstandard":
		var zr *zstd.Decoder
		if zr, err = zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1)); err == nil {
			out, err = io.ReadAll(io.LimitReader(zr, int64(limit)+1))
			zr.Close()
		}
	default:
		return nil, badAvro("unsupported codec %q", codec)
	}
	if err != nil {
		return nil, badAvro("%s block: %v", codec, err)
	}
	if len(out) > limit {
		return nil, badAvro("more than %d bytes of decompressed data", maxAvroDecoded)
	}
	return out, nil
}

// minAvroSize is the least number of bytes a value of t takes (0 for
// null, empty records and the like), to bound counts claimed by the input.
func minAvroSize(t *avroType, depth int) int {
	if depth > maxAvroDepth {
		return 0
	}
	switch t.kind {
	case kindNull:
		return 0
	case kindFloat:
		return 4
	case kindDouble:
		return 8
	case kindFixed:
		return t.size
	case kindRecord:
		n := 0
		for _, f := range t.fields {
			n += minAvroSize(f.typ, depth+1)
		}
		return n
	}
	return 1
}

// avroRecordValue is a decoded record: its values in field order.
type avroRecordValue struct {
	t    *avroType
	vals []any
}

// get returns the value of field name and whether the record has it.
func (r *avroRecordValue) get(name string) (any, bool) {
	if i := r.t.field(name); i >= 0 {
		return r.vals[i], true
	}
	return nil, false
}

// avroDecoder decodes Avro binary values from buf. Values come back as
// nil, bool, int32 (int, enum index), int64, float32, float64, []byte
// (bytes, fixed; aliasing the input), string, *avroRecordValue, []any
// (array) and map[string]any (map); a union yields its branch's value.
// Logical types are not interpreted: the caller knows the Iceberg type.
type avroDecoder struct {
	buf []byte
}

func (d *avroDecoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.buf) {
		return nil, badAvro("unexpected end of data (%d bytes wanted, %d left)", n, len(d.buf))
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	return b, nil
}

func (d *avroDecoder) readLong() (int64, error) {
	var u uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if len(d.buf) == 0 {
			return 0, badAvro("unexpected end of data in a number")
		}
		c := d.buf[0]
		d.buf = d.buf[1:]
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, badAvro("number longer than 10 bytes")
}

func (d *avroDecoder) readBytes() ([]byte, error) {
	n, err := d.readLong()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(d.buf)) {
		return nil, badAvro("bytes of length %d, %d left", n, len(d.buf))
	}
	return d.take(int(n))
}

// readBlocks reads the blocks of an array or map, calling item once per
// item.
func (d *avroDecoder) readBlocks(minItem int, item func() error) error {
	total := int64(0)
	for {
		n, err := d.readLong()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if n < 0 {
			if n == math.MinInt64 {
				return badAvro("block count out of range")
			}
			n = -n
			if _, err := d.readLong(); err != nil { // block size in bytes
				return err
			}
		}
		total += n
		if total > maxAvroItems || minItem > 0 && n > int64(len(d.buf)/minItem) {
			return badAvro("block of %d items, %d bytes left", n, len(d.buf))
		}
		for range n {
			if err := item(); err != nil {
				return err
			}
		}
	}
}

func (d *avroDecoder) readMap(entry func(key string) error) error {
	return d.readBlocks(1, func() error {
		k, err := d.readBytes()
		if err != nil {
			return err
		}
		return entry(string(k))
	})
}

func (d *avroDecoder) decode(t *avroType, depth int) (any, error) {
	if depth > maxAvroDepth {
		return nil, badAvro("value nested deeper than %d", maxAvroDepth)
	}
	switch t.kind {
	case kindNull:
		return nil, nil
	case kindBoolean:
		b, err := d.take(1)
		if err != nil {
			return nil, err
		}
		return b[0] != 0, nil
	case kindInt, kindEnum:
		n, err := d.readLong()
		if err != nil {
			return nil, err
		}
		if n < math.MinInt32 || n > math.MaxInt32 {
			return nil, badAvro("int %d out of range", n)
		}
		if t.kind == kindEnum && (n < 0 || int(n) >= t.symbols) {
			return nil, badAvro("enum index %d of %d symbols", n, t.symbols)
		}
		return int32(n), nil
	case kindLong:
		return d.readLong()
	case kindFloat:
		b, err := d.take(4)
		if err != nil {
			return nil, err
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case kindDouble:
		b, err := d.take(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case kindBytes:
		return d.readBytes()
	case kindString:
		b, err := d.readBytes()
		return string(b), err
	case kindFixed:
		return d.take(t.size)
	case kindRecord:
		r := &avroRecordValue{t: t, vals: make([]any, len(t.fields))}
		for i := range t.fields {
			v, err := d.decode(t.fields[i].typ, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.fields[i].name, err)
			}
			r.vals[i] = v
		}
		return r, nil
	case kindArray:
		out := []any{}
		err := d.readBlocks(minAvroSize(t.items, depth), func() error {
			v, err := d.decode(t.items, depth+1)
			out = append(out, v)
			return err
		})
		return out, err
	case kindMap:
		out := map[string]any{}
		err := d.readMap(func(key string) error {
			v, err := d.decode(t.values, depth+1)
			out[key] = v
			return err
		})
		return out, err
	case kindUnion:
		i, err := d.readLong()
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= int64(len(t.branches)) {
			return nil, badAvro("union branch %d of %d", i, len(t.branches))
		}
		return d.decode(t.branches[i], depth+1)
	}
	return nil, badAvro("type kind %d", t.kind)
}
