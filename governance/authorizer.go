package governance

import (
	"context"
	"errors"
)

// Resource is what an action acts on: an S3 object (Bucket and Key; for
// ActionListObjects, Key is the list prefix), or a catalog object
// (Namespace, Table, and the Columns a query reads when it names them).
// The byte slices are borrowed: an Authorizer must not keep them.
type Resource struct {
	Bucket, Key []byte

	Namespace string
	Table     string // a table or a view
	// TableID is the DuckLake id of Table when the caller has looked it
	// up already (0 otherwise): the Authorizer then need not.
	TableID int64
	Columns []string
}

// ObjectResource is the Resource of an S3 key.
func ObjectResource(bucket, key []byte) Resource { return Resource{Bucket: bucket, Key: key} }

// TableResource is the Resource of a catalog table (or view).
func TableResource(ns, table string) Resource { return Resource{Namespace: ns, Table: table} }

// NamespaceResource is the Resource of a namespace; ns "" is the catalog.
func NamespaceResource(ns string) Resource { return Resource{Namespace: ns} }

// Decision is an authorisation outcome.
type Decision struct {
	Allow bool
	// Reason says why, in words safe for the caller and the audit trail:
	// it names nothing the caller did not name itself.
	Reason string
	// PolicyIDs are the governance policies that decided, if any.
	PolicyIDs []string
	// Obligations are what the caller must do to honour an allowing
	// decision (serve the masked copy instead of the base table, say). A
	// caller that cannot honour one must deny.
	Obligations []Obligation
	// Hidden, on a denial, asks the caller to answer as if the resource
	// did not exist (an allowlisted table the principal may not see): a
	// 404 like any missing table, so its existence does not leak.
	Hidden bool
}

// ObligationKind is what an Obligation asks for.
type ObligationKind uint8

// The obligations.
const (
	// ObligationServeMasked: serve the masked copy at Location instead of
	// the base table (the airtight tier).
	ObligationServeMasked ObligationKind = iota + 1
)

// Obligation is a condition attached to an allowing Decision.
type Obligation struct {
	Kind     ObligationKind
	Location string
}

// Allowed is an allowing decision with a reason.
func Allowed(reason string) Decision { return Decision{Allow: true, Reason: reason} }

// Denied is a denying decision with a reason.
func Denied(reason string) Decision { return Decision{Reason: reason} }

// Authorizer decides whether a principal may perform an action on a
// resource. It resolves the principal's roles itself (see Principal). An
// error denies: callers treat it as a denial, log it, and show the caller
// only a generic reason. Implementations are safe for concurrent use.
type Authorizer interface {
	// Authorize decides a on r for p.
	Authorize(ctx context.Context, p *Principal, a Action, r *Resource) (Decision, error)
	// AuthorizeBatch decides a on each of rs for p, into out (len(out) >=
	// len(rs)): a DeleteObjects body's keys, the tables of a listing. An
	// error denies them all.
	AuthorizeBatch(ctx context.Context, p *Principal, a Action, rs []Resource, out []Decision) error
}

// ErrShortOutput is AuthorizeBatch's error for an out shorter than rs.
var ErrShortOutput = errors.New("governance: AuthorizeBatch: out is shorter than the resources")

// AuthorizeEach implements AuthorizeBatch with one Authorize call per
// resource, for Authorizers with nothing better to do.
func AuthorizeEach(ctx context.Context, az Authorizer, p *Principal, a Action, rs []Resource, out []Decision) error {
	if len(out) < len(rs) {
		return ErrShortOutput
	}
	for i := range rs {
		d, err := az.Authorize(ctx, p, a, &rs[i])
		if err != nil {
			return err
		}
		out[i] = d
	}
	return nil
}

// ReasonAgentReadOnly is the reason of every refusal of a write to an agent
// session; it starts with the audit code the seeds name.
const ReasonAgentReadOnly = "error_agent_readonly: agent sessions are read-only"

// Reasons ScopeOnly gives.
const (
	reasonScope        = "within the credential's scope; no governance policy applies"
	reasonNoRead       = "the token may not read the namespace"
	reasonNoWrite      = "the token may not change the namespace"
	reasonNoAdmin      = "the token may not change the catalog (it needs write on every namespace)"
	reasonNoScopes     = "the credential carries no catalog scopes"
	reasonUnknownVerb  = "unknown action"
	reasonNoGovernance = "the token has no governance scope for this (governance:read or governance:admin)"
)

// ReasonBindingUnchecked refuses a credential bound to a table where no
// table index can say whether the table still exists: a gateway without a
// catalog, or an engine without an index. Fails closed.
const ReasonBindingUnchecked = "the credential is bound to a table and this gateway has no table index to check the table against"

// ScopeOnly is the Authorizer that enforces the credential's own scope and
// nothing more: the catalog action's capability on its namespace against
// the token's scopes, and every S3 action (the credential's grants, which
// AdmitS3 checks before asking, are its scope).
type ScopeOnly struct{}

// Authorize implements Authorizer.
func (ScopeOnly) Authorize(_ context.Context, p *Principal, a Action, r *Resource) (Decision, error) {
	if a.IsS3() && p.Table.Bound() {
		// Whether the table still exists is the catalog's to say: without
		// one, a credential bound to a table fails closed.
		return Denied(ReasonBindingUnchecked), nil
	}
	return ScopeDecision(p, a, r), nil
}

// AuthorizeBatch implements Authorizer.
func (s ScopeOnly) AuthorizeBatch(ctx context.Context, p *Principal, a Action, rs []Resource, out []Decision) error {
	return AuthorizeEach(ctx, s, p, a, rs, out)
}

// ScopeDecision is the scope rule every Authorizer starts from: an S3
// action is allowed (its credential's grants are checked by AdmitS3), a
// catalog action needs its capability (Action.Needs) in p's scopes on the
// resource's namespace, or on every namespace.
func ScopeDecision(p *Principal, a Action, r *Resource) Decision {
	if a == ActionUnknown || a >= actionEnd {
		return Denied(reasonUnknownVerb)
	}
	// Agents are read-only whatever their token or credential allows: the
	// rule lives here, where every Authorizer starts, so no configuration
	// (ScopeOnly included) lets an agent session change anything.
	if p.IsAgent() && a.IsWrite() {
		return Denied(ReasonAgentReadOnly)
	}
	if a.IsS3() {
		return Allowed(reasonScope)
	}
	switch a {
	case ActionReadGovernance, ActionAdminGovernance:
		need := GovRead
		if a == ActionAdminGovernance {
			need = GovAdmin
		}
		if !p.Scopes.Governs(need) {
			return Denied(reasonNoGovernance)
		}
		return Allowed(reasonScope)
	}
	need, every := a.Needs()
	if need == 0 {
		return Allowed(reasonScope)
	}
	if p.Scopes == nil {
		return Denied(reasonNoScopes)
	}
	ns := r.Namespace
	if every {
		ns = ""
	}
	if p.Scopes.Allows(ns, need) {
		return Allowed(reasonScope)
	}
	switch {
	case every:
		return Denied(reasonNoAdmin)
	case need&CapWrite != 0:
		return Denied(reasonNoWrite)
	}
	return Denied(reasonNoRead)
}
