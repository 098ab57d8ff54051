package oauth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/bounded"
)

// Issuer is the iss claim of the catalog's tokens.
const Issuer = "duckicelake"

// claims is the JWT body. SessionExpiry (sess_exp) is the absolute end of
// the session the token belongs to: set when a client authenticates with
// its secret, carried unchanged through token exchange, and never passed
// by a token's exp.
type claims struct {
	Scopes        []string         `json:"scopes"`
	Roles         []string         `json:"roles,omitempty"`
	SessionExpiry *jwt.NumericDate `json:"sess_exp,omitempty"`
	jwt.RegisteredClaims
}

// Identity is what a verified token says, after the client registry had
// its say: the scopes and roles are the token's narrowed to what its client
// is allowed now.
type Identity struct {
	Subject string
	Scopes  []string
	Roles   []string
	// Gov are Scopes parsed.
	Gov governance.Scopes
	// Expiry is the token's exp; SessionExpiry its sess_exp (zero for
	// tokens minted before sessions were bounded).
	Expiry        time.Time
	SessionExpiry time.Time
}

// TokenError is a token that does not verify; Reason says why, in words
// fit for the client.
type TokenError struct{ Reason string }

func (e *TokenError) Error() string { return e.Reason }

// mint signs an access token for sub, expiring at the end of the token
// lifetime or of the session, whichever is first.
func (s *Server) mint(sub string, scopes, roles []string, sessExp time.Time) (string, time.Time, error) {
	now := s.now().Truncate(time.Second)
	exp := now.Add(s.cfg.TokenTTL)
	if exp.After(sessExp) {
		exp = sessExp
	}
	c := claims{
		Scopes:        scopes,
		Roles:         roles,
		SessionExpiry: jwt.NewNumericDate(sessExp),
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   sub,
			Audience:  jwt.ClaimStrings{s.cfg.Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.cfg.Key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("oauth: sign token: %w", err)
	}
	return tok, exp, nil
}

// Mint signs an access token for a configured client with its scopes and
// roles, starting a session of SessionTTL (tests and tools; the token
// endpoint is the way clients get one).
func (s *Server) Mint(clientID string, scopes []string) (string, error) {
	c := s.clients[clientID]
	if c == nil {
		return "", fmt.Errorf("oauth: no client %q", clientID)
	}
	tok, _, err := s.mint(c.ID, narrowScopes(scopes, c.Scopes), c.Roles, s.now().Truncate(time.Second).Add(s.cfg.SessionTTL))
	return tok, err
}

// Verify checks an access token: HS256 under the catalog's key, issued by
// this catalog for this audience, within its validity window, of a client
// that is still configured; the identity's scopes and roles are narrowed
// to what that client is allowed now. Errors are *TokenError.
func (s *Server) Verify(tok []byte) (*Identity, error) {
	now := s.now()
	if id := s.cache.get(tok, now); id != nil {
		return id, nil
	}
	var c claims
	_, err := jwt.ParseWithClaims(string(tok), &c, func(*jwt.Token) (any, error) { return s.cfg.Key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(Issuer),
		jwt.WithAudience(s.cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithLeeway(5*time.Second))
	if err != nil {
		switch {
		case errors.Is(err, jwt.ErrTokenExpired):
			return nil, &TokenError{"access token expired; request a new one"}
		case errors.Is(err, jwt.ErrTokenSignatureInvalid):
			return nil, &TokenError{"access token signature does not verify"}
		default:
			return nil, &TokenError{"invalid access token"}
		}
	}
	if _, err := governance.ParseScopes(c.Scopes); err != nil {
		return nil, &TokenError{fmt.Sprintf("invalid access token: %v", err)}
	}
	client := s.clients[c.Subject]
	if client == nil {
		// Removed from oauth.clients: what it was given goes with it.
		return nil, &TokenError{"access token of a client that is no longer configured"}
	}
	id := &Identity{Subject: c.Subject, Scopes: narrowScopes(c.Scopes, client.Scopes),
		Roles: narrowRoles(c.Roles, client.Roles), Expiry: c.ExpiresAt.Time}
	if c.SessionExpiry != nil {
		id.SessionExpiry = c.SessionExpiry.Time
	}
	if id.Gov, err = governance.ParseScopes(id.Scopes); err != nil {
		return nil, &TokenError{fmt.Sprintf("invalid access token: %v", err)}
	}
	s.cache.put(tok, id)
	return id, nil
}

// tokenCache remembers verified tokens until they expire, so a request
// repeating a token skips the HMAC and JSON decoding. The registry it was
// verified against is fixed for the process, so a cached identity stays
// right; a token dropped at the bound is verified again.
type tokenCache struct{ bounded.Strings[*Identity] }

func (c *tokenCache) get(tok []byte, now time.Time) *Identity {
	id, _ := c.GetBytes(tok)
	if id == nil || !now.Before(id.Expiry) {
		return nil
	}
	return id
}

func (c *tokenCache) put(tok []byte, id *Identity) { c.PutBytes(tok, id) }
