package creds

import (
	"errors"
	"fmt"
)

// Errors callers branch on. Verification returns one of these (possibly
// wrapped with detail); a gateway answers ErrExpired with ExpiredToken and
// the others with InvalidToken or InvalidAccessKeyId.
var (
	// ErrMalformedToken: the token does not parse (bad base64url, unknown
	// version, bad lengths, limits exceeded, invalid UTF-8, trailing bytes).
	ErrMalformedToken = errors.New("creds: malformed session token")
	// ErrUnknownKey: the token names a minting key id the keyring does not hold
	// (never minted here, or the key was rotated out).
	ErrUnknownKey = errors.New("creds: session token minted with an unknown key")
	// ErrBadMAC: the token's MAC does not verify: it was altered or forged.
	ErrBadMAC = errors.New("creds: session token MAC does not verify")
	// ErrKeyMismatch: the token was presented with an access key id other than
	// the one derived from it.
	ErrKeyMismatch = errors.New("creds: access key id does not belong to the session token")
	// ErrExpired: the token's expiry has passed.
	ErrExpired = errors.New("creds: session token expired")
	// ErrNotYetValid: the token was issued in the future, beyond the allowed
	// clock skew.
	ErrNotYetValid = errors.New("creds: session token not yet valid")
	// ErrRevoked: the token's vend id is on the revocation list.
	ErrRevoked = errors.New("creds: session token revoked")
	// ErrInvalidClaims: Mint was asked for claims that cannot be encoded
	// (empty principal, unknown actor or channel, bad grant, too large).
	ErrInvalidClaims = errors.New("creds: invalid claims")
)

// malformed is an ErrMalformedToken with a reason. Its values are constants,
// so returning one does not allocate on the verification path.
type malformed string

func (m malformed) Error() string        { return ErrMalformedToken.Error() + ": " + string(m) }
func (m malformed) Is(target error) bool { return target == ErrMalformedToken }

// Error is an error of this package that callers word under their own name
// (a configuration key, a flag): Msg is the message without the "creds: "
// prefix the error's text carries.
type Error struct {
	Msg string
	err error // what it wraps
}

func (e *Error) Error() string { return "creds: " + e.Msg }
func (e *Error) Unwrap() error { return e.err }

// failf is an *Error from a format (with %w, it wraps).
func failf(format string, args ...any) error {
	w := fmt.Errorf(format, args...)
	return &Error{Msg: w.Error(), err: errors.Unwrap(w)}
}

// Message is err's text without the package prefix when err is an *Error,
// else its text.
func Message(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Msg
	}
	return err.Error()
}
