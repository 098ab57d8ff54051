package gateway

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/sigv4"
)

// credential is the sigv4.CredentialStore of one request. It recognises the
// operator's root credential first, else verifies the session token with
// the keyring (MAC, binding to the access key id, validity window,
// revocation) and keeps the token's claims for the scope check. It lives
// in the pooled request state, so resolving a secret allocates nothing
// beyond the claims' strings.
type credential struct {
	keyring *creds.Keyring
	root    *creds.Root
	cache   *tokenCache
	now     time.Time
	// shared: claims.Grants belongs to a cache entry, read-only; reset
	// must not hand it to VerifyInto for reuse.
	shared bool

	// Set by Secret on success.
	isRoot   bool
	verified bool // a minted credential whose token verified
	claims   creds.Claims
	secret   [creds.SecretLen]byte
	// failure is the creds error behind a refused token, for the audit
	// line (never shown to the client beyond its S3 code).
	failure error
}

func (c *credential) reset(keyring *creds.Keyring, root *creds.Root, cache *tokenCache, now time.Time) {
	grants := c.claims.Grants[:0]
	if c.shared {
		grants = nil
	}
	*c = credential{keyring: keyring, root: root, cache: cache, now: now}
	c.claims.Grants = grants
}

// mintedPrefix and mintedLen describe the shape of a minted access key id
// (see package creds), used only to word the error for a minted key sent
// without its session token.
const (
	mintedPrefix = "DIL"
	mintedLen    = creds.AccessKeyIDLen
)

// The S3 errors a refused credential answers with. The messages are S3's
// own where one exists; none says which check failed beyond the code.
var (
	errUnknownAccessKey = &sigv4.Error{Code: sigv4.ErrInvalidAccessKeyID,
		Message: "The AWS Access Key Id you provided does not exist in our records."}
	errMissingToken = &sigv4.Error{Code: sigv4.ErrInvalidAccessKeyID,
		Message: "The AWS Access Key Id you provided does not exist in our records. Minted credentials must send their session token (x-amz-security-token)."}
	errInvalidToken = &sigv4.Error{Code: sigv4.ErrInvalidToken,
		Message: "The provided token is malformed or otherwise invalid."}
	errExpiredToken = &sigv4.Error{Code: sigv4.ErrExpiredToken,
		Message: "The provided token has expired."}
	errRevokedToken = &sigv4.Error{Code: sigv4.ErrInvalidToken,
		Message: "The provided token has been revoked."}
	errRootWithToken = &sigv4.Error{Code: sigv4.ErrInvalidToken,
		Message: "The operator's root credentials take no session token."}
)

// Secret implements sigv4.CredentialStore.
func (c *credential) Secret(accessKeyID, sessionToken []byte) ([]byte, error) {
	if secret, ok := c.root.Secret(accessKeyID); ok {
		if len(sessionToken) > 0 {
			c.failure = errRootWithToken
			return nil, errRootWithToken
		}
		c.isRoot = true
		return secret, nil
	}
	if len(sessionToken) == 0 {
		if len(accessKeyID) == mintedLen && string(accessKeyID[:len(mintedPrefix)]) == mintedPrefix {
			c.failure = errMissingToken
			return nil, errMissingToken
		}
		c.failure = errUnknownAccessKey
		return nil, errUnknownAccessKey
	}
	if c.keyring == nil {
		c.failure = errUnknownAccessKey
		return nil, errUnknownAccessKey
	}
	if e := c.cache.get(sessionToken); e != nil && string(e.accessKeyID) == string(accessKeyID) && c.now.Before(e.claims.Expiry) {
		if r := c.keyring.Revocations; r != nil && r.Revoked(e.claims.VendID) {
			c.failure = creds.ErrRevoked
			return nil, errRevokedToken
		}
		c.claims, c.shared = e.claims, true
		c.secret, c.verified = e.secret, true
		return c.secret[:], nil
	}
	secret, err := c.keyring.VerifyInto(&c.claims, accessKeyID, sessionToken, c.now)
	if err != nil {
		c.failure = err
		return nil, tokenError(err)
	}
	c.secret = secret
	c.verified = true
	c.cache.put(sessionToken, accessKeyID, &c.claims, secret)
	return c.secret[:], nil
}

// tokenCache remembers session tokens that verified, so a credential used
// for many requests pays the token's MAC, binding and secret derivation
// once. Only a verified token gets in, keyed by its exact bytes with the
// access key id it is bound to; expiry and revocation are still checked on
// every request. It assumes the keyring does not change while it serves.
type tokenCache struct {
	mu  sync.RWMutex
	m   map[string]*cachedToken
	max int
}

type cachedToken struct {
	accessKeyID []byte
	claims      creds.Claims // read-only: requests share its Grants
	secret      [creds.SecretLen]byte
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{m: make(map[string]*cachedToken), max: max}
}

func (tc *tokenCache) get(token []byte) *cachedToken {
	if tc == nil {
		return nil
	}
	tc.mu.RLock()
	e := tc.m[string(token)]
	tc.mu.RUnlock()
	return e
}

func (tc *tokenCache) put(token, accessKeyID []byte, c *creds.Claims, secret [creds.SecretLen]byte) {
	if tc == nil {
		return
	}
	e := &cachedToken{accessKeyID: bytes.Clone(accessKeyID), claims: *c, secret: secret}
	e.claims.Grants = slices.Clone(c.Grants)
	tc.mu.Lock()
	if len(tc.m) >= tc.max {
		// Dropping everything is crude but bounded and rare: only minted,
		// verified tokens get in.
		clear(tc.m)
	}
	tc.m[string(token)] = e
	tc.mu.Unlock()
}

// tokenError maps a creds verification error to the S3 error to answer:
// an expired token is ExpiredToken; a token bound to another access key id
// is InvalidAccessKeyId (the key id does not belong to it); every other
// failure (malformed, unknown minting key, bad MAC, not yet valid, revoked)
// is InvalidToken.
func tokenError(err error) *sigv4.Error {
	switch {
	case errors.Is(err, creds.ErrExpired):
		return errExpiredToken
	case errors.Is(err, creds.ErrKeyMismatch):
		return errUnknownAccessKey
	case errors.Is(err, creds.ErrRevoked):
		return errRevokedToken
	}
	return errInvalidToken
}
