// Package governance is the one place that decides what a principal may do.
//
// Every path into the lakehouse asks the same Authorizer: the S3 gateway
// (minted credentials), every Iceberg REST route (OAuth tokens), credential
// vending, remote signing and, later, DuckLake-direct vends and MCP
// queries. It sees one Principal whatever the path, an Action named by the
// route or derived from the S3 operation, and a Resource (bucket and key,
// or namespace and table); it answers a Decision with a reason that is safe
// to show the caller and the audit trail, the ids of the policies that
// decided, and obligations the caller must honour (serve the masked copy at
// some location, say). An error denies: authorisation fails closed.
//
// The contract (Principal, Action, Resource, Decision, Authorizer, Scopes)
// and the audit event (Event, Sink) live here, and so does the one
// admission pipeline of an S3 request (AdmitS3: a minted credential's
// grants over every key the request touches, then the Authorizer), which
// the gateway and the catalog's remote signer both run. The tags, policies,
// roles, grants and plans that implement it come with the governance
// model; until then ScopeOnly enforces the credential's own scope and
// nothing more.
//
// governance may import internal/creds and internal/s3proto (the S3
// protocol model, for AdmitS3) and the standard library, zap for its sink;
// it imports nothing of the gateway or the catalog, which both import it.
package governance
