package creds

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/duckicelake/duckicelake/internal/defaults"
)

// Defaults of the Keyring's policy fields.
const (
	DefaultMaxTTL     = 12 * time.Hour
	DefaultDefaultTTL = time.Hour
	DefaultSkew       = 5 * time.Minute
	// MinKeyLen is the shortest minting key secret accepted, in bytes.
	MinKeyLen = 32
)

// Key is a named minting key.
type Key struct {
	ID     string // 1..32 characters of [A-Za-z0-9._-]
	Secret []byte // at least MinKeyLen bytes
}

// ParseKeySecret decodes a minting key secret as written in configuration:
// "hex:…" or "base64:…" explicitly, or unprefixed, which is hex when it is an
// even number of hex digits and base64 (standard or URL alphabet, padding
// optional) otherwise. The result must be at least MinKeyLen bytes.
func ParseKeySecret(s string) ([]byte, error) {
	var b []byte
	var err error
	switch {
	case strings.HasPrefix(s, "hex:"):
		b, err = hex.DecodeString(s[len("hex:"):])
	case strings.HasPrefix(s, "base64:"):
		b, err = decodeBase64(s[len("base64:"):])
	case len(s)%2 == 0 && isHex(s):
		b, err = hex.DecodeString(s)
	default:
		b, err = decodeBase64(s)
	}
	if err != nil {
		return nil, failf("minting key secret is neither hex nor base64")
	}
	if len(b) < MinKeyLen {
		return nil, failf("minting key secret is %d bytes, need at least %d (e.g. `openssl rand -hex 32`)", len(b), MinKeyLen)
	}
	return b, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// keyState holds the two keys derived from one minting key and pools of
// HMAC states keyed with them (hmac.New allocates; Reset does not).
type keyState struct {
	id             string
	macKey, secKey []byte
	macPool        sync.Pool // *hmacState under macKey
	secPool        sync.Pool // *hmacState under secKey
}

type hmacState struct {
	h   hash.Hash
	sum []byte
}

func newKeyState(k Key) *keyState {
	// Separate keys for the token MAC and the secret derivation, so neither
	// value can stand in for the other.
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, k.Secret)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	ks := &keyState{
		id:     k.ID,
		macKey: derive("duckicelake/creds/v1/token-mac"),
		secKey: derive("duckicelake/creds/v1/secret"),
	}
	ks.macPool.New = func() any { return &hmacState{h: hmac.New(sha256.New, ks.macKey), sum: make([]byte, 0, sha256.Size)} }
	ks.secPool.New = func() any { return &hmacState{h: hmac.New(sha256.New, ks.secKey), sum: make([]byte, 0, sha256.Size)} }
	return ks
}

func (ks *keyState) mac(dst *[macLen]byte, body []byte) {
	st := ks.macPool.Get().(*hmacState)
	st.h.Reset()
	st.h.Write(body)
	st.sum = st.h.Sum(st.sum[:0])
	copy(dst[:], st.sum)
	ks.macPool.Put(st)
}

// secret derives the secret access key of accessKeyID: the standard base64
// of the first 30 bytes of its HMAC, 40 characters.
func (ks *keyState) secret(accessKeyID []byte) (s [SecretLen]byte) {
	st := ks.secPool.Get().(*hmacState)
	st.h.Reset()
	st.h.Write(accessKeyID)
	st.sum = st.h.Sum(st.sum[:0])
	base64.StdEncoding.Encode(s[:], st.sum[:SecretLen/4*3])
	ks.secPool.Put(st)
	return s
}

// Revocations tells whether a vend id has been revoked.
type Revocations interface {
	Revoked(vendID string) bool
}

// Keyring mints credentials with its active key and verifies them with any
// key it holds. Set the exported fields before first use; after that a
// Keyring is safe for concurrent use. To rotate, build a new Keyring with the
// new active key and keep the old key among the others until every token it
// minted has expired; then drop it, and its tokens fail with ErrUnknownKey.
type Keyring struct {
	// MaxTTL caps a minted token's lifetime; 0 means DefaultMaxTTL. Mint
	// shortens a longer request silently and reports the effective expiry.
	MaxTTL time.Duration
	// DefaultTTL is the lifetime of a token minted without an expiry; 0
	// means DefaultDefaultTTL.
	DefaultTTL time.Duration
	// Skew is how far in the future a token's issued-at may lie (clocks of
	// the minting and verifying processes differ); 0 means DefaultSkew.
	Skew time.Duration
	// Revocations, if set, is consulted for every verified token.
	Revocations Revocations
	// Now is Mint's clock; nil means time.Now. Verify takes the time as an
	// argument.
	Now func() time.Time
	// Rand is the source of vend ids; nil means crypto/rand.
	Rand io.Reader

	active  *keyState
	keys    map[string]*keyState
	scratch sync.Pool // *scratch
}

type scratch struct {
	raw [maxRawLen]byte
	str []byte
}

// NewKeyring returns a keyring that mints with active and verifies with
// active and others. Key ids must be unique and secrets at least MinKeyLen
// bytes long; the keyring keeps only keys derived from them.
func NewKeyring(active Key, others ...Key) (*Keyring, error) {
	k := &Keyring{keys: make(map[string]*keyState, 1+len(others))}
	for _, key := range append([]Key{active}, others...) {
		if !validKeyID(key.ID) {
			return nil, failf("key id %q: want 1..%d characters of [A-Za-z0-9._-]", key.ID, MaxKeyIDLen)
		}
		if len(key.Secret) < MinKeyLen {
			return nil, failf("key %q: secret is %d bytes, need at least %d", key.ID, len(key.Secret), MinKeyLen)
		}
		if k.keys[key.ID] != nil {
			return nil, failf("key id %q appears twice", key.ID)
		}
		ks := newKeyState(key)
		k.keys[key.ID] = ks
		if k.active == nil {
			k.active = ks
		}
	}
	k.scratch.New = func() any { return new(scratch) }
	return k, nil
}

// ActiveKeyID returns the id of the key new tokens are minted with.
func (k *Keyring) ActiveKeyID() string { return k.active.id }

// Minted is a freshly minted credential.
type Minted struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	VendID          string
	IssuedAt        time.Time
	Expiry          time.Time // effective: after MaxTTL capped the request
}

// Mint issues a credential for c with the active key. It stamps its own
// issued-at (now, in whole seconds) and a fresh random vend id, ignoring
// c.IssuedAt and c.VendID. c.Expiry zero means now + DefaultTTL; an expiry
// beyond now + MaxTTL is shortened to it (the returned Expiry says so); an
// expiry not after now is an error. An empty Actor means ActorHuman and an
// empty Channel ChannelREST. Errors wrap ErrInvalidClaims.
func (k *Keyring) Mint(c Claims) (Minted, error) {
	now := time.Now
	if k.Now != nil {
		now = k.Now
	}
	iat := time.Unix(now().Unix(), 0).UTC()
	maxTTL := defaults.Positive(k.MaxTTL, DefaultMaxTTL)
	maxTTL = min(maxTTL, MaxLifetime)
	exp := c.Expiry
	if exp.IsZero() {
		exp = iat.Add(defaults.Positive(k.DefaultTTL, DefaultDefaultTTL))
	}
	exp = time.Unix(exp.Unix(), 0).UTC()
	if !exp.After(iat) {
		return Minted{}, fmt.Errorf("%w: expiry %s is not after now (%s)", ErrInvalidClaims, exp.Format(time.RFC3339), iat.Format(time.RFC3339))
	}
	if exp.Sub(iat) > maxTTL {
		exp = iat.Add(maxTTL)
	}
	var vend [vendLen]byte
	r := k.Rand
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, vend[:]); err != nil {
		return Minted{}, failf("vend id: %w", err)
	}
	c.IssuedAt, c.Expiry, c.VendID = iat, exp, hex.EncodeToString(vend[:])
	if c.Actor == "" {
		c.Actor = ActorHuman
	}
	if c.Channel == "" {
		c.Channel = ChannelREST
	}
	raw, err := appendBody(make([]byte, 0, 256), k.active.id, &c)
	if err != nil {
		return Minted{}, fmt.Errorf("%w: %v", ErrInvalidClaims, err)
	}
	var mac [macLen]byte
	k.active.mac(&mac, raw)
	raw = append(raw, mac[:]...)
	if n := b64url.EncodedLen(len(raw)); n > MaxTokenLen {
		return Minted{}, fmt.Errorf("%w: token would be %d bytes, limit %d", ErrInvalidClaims, n, MaxTokenLen)
	}
	tok := b64url.EncodeToString(raw)
	ak := appendAccessKeyID(make([]byte, 0, AccessKeyIDLen), []byte(tok))
	secret := k.active.secret(ak)
	return Minted{
		AccessKeyID:     string(ak),
		SecretAccessKey: string(secret[:]),
		SessionToken:    tok,
		VendID:          c.VendID,
		IssuedAt:        iat,
		Expiry:          exp,
	}, nil
}

// Verify checks a session token presented with accessKeyID at time now and
// returns its claims and the secret access key the request must be signed
// with. See VerifyInto for the checks and errors.
func (k *Keyring) Verify(accessKeyID, token string, now time.Time) (Claims, string, error) {
	var c Claims
	secret, err := k.VerifyInto(&c, []byte(accessKeyID), []byte(token), now)
	if err != nil {
		return Claims{}, "", err
	}
	return c, string(secret[:]), nil
}

// VerifyInto checks a session token presented with accessKeyID at time now,
// fills dst with its claims (reusing dst.Grants' capacity) and returns the
// secret access key. The checks, in order, and their errors: strict parse
// (ErrMalformedToken), minting key known (ErrUnknownKey), MAC (ErrBadMAC),
// accessKeyID derived from this token (ErrKeyMismatch), issued-at not beyond
// now + Skew (ErrNotYetValid), now before expiry (ErrExpired), vend id not
// revoked (ErrRevoked). dst is meaningful only when err is nil. All claim
// strings share a single allocation; nothing else is allocated.
func (k *Keyring) VerifyInto(dst *Claims, accessKeyID, tok []byte, now time.Time) (secret [SecretLen]byte, err error) {
	s := k.scratch.Get().(*scratch)
	defer k.scratch.Put(s)
	raw, err := decodeText(s.raw[:], tok)
	if err != nil {
		return secret, err
	}
	var t token
	if err := parse(&t, raw); err != nil {
		return secret, err
	}
	ks := k.keys[string(t.keyID)]
	if ks == nil {
		return secret, ErrUnknownKey
	}
	var mac [macLen]byte
	ks.mac(&mac, t.body)
	if !hmac.Equal(mac[:], t.mac) {
		return secret, ErrBadMAC
	}
	var ak [AccessKeyIDLen]byte
	if subtle.ConstantTimeCompare(appendAccessKeyID(ak[:0], tok), accessKeyID) != 1 {
		return secret, ErrKeyMismatch
	}
	n := now.Unix()
	if int64(t.iat) > n+int64(defaults.Positive(k.Skew, DefaultSkew)/time.Second) {
		return secret, ErrNotYetValid
	}
	if n >= int64(t.iat+t.life) {
		return secret, ErrExpired
	}
	s.str = t.fill(dst, s.str)
	if k.Revocations != nil && k.Revocations.Revoked(dst.VendID) {
		return secret, ErrRevoked
	}
	return ks.secret(accessKeyID), nil
}
