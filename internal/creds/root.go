package creds

import (
	"crypto/subtle"
)

// MinRootSecretLen is the shortest operator root secret accepted.
const MinRootSecretLen = 32

// Root is the operator's static credential from configuration, for
// administration only. The gateway checks it before decoding any token:
// a request signed with the root access key id carries no session token.
type Root struct {
	accessKeyID []byte
	secret      []byte
}

// NewRoot returns the root credential. The access key id is 3..128
// characters of [A-Za-z0-9] and must not have the shape of a minted one
// (20 characters starting "DIL"), so the two can never be confused; the
// secret is at least MinRootSecretLen characters.
func NewRoot(accessKeyID, secretAccessKey string) (*Root, error) {
	if len(accessKeyID) < 3 || len(accessKeyID) > 128 {
		return nil, failf("root access key id is %d characters, want 3..128", len(accessKeyID))
	}
	for i := 0; i < len(accessKeyID); i++ {
		c := accessKeyID[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return nil, failf("root access key id %q: want letters and digits only", accessKeyID)
		}
	}
	if len(accessKeyID) == AccessKeyIDLen && accessKeyID[:len(akPrefix)] == akPrefix {
		return nil, failf("root access key id %q has the shape of a minted key id (%s…, %d characters)", accessKeyID, akPrefix, AccessKeyIDLen)
	}
	if len(secretAccessKey) < MinRootSecretLen {
		return nil, failf("root secret access key is %d characters, need at least %d", len(secretAccessKey), MinRootSecretLen)
	}
	return &Root{accessKeyID: []byte(accessKeyID), secret: []byte(secretAccessKey)}, nil
}

// AccessKeyID returns the root access key id.
func (r *Root) AccessKeyID() string { return string(r.accessKeyID) }

// Secret returns the root secret access key if accessKeyID is the root's.
// The returned slice is shared: do not modify it.
func (r *Root) Secret(accessKeyID []byte) ([]byte, bool) {
	if r == nil || subtle.ConstantTimeCompare(r.accessKeyID, accessKeyID) != 1 {
		return nil, false
	}
	return r.secret, true
}
