package gateway

import (
	"context"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/s3proto"
)

// Principal is who a request acts for, as governance sees it.
type Principal struct {
	ID      string   // the credential's principal
	Actor   string   // creds.ActorHuman or creds.ActorAgent
	Channel string   // creds.ChannelREST, ChannelMCP or ChannelSMCP
	Roles   []string // governance roles; empty until governance resolves them
}

// PrincipalOf returns the Principal a minted credential's claims name.
func PrincipalOf(c *creds.Claims) Principal {
	return Principal{ID: c.Principal, Actor: c.Actor, Channel: c.Channel}
}

// Object is what an operation acts on: a bucket, and a key unless the op is
// a bucket or list op.
type Object struct {
	Bucket, Key []byte
}

// Decision is an authorisation outcome, recorded in the audit trail.
type Decision struct {
	Allow     bool
	Reason    string   // why, in words an operator reads in the audit trail
	PolicyIDs []string // the governance policies that decided, if any
}

// Authorizer decides whether a principal may perform op on obj. It runs
// after CheckScope has admitted every key, once per object the request
// touches. An error denies the request: authorisation fails closed.
type Authorizer interface {
	Authorize(ctx context.Context, p *Principal, op s3proto.Op, obj Object) (Decision, error)
}

// ScopeOnly is the Authorizer in force until governance implements one: it
// allows every request, because the credential's scope, already enforced
// by CheckScope, is the only rule it knows.
type ScopeOnly struct{}

// Authorize allows; see ScopeOnly.
func (ScopeOnly) Authorize(context.Context, *Principal, s3proto.Op, Object) (Decision, error) {
	return Decision{Allow: true, Reason: "within the credential's scope; no governance policy applies"}, nil
}

// AuthorizeRequest asks a for every object r touches and returns the first
// denial, or the last allowing decision: the request's own object (its key,
// or its list prefix for a list op), then a copy source as OpGetObject
// (copying is reading the source), then each key of a DeleteObjects body as
// OpDeleteObject. An Authorizer error denies, with the error returned for
// the log; its text stays out of Reason, which the client may see.
func AuthorizeRequest(ctx context.Context, a Authorizer, p *Principal, r *s3proto.Request, deleteKeys [][]byte) (Decision, error) {
	deny := func(err error) (Decision, error) {
		return Decision{Reason: "authorisation failed"}, err
	}
	var d Decision
	var err error
	switch {
	case r.Op == s3proto.OpDeleteObjects:
		if len(deleteKeys) == 0 {
			return Decision{Reason: "no keys to authorise"}, nil
		}
		for _, k := range deleteKeys {
			if d, err = a.Authorize(ctx, p, s3proto.OpDeleteObject, Object{Bucket: r.Bucket, Key: k}); err != nil {
				return deny(err)
			}
			if !d.Allow {
				return d, nil
			}
		}
		return d, nil
	case r.Op.IsList():
		d, err = a.Authorize(ctx, p, r.Op, Object{Bucket: r.Bucket, Key: r.ListPrefix})
	default:
		d, err = a.Authorize(ctx, p, r.Op, Object{Bucket: r.Bucket, Key: r.Key})
	}
	if err != nil {
		return deny(err)
	}
	if !d.Allow || !r.Op.HasCopySource() {
		return d, nil
	}
	if d, err = a.Authorize(ctx, p, s3proto.OpGetObject, Object{Bucket: r.CopySourceBucket, Key: r.CopySourceKey}); err != nil {
		return deny(err)
	}
	return d, nil
}
