package admin

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/governance/sqlcheck"
	"github.com/duckicelake/duckicelake/governance/sqltext"
	"github.com/duckicelake/duckicelake/governance/store"
)

// Service authors governance. It is safe for concurrent use.
type Service struct {
	store *store.Store
	check *sqlcheck.Checker
}

// New returns the Service writing through st and validating bodies with
// check.
func New(st *store.Store, check *sqlcheck.Checker) *Service {
	return &Service{store: st, check: check}
}

// Author is who makes a change, for the audit trail.
type Author struct {
	Principal governance.Principal
	RequestID string
}

func (a Author) change(what string) store.Change {
	return store.Change{Author: a.Principal, What: what, RequestID: a.RequestID}
}

// changeOn is a's change of what on object n: the change names its
// schema and table.
func (a Author) changeOn(what string, n store.ObjectName) store.Change {
	c := a.change(what)
	c.Namespace, c.Table = n.Schema, n.Table
	return c
}

// MaxNameLen bounds every name in a request.
const MaxNameLen = 255

// checkName refuses an empty, overlong, invalid-UTF-8 or control-character
// name.
func checkName(what, s string) error {
	switch {
	case s == "":
		return invalid("%s is required", what)
	case len(s) > MaxNameLen:
		return invalid("%s is longer than %d bytes", what, MaxNameLen)
	case !utf8.ValidString(s):
		return invalid("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return invalid("%s contains a control character", what)
		}
	}
	return nil
}

// checkRoles validates an unmasked-roles list.
func checkRoles(roles []string) error {
	for _, r := range roles {
		if err := checkName("a role in unmasked-roles", r); err != nil {
			return err
		}
	}
	return nil
}

// resolve finds an object, turning "does not exist" into NotFound.
func (s *Service) resolve(ctx context.Context, n store.ObjectName) (store.Resolved, error) {
	r, err := s.store.Resolve(ctx, n)
	var ne *store.NoObjectError
	if errors.As(err, &ne) {
		return r, notFound("%s", ne.Error())
	}
	return r, err
}

// objectName reads (object-kind, schema, object, column) of a request.
func objectName(kind, schema, object, column string, allowed ...model.ObjectKind) (store.ObjectName, error) {
	k, ok := model.ParseObjectKind(kind)
	if !ok || !slices.Contains(allowed, k) {
		var names []string
		for _, a := range allowed {
			names = append(names, a.String())
		}
		return store.ObjectName{}, invalid("object-kind %q: want one of %s", kind, strings.Join(names, ", "))
	}
	n := store.ObjectName{Kind: k, Schema: schema, Table: object, Column: column}
	if k == model.ObjectSchema && n.Schema == "" {
		n.Schema = object // {"object-kind":"schema","object":"analytics"}
	}
	if err := checkName("schema", n.Schema); err != nil {
		return n, err
	}
	if k >= model.ObjectTable {
		if err := checkName("object (the table)", n.Table); err != nil {
			return n, err
		}
	}
	if k == model.ObjectColumn {
		if err := checkName("column", n.Column); err != nil {
			return n, err
		}
	}
	return n, nil
}

// --- tags ---

// PutTag creates or updates a tag.
func (s *Service) PutTag(ctx context.Context, a Author, in Tag) error {
	if err := checkName("namespace", in.Namespace); err != nil {
		return err
	}
	if err := checkName("name", in.Name); err != nil {
		return err
	}
	_, err := s.store.Apply(ctx, a.change("upsert tag "+in.Namespace+"."+in.Name), func(ctx context.Context, tx *store.Tx) error {
		_, err := tx.Run(ctx, "duckicelake_gov_tag", `INSERT INTO {T} (namespace, name, comment, created_by) VALUES ($1, $2, $3, $4)
			ON CONFLICT (namespace, name) DO UPDATE SET comment = EXCLUDED.comment`, in.Namespace, in.Name, in.Comment, a.Principal.ID)
		return err
	})
	return err
}

// DeleteTag deletes a tag that no object carries and no policy is
// attached to.
func (s *Service) DeleteTag(ctx context.Context, a Author, namespace, name string) error {
	ref := model.TagRef{Namespace: namespace, Name: name}
	_, err := s.store.Apply(ctx, a.change("delete tag "+ref.String()), func(ctx context.Context, tx *store.Tx) error {
		st, err := tx.State(ctx)
		if err != nil {
			return err
		}
		if !st.HasTag(ref) {
			return notFound("tag %s does not exist", ref)
		}
		for _, ot := range st.ObjectTags {
			if ot.Tag == ref {
				return conflict("tag %s is still assigned to a %s; remove its object tags first", ref, ot.Object.Kind)
			}
		}
		if atts := st.TagAttachments(ref); len(atts) > 0 {
			return conflict("tag %s still has %s policy %s attached; detach it first", ref, atts[0].Kind, atts[0].Policy)
		}
		_, err = tx.Run(ctx, "duckicelake_gov_tag", `DELETE FROM {T} WHERE namespace = $1 AND name = $2`, namespace, name)
		return err
	})
	return err
}

// --- object tags ---

// PutObjectTag tags a schema, table or column.
func (s *Service) PutObjectTag(ctx context.Context, a Author, in ObjectTag) error {
	n, err := objectName(in.ObjectKind, in.Schema, in.Object, in.Column, model.ObjectSchema, model.ObjectTable, model.ObjectColumn)
	if err != nil {
		return err
	}
	ref := model.TagRef{Namespace: in.TagNamespace, Name: in.TagName}
	if err := checkName("tag-namespace", ref.Namespace); err != nil {
		return err
	}
	if err := checkName("tag-name", ref.Name); err != nil {
		return err
	}
	r, err := s.resolve(ctx, n)
	if err != nil {
		return err
	}
	_, err = s.store.Apply(ctx, a.changeOn("tag "+n.Kind.String()+" "+n.String()+" "+ref.String(), n), func(ctx context.Context, tx *store.Tx) error {
		st, err := tx.State(ctx)
		if err != nil {
			return err
		}
		if !st.HasTag(ref) {
			return notFound("tag %s does not exist; create it first (POST …/governance/tags)", ref)
		}
		next := *st
		next.ObjectTags = append(slices.Clip(st.ObjectTags), model.ObjectTag{Object: r.Ref, Tag: ref})
		if err := s.checkMasks(ctx, next.Index()); err != nil {
			return err
		}
		_, err = tx.Run(ctx, "duckicelake_gov_object_tag", `INSERT INTO {T} (object_kind, schema_id, table_id, column_id, tag_namespace, tag_name, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
			r.Ref.Kind.String(), r.Ref.SchemaID, r.Ref.TableID, r.Ref.ColumnID, ref.Namespace, ref.Name, a.Principal.ID)
		return err
	})
	return err
}

// DeleteObjectTag removes a tag from an object (the same body as PutObjectTag).
func (s *Service) DeleteObjectTag(ctx context.Context, a Author, in ObjectTag) error {
	n, err := objectName(in.ObjectKind, in.Schema, in.Object, in.Column, model.ObjectSchema, model.ObjectTable, model.ObjectColumn)
	if err != nil {
		return err
	}
	r, err := s.resolve(ctx, n)
	if err != nil {
		return err
	}
	ref := model.TagRef{Namespace: in.TagNamespace, Name: in.TagName}
	_, err = s.store.Apply(ctx, a.changeOn("untag "+n.Kind.String()+" "+n.String()+" "+ref.String(), n), func(ctx context.Context, tx *store.Tx) error {
		k, err := tx.Run(ctx, "duckicelake_gov_object_tag", `DELETE FROM {T} WHERE object_kind = $1 AND schema_id = $2 AND table_id = $3
			AND column_id = $4 AND tag_namespace = $5 AND tag_name = $6`,
			r.Ref.Kind.String(), r.Ref.SchemaID, r.Ref.TableID, r.Ref.ColumnID, ref.Namespace, ref.Name)
		if err == nil && k == 0 {
			return notFound("%s %s does not carry tag %s", n.Kind, n, ref)
		}
		return err
	})
	return err
}

// --- masking policies ---

// PutMaskingPolicy creates a masking policy or replaces its definition
// (which rotates every view and export built with it).
func (s *Service) PutMaskingPolicy(ctx context.Context, a Author, in MaskingPolicy) error {
	if err := checkName("name", in.Name); err != nil {
		return err
	}
	if err := checkRoles(in.UnmaskedRoles); err != nil {
		return err
	}
	m := model.MaskingPolicy{Name: in.Name, Signature: in.Signature, Body: in.Body, UnmaskedRoles: nonNil(in.UnmaskedRoles),
		FileLayer: in.FileLayer, Comment: in.Comment}
	switch {
	case in.Action != "" && in.Body != "":
		return invalid("a masking policy has a body or an action, not both")
	case in.Action != "":
		act, ok := model.ParseStandardAction(in.Action)
		if !ok {
			var names []string
			for _, x := range model.StandardActions {
				names = append(names, string(x))
			}
			return invalid("action %q is not a standard action; want one of %s", in.Action, strings.Join(names, ", "))
		}
		m.Action = act
		if in.Signature != "" {
			sig, err := s.check.ParseSignature(ctx, in.Signature)
			if err != nil {
				return invalid("%v", err)
			}
			m.Param, m.ArgType = sig.Param, sig.Type
		}
	case in.Body != "":
		if in.Signature == "" {
			return invalid(`a masking body needs a signature, e.g. "(val VARCHAR)"`)
		}
		sig, err := s.check.ParseSignature(ctx, in.Signature)
		if err != nil {
			return invalid("%v", err)
		}
		m.Param, m.ArgType = sig.Param, sig.Type
		if err := s.check.CheckMask(ctx, sig.Param, sig.Type, in.Body); err != nil {
			return asInvalid(err)
		}
	default:
		return invalid("a masking policy needs a body (with a signature) or an action")
	}
	_, err := s.store.Apply(ctx, a.change("upsert masking policy "+in.Name), func(ctx context.Context, tx *store.Tx) error {
		st, err := tx.State(ctx)
		if err != nil {
			return err
		}
		next := *st
		next.Masks = replaceNamed(st.Masks, m, func(x model.MaskingPolicy) string { return x.Name })
		idx := next.Index()
		// Columns it is attached to directly must still take it.
		if err := s.checkDirectFit(ctx, idx, in.Name); err != nil {
			return err
		}
		if err := s.checkMasks(ctx, idx); err != nil {
			return err
		}
		_, err = tx.Run(ctx, "duckicelake_gov_masking_policy", `INSERT INTO {T} (name, signature, param, arg_type, body, action,
				unmasked_roles, file_layer, comment, updated_by, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now())
			ON CONFLICT (name) DO UPDATE SET signature = EXCLUDED.signature, param = EXCLUDED.param, arg_type = EXCLUDED.arg_type,
				body = EXCLUDED.body, action = EXCLUDED.action, unmasked_roles = EXCLUDED.unmasked_roles,
				file_layer = EXCLUDED.file_layer, comment = EXCLUDED.comment, updated_by = EXCLUDED.updated_by, updated_at = now()`,
			m.Name, m.Signature, m.Param, m.ArgType, m.Body, string(m.Action), m.UnmaskedRoles, m.FileLayer, m.Comment, a.Principal.ID)
		return err
	})
	return err
}

// DeleteMaskingPolicy deletes a masking policy that is attached nowhere.
func (s *Service) DeleteMaskingPolicy(ctx context.Context, a Author, name string) error {
	return s.deletePolicy(ctx, a, model.PolicyMasking, "masking policy", "duckicelake_gov_masking_policy", name,
		func(st *model.State) bool { return st.Mask(name) != nil })
}

// deletePolicy deletes the policy name of kind (what, in messages) from
// table unless it does not exist or is still attached.
func (s *Service) deletePolicy(ctx context.Context, a Author, kind model.PolicyKind, what, table, name string, exists func(*model.State) bool) error {
	_, err := s.store.Apply(ctx, a.change("delete "+what+" "+name), func(ctx context.Context, tx *store.Tx) error {
		st, err := tx.State(ctx)
		if err != nil {
			return err
		}
		if !exists(st) {
			return notFound("%s %s does not exist", what, name)
		}
		if at, ok := attachedAnywhere(st, kind, name); ok {
			return conflict("%s %s is still attached to a %s; detach it first", what, name, at.Target)
		}
		_, err = tx.Run(ctx, table, `DELETE FROM {T} WHERE name = $1`, name)
		return err
	})
	return err
}

// replaceNamed returns xs without the element named as x is, then x; xs
// itself is left as it was (it belongs to the state being checked against).
func replaceNamed[T any](xs []T, x T, name func(T) string) []T {
	xs = slices.Clip(xs)
	if i := slices.IndexFunc(xs, func(y T) bool { return name(y) == name(x) }); i >= 0 {
		xs = slices.Delete(slices.Clone(xs), i, i+1)
	}
	return append(xs, x)
}

func attachedAnywhere(st *model.State, kind model.PolicyKind, name string) (model.Attachment, bool) {
	for _, at := range st.Attachments {
		if at.Kind == kind && at.Policy == name {
			return at, true
		}
	}
	return model.Attachment{}, false
}

// --- row-access policies ---

// PutRowAccessPolicy creates a row-access policy or replaces its
// definition.
func (s *Service) PutRowAccessPolicy(ctx context.Context, a Author, in RowAccessPolicy) error {
	if err := checkName("name", in.Name); err != nil {
		return err
	}
	if err := checkRoles(in.UnmaskedRoles); err != nil {
		return err
	}
	if strings.TrimSpace(in.Body) == "" {
		return invalid("a row-access policy needs a body (a boolean condition over its columns)")
	}
	toks, err := sqltext.Expression(in.Body)
	if err != nil {
		return invalid("body: %v", err)
	}
	cols := in.Columns
	if len(cols) == 0 {
		// The columns it reads, as the body names them.
		cols = sqltext.Refs(toks)
	}
	for _, c := range cols {
		if err := checkName("a column in columns", c); err != nil {
			return err
		}
	}
	if len(cols) == 0 {
		return invalid("the body reads no column; a row-access policy filters on the table's columns")
	}
	untyped := make([]sqlcheck.Column, len(cols))
	for i, c := range cols {
		untyped[i] = sqlcheck.Column{Name: c}
	}
	if err := s.check.CheckRowFilter(ctx, in.Body, untyped); err != nil {
		return asInvalid(err)
	}
	p := model.RowPolicy{Name: in.Name, Body: in.Body, Columns: cols, UnmaskedRoles: nonNil(in.UnmaskedRoles), Comment: in.Comment}
	_, err = s.store.Apply(ctx, a.change("upsert row-access policy "+in.Name), func(ctx context.Context, tx *store.Tx) error {
		st, err := tx.State(ctx)
		if err != nil {
			return err
		}
		// Every table it reaches must still evaluate it.
		next := *st
		next.RowPolicies = replaceNamed(st.RowPolicies, p, func(x model.RowPolicy) string { return x.Name })
		if err := s.checkRowPolicy(ctx, next.Index(), in.Name); err != nil {
			return err
		}
		_, err = tx.Run(ctx, "duckicelake_gov_row_policy", `INSERT INTO {T} (name, body, columns, unmasked_roles, comment, updated_by, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, now())
			ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, columns = EXCLUDED.columns, unmasked_roles = EXCLUDED.unmasked_roles,
				comment = EXCLUDED.comment, updated_by = EXCLUDED.updated_by, updated_at = now()`,
			p.Name, p.Body, p.Columns, p.UnmaskedRoles, p.Comment, a.Principal.ID)
		return err
	})
	return err
}

// DeleteRowAccessPolicy deletes a row-access policy attached nowhere.
func (s *Service) DeleteRowAccessPolicy(ctx context.Context, a Author, name string) error {
	return s.deletePolicy(ctx, a, model.PolicyRowAccess, "row-access policy", "duckicelake_gov_row_policy", name,
		func(st *model.State) bool { return st.RowPolicy(name) != nil })
}

// --- attachments ---

// attachment resolves an Attachment request.
func (s *Service) attachment(ctx context.Context, in Attachment) (model.Attachment, store.Resolved, error) {
	var at model.Attachment
	var r store.Resolved
	kind, ok := model.ParsePolicyKind(in.PolicyKind)
	if !ok {
		return at, r, invalid("policy-kind %q: want masking or row-access", in.PolicyKind)
	}
	target, ok := model.ParseTargetKind(in.TargetKind)
	if !ok {
		return at, r, invalid("target-kind %q: want tag, column or table", in.TargetKind)
	}
	if err := checkName("policy-name", in.PolicyName); err != nil {
		return at, r, err
	}
	// Attachments the resolver would ignore are refused, so that a no-op
	// never passes for protection.
	switch {
	case kind == model.PolicyMasking && target == model.TargetTable:
		return at, r, invalid("a masking policy masks columns: attach it to a column or a tag, not to a table")
	case kind == model.PolicyRowAccess && target == model.TargetColumn:
		return at, r, invalid("a row-access policy filters rows: attach it to a table or a tag, not to a column")
	}
	at = model.Attachment{Kind: kind, Policy: in.PolicyName, Target: target}
	switch target {
	case model.TargetTag:
		at.Tag = model.TagRef{Namespace: in.TagNamespace, Name: in.TagName}
		if err := checkName("tag-namespace", at.Tag.Namespace); err != nil {
			return at, r, err
		}
		if err := checkName("tag-name", at.Tag.Name); err != nil {
			return at, r, err
		}
	case model.TargetColumn, model.TargetTable:
		k := "column"
		if target == model.TargetTable {
			k = "table"
		}
		n, err := objectName(k, in.Schema, in.Object, in.Column, model.ObjectColumn, model.ObjectTable)
		if err != nil {
			return at, r, err
		}
		if r, err = s.resolve(ctx, n); err != nil {
			return at, r, err
		}
		at.Object = r.Ref
	}
	return at, r, nil
}

// PutAttachment attaches a policy to a tag, a column or a table.
func (s *Service) PutAttachment(ctx context.Context, a Author, in Attachment) error {
	at, r, err := s.attachment(ctx, in)
	if err != nil {
		return err
	}
	_, err = s.store.Apply(ctx, a.change("attach "+at.Kind.String()+" policy "+at.Policy+" to "+at.Target.String()+" "+describeTarget(in)),
		func(ctx context.Context, tx *store.Tx) error {
			st, err := tx.State(ctx)
			if err != nil {
				return err
			}
			switch at.Kind {
			case model.PolicyMasking:
				if st.Mask(at.Policy) == nil {
					return notFound("masking policy %s does not exist", at.Policy)
				}
			case model.PolicyRowAccess:
				pol := st.RowPolicy(at.Policy)
				if pol == nil {
					return notFound("row-access policy %s does not exist", at.Policy)
				}
				if at.Target == model.TargetTable {
					// Bind the columns it reads to their ids: a rename keeps
					// the filter.
					at.Bindings = map[string]int64{}
					for _, c := range pol.Columns {
						f, ok := fieldNamed(r.Columns, c)
						if !ok {
							return invalid("row-access policy %s reads column %s, which table %s.%s does not have", at.Policy, c, in.Schema, in.Object)
						}
						at.Bindings[strings.ToLower(c)] = f.ID
					}
				}
			}
			if at.Target == model.TargetTag && !st.HasTag(at.Tag) {
				return notFound("tag %s does not exist", at.Tag)
			}
			if at.Kind == model.PolicyMasking && at.Target == model.TargetColumn {
				tb := plan.TableOf("", ducklake.Table{ID: r.Ref.TableID, SchemaID: r.Ref.SchemaID}, []ducklake.Field{r.Column})
				if err := fitsColumn(st.Mask(at.Policy), &tb.Columns[0]); err != nil {
					return err
				}
			}
			next := *st
			next.Attachments = append(slices.Clip(st.Attachments), at)
			idx := next.Index()
			if at.Kind == model.PolicyMasking {
				if err := s.checkMasks(ctx, idx); err != nil {
					return err
				}
			} else if err := s.checkRowPolicy(ctx, idx, at.Policy); err != nil {
				return err
			}
			var bindings []byte
			if at.Bindings != nil {
				bindings, _ = json.Marshal(at.Bindings)
			}
			_, err = tx.Run(ctx, "duckicelake_gov_attachment", `INSERT INTO {T} (policy_kind, policy_name, target_kind, tag_namespace, tag_name,
					schema_id, table_id, column_id, bindings, created_by)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
				ON CONFLICT (policy_kind, policy_name, target_kind, tag_namespace, tag_name, schema_id, table_id, column_id)
				DO UPDATE SET bindings = EXCLUDED.bindings`,
				at.Kind.String(), at.Policy, at.Target.String(), at.Tag.Namespace, at.Tag.Name,
				at.Object.SchemaID, at.Object.TableID, at.Object.ColumnID, bindings, a.Principal.ID)
			return err
		})
	return err
}

// DeleteAttachment detaches a policy (the same body as PutAttachment).
func (s *Service) DeleteAttachment(ctx context.Context, a Author, in Attachment) error {
	at, _, err := s.attachment(ctx, in)
	if err != nil {
		return err
	}
	_, err = s.store.Apply(ctx, a.change("detach "+at.Kind.String()+" policy "+at.Policy+" from "+at.Target.String()+" "+describeTarget(in)),
		func(ctx context.Context, tx *store.Tx) error {
			k, err := tx.Run(ctx, "duckicelake_gov_attachment", `DELETE FROM {T} WHERE policy_kind = $1 AND policy_name = $2 AND target_kind = $3
				AND tag_namespace = $4 AND tag_name = $5 AND schema_id = $6 AND table_id = $7 AND column_id = $8`,
				at.Kind.String(), at.Policy, at.Target.String(), at.Tag.Namespace, at.Tag.Name,
				at.Object.SchemaID, at.Object.TableID, at.Object.ColumnID)
			if err == nil && k == 0 {
				return notFound("%s policy %s is not attached to that %s", at.Kind, at.Policy, at.Target)
			}
			return err
		})
	return err
}

func describeTarget(in Attachment) string {
	switch strings.ToLower(in.TargetKind) {
	case "tag":
		return in.TagNamespace + "." + in.TagName
	case "column":
		return in.Schema + "." + in.Object + "." + in.Column
	}
	return in.Schema + "." + in.Object
}

func fieldNamed(fs []ducklake.Field, name string) (ducklake.Field, bool) {
	var found ducklake.Field
	n := 0
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
		if strings.EqualFold(f.Name, name) {
			found, n = f, n+1
		}
	}
	return found, n == 1
}

// fitsColumn refuses a mask that cannot apply to column c.
func fitsColumn(pol *model.MaskingPolicy, c *plan.Column) error {
	typ, err := model.SQLType(c.Type)
	if err != nil {
		return invalid("column %s has a type masks cannot take: %v", c.Name, err)
	}
	if pol.ArgType != "" && pol.ArgType != typ {
		return invalid("masking policy %s takes %s, but column %s is %s", pol.Name, pol.ArgType, c.Name, typ)
	}
	if pol.Action != model.ActionNone && !pol.Action.AppliesTo(c.Type, c.Nullable) {
		return invalid("action %s cannot be applied to column %s (%s)", pol.Action, c.Name, typ)
	}
	return nil
}

// --- roles and grants ---

// PutRole creates a role.
func (s *Service) PutRole(ctx context.Context, a Author, in Role) error {
	if err := checkName("name", in.Name); err != nil {
		return err
	}
	if model.IsSyntheticRole(in.Name) {
		return invalid("%s is a session-context role (actor:…, channel:…); it exists on its own and cannot be created", in.Name)
	}
	_, err := s.store.Apply(ctx, a.change("upsert role "+in.Name), func(ctx context.Context, tx *store.Tx) error {
		_, err := tx.Run(ctx, "duckicelake_gov_role", `INSERT INTO {T} (name, comment, created_by) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET comment = EXCLUDED.comment`, in.Name, in.Comment, a.Principal.ID)
		return err
	})
	return err
}

// DeleteRole deletes a role nobody holds and no object grant names.
func (s *Service) DeleteRole(ctx context.Context, a Author, name string) error {
	_, err := s.store.Apply(ctx, a.change("delete role "+name), func(ctx context.Context, tx *store.Tx) error {
		st, err := tx.State(ctx)
		if err != nil {
			return err
		}
		if !st.HasRole(name) {
			return notFound("role %s does not exist", name)
		}
		for _, g := range st.RoleGrants {
			if g.Role == name {
				return conflict("role %s is still granted to %s; revoke it first", name, g.Principal)
			}
		}
		for _, g := range st.ObjectGrants {
			if g.Role == name {
				return conflict("role %s still holds %s on a %s; revoke it first", name, g.Privilege, g.Object.Kind)
			}
		}
		_, err = tx.Run(ctx, "duckicelake_gov_role", `DELETE FROM {T} WHERE name = $1`, name)
		return err
	})
	return err
}

// PutRoleGrant grants a role to a principal.
func (s *Service) PutRoleGrant(ctx context.Context, a Author, in RoleGrant) error {
	if err := checkName("role", in.Role); err != nil {
		return err
	}
	if err := checkName("principal", in.Principal); err != nil {
		return err
	}
	if model.IsSyntheticRole(in.Role) {
		return invalid("%s is a session-context role: a session has it or not, it cannot be granted", in.Role)
	}
	_, err := s.store.Apply(ctx, a.change("grant role "+in.Role+" to "+in.Principal), func(ctx context.Context, tx *store.Tx) error {
		st, err := tx.State(ctx)
		if err != nil {
			return err
		}
		if !st.HasRole(in.Role) {
			return notFound("role %s does not exist; create it first (POST …/governance/roles)", in.Role)
		}
		_, err = tx.Run(ctx, "duckicelake_gov_role_grant", `INSERT INTO {T} (role, principal, created_by) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			in.Role, in.Principal, a.Principal.ID)
		return err
	})
	return err
}

// DeleteRoleGrant revokes a role from a principal.
func (s *Service) DeleteRoleGrant(ctx context.Context, a Author, in RoleGrant) error {
	_, err := s.store.Apply(ctx, a.change("revoke role "+in.Role+" from "+in.Principal), func(ctx context.Context, tx *store.Tx) error {
		k, err := tx.Run(ctx, "duckicelake_gov_role_grant", `DELETE FROM {T} WHERE role = $1 AND principal = $2`, in.Role, in.Principal)
		if err == nil && k == 0 {
			return notFound("role %s is not granted to %s", in.Role, in.Principal)
		}
		return err
	})
	return err
}

func (s *Service) objectGrant(ctx context.Context, in ObjectGrant) (store.ObjectName, store.Resolved, error) {
	n, err := objectName(in.ObjectKind, in.Schema, in.Object, "", model.ObjectSchema, model.ObjectTable)
	if err != nil {
		return n, store.Resolved{}, err
	}
	if !strings.EqualFold(in.Privilege, model.PrivilegeSelect) {
		return n, store.Resolved{}, invalid("privilege %q: the one object privilege is select", in.Privilege)
	}
	if err := checkName("role", in.Role); err != nil {
		return n, store.Resolved{}, err
	}
	r, err := s.resolve(ctx, n)
	return n, r, err
}

// PutObjectGrant grants select on a schema or table to a role; the table
// (every table of the schema) becomes allowlisted.
func (s *Service) PutObjectGrant(ctx context.Context, a Author, in ObjectGrant) error {
	n, r, err := s.objectGrant(ctx, in)
	if err != nil {
		return err
	}
	_, err = s.store.Apply(ctx, a.changeOn("grant select on "+n.Kind.String()+" "+n.String()+" to role "+in.Role, n), func(ctx context.Context, tx *store.Tx) error {
		st, err := tx.State(ctx)
		if err != nil {
			return err
		}
		if !st.HasRole(in.Role) && !model.IsSyntheticRole(in.Role) {
			return notFound("role %s does not exist; create it first (POST …/governance/roles)", in.Role)
		}
		if model.IsSyntheticRole(in.Role) {
			// actor:/channel: roles exist without a row; the foreign key
			// needs one.
			if _, err := tx.Run(ctx, "duckicelake_gov_role", `INSERT INTO {T} (name, comment, created_by) VALUES ($1, 'session-context role', $2)
				ON CONFLICT DO NOTHING`, in.Role, a.Principal.ID); err != nil {
				return err
			}
		}
		_, err = tx.Run(ctx, "duckicelake_gov_object_grant", `INSERT INTO {T} (object_kind, schema_id, table_id, privilege, role, created_by)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
			r.Ref.Kind.String(), r.Ref.SchemaID, r.Ref.TableID, model.PrivilegeSelect, in.Role, a.Principal.ID)
		return err
	})
	return err
}

// DeleteObjectGrant revokes an object grant (the same body).
func (s *Service) DeleteObjectGrant(ctx context.Context, a Author, in ObjectGrant) error {
	n, r, err := s.objectGrant(ctx, in)
	if err != nil {
		return err
	}
	_, err = s.store.Apply(ctx, a.changeOn("revoke select on "+n.Kind.String()+" "+n.String()+" from role "+in.Role, n), func(ctx context.Context, tx *store.Tx) error {
		k, err := tx.Run(ctx, "duckicelake_gov_object_grant", `DELETE FROM {T} WHERE object_kind = $1 AND schema_id = $2 AND table_id = $3
			AND privilege = $4 AND role = $5`, r.Ref.Kind.String(), r.Ref.SchemaID, r.Ref.TableID, model.PrivilegeSelect, in.Role)
		if err == nil && k == 0 {
			return notFound("role %s holds no select grant on %s %s", in.Role, n.Kind, n)
		}
		return err
	})
	return err
}

// --- checks across tables ---

// governedTables plans every live table something in st could govern.
func (s *Service) governedTables(ctx context.Context, st *model.State) ([]*plan.Table, error) {
	names, err := s.store.Names(ctx)
	if err != nil {
		return nil, err
	}
	var governed []ducklake.Table
	var ids []int64
	for _, t := range names.AllTables() {
		if st.MayGovern(t.SchemaID, t.ID) {
			governed = append(governed, t)
			ids = append(ids, t.ID)
		}
	}
	// One query for every governed table's columns: authoring checks run
	// on every change, and a lake has hundreds of governed tables.
	cols, err := s.store.Reader().ColumnsOf(ctx, names.Snapshot, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*plan.Table, 0, len(governed))
	for _, t := range governed {
		fields, ok := cols[t.ID]
		if !ok {
			continue
		}
		ns, _ := names.Schema(t.SchemaID)
		out = append(out, plan.TableOf(ns, t, fields))
	}
	return out, nil
}

// checkPlans builds, for every live governed table, the plan of st for no
// principal in particular and hands it to check; the first error stops.
func (s *Service) checkPlans(ctx context.Context, st *model.State, check func(t *plan.Table, p plan.Plan) error) error {
	tables, err := s.governedTables(ctx, st)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := check(t, plan.Build(st, plan.Principal{SeesAll: true}, t, plan.Options{})); err != nil {
			return err
		}
	}
	return nil
}

// checkMasks refuses a state in which a column of a live table is reached
// by two masks.
func (s *Service) checkMasks(ctx context.Context, st *model.State) error {
	return s.checkPlans(ctx, st, func(t *plan.Table, p plan.Plan) error {
		for _, is := range p.Issues {
			if is.Kind == plan.IssueConflict {
				return conflict("table %s.%s: %s", t.Namespace, t.Name, is.Reason)
			}
		}
		return nil
	})
}

// checkDirectFit refuses a mask definition that a column it is attached
// to directly cannot take.
func (s *Service) checkDirectFit(ctx context.Context, st *model.State, policy string) error {
	return s.checkPlans(ctx, st, func(t *plan.Table, p plan.Plan) error {
		for _, is := range p.Issues {
			if is.Kind == plan.IssueTypeMismatch && is.Policy == policy {
				return invalid("table %s.%s: %s", t.Namespace, t.Name, is.Reason)
			}
		}
		return nil
	})
}

// checkRowPolicy validates row-access policy name against every live table
// it reaches: the columns it reads exist, and DuckDB evaluates its body
// over their types.
func (s *Service) checkRowPolicy(ctx context.Context, st *model.State, name string) error {
	return s.checkPlans(ctx, st, func(t *plan.Table, p plan.Plan) error {
		for _, is := range p.Issues {
			if is.Policy == name {
				return invalid("table %s.%s: %s", t.Namespace, t.Name, is.Reason)
			}
		}
		for _, f := range p.RowFilters {
			if f.Policy != name {
				continue
			}
			cols := make([]sqlcheck.Column, 0, len(t.Columns))
			for _, c := range t.Columns {
				typ, err := model.SQLType(c.Type)
				if err != nil {
					continue
				}
				cols = append(cols, sqlcheck.Column{Name: c.Name, Type: typ})
			}
			if err := s.check.CheckRowFilter(ctx, f.Expr, cols); err != nil {
				return invalid("table %s.%s: %v", t.Namespace, t.Name, err)
			}
		}
		return nil
	})
}

func asInvalid(err error) error {
	var ce *sqlcheck.Error
	if errors.As(err, &ce) {
		return invalid("%s", ce.Msg)
	}
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
