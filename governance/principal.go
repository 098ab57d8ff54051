package governance

import (
	"strings"

	"github.com/duckicelake/duckicelake/internal/creds"
)

// Actors and channels a principal's session can have. They are the strings
// minted credentials carry (package creds), and reach policies as the
// synthetic roles "actor:<actor>" and "channel:<channel>".
const (
	ActorHuman = creds.ActorHuman
	ActorAgent = creds.ActorAgent

	ChannelREST = creds.ChannelREST
	ChannelMCP  = creds.ChannelMCP
	ChannelSMCP = creds.ChannelSMCP
)

// Principal is who a request acts for, the same whatever path the request
// took: the subject of an OAuth token, the principal a minted credential
// names, or (with broker delegation) the end user a broker speaks for.
//
// A Principal carries no roles. Roles are not something a caller asserts:
// the Authorizer resolves them for each request from the principal's ID
// (its OAuth client's configured roles, the role grants) and its session
// context (actor, channel), so one principal is judged by the same rules on
// every path, and a role granted or revoked takes effect on credentials
// already handed out.
type Principal struct {
	// ID is the principal's name.
	ID string
	// Actor is ActorHuman or ActorAgent; empty counts as ActorHuman.
	Actor string
	// Channel is ChannelREST, ChannelMCP or ChannelSMCP; empty counts as
	// ChannelREST.
	Channel string
	// Catalog is the catalog the request addresses (the REST prefix, or
	// the catalog a minted credential was issued for).
	Catalog string
	// Delegator is the broker that asserted this principal (broker
	// delegation), empty when the principal speaks for itself. Audited.
	Delegator string
	// Scopes are what the OAuth token the request came with allows on
	// namespaces; nil for a minted credential, whose grants AdmitS3 checks
	// instead.
	Scopes Scopes
	// Table is the table a credential vended for one table is bound to
	// (zero: unbound): every S3 request must be on that table's keys, under
	// the name it was vended for (see the engine's authorizeS3).
	Table creds.TableBinding
}

// ActorOrDefault is p's actor, ActorHuman when unset.
func (p *Principal) ActorOrDefault() string {
	if p.Actor == "" {
		return ActorHuman
	}
	return p.Actor
}

// ChannelOrDefault is p's channel, ChannelREST when unset.
func (p *Principal) ChannelOrDefault() string {
	if p.Channel == "" {
		return ChannelREST
	}
	return p.Channel
}

// IsAgent reports whether an AI agent drives p's session.
func (p *Principal) IsAgent() bool { return p.Actor == ActorAgent }

// PrincipalOf is the Principal a minted credential's claims name.
func PrincipalOf(c *creds.Claims) Principal {
	return Principal{ID: c.Principal, Actor: c.Actor, Channel: c.Channel, Catalog: c.Catalog, Table: c.Table}
}

// MaskedNamePrefix starts the names governance keeps for itself in the
// catalog: the per-signature schemas and views of masking views. A
// namespace, table or view a user creates or renames may not start with
// it (whatever the case: DuckDB folds unquoted names), so none can pass
// for — or squat — a masked view.
const MaskedNamePrefix = "__mask_"

// IsMaskedName reports whether name is reserved for governance's masking
// objects (MaskedNamePrefix, in any case).
func IsMaskedName(name string) bool {
	return len(name) >= len(MaskedNamePrefix) && strings.EqualFold(name[:len(MaskedNamePrefix)], MaskedNamePrefix)
}
