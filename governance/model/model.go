package model

import (
	"slices"
	"strings"
	"time"
)

// TagRef names a tag: namespace.name ("pii.email").
type TagRef struct {
	Namespace, Name string
}

// String is "namespace.name".
func (t TagRef) String() string { return t.Namespace + "." + t.Name }

// Tag is a governance tag.
type Tag struct {
	TagRef
	Comment string
}

// ObjectKind is what an object tag, attachment target or grant names.
type ObjectKind uint8

// The object kinds.
const (
	ObjectSchema ObjectKind = iota + 1
	ObjectTable
	ObjectColumn
)

// String is "schema", "table" or "column" (the API's object-kind).
func (k ObjectKind) String() string {
	switch k {
	case ObjectSchema:
		return "schema"
	case ObjectTable:
		return "table"
	case ObjectColumn:
		return "column"
	}
	return "unknown"
}

// ParseObjectKind reads an API object-kind.
func ParseObjectKind(s string) (ObjectKind, bool) {
	switch strings.ToLower(s) {
	case "schema", "namespace":
		return ObjectSchema, true
	case "table":
		return ObjectTable, true
	case "column":
		return ObjectColumn, true
	}
	return 0, false
}

// ObjectRef is a DuckLake object by id: a schema (SchemaID), a table
// (SchemaID, TableID) or a column (SchemaID, TableID, ColumnID).
type ObjectRef struct {
	Kind     ObjectKind
	SchemaID int64
	TableID  int64
	ColumnID int64
}

// ObjectTag is a tag on a schema, table or column.
type ObjectTag struct {
	Object ObjectRef
	Tag    TagRef
}

// MaskingPolicy rewrites a column's values for principals without one of
// its UnmaskedRoles: either a DuckDB SQL Body over the signature's
// parameter, or a standard Action of the read-restrictions proposal.
type MaskingPolicy struct {
	Name string
	// Signature is as authored, "(val VARCHAR)"; Param and ArgType are its
	// parameter and DuckDB's canonical name of its type ("VARCHAR").
	// ArgType is empty for an Action without a signature: the action's own
	// applicability decides which columns it reaches.
	Signature string
	Param     string
	ArgType   string
	Body      string
	Action    StandardAction
	// UnmaskedRoles bypass the mask (any one of them).
	UnmaskedRoles []string
	// FileLayer enforces the mask on the bytes (the airtight tier).
	FileLayer bool
	Comment   string
	UpdatedAt time.Time
}

// RowPolicy keeps the rows for which Body, a boolean DuckDB expression over
// the table's columns, is true, for principals without one of its
// UnmaskedRoles.
type RowPolicy struct {
	Name string
	Body string
	// Columns are the columns Body reads, as authored.
	Columns       []string
	UnmaskedRoles []string
	Comment       string
	UpdatedAt     time.Time
}

// PolicyKind is a policy's kind.
type PolicyKind uint8

// The policy kinds.
const (
	PolicyMasking PolicyKind = iota + 1
	PolicyRowAccess
)

// String is "masking" or "row-access" (the API's policy-kind).
func (k PolicyKind) String() string {
	switch k {
	case PolicyMasking:
		return "masking"
	case PolicyRowAccess:
		return "row-access"
	}
	return "unknown"
}

// ParsePolicyKind reads an API policy-kind.
func ParsePolicyKind(s string) (PolicyKind, bool) {
	switch strings.ToLower(s) {
	case "masking", "mask":
		return PolicyMasking, true
	case "row-access", "row_access", "row":
		return PolicyRowAccess, true
	}
	return 0, false
}

// TargetKind is what a policy is attached to.
type TargetKind uint8

// The attachment targets. Masks attach to tags and columns, row-access
// policies to tags and tables; the other pairs would be ignored by the
// resolver and are refused when authored.
const (
	TargetTag TargetKind = iota + 1
	TargetColumn
	TargetTable
)

// String is "tag", "column" or "table" (the API's target-kind).
func (k TargetKind) String() string {
	switch k {
	case TargetTag:
		return "tag"
	case TargetColumn:
		return "column"
	case TargetTable:
		return "table"
	}
	return "unknown"
}

// ParseTargetKind reads an API target-kind.
func ParseTargetKind(s string) (TargetKind, bool) {
	switch strings.ToLower(s) {
	case "tag":
		return TargetTag, true
	case "column":
		return TargetColumn, true
	case "table":
		return TargetTable, true
	}
	return 0, false
}

// Attachment attaches a policy to a tag, a column or a table.
type Attachment struct {
	Kind   PolicyKind
	Policy string
	Target TargetKind
	Tag    TagRef    // TargetTag
	Object ObjectRef // TargetColumn, TargetTable
	// Bindings, for a row-access policy attached to a table, map the
	// policy's columns (lower-case) to the table's column ids at the time
	// of attaching, so that a column renamed since still feeds the filter.
	// Tag attachments bind by name when planned.
	Bindings map[string]int64
}

// Role is a governance role.
type Role struct {
	Name    string
	Comment string
}

// RoleGrant grants Role to Principal.
type RoleGrant struct {
	Role, Principal string
}

// PrivilegeSelect is the one object privilege: reading a table.
const PrivilegeSelect = "select"

// ObjectGrant grants a privilege on a schema or table to a role. A table
// with a select grant on it or on its schema is allowlisted: only
// principals holding a granted role see it.
type ObjectGrant struct {
	Object    ObjectRef // ObjectSchema or ObjectTable
	Privilege string
	Role      string
}

// Synthetic role prefixes: a principal's session context reaches policies
// as the roles "actor:<actor>" and "channel:<channel>".
const (
	ActorRolePrefix   = "actor:"
	ChannelRolePrefix = "channel:"
)

// IsSyntheticRole reports whether name is a context role, which cannot be
// created or granted.
func IsSyntheticRole(name string) bool {
	return strings.HasPrefix(name, ActorRolePrefix) || strings.HasPrefix(name, ChannelRolePrefix)
}

// RoleSet is a principal's effective roles, sorted and without
// duplicates, so that equal sets compare (and hash) equal.
type RoleSet []string

// NewRoleSet sorts and compacts roles into a RoleSet.
func NewRoleSet(roles ...[]string) RoleSet {
	var all []string
	for _, r := range roles {
		all = append(all, r...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// Has reports whether s holds role.
func (s RoleSet) Has(role string) bool {
	_, ok := slices.BinarySearch(s, role)
	return ok
}

// Any reports whether s holds any of roles.
func (s RoleSet) Any(roles []string) bool {
	for _, r := range roles {
		if s.Has(r) {
			return true
		}
	}
	return false
}

// Key is a string that identifies the set, for cache keys.
func (s RoleSet) Key() string { return strings.Join(s, "\x00") }
