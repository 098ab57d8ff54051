package admin

import (
	"cmp"
	"context"
	"slices"

	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/store"
)

// The listings name objects by their current names; a row naming an
// object dropped since (not yet purged) is left out.

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

// each is f of every row, an empty list (not null) when there are none.
func each[R, T any](rows []R, f func(R) T) []T {
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		out = append(out, f(r))
	}
	return out
}

// live is f of every row whose object is live, given its current name;
// rows naming a dropped object are left out. A row ref says names no
// object (false: a tag attachment) is kept with the zero name.
func live[R, T any](ctx context.Context, names *store.Names, rows []R, ref func(R) (model.ObjectRef, bool), f func(R, store.ObjectName) T) ([]T, error) {
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		var n store.ObjectName
		if obj, named := ref(r); named {
			var ok bool
			var err error
			if n, ok, err = names.Object(ctx, obj); err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		out = append(out, f(r, n))
	}
	return out, nil
}

// Tags lists the tags.
func (sn *Snapshot) Tags() []Tag { return each(sn.st.Tags, tagOut) }

func tagOut(t model.Tag) Tag { return Tag{Namespace: t.Namespace, Name: t.Name, Comment: t.Comment} }

// Tag is one tag.
func (sn *Snapshot) Tag(ns, name string) (Tag, error) {
	for _, t := range sn.st.Tags {
		if t.Namespace == ns && t.Name == name {
			return tagOut(t), nil
		}
	}
	return Tag{}, notFound("tag %s.%s does not exist", ns, name)
}

// ObjectTags lists the object tags.
func (sn *Snapshot) ObjectTags(ctx context.Context) ([]ObjectTag, error) {
	return live(ctx, sn.names, sn.st.ObjectTags, func(ot model.ObjectTag) (model.ObjectRef, bool) { return ot.Object, true },
		func(ot model.ObjectTag, n store.ObjectName) ObjectTag {
			return ObjectTag{ObjectKind: ot.Object.Kind.String(), Schema: n.Schema, Object: n.Table,
				Column: n.Column, TagNamespace: ot.Tag.Namespace, TagName: ot.Tag.Name}
		})
}

// MaskingPolicies lists the masking policies.
func (sn *Snapshot) MaskingPolicies() []MaskingPolicy { return each(sn.st.Masks, maskOut) }

// MaskingPolicy is one masking policy.
func (sn *Snapshot) MaskingPolicy(name string) (MaskingPolicy, error) {
	if m := sn.st.Mask(name); m != nil {
		return maskOut(*m), nil
	}
	return MaskingPolicy{}, notFound("masking policy %s does not exist", name)
}

// RowAccessPolicies lists the row-access policies.
func (sn *Snapshot) RowAccessPolicies() []RowAccessPolicy { return each(sn.st.RowPolicies, rowOut) }

// RowAccessPolicy is one row-access policy.
func (sn *Snapshot) RowAccessPolicy(name string) (RowAccessPolicy, error) {
	if p := sn.st.RowPolicy(name); p != nil {
		return rowOut(*p), nil
	}
	return RowAccessPolicy{}, notFound("row-access policy %s does not exist", name)
}

// Attachments lists the policy attachments.
func (sn *Snapshot) Attachments(ctx context.Context) ([]Attachment, error) {
	return live(ctx, sn.names, sn.st.Attachments, func(a model.Attachment) (model.ObjectRef, bool) { return a.Object, a.Target != model.TargetTag },
		func(a model.Attachment, n store.ObjectName) Attachment {
			o := Attachment{PolicyKind: a.Kind.String(), PolicyName: a.Policy, TargetKind: a.Target.String()}
			if a.Target == model.TargetTag {
				o.TagNamespace, o.TagName = a.Tag.Namespace, a.Tag.Name
			} else {
				o.Schema, o.Object, o.Column = n.Schema, n.Table, n.Column
			}
			return o
		})
}

// Roles lists the roles.
func (sn *Snapshot) Roles() []Role { return each(sn.st.Roles, roleOut) }

func roleOut(r model.Role) Role { return Role{Name: r.Name, Comment: r.Comment} }

// Role is one role.
func (sn *Snapshot) Role(name string) (Role, error) {
	for _, r := range sn.st.Roles {
		if r.Name == name {
			return roleOut(r), nil
		}
	}
	return Role{}, notFound("role %s does not exist", name)
}

// RoleGrants lists the role grants; principal, when set, keeps only its.
func (sn *Snapshot) RoleGrants(principal string) []RoleGrant {
	out := []RoleGrant{}
	for _, g := range sn.st.RoleGrants {
		if principal == "" || g.Principal == principal {
			out = append(out, RoleGrant{Role: g.Role, Principal: g.Principal})
		}
	}
	return out
}

// ObjectGrants lists the object grants, by schema and object name.
func (sn *Snapshot) ObjectGrants(ctx context.Context) ([]ObjectGrant, error) {
	out, err := live(ctx, sn.names, sn.st.ObjectGrants, func(g model.ObjectGrant) (model.ObjectRef, bool) { return g.Object, true },
		func(g model.ObjectGrant, n store.ObjectName) ObjectGrant {
			return ObjectGrant{ObjectKind: g.Object.Kind.String(), Schema: n.Schema, Object: n.Table,
				Privilege: g.Privilege, Role: g.Role}
		})
	slices.SortStableFunc(out, func(a, b ObjectGrant) int {
		return cmp.Or(cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.Object, b.Object))
	})
	return out, err
}
