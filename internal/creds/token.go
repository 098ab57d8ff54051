package creds

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of the token format.
const (
	// MaxTokenLen is the longest encoded session token, in bytes.
	MaxTokenLen = 8192
	// MaxGrants is the most grants one token carries.
	MaxGrants = 64
	// MaxNameLen bounds the principal, catalog, bucket and prefix, in bytes
	// (S3's own limit for a key).
	MaxNameLen = 1024
	// MaxKeyIDLen bounds a minting key id.
	MaxKeyIDLen = 32
	// MaxUUIDLen bounds a table binding's UUID.
	MaxUUIDLen = 64
	// MaxLifetime is the longest validity a token can express.
	MaxLifetime = 30 * 24 * time.Hour
	// AccessKeyIDLen is the length of a minted access key id.
	AccessKeyIDLen = 20
	// SecretLen is the length of a derived secret access key.
	SecretLen = 40
)

const (
	version1   = 1
	version2   = 2 // version 1 and a table binding
	flagStaged = 1
	macLen     = sha256.Size
	vendLen    = 16
	maxRawLen  = MaxTokenLen / 4 * 3 // base64 without padding: 4 chars carry 3 bytes
	maxUnix    = 253402300799        // 9999-12-31T23:59:59Z, so every time formats as RFC 3339
	akPrefix   = "DIL"
	akHashLen  = 11 // SHA-256 bytes behind the 17 base32 characters of the key id
)

var (
	actorNames   = [...]string{1: ActorHuman, 2: ActorAgent}
	channelNames = [...]string{1: ChannelREST, 2: ChannelMCP, 3: ChannelSMCP}
)

func actorCode(s string) byte {
	for i, n := range actorNames {
		if i > 0 && n == s {
			return byte(i)
		}
	}
	return 0
}

func channelCode(s string) byte {
	for i, n := range channelNames {
		if i > 0 && n == s {
			return byte(i)
		}
	}
	return 0
}

// b64url is the token's text encoding. Strict rejects non-zero padding bits,
// so each byte string has one encoding.
var b64url = base64.RawURLEncoding.Strict()

// validKeyID reports whether id may name a minting key.
func validKeyID(id string) bool {
	if len(id) == 0 || len(id) > MaxKeyIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func checkName(what, s string, min int) error {
	switch {
	case len(s) < min:
		return fmt.Errorf("%s is empty", what)
	case len(s) > MaxNameLen:
		return fmt.Errorf("%s is %d bytes, limit %d", what, len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	return nil
}

func (g *Grant) validate() error {
	if err := checkName("bucket", g.Bucket, 1); err != nil {
		return err
	}
	if strings.IndexByte(g.Bucket, '/') >= 0 {
		return fmt.Errorf("bucket %q contains '/'", g.Bucket)
	}
	if err := checkName("prefix", g.Prefix, 0); err != nil {
		return err
	}
	if g.Access == 0 || g.Access&^accessAll != 0 {
		return fmt.Errorf("access %s: want a non-empty combination of read, write, list", g.Access)
	}
	return nil
}

// appendBody validates c and appends its encoding (everything but the MAC)
// under keyID to dst.
func appendBody(dst []byte, keyID string, c *Claims) ([]byte, error) {
	if !validKeyID(keyID) {
		return dst, fmt.Errorf("key id %q: want 1..%d characters of [A-Za-z0-9._-]", keyID, MaxKeyIDLen)
	}
	if err := checkName("principal", c.Principal, 1); err != nil {
		return dst, err
	}
	if err := checkName("catalog", c.Catalog, 0); err != nil {
		return dst, err
	}
	actor, channel := actorCode(c.Actor), channelCode(c.Channel)
	if actor == 0 {
		return dst, fmt.Errorf("actor %q: want %q or %q", c.Actor, ActorHuman, ActorAgent)
	}
	if channel == 0 {
		return dst, fmt.Errorf("channel %q: want %q, %q or %q", c.Channel, ChannelREST, ChannelMCP, ChannelSMCP)
	}
	var vend [vendLen]byte
	if len(c.VendID) != 2*vendLen || strings.ToLower(c.VendID) != c.VendID {
		return dst, fmt.Errorf("vend id %q: want %d lower-case hex characters", c.VendID, 2*vendLen)
	}
	if _, err := hex.Decode(vend[:], []byte(c.VendID)); err != nil {
		return dst, fmt.Errorf("vend id %q: %v", c.VendID, err)
	}
	iat, exp := c.IssuedAt.Unix(), c.Expiry.Unix()
	if c.IssuedAt.Nanosecond() != 0 || c.Expiry.Nanosecond() != 0 {
		return dst, errors.New("issued-at and expiry must be whole seconds")
	}
	if iat < 0 || iat > maxUnix {
		return dst, fmt.Errorf("issued-at %s out of range", c.IssuedAt)
	}
	if life := exp - iat; life < 1 || life > int64(MaxLifetime/time.Second) || exp > maxUnix {
		return dst, fmt.Errorf("expiry %s: must be after issued-at %s, by at most %s", c.Expiry, c.IssuedAt, MaxLifetime)
	}
	if len(c.Grants) > MaxGrants {
		return dst, fmt.Errorf("%d grants, limit %d", len(c.Grants), MaxGrants)
	}
	for i := range c.Grants {
		if err := c.Grants[i].validate(); err != nil {
			return dst, fmt.Errorf("grant %d: %w", i, err)
		}
	}
	version := byte(version1)
	if b := &c.Table; b.Bound() {
		if err := b.validate(); err != nil {
			return dst, fmt.Errorf("table binding: %w", err)
		}
		version = version2
	} else if *b != (TableBinding{}) {
		// Zero is unbound: anything else without a UUID would not survive
		// a round trip.
		return dst, errors.New("table binding without a table UUID")
	}

	dst = append(dst, version)
	dst = appendString(dst, keyID)
	dst = binary.AppendUvarint(dst, uint64(iat))
	dst = binary.AppendUvarint(dst, uint64(exp-iat))
	dst = append(dst, actor, channel)
	dst = append(dst, vend[:]...)
	dst = appendString(dst, c.Principal)
	dst = appendString(dst, c.Catalog)
	dst = binary.AppendUvarint(dst, uint64(len(c.Grants)))
	for _, g := range c.Grants {
		dst = appendString(dst, g.Bucket)
		dst = appendString(dst, g.Prefix)
		dst = append(dst, byte(g.Access))
	}
	if version == version2 {
		b := &c.Table
		dst = appendString(dst, b.UUID)
		dst = appendString(dst, b.Namespace)
		dst = appendString(dst, b.Name)
		dst = binary.AppendUvarint(dst, uint64(b.Snapshot))
		var flags byte
		if b.Staged {
			flags |= flagStaged
		}
		dst = append(dst, flags)
	}
	return dst, nil
}

func (b *TableBinding) validate() error {
	if err := checkName("table UUID", b.UUID, 1); err != nil {
		return err
	}
	if len(b.UUID) > MaxUUIDLen {
		return fmt.Errorf("table UUID is %d bytes, limit %d", len(b.UUID), MaxUUIDLen)
	}
	if err := checkName("table namespace", b.Namespace, 1); err != nil {
		return err
	}
	if err := checkName("table name", b.Name, 1); err != nil {
		return err
	}
	if b.Snapshot < 0 {
		return fmt.Errorf("table snapshot %d is negative", b.Snapshot)
	}
	return nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// token is a parsed, not yet authenticated, raw token. Its slices alias the
// decoded bytes.
type token struct {
	keyID      []byte
	iat, life  uint64
	actor      byte
	channel    byte
	vend       []byte
	strStart   int // offset of the principal's length: strings and grants follow
	principal  [2]int
	catalog    [2]int
	grantStart int // offset of the first grant
	grants     int
	// The table binding (version 2 only: bound is false for version 1).
	bound          bool
	uuid, ns, name [2]int
	snapshot       uint64
	staged         bool
	body, mac      []byte
}

// decodeText base64url-decodes an encoded token into buf, which must hold
// maxRawLen bytes.
func decodeText(buf []byte, text []byte) ([]byte, error) {
	if len(text) == 0 {
		return nil, malformed("empty")
	}
	if len(text) > MaxTokenLen {
		return nil, malformed("longer than 8192 bytes")
	}
	for _, c := range text {
		// The decoder skips '\r' and '\n'; a token must not contain them.
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return nil, malformed("not base64url")
		}
	}
	n, err := b64url.Decode(buf, text)
	if err != nil {
		return nil, malformed("not base64url")
	}
	return buf[:n], nil
}

// parse checks the structure of raw and every limit, without the MAC.
func parse(t *token, raw []byte) error {
	if len(raw) < 1+macLen {
		return malformed("too short")
	}
	if raw[0] != version1 && raw[0] != version2 {
		return malformed("unsupported version")
	}
	t.bound = raw[0] == version2
	t.body, t.mac = raw[:len(raw)-macLen], raw[len(raw)-macLen:]
	b := t.body
	off := 1
	var ok bool
	var r [2]int
	if r, off, ok = readString(b, off, MaxKeyIDLen); !ok || r[0] == r[1] || !validKeyID(string(b[r[0]:r[1]])) {
		return malformed("bad key id")
	}
	t.keyID = b[r[0]:r[1]]
	if t.iat, off, ok = readUvarint(b, off); !ok || t.iat > maxUnix {
		return malformed("bad issued-at")
	}
	if t.life, off, ok = readUvarint(b, off); !ok || t.life == 0 || t.life > uint64(MaxLifetime/time.Second) || t.iat+t.life > maxUnix {
		return malformed("bad lifetime")
	}
	if len(b)-off < 2+vendLen {
		return malformed("truncated")
	}
	t.actor, t.channel = b[off], b[off+1]
	if int(t.actor) >= len(actorNames) || t.actor == 0 {
		return malformed("unknown actor")
	}
	if int(t.channel) >= len(channelNames) || t.channel == 0 {
		return malformed("unknown channel")
	}
	off += 2
	t.vend = b[off : off+vendLen]
	off += vendLen
	t.strStart = off
	if t.principal, off, ok = readName(b, off); !ok || t.principal[0] == t.principal[1] {
		return malformed("bad principal")
	}
	if t.catalog, off, ok = readName(b, off); !ok {
		return malformed("bad catalog")
	}
	n, off, ok := readUvarint(b, off)
	if !ok || n > MaxGrants {
		return malformed("bad grant count")
	}
	t.grants, t.grantStart = int(n), off
	for range t.grants {
		var bucket [2]int
		if bucket, off, ok = readName(b, off); !ok || bucket[0] == bucket[1] {
			return malformed("bad bucket")
		}
		for _, c := range b[bucket[0]:bucket[1]] {
			if c == '/' {
				return malformed("bad bucket")
			}
		}
		if _, off, ok = readName(b, off); !ok {
			return malformed("bad prefix")
		}
		if off >= len(b) || b[off] == 0 || Access(b[off])&^accessAll != 0 {
			return malformed("bad access")
		}
		off++
	}
	if t.bound {
		if t.uuid, off, ok = readString(b, off, MaxUUIDLen); !ok || t.uuid[0] == t.uuid[1] || !utf8.Valid(b[t.uuid[0]:t.uuid[1]]) {
			return malformed("bad table UUID")
		}
		if t.ns, off, ok = readName(b, off); !ok || t.ns[0] == t.ns[1] {
			return malformed("bad table namespace")
		}
		if t.name, off, ok = readName(b, off); !ok || t.name[0] == t.name[1] {
			return malformed("bad table name")
		}
		if t.snapshot, off, ok = readUvarint(b, off); !ok || t.snapshot > math.MaxInt64 {
			return malformed("bad table snapshot")
		}
		if off >= len(b) || b[off]&^flagStaged != 0 {
			return malformed("bad table flags")
		}
		t.staged = b[off]&flagStaged != 0
		off++
	}
	if off != len(b) {
		return malformed("trailing bytes")
	}
	return nil
}

// readUvarint reads a varint in its shortest form.
func readUvarint(b []byte, off int) (uint64, int, bool) {
	v, n := binary.Uvarint(b[off:])
	if n <= 0 || n > 1 && b[off+n-1] == 0 {
		return 0, off, false
	}
	return v, off + n, true
}

// readString reads a length-prefixed string of at most max bytes and returns
// its [start, end) offsets.
func readString(b []byte, off, max int) ([2]int, int, bool) {
	n, off, ok := readUvarint(b, off)
	if !ok || n > uint64(max) || n > uint64(len(b)-off) {
		return [2]int{}, off, false
	}
	return [2]int{off, off + int(n)}, off + int(n), true
}

// readName reads a UTF-8 string of at most MaxNameLen bytes.
func readName(b []byte, off int) ([2]int, int, bool) {
	r, off, ok := readString(b, off, MaxNameLen)
	if !ok || !utf8.Valid(b[r[0]:r[1]]) {
		return r, off, false
	}
	return r, off, true
}

// fill sets c from a parsed token. Every string in c shares one allocation;
// c.Grants reuses its capacity.
func (t *token) fill(c *Claims, scratch []byte) []byte {
	b := t.body
	// The strings region runs from the principal to the end of the body;
	// the vend id's hex goes after it so the conversion happens once.
	scratch = append(scratch[:0], b[t.strStart:]...)
	scratch = hex.AppendEncode(scratch, t.vend)
	s := string(scratch)
	sub := func(r [2]int) string { return s[r[0]-t.strStart : r[1]-t.strStart] }

	c.Principal = sub(t.principal)
	c.Catalog = sub(t.catalog)
	c.VendID = s[len(s)-2*vendLen:]
	c.Actor = actorNames[t.actor]
	c.Channel = channelNames[t.channel]
	c.IssuedAt = time.Unix(int64(t.iat), 0).UTC()
	c.Expiry = time.Unix(int64(t.iat+t.life), 0).UTC()
	c.Grants = c.Grants[:0]
	off := t.grantStart
	for range t.grants {
		// parse has checked every bound.
		var bucket, prefix [2]int
		bucket, off, _ = readString(b, off, MaxNameLen)
		prefix, off, _ = readString(b, off, MaxNameLen)
		c.Grants = append(c.Grants, Grant{Bucket: sub(bucket), Prefix: sub(prefix), Access: Access(b[off])})
		off++
	}
	c.Table = TableBinding{}
	if t.bound {
		c.Table = TableBinding{UUID: sub(t.uuid), Namespace: sub(t.ns), Name: sub(t.name), Snapshot: int64(t.snapshot), Staged: t.staged}
	}
	return scratch
}

// appendAccessKeyID appends the access key id bound to an encoded token.
func appendAccessKeyID(dst []byte, text []byte) []byte {
	sum := sha256.Sum256(text)
	var enc [24]byte // base32 of 11 bytes is 18 characters; 17 are kept
	base32.StdEncoding.Encode(enc[:], sum[:akHashLen])
	dst = append(dst, akPrefix...)
	return append(dst, enc[:AccessKeyIDLen-len(akPrefix)]...)
}

// AccessKeyIDFor returns the access key id bound to an encoded session token.
func AccessKeyIDFor(token string) string {
	var buf [AccessKeyIDLen]byte
	return string(appendAccessKeyID(buf[:0], []byte(token)))
}

// ParseUnverified decodes a session token WITHOUT checking its MAC, binding,
// validity window or revocation, for display and diagnostics (it returns the
// minting key id too). Never authorise anything with its result: use
// Keyring.Verify.
func ParseUnverified(tok string) (c Claims, keyID string, err error) {
	var buf [maxRawLen]byte
	raw, err := decodeText(buf[:], []byte(tok))
	if err != nil {
		return Claims{}, "", err
	}
	var t token
	if err := parse(&t, raw); err != nil {
		return Claims{}, "", err
	}
	t.fill(&c, nil)
	return c, string(t.keyID), nil
}
