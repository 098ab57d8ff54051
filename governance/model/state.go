package model

import "slices"

// State is the whole governance configuration at one version. A State is
// immutable once Index has run: share it freely, replace it whole.
type State struct {
	// Version identifies the configuration: it grows with every change.
	Version int64

	Tags         []Tag
	ObjectTags   []ObjectTag
	Masks        []MaskingPolicy
	RowPolicies  []RowPolicy
	Attachments  []Attachment
	Roles        []Role
	RoleGrants   []RoleGrant
	ObjectGrants []ObjectGrant

	idx *index
}

type colKey struct{ table, column int64 }

type index struct {
	masks          map[string]*MaskingPolicy
	rows           map[string]*RowPolicy
	tagsBySchema   map[int64][]TagRef
	tagsByTable    map[int64][]TagRef
	tagsByColumn   map[colKey][]TagRef
	attachByTag    map[TagRef][]Attachment
	attachColumn   map[colKey][]Attachment
	attachTable    map[int64][]Attachment
	grantsTable    map[int64][]string
	grantsSchema   map[int64][]string
	rolesOf        map[string][]string
	roles          map[string]bool
	tags           map[TagRef]bool
	governedTables map[int64]bool // tables with a tag or attachment on them or a column
	taggedSchemas  map[int64]bool
}

// Index builds the lookups the planner uses; call it once, before sharing
// the State. It returns s.
func (s *State) Index() *State {
	x := &index{
		masks: map[string]*MaskingPolicy{}, rows: map[string]*RowPolicy{},
		tagsBySchema: map[int64][]TagRef{}, tagsByTable: map[int64][]TagRef{}, tagsByColumn: map[colKey][]TagRef{},
		attachByTag: map[TagRef][]Attachment{}, attachColumn: map[colKey][]Attachment{}, attachTable: map[int64][]Attachment{},
		grantsTable: map[int64][]string{}, grantsSchema: map[int64][]string{}, rolesOf: map[string][]string{},
		roles: map[string]bool{}, tags: map[TagRef]bool{}, governedTables: map[int64]bool{}, taggedSchemas: map[int64]bool{},
	}
	for i := range s.Masks {
		x.masks[s.Masks[i].Name] = &s.Masks[i]
	}
	for i := range s.RowPolicies {
		x.rows[s.RowPolicies[i].Name] = &s.RowPolicies[i]
	}
	for _, t := range s.Tags {
		x.tags[t.TagRef] = true
	}
	for _, ot := range s.ObjectTags {
		switch ot.Object.Kind {
		case ObjectSchema:
			x.tagsBySchema[ot.Object.SchemaID] = append(x.tagsBySchema[ot.Object.SchemaID], ot.Tag)
			x.taggedSchemas[ot.Object.SchemaID] = true
		case ObjectTable:
			x.tagsByTable[ot.Object.TableID] = append(x.tagsByTable[ot.Object.TableID], ot.Tag)
			x.governedTables[ot.Object.TableID] = true
		case ObjectColumn:
			k := colKey{ot.Object.TableID, ot.Object.ColumnID}
			x.tagsByColumn[k] = append(x.tagsByColumn[k], ot.Tag)
			x.governedTables[ot.Object.TableID] = true
		}
	}
	for _, a := range s.Attachments {
		switch a.Target {
		case TargetTag:
			x.attachByTag[a.Tag] = append(x.attachByTag[a.Tag], a)
		case TargetColumn:
			k := colKey{a.Object.TableID, a.Object.ColumnID}
			x.attachColumn[k] = append(x.attachColumn[k], a)
			x.governedTables[a.Object.TableID] = true
		case TargetTable:
			x.attachTable[a.Object.TableID] = append(x.attachTable[a.Object.TableID], a)
			x.governedTables[a.Object.TableID] = true
		}
	}
	for _, g := range s.ObjectGrants {
		if g.Privilege != PrivilegeSelect {
			continue
		}
		switch g.Object.Kind {
		case ObjectTable:
			x.grantsTable[g.Object.TableID] = append(x.grantsTable[g.Object.TableID], g.Role)
		case ObjectSchema:
			x.grantsSchema[g.Object.SchemaID] = append(x.grantsSchema[g.Object.SchemaID], g.Role)
		}
	}
	for _, g := range s.RoleGrants {
		x.rolesOf[g.Principal] = append(x.rolesOf[g.Principal], g.Role)
	}
	for _, r := range s.Roles {
		x.roles[r.Name] = true
	}
	s.idx = x
	return s
}

func (s *State) ix() *index {
	if s.idx == nil {
		panic("model: State used before Index")
	}
	return s.idx
}

// Mask is the masking policy called name, or nil.
func (s *State) Mask(name string) *MaskingPolicy { return s.ix().masks[name] }

// RowPolicy is the row-access policy called name, or nil.
func (s *State) RowPolicy(name string) *RowPolicy { return s.ix().rows[name] }

// HasRole reports whether role name exists.
func (s *State) HasRole(name string) bool { return s.ix().roles[name] }

// HasTag reports whether tag t exists.
func (s *State) HasTag(t TagRef) bool { return s.ix().tags[t] }

// GrantedRoles are the roles granted to principal.
func (s *State) GrantedRoles(principal string) []string { return s.ix().rolesOf[principal] }

// Allowlist is the roles that may see table tableID of schema schemaID,
// and whether the table is allowlisted at all (it has a select grant, or
// its schema has).
func (s *State) Allowlist(schemaID, tableID int64) (roles []string, listed bool) {
	x := s.ix()
	t, sc := x.grantsTable[tableID], x.grantsSchema[schemaID]
	if len(t) == 0 && len(sc) == 0 {
		return nil, false
	}
	return append(slices.Clip(t), sc...), true
}

// TableTags are the tags a table carries: its schema's and its own.
func (s *State) TableTags(schemaID, tableID int64) []TagRef {
	x := s.ix()
	return append(slices.Clip(x.tagsBySchema[schemaID]), x.tagsByTable[tableID]...)
}

// ColumnTags are the tags set on column columnID of table tableID itself.
func (s *State) ColumnTags(tableID, columnID int64) []TagRef {
	return s.ix().tagsByColumn[colKey{tableID, columnID}]
}

// TagAttachments are the policies attached to tag t.
func (s *State) TagAttachments(t TagRef) []Attachment { return s.ix().attachByTag[t] }

// ColumnAttachments are the policies attached directly to a column.
func (s *State) ColumnAttachments(tableID, columnID int64) []Attachment {
	return s.ix().attachColumn[colKey{tableID, columnID}]
}

// TableAttachments are the policies attached directly to a table.
func (s *State) TableAttachments(tableID int64) []Attachment { return s.ix().attachTable[tableID] }

// MayGovernTable is MayGovern for a table whose schema id is not at hand:
// true also whenever anything is set on some schema.
func (s *State) MayGovernTable(tableID int64) bool {
	x := s.ix()
	return len(x.grantsTable[tableID]) > 0 || x.governedTables[tableID] || len(x.grantsSchema) > 0 || len(x.taggedSchemas) > 0
}

// MayGovern reports whether anything in s could apply to the table: a
// grant, a tag at any level, or a direct attachment. A table for which it
// is false has the empty plan for every principal, which lets the hot path
// skip planning.
func (s *State) MayGovern(schemaID, tableID int64) bool {
	x := s.ix()
	return len(x.grantsTable[tableID]) > 0 || len(x.grantsSchema[schemaID]) > 0 ||
		x.governedTables[tableID] || x.taggedSchemas[schemaID]
}
