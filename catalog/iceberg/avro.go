package iceberg

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
)

// avroField is one field of an Avro record schema being built.
type avroField struct {
	name     string
	id       int
	typ      string // Avro schema JSON of the non-null type
	optional bool   // ["null", typ] with default null
}

func avroRecord(name string, fields []avroField) string {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":`)
	b.WriteString(strconv.Quote(name))
	b.WriteString(`,"fields":[`)
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		b.WriteString(strconv.Quote(f.name))
		b.WriteString(`,"type":`)
		if f.optional {
			b.WriteString(`["null",` + f.typ + `],"default":null`)
		} else {
			b.WriteString(f.typ)
		}
		b.WriteString(`,"field-id":` + strconv.Itoa(f.id) + `}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// avroSchemas turns Iceberg types into Avro schema JSON (Appendix A),
// defining each named fixed type once and referring to it by name after.
type avroSchemas struct {
	named map[string]bool
}

func (s *avroSchemas) fixed(name string, size int, extra string) string {
	if s.named[name] {
		return strconv.Quote(name)
	}
	if s.named == nil {
		s.named = map[string]bool{}
	}
	s.named[name] = true
	return `{"type":"fixed","name":` + strconv.Quote(name) + `,"size":` + strconv.Itoa(size) + extra + `}`
}

// of returns the Avro schema of t; recordName names a struct's record.
func (s *avroSchemas) of(t Type, recordName string) (string, error) {
	switch t.ID {
	case TypeBoolean:
		return `"boolean"`, nil
	case TypeInt:
		return `"int"`, nil
	case TypeLong:
		return `"long"`, nil
	case TypeFloat:
		return `"float"`, nil
	case TypeDouble:
		return `"double"`, nil
	case TypeDate:
		return `{"type":"int","logicalType":"date"}`, nil
	case TypeTime:
		return `{"type":"long","logicalType":"time-micros"}`, nil
	case TypeTimestamp:
		return `{"type":"long","logicalType":"timestamp-micros","adjust-to-utc":false}`, nil
	case TypeTimestampTZ:
		return `{"type":"long","logicalType":"timestamp-micros","adjust-to-utc":true}`, nil
	case TypeTimestampNS:
		return `{"type":"long","logicalType":"timestamp-nanos","adjust-to-utc":false}`, nil
	case TypeTimestampTZNS:
		return `{"type":"long","logicalType":"timestamp-nanos","adjust-to-utc":true}`, nil
	case TypeString:
		return `"string"`, nil
	case TypeBinary:
		return `"bytes"`, nil
	case TypeUUID:
		return s.fixed("uuid_fixed", 16, `,"logicalType":"uuid"`), nil
	case TypeFixed:
		return s.fixed("fixed_"+strconv.Itoa(t.Length), t.Length, ""), nil
	case TypeDecimal:
		return s.fixed(fmt.Sprintf("decimal_%d_%d", t.Precision, t.Scale), DecimalSize(t.Precision),
			fmt.Sprintf(`,"logicalType":"decimal","precision":%d,"scale":%d`, t.Precision, t.Scale)), nil
	case TypeStruct:
		fields := make([]avroField, len(t.Fields))
		for i, f := range t.Fields {
			ft, err := s.of(f.Type, "r"+strconv.Itoa(f.ID))
			if err != nil {
				return "", err
			}
			fields[i] = avroField{name: AvroName(f.Name), id: f.ID, typ: ft, optional: !f.Required}
		}
		return avroRecord(recordName, fields), nil
	case TypeList:
		et, err := s.of(t.Element.Type, "r"+strconv.Itoa(t.Element.ID))
		if err != nil {
			return "", err
		}
		if !t.Element.Required {
			et = `["null",` + et + `]`
		}
		return `{"type":"array","items":` + et + `,"element-id":` + strconv.Itoa(t.Element.ID) + `}`, nil
	case TypeMap:
		vt, err := s.of(t.Value.Type, "r"+strconv.Itoa(t.Value.ID))
		if err != nil {
			return "", err
		}
		if t.Key.Type.ID == TypeString {
			if !t.Value.Required {
				vt = `["null",` + vt + `]`
			}
			return `{"type":"map","values":` + vt + `,"key-id":` + strconv.Itoa(t.Key.ID) + `,"value-id":` + strconv.Itoa(t.Value.ID) + `}`, nil
		}
		kt, err := s.of(t.Key.Type, "r"+strconv.Itoa(t.Key.ID))
		if err != nil {
			return "", err
		}
		rec := avroRecord(fmt.Sprintf("k%d_v%d", t.Key.ID, t.Value.ID), []avroField{
			{name: "key", id: t.Key.ID, typ: kt},
			{name: "value", id: t.Value.ID, typ: vt, optional: !t.Value.Required},
		})
		return `{"type":"array","logicalType":"map","items":` + rec + `}`, nil
	}
	return "", fmt.Errorf("iceberg: no Avro form for %s", t)
}

// AvroName makes an Iceberg field name a valid Avro name the way the Java
// implementation does: a leading digit gets a "_" prefix, any other
// character outside [A-Za-z0-9_] becomes "_x" and its hex code.
func AvroName(name string) string {
	valid := func(i int, r rune) bool {
		return r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')
	}
	ok := name != ""
	for i, r := range name {
		ok = ok && valid(i, r)
	}
	if ok {
		return name
	}
	var b strings.Builder
	for i, r := range name {
		switch {
		case valid(i, r):
			b.WriteRune(r)
		case i == 0 && r >= '0' && r <= '9':
			b.WriteByte('_')
			b.WriteRune(r)
		default:
			b.WriteString("_x" + strings.ToUpper(strconv.FormatInt(int64(r), 16)))
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// appendAvroValue writes v as type t (wrapped in the ["null", t] union when
// optional) in Avro binary encoding.
func appendAvroValue(w *avro.Writer, t Type, optional bool, v any) error {
	if optional {
		if v == nil {
			w.WriteLong(0)
			return nil
		}
		w.WriteLong(1)
	} else if v == nil {
		return fmt.Errorf("%w: null for required %s", ErrBadValue, t)
	}
	ok := false
	switch t.ID {
	case TypeBoolean:
		ok = PutValue(v, w.WriteBool)
	case TypeInt, TypeDate:
		ok = PutValue(v, w.WriteInt)
	case TypeLong, TypeTime, TypeTimestamp, TypeTimestampTZ, TypeTimestampNS, TypeTimestampTZNS:
		ok = PutValue(v, w.WriteLong)
	case TypeFloat:
		ok = PutValue(v, w.WriteFloat)
	case TypeDouble:
		ok = PutValue(v, w.WriteDouble)
	case TypeString:
		ok = PutValue(v, w.WriteString)
	case TypeBinary:
		ok = PutValue(v, w.WriteBytes)
	case TypeUUID:
		ok = PutValue(v, func(u [16]byte) { _, _ = w.Write(u[:]) })
	case TypeFixed:
		b, isBytes := v.([]byte)
		if ok = isBytes && len(b) == t.Length; ok {
			_, _ = w.Write(b)
		}
	case TypeDecimal:
		d, isDec := v.(Decimal)
		if ok = isDec && d.Unscaled != nil; ok {
			b, fits := AppendFixedBigEndian(nil, d.Unscaled, DecimalSize(t.Precision))
			if !fits {
				return fmt.Errorf("%w: %s does not fit %s", ErrBadValue, d.Unscaled, t)
			}
			_, _ = w.Write(b)
		}
	default:
		return fmt.Errorf("%w: cannot write %s values", ErrBadValue, t)
	}
	if !ok {
		return badValue(t, v)
	}
	return nil
}

var avroMagic = [4]byte{'O', 'b', 'j', 1}

// writeContainer frames one block of encoded records as an Avro object
// container file. Metadata keys are written sorted and the sync marker is
// derived from the content, so equal input gives equal bytes.
// The tests parse every schema form with hamba/avro and read the files back.
func writeContainer(schemaJSON string, meta map[string]string, count int64, block []byte) ([]byte, error) {
	kv := map[string][]byte{"avro.schema": []byte(schemaJSON), "avro.codec": []byte("null")}
	for k, v := range meta {
		kv[k] = []byte(v)
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write(kv[k])
	}
	h.Write(block)
	var sync [16]byte
	copy(sync[:], h.Sum(nil))

	var out bytes.Buffer
	out.Grow(len(block) + len(schemaJSON) + 512)
	w := avro.NewWriter(&out, 4096)
	_, _ = w.Write(avroMagic[:])
	w.WriteLong(int64(len(keys)))
	for _, k := range keys {
		w.WriteString(k)
		w.WriteBytes(kv[k])
	}
	w.WriteLong(0)
	_, _ = w.Write(sync[:])
	if count > 0 {
		w.WriteLong(count)
		w.WriteLong(int64(len(block)))
		_, _ = w.Write(block)
		_, _ = w.Write(sync[:])
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
