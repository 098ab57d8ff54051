package iceberg

import (
	"encoding/json"
	"fmt"
)

// PartitionFieldIDStart is where partition field ids begin; an unpartitioned
// table's last-partition-id is PartitionFieldIDStart-1.
const PartitionFieldIDStart = 1000

// PartitionSpec is a table's partition spec.
type PartitionSpec struct {
	ID     int              `json:"spec-id"`
	Fields []PartitionField `json:"fields"`
}

// PartitionField is one field of a partition spec.
type PartitionField struct {
	SourceID  int       `json:"source-id"`
	FieldID   int       `json:"field-id"`
	Name      string    `json:"name"`
	Transform Transform `json:"transform"`
}

// MarshalJSON always writes "fields" as a list, never null.
func (s PartitionSpec) MarshalJSON() ([]byte, error) {
	type plain PartitionSpec
	if s.Fields == nil {
		s.Fields = []PartitionField{}
	}
	return json.Marshal(plain(s))
}

// FieldsJSON is the "partition-spec" key-value metadata of a manifest: only
// the fields array.
func (s PartitionSpec) FieldsJSON() []byte {
	fields := s.Fields
	if fields == nil {
		fields = []PartitionField{}
	}
	b, _ := json.Marshal(fields) // cannot fail: validated transforms only
	return b
}

// IsUnpartitioned reports whether the spec has no fields that produce values.
func (s PartitionSpec) IsUnpartitioned() bool {
	for _, f := range s.Fields {
		if f.Transform.Kind != TransformVoid {
			return false
		}
	}
	return true
}

// PartitionType is the struct type of the partition tuple under schema:
// one optional field per partition field, with the partition field id.
func (s PartitionSpec) PartitionType(schema *Schema) (Type, error) {
	fields := make([]NestedField, 0, len(s.Fields))
	for _, f := range s.Fields {
		src := schema.FindField(f.SourceID)
		if src == nil {
			return Type{}, fmt.Errorf("partition field %d (%s): source column %d is not in schema %d", f.FieldID, f.Name, f.SourceID, schema.ID)
		}
		rt, err := f.Transform.ResultType(src.Type)
		if err != nil {
			return Type{}, fmt.Errorf("partition field %d (%s): %w", f.FieldID, f.Name, err)
		}
		fields = append(fields, NestedField{ID: f.FieldID, Name: f.Name, Type: rt})
	}
	return StructOf(fields...), nil
}
