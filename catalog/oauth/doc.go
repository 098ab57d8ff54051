// Package oauth is the catalog's OAuth2 authorisation server: the client
// registry (configured clients with their secrets, scopes and roles), the
// token endpoint (POST /v1/oauth/tokens: the client-credentials grant and
// RFC 8693 token exchange, which Iceberg clients use to refresh), minting
// and verifying the catalog's HS256 access tokens, and the limit on failed
// authentications per client id and per source address.
//
// A token is only as good as the registry that verifies it: a token of a
// client that is no longer configured is refused, and one whose client has
// fewer scopes now is narrowed to what both allow. Token exchange re-checks
// the client the same way and never extends a session past the absolute
// bound the first token carried (claim sess_exp).
//
// It may import governance (scope grammar, audit events), internal/httplimit
// (client addresses, log rates), internal/defaults, internal/bounded (the
// token cache) and fasthttp; catalog/rest calls it, never the other
// way round.
package oauth
