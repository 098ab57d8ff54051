package iceberg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// TypeID names an Iceberg type without its parameters.
type TypeID uint8

// The Iceberg types this package writes. Variant, geometry, geography and
// unknown (v3) are not modelled: nothing here produces them yet.
const (
	TypeInvalid TypeID = iota
	TypeBoolean
	TypeInt
	TypeLong
	TypeFloat
	TypeDouble
	TypeDecimal // Precision, Scale
	TypeDate
	TypeTime
	TypeTimestamp
	TypeTimestampTZ
	TypeTimestampNS   // v3
	TypeTimestampTZNS // v3
	TypeString
	TypeUUID
	TypeFixed // Length
	TypeBinary
	TypeStruct // Fields
	TypeList   // Element
	TypeMap    // Key, Value
)

var typeNames = [...]string{
	TypeInvalid:       "invalid",
	TypeBoolean:       "boolean",
	TypeInt:           "int",
	TypeLong:          "long",
	TypeFloat:         "float",
	TypeDouble:        "double",
	TypeDecimal:       "decimal",
	TypeDate:          "date",
	TypeTime:          "time",
	TypeTimestamp:     "timestamp",
	TypeTimestampTZ:   "timestamptz",
	TypeTimestampNS:   "timestamp_ns",
	TypeTimestampTZNS: "timestamptz_ns",
	TypeString:        "string",
	TypeUUID:          "uuid",
	TypeFixed:         "fixed",
	TypeBinary:        "binary",
	TypeStruct:        "struct",
	TypeList:          "list",
	TypeMap:           "map",
}

func (id TypeID) String() string {
	if int(id) < len(typeNames) {
		return typeNames[id]
	}
	return "TypeID(" + strconv.Itoa(int(id)) + ")"
}

// Type is an Iceberg type. Primitive types use ID and, for decimal and fixed,
// their parameters; nested types carry their children as NestedFields, so
// list elements and map keys and values have ids like struct fields do.
type Type struct {
	ID        TypeID
	Precision int // decimal
	Scale     int // decimal
	Length    int // fixed

	Fields  []NestedField // struct
	Element *NestedField  // list; Name is "element"
	Key     *NestedField  // map; always required, Name "key"
	Value   *NestedField  // map; Name "value"
}

// NestedField is a struct field, a list element or a map key or value.
type NestedField struct {
	ID       int
	Name     string
	Required bool
	Type     Type
	Doc      string
}

// Primitive returns the primitive type id (not decimal, fixed or nested).
func Primitive(id TypeID) Type { return Type{ID: id} }

// DecimalOf returns decimal(precision, scale).
func DecimalOf(precision, scale int) Type {
	return Type{ID: TypeDecimal, Precision: precision, Scale: scale}
}

// FixedOf returns fixed[length].
func FixedOf(length int) Type { return Type{ID: TypeFixed, Length: length} }

// StructOf returns a struct of fields.
func StructOf(fields ...NestedField) Type { return Type{ID: TypeStruct, Fields: fields} }

// ListOf returns a list whose element has id elementID.
func ListOf(elementID int, elementRequired bool, element Type) Type {
	return Type{ID: TypeList, Element: &NestedField{ID: elementID, Name: "element", Required: elementRequired, Type: element}}
}

// MapOf returns a map; keys are always required.
func MapOf(keyID int, key Type, valueID int, valueRequired bool, value Type) Type {
	return Type{ID: TypeMap,
		Key:   &NestedField{ID: keyID, Name: "key", Required: true, Type: key},
		Value: &NestedField{ID: valueID, Name: "value", Required: valueRequired, Type: value}}
}

// IsPrimitive reports whether t is neither struct, list nor map.
func (t Type) IsPrimitive() bool { return t.ID != TypeStruct && t.ID != TypeList && t.ID != TypeMap }

// MinFormatVersion is the first table format version that allows t and all
// its children.
func (t Type) MinFormatVersion() int {
	v := 1
	switch t.ID {
	case TypeTimestampNS, TypeTimestampTZNS:
		v = 3
	case TypeStruct:
		for _, f := range t.Fields {
			v = max(v, f.Type.MinFormatVersion())
		}
	case TypeList:
		v = t.Element.Type.MinFormatVersion()
	case TypeMap:
		v = max(t.Key.Type.MinFormatVersion(), t.Value.Type.MinFormatVersion())
	}
	return v
}

// String returns the JSON type string of a primitive ("decimal(9,2)",
// "fixed[16]") and a short form of nested types ("list<int>").
func (t Type) String() string {
	switch t.ID {
	case TypeDecimal:
		return "decimal(" + strconv.Itoa(t.Precision) + "," + strconv.Itoa(t.Scale) + ")"
	case TypeFixed:
		return "fixed[" + strconv.Itoa(t.Length) + "]"
	case TypeList:
		return "list<" + t.Element.Type.String() + ">"
	case TypeMap:
		return "map<" + t.Key.Type.String() + ", " + t.Value.Type.String() + ">"
	case TypeStruct:
		var b strings.Builder
		b.WriteString("struct<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(f.ID) + ": " + f.Name + ": " + f.Type.String())
		}
		b.WriteByte('>')
		return b.String()
	}
	return t.ID.String()
}

// Equal reports whether t and u are the same type, ids and requiredness of
// nested fields included.
func (t Type) Equal(u Type) bool {
	if t.ID != u.ID || t.Precision != u.Precision || t.Scale != u.Scale || t.Length != u.Length {
		return false
	}
	switch t.ID {
	case TypeStruct:
		if len(t.Fields) != len(u.Fields) {
			return false
		}
		for i := range t.Fields {
			if !t.Fields[i].equal(&u.Fields[i]) {
				return false
			}
		}
	case TypeList:
		return t.Element.equal(u.Element)
	case TypeMap:
		return t.Key.equal(u.Key) && t.Value.equal(u.Value)
	}
	return true
}

func (f *NestedField) equal(g *NestedField) bool {
	return f.ID == g.ID && f.Name == g.Name && f.Required == g.Required && f.Doc == g.Doc && f.Type.Equal(g.Type)
}

// MarshalJSON writes the type as Appendix C of the spec says: a string for
// primitives, an object for nested types.
func (t Type) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := t.appendJSON(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (t Type) appendJSON(b *bytes.Buffer) error {
	switch t.ID {
	case TypeInvalid:
		return errors.New("iceberg: invalid type")
	case TypeStruct:
		b.WriteString(`{"type":"struct","fields":`)
		if err := appendFieldsJSON(b, t.Fields); err != nil {
			return err
		}
		b.WriteByte('}')
	case TypeList:
		if t.Element == nil {
			return errors.New("iceberg: list without element")
		}
		fmt.Fprintf(b, `{"type":"list","element-id":%d,"element-required":%t,"element":`, t.Element.ID, t.Element.Required)
		if err := t.Element.Type.appendJSON(b); err != nil {
			return err
		}
		b.WriteByte('}')
	case TypeMap:
		if t.Key == nil || t.Value == nil {
			return errors.New("iceberg: map without key or value")
		}
		fmt.Fprintf(b, `{"type":"map","key-id":%d,"key":`, t.Key.ID)
		if err := t.Key.Type.appendJSON(b); err != nil {
			return err
		}
		fmt.Fprintf(b, `,"value-id":%d,"value-required":%t,"value":`, t.Value.ID, t.Value.Required)
		if err := t.Value.Type.appendJSON(b); err != nil {
			return err
		}
		b.WriteByte('}')
	default:
		b.WriteByte('"')
		b.WriteString(t.String())
		b.WriteByte('"')
	}
	return nil
}

func appendFieldsJSON(b *bytes.Buffer, fields []NestedField) error {
	b.WriteByte('[')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.Name)
		fmt.Fprintf(b, `{"id":%d,"name":%s,"required":%t,"type":`, f.ID, name, f.Required)
		if err := f.Type.appendJSON(b); err != nil {
			return fmt.Errorf("field %d (%s): %w", f.ID, f.Name, err)
		}
		if f.Doc != "" {
			doc, _ := json.Marshal(f.Doc)
			b.WriteString(`,"doc":`)
			b.Write(doc)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return nil
}

// ErrBadType reports a type string or JSON object this package cannot read.
var ErrBadType = errors.New("iceberg: bad type")

// UnmarshalJSON reads the Appendix C form.
func (t *Type) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		pt, err := ParsePrimitive(s)
		if err != nil {
			return err
		}
		*t = pt
		return nil
	}
	var obj struct {
		Type            string          `json:"type"`
		Fields          []NestedField   `json:"fields"`
		ElementID       int             `json:"element-id"`
		ElementRequired bool            `json:"element-required"`
		Element         json.RawMessage `json:"element"`
		KeyID           int             `json:"key-id"`
		Key             json.RawMessage `json:"key"`
		ValueID         int             `json:"value-id"`
		ValueRequired   bool            `json:"value-required"`
		Value           json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	switch obj.Type {
	case "struct":
		*t = StructOf(obj.Fields...)
	case "list":
		var elem Type
		if err := json.Unmarshal(obj.Element, &elem); err != nil {
			return fmt.Errorf("list element: %w", err)
		}
		*t = ListOf(obj.ElementID, obj.ElementRequired, elem)
	case "map":
		var k, v Type
		if err := json.Unmarshal(obj.Key, &k); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
		if err := json.Unmarshal(obj.Value, &v); err != nil {
			return fmt.Errorf("map value: %w", err)
		}
		*t = MapOf(obj.KeyID, k, obj.ValueID, obj.ValueRequired, v)
	default:
		return fmt.Errorf("%w: nested type %q", ErrBadType, obj.Type)
	}
	return nil
}

// ParsePrimitive parses a primitive type string such as "long",
// "decimal(9, 2)" or "fixed[16]"; whitespace around parameters is allowed.
func ParsePrimitive(s string) (Type, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for id := TypeBoolean; id <= TypeBinary; id++ {
		if id != TypeDecimal && id != TypeFixed && name == typeNames[id] {
			return Type{ID: id}, nil
		}
	}
	if args, ok := strings.CutPrefix(name, "decimal("); ok {
		if args, ok = strings.CutSuffix(args, ")"); ok {
			p, sc, ok := strings.Cut(args, ",")
			precision, err1 := strconv.Atoi(strings.TrimSpace(p))
			scale, err2 := strconv.Atoi(strings.TrimSpace(sc))
			if ok && err1 == nil && err2 == nil && precision >= 1 && precision <= 38 && scale >= 0 && scale <= precision {
				return DecimalOf(precision, scale), nil
			}
		}
	}
	if args, ok := strings.CutPrefix(name, "fixed["); ok {
		if args, ok = strings.CutSuffix(args, "]"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(args)); err == nil && n > 0 {
				return FixedOf(n), nil
			}
		}
	}
	return Type{}, fmt.Errorf("%w: %q", ErrBadType, s)
}

// MarshalJSON writes the field object of Appendix C.
func (f NestedField) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := appendFieldsJSON(&b, []NestedField{f}); err != nil {
		return nil, err
	}
	return b.Bytes()[1 : b.Len()-1], nil
}

// UnmarshalJSON reads a field object.
func (f *NestedField) UnmarshalJSON(data []byte) error {
	var obj struct {
		ID       int    `json:"id"`
		Name     string `json:"name"`
		Required bool   `json:"required"`
		Type     Type   `json:"type"`
		Doc      string `json:"doc"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	*f = NestedField{ID: obj.ID, Name: obj.Name, Required: obj.Required, Type: obj.Type, Doc: obj.Doc}
	return nil
}

// Schema is a table schema: a struct with an id.
type Schema struct {
	ID                 int
	Fields             []NestedField
	IdentifierFieldIDs []int
}

// MarshalJSON writes {"type":"struct","schema-id":…,"fields":[…]}.
func (s *Schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"struct","schema-id":%d`, s.ID)
	if len(s.IdentifierFieldIDs) > 0 {
		ids, _ := json.Marshal(s.IdentifierFieldIDs)
		b.WriteString(`,"identifier-field-ids":`)
		b.Write(ids)
	}
	b.WriteString(`,"fields":`)
	if err := appendFieldsJSON(&b, s.Fields); err != nil {
		return nil, fmt.Errorf("schema %d: %w", s.ID, err)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a schema object.
func (s *Schema) UnmarshalJSON(data []byte) error {
	var obj struct {
		Type               string        `json:"type"`
		SchemaID           int           `json:"schema-id"`
		IdentifierFieldIDs []int         `json:"identifier-field-ids"`
		Fields             []NestedField `json:"fields"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	if obj.Type != "" && obj.Type != "struct" {
		return fmt.Errorf("%w: schema of type %q", ErrBadType, obj.Type)
	}
	*s = Schema{ID: obj.SchemaID, Fields: obj.Fields, IdentifierFieldIDs: obj.IdentifierFieldIDs}
	return nil
}

// AsStruct returns the schema's struct type.
func (s *Schema) AsStruct() Type { return StructOf(s.Fields...) }

// HighestFieldID is the largest id of any field, element, key or value.
func (s *Schema) HighestFieldID() int {
	n := 0
	s.walk(func(f *NestedField) { n = max(n, f.ID) })
	return n
}

// FindField returns the field, element, key or value with id, or nil.
func (s *Schema) FindField(id int) *NestedField {
	var found *NestedField
	s.walk(func(f *NestedField) {
		if f.ID == id && found == nil {
			found = f
		}
	})
	return found
}

// walk visits every field, element, key and value in depth-first order.
func (s *Schema) walk(visit func(*NestedField)) {
	var walkType func(t *Type)
	walkField := func(f *NestedField) {
		visit(f)
		walkType(&f.Type)
	}
	walkType = func(t *Type) {
		switch t.ID {
		case TypeStruct:
			for i := range t.Fields {
				walkField(&t.Fields[i])
			}
		case TypeList:
			walkField(t.Element)
		case TypeMap:
			walkField(t.Key)
			walkField(t.Value)
		}
	}
	for i := range s.Fields {
		walkField(&s.Fields[i])
	}
}

// Equal reports whether s and o have the same fields and identifier ids
// (the schema ids may differ).
func (s *Schema) Equal(o *Schema) bool {
	if len(s.IdentifierFieldIDs) != len(o.IdentifierFieldIDs) {
		return false
	}
	for i := range s.IdentifierFieldIDs {
		if s.IdentifierFieldIDs[i] != o.IdentifierFieldIDs[i] {
			return false
		}
	}
	return s.AsStruct().Equal(o.AsStruct())
}
