package views

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FormatVersion is the only view format version there is.
const FormatVersion = 1

// View properties with a meaning to the catalog.
const (
	// PropHistorySize bounds how many versions a view keeps (default 10).
	PropHistorySize = "version.history.num-entries"
	// PropDropDialectAllowed lets a new version drop a SQL dialect the
	// current one has.
	PropDropDialectAllowed = "replace.drop-dialect.allowed"
	// PropMetadataPath is where the view's metadata files go instead of
	// <location>/metadata.
	PropMetadataPath = "write.metadata.path"
	// PropComment is the view's comment.
	PropComment = "comment"
)

// DefaultHistorySize is the number of versions kept without PropHistorySize.
const DefaultHistorySize = 10

// ErrInvalid marks metadata, or a change to it, that the view spec does not
// allow. The message after it says why.
var ErrInvalid = errors.New("invalid view metadata")

// InvalidError is an ErrInvalid with its reason, for callers that word the
// refusal themselves (errors.As) instead of cutting the error's text.
type InvalidError struct {
	Reason string
}

func (e *InvalidError) Error() string { return ErrInvalid.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalid) hold for every InvalidError.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// Metadata is a view's metadata document.
type Metadata struct {
	UUID             string            `json:"view-uuid"`
	FormatVersion    int               `json:"format-version"`
	Location         string            `json:"location"`
	CurrentVersionID int               `json:"current-version-id"`
	Versions         []Version         `json:"versions"`
	VersionLog       []LogEntry        `json:"version-log"`
	Schemas          []Schema          `json:"schemas"`
	Properties       map[string]string `json:"properties,omitempty"`
}

// Version is one version of a view's definition. Versions never change once
// added.
type Version struct {
	VersionID        int               `json:"version-id"`
	TimestampMS      int64             `json:"timestamp-ms"`
	SchemaID         int               `json:"schema-id"`
	Summary          map[string]string `json:"summary"`
	Representations  []Representation  `json:"representations"`
	DefaultCatalog   *string           `json:"default-catalog,omitempty"`
	DefaultNamespace []string          `json:"default-namespace"`
}

// Representation is a SQL representation of a view version; the spec
// defines no other kind.
type Representation struct {
	Type    string `json:"type"`
	SQL     string `json:"sql"`
	Dialect string `json:"dialect"`
}

// LogEntry records when the current version changed, and to which.
type LogEntry struct {
	TimestampMS int64 `json:"timestamp-ms"`
	VersionID   int   `json:"version-id"`
}

// Parse reads a metadata document and checks it.
func Parse(data []byte) (*Metadata, error) {
	var md Metadata
	if err := json.Unmarshal(data, &md); err != nil {
		return nil, &InvalidError{Reason: err.Error()}
	}
	if err := md.Validate(); err != nil {
		return nil, err
	}
	return &md, nil
}

// Validate checks what the spec requires of a whole document.
func (md *Metadata) Validate() error {
	switch {
	case md.UUID == "":
		return invalid("no view-uuid")
	case md.FormatVersion != FormatVersion:
		return invalid("unsupported format version %d", md.FormatVersion)
	case md.Location == "":
		return invalid("no location")
	case len(md.Versions) == 0:
		return invalid("no versions")
	}
	schemas := map[int]bool{}
	for _, s := range md.Schemas {
		if schemas[s.ID] {
			return invalid("schema id %d appears twice", s.ID)
		}
		schemas[s.ID] = true
	}
	versions := map[int]bool{}
	for i := range md.Versions {
		v := &md.Versions[i]
		if versions[v.VersionID] {
			return invalid("version id %d appears twice", v.VersionID)
		}
		versions[v.VersionID] = true
		if !schemas[v.SchemaID] {
			return invalid("version %d has unknown schema %d", v.VersionID, v.SchemaID)
		}
		if err := v.check(); err != nil {
			return err
		}
	}
	if !versions[md.CurrentVersionID] {
		return invalid("current version %d is not among the versions", md.CurrentVersionID)
	}
	return nil
}

// Current returns the current version.
func (md *Metadata) Current() *Version { return md.Version(md.CurrentVersionID) }

// Version returns version id, or nil.
func (md *Metadata) Version(id int) *Version {
	return find(md.Versions, func(v *Version) bool { return v.VersionID == id })
}

// Schema returns schema id, or nil.
func (md *Metadata) Schema(id int) *Schema {
	return find(md.Schemas, func(s *Schema) bool { return s.ID == id })
}

// find returns the first of items that is (the element itself, for callers
// that change it in place), or nil.
func find[T any](items []T, is func(*T) bool) *T {
	for i := range items {
		if is(&items[i]) {
			return &items[i]
		}
	}
	return nil
}

// Clone returns a deep copy.
func (md *Metadata) Clone() *Metadata {
	c := *md
	c.Versions = make([]Version, len(md.Versions))
	for i := range md.Versions {
		c.Versions[i] = md.Versions[i].clone()
	}
	c.VersionLog = slices.Clone(md.VersionLog)
	c.Schemas = make([]Schema, len(md.Schemas))
	for i := range md.Schemas {
		c.Schemas[i] = md.Schemas[i].clone()
	}
	c.Properties = maps.Clone(md.Properties)
	return &c
}

func (v *Version) clone() Version {
	c := *v
	c.Summary = maps.Clone(v.Summary)
	c.Representations = slices.Clone(v.Representations)
	c.DefaultNamespace = slices.Clone(v.DefaultNamespace)
	if v.DefaultCatalog != nil {
		dc := *v.DefaultCatalog
		c.DefaultCatalog = &dc
	}
	return c
}

// check validates a version on its own: it needs a default namespace and
// representations, at most one per dialect (dialects compare
// case-insensitively).
func (v *Version) check() error {
	if v.DefaultNamespace == nil {
		return invalid("view version %d has no default-namespace", v.VersionID)
	}
	if len(v.Representations) == 0 {
		return invalid("view version %d has no representations", v.VersionID)
	}
	seen := map[string]bool{}
	for _, r := range v.Representations {
		d := strings.ToLower(r.Dialect)
		if seen[d] {
			return invalid("Invalid view version: Cannot add multiple queries for dialect %s", d)
		}
		seen[d] = true
	}
	return nil
}

// SQL returns the representation for dialect, compared case-insensitively.
func (v *Version) SQL(dialect string) (Representation, bool) {
	for _, r := range v.Representations {
		if strings.EqualFold(r.Dialect, dialect) {
			return r, true
		}
	}
	return Representation{}, false
}

// dialects returns the version's dialects in lower case.
func (v *Version) dialects() []string {
	var out []string
	for _, r := range v.Representations {
		out = append(out, strings.ToLower(r.Dialect))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sameAs reports whether two versions would behave the same, ignoring
// their ids, timestamps and operation: Iceberg reuses such a version
// instead of adding a copy.
func (v *Version) sameAs(o *Version) bool {
	dc := func(p *string) string {
		if p == nil {
			return "\x00"
		}
		return *p
	}
	return maps.Equal(v.Summary, o.Summary) &&
		slices.Equal(v.Representations, o.Representations) &&
		dc(v.DefaultCatalog) == dc(o.DefaultCatalog) &&
		slices.Equal(v.DefaultNamespace, o.DefaultNamespace) &&
		v.SchemaID == o.SchemaID
}

// MarshalJSON writes summary as {} rather than null: the spec requires it.
func (v Version) MarshalJSON() ([]byte, error) {
	type plain Version
	if v.Summary == nil {
		v.Summary = map[string]string{}
	}
	if v.DefaultNamespace == nil {
		v.DefaultNamespace = []string{}
	}
	return json.Marshal(plain(v))
}

// UnmarshalJSON reads a version; a missing summary is an empty one.
func (v *Version) UnmarshalJSON(data []byte) error {
	type plain Version
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if p.Summary == nil {
		p.Summary = map[string]string{}
	}
	*v = Version(p)
	return nil
}

// UnmarshalJSON reads a representation; only type "sql" exists.
func (r *Representation) UnmarshalJSON(data []byte) error {
	var p struct {
		Type    string  `json:"type"`
		SQL     *string `json:"sql"`
		Dialect *string `json:"dialect"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if p.Type != "sql" {
		return invalid("unsupported view representation type %q (only \"sql\" is defined)", p.Type)
	}
	if p.SQL == nil || p.Dialect == nil {
		return invalid("a SQL representation needs sql and dialect")
	}
	if *p.Dialect == "" {
		return invalid("a SQL representation needs a dialect")
	}
	*r = Representation{Type: p.Type, SQL: *p.SQL, Dialect: *p.Dialect}
	return nil
}

// Schema is a view schema: an Iceberg struct schema. It keeps the JSON
// object the client sent (field types, docs, defaults, identifier field
// ids) and owns only its schema-id.
type Schema struct {
	ID   int
	body map[string]json.RawMessage // the object without "schema-id"
}

// NewSchema returns a schema of id with the given fields array (JSON).
func NewSchema(id int, fields json.RawMessage) Schema {
	return Schema{ID: id, body: map[string]json.RawMessage{
		"type":   json.RawMessage(`"struct"`),
		"fields": fields,
	}}
}

func (s *Schema) clone() Schema {
	return Schema{ID: s.ID, body: maps.Clone(s.body)}
}

// MarshalJSON writes the schema object with its schema-id.
func (s Schema) MarshalJSON() ([]byte, error) {
	m := make(map[string]json.RawMessage, len(s.body)+1)
	maps.Copy(m, s.body)
	id, _ := json.Marshal(s.ID)
	m["schema-id"] = id
	return json.Marshal(m)
}

// UnmarshalJSON reads a schema object: a struct with a fields array whose
// fields have ids, names and types.
func (s *Schema) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return invalid("a schema must be a JSON object: %v", err)
	}
	if m == nil {
		return invalid("a schema must be a JSON object, not null")
	}
	id := 0
	if raw, ok := m["schema-id"]; ok {
		if err := json.Unmarshal(raw, &id); err != nil {
			return invalid("schema-id: %v", err)
		}
		delete(m, "schema-id")
	}
	if raw, ok := m["type"]; ok {
		var typ string
		if err := json.Unmarshal(raw, &typ); err != nil || typ != "struct" {
			return invalid("a schema's type must be \"struct\", not %s", raw)
		}
	} else {
		m["type"] = json.RawMessage(`"struct"`)
	}
	var fields []struct {
		ID   *int            `json:"id"`
		Name *string         `json:"name"`
		Type json.RawMessage `json:"type"`
	}
	raw, ok := m["fields"]
	if !ok {
		return invalid("a schema needs fields")
	}
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return invalid("a schema's fields must be an array of fields")
	}
	for i, f := range fields {
		if f.ID == nil || f.Name == nil || len(f.Type) == 0 || string(f.Type) == "null" {
			return invalid("schema field %d needs an id, a name and a type", i)
		}
	}
	*s = Schema{ID: id, body: m}
	return nil
}

// FieldNames returns the names of the schema's top-level fields.
func (s *Schema) FieldNames() []string {
	var fields []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(s.body["fields"], &fields); err != nil {
		return nil
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}

// SameAs reports whether two schemas have the same fields and identifier
// field ids, whatever their schema ids.
func (s *Schema) SameAs(o *Schema) bool {
	return bytes.Equal(s.canonical(), o.canonical())
}

// canonical is the schema without its id in one spelling: keys sorted,
// numbers as written, no identifier-field-ids when there are none.
func (s *Schema) canonical() []byte {
	m := make(map[string]any, len(s.body))
	for k, raw := range s.body {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			v = string(raw)
		}
		if k == "identifier-field-ids" {
			if ids, ok := v.([]any); v == nil || ok && len(ids) == 0 {
				continue
			}
		}
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}
