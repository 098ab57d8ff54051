package admin

import (
	"context"
	"slices"

	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/store"
)

// The listings name objects by their current names; a row naming an
// object dropped since (not yet purged) is left out.

// TagList is GET …/governance/tags.
type TagList struct {
	Tags []Tag `json:"tags"`
}

// ObjectTagList is GET …/governance/object-tags.
type ObjectTagList struct {
	ObjectTags []ObjectTag `json:"object-tags"`
}

// MaskingPolicyList is GET …/governance/masking-policies.
type MaskingPolicyList struct {
	MaskingPolicies []MaskingPolicy `json:"masking-policies"`
}

// RowAccessPolicyList is GET …/governance/row-access-policies.
type RowAccessPolicyList struct {
	RowAccessPolicies []RowAccessPolicy `json:"row-access-policies"`
}

// AttachmentList is GET …/governance/policy-attachments.
type AttachmentList struct {
	PolicyAttachments []Attachment `json:"policy-attachments"`
}

// RoleList is GET …/governance/roles.
type RoleList struct {
	Roles []Role `json:"roles"`
}

// RoleGrantList is GET …/governance/role-grants.
type RoleGrantList struct {
	RoleGrants []RoleGrant `json:"role-grants"`
}

// ObjectGrantList is GET …/governance/object-grants.
type ObjectGrantList struct {
	ObjectGrants []ObjectGrant `json:"object-grants"`
}

// Snapshot is the whole configuration with current names.
type Snapshot struct {
	Version int64
	st      *model.State
	names   *store.Names
}

// Load reads the configuration and the catalog's current names.
func (s *Service) Load(ctx context.Context) (*Snapshot, error) {
	st, err := s.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	names, err := s.store.Names(ctx)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Version: st.Version, st: st, names: names}, nil
}

func maskOut(m model.MaskingPolicy) MaskingPolicy {
	return MaskingPolicy{Name: m.Name, Signature: m.Signature, Body: m.Body, Action: string(m.Action),
		UnmaskedRoles: nonNil(m.UnmaskedRoles), FileLayer: m.FileLayer, Comment: m.Comment}
}

func rowOut(p model.RowPolicy) RowAccessPolicy {
	return RowAccessPolicy{Name: p.Name, Body: p.Body, Columns: p.Columns, UnmaskedRoles: nonNil(p.UnmaskedRoles), Comment: p.Comment}
}

// Tags lists the tags.
func (sn *Snapshot) Tags() TagList {
	out := TagList{Tags: []Tag{}}
	for _, t := range sn.st.Tags {
		out.Tags = append(out.Tags, Tag{Namespace: t.Namespace, Name: t.Name, Comment: t.Comment})
	}
	return out
}

// Tag is one tag.
func (sn *Snapshot) Tag(ns, name string) (Tag, error) {
	for _, t := range sn.st.Tags {
		if t.Namespace == ns && t.Name == name {
			return Tag{Namespace: t.Namespace, Name: t.Name, Comment: t.Comment}, nil
		}
	}
	return Tag{}, notFound("tag %s.%s does not exist", ns, name)
}

// ObjectTags lists the object tags.
func (sn *Snapshot) ObjectTags(ctx context.Context) (ObjectTagList, error) {
	out := ObjectTagList{ObjectTags: []ObjectTag{}}
	for _, ot := range sn.st.ObjectTags {
		n, ok, err := sn.names.Object(ctx, ot.Object)
		if err != nil {
			return out, err
		}
		if !ok {
			continue
		}
		out.ObjectTags = append(out.ObjectTags, ObjectTag{ObjectKind: ot.Object.Kind.String(), Schema: n.Schema, Object: n.Table,
			Column: n.Column, TagNamespace: ot.Tag.Namespace, TagName: ot.Tag.Name})
	}
	return out, nil
}

// MaskingPolicies lists the masking policies.
func (sn *Snapshot) MaskingPolicies() MaskingPolicyList {
	out := MaskingPolicyList{MaskingPolicies: []MaskingPolicy{}}
	for _, m := range sn.st.Masks {
		out.MaskingPolicies = append(out.MaskingPolicies, maskOut(m))
	}
	return out
}

// MaskingPolicy is one masking policy.
func (sn *Snapshot) MaskingPolicy(name string) (MaskingPolicy, error) {
	if m := sn.st.Mask(name); m != nil {
		return maskOut(*m), nil
	}
	return MaskingPolicy{}, notFound("masking policy %s does not exist", name)
}

// RowAccessPolicies lists the row-access policies.
func (sn *Snapshot) RowAccessPolicies() RowAccessPolicyList {
	out := RowAccessPolicyList{RowAccessPolicies: []RowAccessPolicy{}}
	for _, p := range sn.st.RowPolicies {
		out.RowAccessPolicies = append(out.RowAccessPolicies, rowOut(p))
	}
	return out
}

// RowAccessPolicy is one row-access policy.
func (sn *Snapshot) RowAccessPolicy(name string) (RowAccessPolicy, error) {
	if p := sn.st.RowPolicy(name); p != nil {
		return rowOut(*p), nil
	}
	return RowAccessPolicy{}, notFound("row-access policy %s does not exist", name)
}

// Attachments lists the policy attachments.
func (sn *Snapshot) Attachments(ctx context.Context) (AttachmentList, error) {
	out := AttachmentList{PolicyAttachments: []Attachment{}}
	for _, a := range sn.st.Attachments {
		o := Attachment{PolicyKind: a.Kind.String(), PolicyName: a.Policy, TargetKind: a.Target.String()}
		if a.Target == model.TargetTag {
			o.TagNamespace, o.TagName = a.Tag.Namespace, a.Tag.Name
		} else {
			n, ok, err := sn.names.Object(ctx, a.Object)
			if err != nil {
				return out, err
			}
			if !ok {
				continue
			}
			o.Schema, o.Object, o.Column = n.Schema, n.Table, n.Column
		}
		out.PolicyAttachments = append(out.PolicyAttachments, o)
	}
	return out, nil
}

// Roles lists the roles.
func (sn *Snapshot) Roles() RoleList {
	out := RoleList{Roles: []Role{}}
	for _, r := range sn.st.Roles {
		out.Roles = append(out.Roles, Role{Name: r.Name, Comment: r.Comment})
	}
	return out
}

// Role is one role.
func (sn *Snapshot) Role(name string) (Role, error) {
	for _, r := range sn.st.Roles {
		if r.Name == name {
			return Role{Name: r.Name, Comment: r.Comment}, nil
		}
	}
	return Role{}, notFound("role %s does not exist", name)
}

// RoleGrants lists the role grants; principal, when set, keeps only its.
func (sn *Snapshot) RoleGrants(principal string) RoleGrantList {
	out := RoleGrantList{RoleGrants: []RoleGrant{}}
	for _, g := range sn.st.RoleGrants {
		if principal == "" || g.Principal == principal {
			out.RoleGrants = append(out.RoleGrants, RoleGrant{Role: g.Role, Principal: g.Principal})
		}
	}
	return out
}

// ObjectGrants lists the object grants.
func (sn *Snapshot) ObjectGrants(ctx context.Context) (ObjectGrantList, error) {
	out := ObjectGrantList{ObjectGrants: []ObjectGrant{}}
	for _, g := range sn.st.ObjectGrants {
		n, ok, err := sn.names.Object(ctx, g.Object)
		if err != nil {
			return out, err
		}
		if !ok {
			continue
		}
		out.ObjectGrants = append(out.ObjectGrants, ObjectGrant{ObjectKind: g.Object.Kind.String(), Schema: n.Schema, Object: n.Table,
			Privilege: g.Privilege, Role: g.Role})
	}
	slices.SortStableFunc(out.ObjectGrants, func(a, b ObjectGrant) int {
		if a.Schema != b.Schema {
			if a.Schema < b.Schema {
				return -1
			}
			return 1
		}
		switch {
		case a.Object < b.Object:
			return -1
		case a.Object > b.Object:
			return 1
		}
		return 0
	})
	return out, nil
}
