package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"

	"github.com/duckicelake/duckicelake/internal/pct"
)

// Bits of charClass.
const (
	classToken = 1 << iota // RFC 9110 tchar except upper-case letters
	classSpace             // SP, HTAB, CR, LF
)

// appendCanonicalURI appends the canonical URI of a wire path.
//
// S3 (normalize false) does not touch the path's structure: dot segments and
// repeated slashes stay, and each byte is encoded exactly once. The wire path
// is decoded and re-encoded, so a client's %2f inside a key becomes %2F (not
// a separator) and a raw space or UTF-8 byte is encoded; '+' is a literal
// plus in a path. It reports false on a malformed percent escape.
//
// normalize applies the rules AWS uses for every other service: dot segments
// removed, empty segments dropped (trailing slash kept), then the path as sent
// encoded again, so an escape on the wire is double-encoded ("%2F" → "%252F").
func appendCanonicalURI(dst, raw []byte, normalize bool) ([]byte, bool) {
	if normalize {
		return appendNormalizedURI(dst, raw), true
	}
	if len(raw) == 0 {
		return append(dst, '/'), true
	}
	for i := 0; i < len(raw); i++ {
		// Copy a run of bytes that stay as they are in one append.
		j := i
		for j < len(raw) && (pct.Unreserved(raw[j]) || raw[j] == '/') {
			j++
		}
		if j > i {
			dst = append(dst, raw[i:j]...)
			if i = j; i == len(raw) {
				break
			}
		}
		c := raw[i]
		switch c {
		case '%':
			if i+2 >= len(raw) {
				return dst, false
			}
			hi, ok1 := pct.Unhex(raw[i+1])
			lo, ok2 := pct.Unhex(raw[i+2])
			if !ok1 || !ok2 {
				return dst, false
			}
			dst = pct.AppendEncodeByte(dst, hi<<4|lo)
			i += 2
		default:
			dst = pct.AppendEncodeByte(dst, c)
		}
	}
	return dst, true
}

// appendNormalizedURI implements the aws-c-auth path normalisation: split on
// '/', drop "" and ".", pop on "..", join with a leading '/', keep a trailing
// '/' if the raw path had one, and encode each segment.
func appendNormalizedURI(dst, raw []byte) []byte {
	base := len(dst)
	rest := raw
	for len(rest) > 0 {
		var seg []byte
		seg, rest, _ = bytes.Cut(rest, []byte{'/'})
		switch {
		case len(seg) == 0 || len(seg) == 1 && seg[0] == '.':
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			// Segments are encoded, so the last '/' written is the last
			// separator.
			if i := bytes.LastIndexByte(dst[base:], '/'); i >= 0 {
				dst = dst[:base+i]
			}
		default:
			dst = append(dst, '/')
			dst = pct.AppendEncode(dst, seg, false)
		}
	}
	if len(dst) == base || len(raw) > 0 && raw[len(raw)-1] == '/' {
		dst = append(dst, '/')
	}
	return dst
}

// appendQueryComponent decodes a raw query name or value and appends it
// re-encoded with UriEncode. It reports false on a malformed escape.
func appendQueryComponent(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); {
		c, next, ok := pct.DecodeAt(raw, i, true)
		if !ok {
			return dst, false
		}
		dst = pct.AppendEncodeByte(dst, c)
		i = next
	}
	return dst, true
}

// appendQueryDecoded appends the decoded form of a raw query component.
func appendQueryDecoded(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); {
		c, next, ok := pct.DecodeAt(raw, i, true)
		if !ok {
			return dst, false
		}
		dst = append(dst, c)
		i = next
	}
	return dst, true
}

// queryNameIs reports whether the raw (still encoded) query name decodes to
// want, without a buffer.
func queryNameIs(raw []byte, want string) bool {
	j := 0
	for i := 0; i < len(raw); {
		c, next, ok := pct.DecodeAt(raw, i, true)
		if !ok || j >= len(want) || want[j] != c {
			return false
		}
		j++
		i = next
	}
	return j == len(want)
}

// nextQueryParam splits the next '&'-separated parameter off q.
func nextQueryParam(q []byte) (name, value, rest []byte) {
	param := q
	if i := bytes.IndexByte(q, '&'); i >= 0 {
		param, rest = q[:i], q[i+1:]
	}
	name = param
	if i := bytes.IndexByte(param, '='); i >= 0 {
		name, value = param[:i], param[i+1:]
	}
	return name, value, rest
}

// qparam locates one encoded name and value in scratch.qbuf.
type qparam struct{ ns, ne, vs, ve int32 }

// maxQueryLen bounds what the canonicaliser accepts; offsets are int32 and
// no real request comes near it (HTTP servers cap the request line far
// below).
const maxQueryLen = 1 << 20

// appendCanonicalQuery appends the canonical query string: every parameter
// decoded and re-encoded with UriEncode, sorted by encoded name then value,
// an absent value written as "name=". skipSignature leaves out
// X-Amz-Signature (presigned requests). It reports false on a malformed
// escape or an oversized query.
func appendCanonicalQuery(dst, raw []byte, skipSignature bool, sc *scratch) ([]byte, bool) {
	if len(raw) == 0 {
		return dst, true
	}
	if len(raw) > maxQueryLen {
		return dst, false
	}
	qb := sc.qbuf[:0]
	params := sc.params[:0]
	for rest := raw; len(rest) > 0; {
		var name, value []byte
		name, value, rest = nextQueryParam(rest)
		if len(name) == 0 && len(value) == 0 {
			continue // "a&&b", trailing '&'
		}
		if skipSignature && queryNameIs(name, "X-Amz-Signature") {
			continue
		}
		var p qparam
		var ok bool
		p.ns = int32(len(qb))
		if qb, ok = appendQueryComponent(qb, name); !ok {
			sc.qbuf = qb
			return dst, false
		}
		p.ne = int32(len(qb))
		p.vs = p.ne
		if qb, ok = appendQueryComponent(qb, value); !ok {
			sc.qbuf = qb
			return dst, false
		}
		p.ve = int32(len(qb))
		params = append(params, p)
	}
	sortParams(params, qb)
	for i, p := range params {
		if i > 0 {
			dst = append(dst, '&')
		}
		dst = append(dst, qb[p.ns:p.ne]...)
		dst = append(dst, '=')
		dst = append(dst, qb[p.vs:p.ve]...)
	}
	sc.qbuf, sc.params = qb, params
	return dst, true
}

func compareParams(a, b qparam, qb []byte) int {
	if c := bytes.Compare(qb[a.ns:a.ne], qb[b.ns:b.ne]); c != 0 {
		return c
	}
	return bytes.Compare(qb[a.vs:a.ve], qb[b.vs:b.ve])
}

func sortParams(params []qparam, qb []byte) {
	if len(params) <= 12 {
		// Insertion sort: requests carry a handful of parameters and it
		// does not allocate.
		for i := 1; i < len(params); i++ {
			for j := i; j > 0 && compareParams(params[j-1], params[j], qb) > 0; j-- {
				params[j-1], params[j] = params[j], params[j-1]
			}
		}
		return
	}
	slices.SortFunc(params, func(a, b qparam) int { return compareParams(a, b, qb) })
}

func isSpace(c byte) bool { return charClass[c]&classSpace != 0 }

// appendCanonicalValue appends a header value trimmed, with each inner run
// of whitespace (including an obs-fold line break) collapsed to one space.
// Runs of plain bytes are copied whole: most values have no run to collapse.
func appendCanonicalValue(dst, v []byte) []byte {
	i, j := 0, len(v)
	for i < j && isSpace(v[i]) {
		i++
	}
	for j > i && isSpace(v[j-1]) {
		j--
	}
	v = v[i:j]
	for {
		k := plainPrefix(v)
		dst = append(dst, v[:k]...)
		if k == len(v) {
			return dst
		}
		for k < len(v) && isSpace(v[k]) {
			k++
		}
		dst = append(dst, ' ')
		v = v[k:]
	}
}

// plainPrefix returns the length of v's prefix without whitespace. It tests
// eight bytes at a time for any byte <= ' ' (header values are mostly long
// tokens without any), then settles the exact position bytewise.
func plainPrefix(v []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	k := 0
	for ; k+8 <= len(v); k += 8 {
		x := binary.LittleEndian.Uint64(v[k:])
		if (x-ones*0x21)&^x&highs != 0 {
			break
		}
	}
	for k < len(v) && (v[k] > ' ' || !isSpace(v[k])) {
		k++
	}
	return k
}

// scratch holds the per-request buffers of a verification or signature,
// pooled so a warm path does not allocate.
type scratch struct {
	buf    []byte // canonical request
	qbuf   []byte // encoded query parameters
	params []qparam
	vals   [][]byte
	mac    []byte // string to sign
	order  []int  // signer: header order
	h      hash.Hash
	sum    [sha256.Size]byte
}

// macKey is a signing key with its HMAC-SHA256 pads already absorbed: the
// SHA-256 states after the inner and the outer pad block. Restoring a state
// costs a copy; absorbing a pad costs a block per signature, twice.
type macKey struct {
	key          [32]byte
	inner, outer []byte // marshaled SHA-256 states
}

func newMACKey(key *[32]byte) macKey {
	m := macKey{key: *key}
	var pad [sha256.BlockSize]byte
	h := sha256.New()
	for _, p := range [2]byte{0x36, 0x5c} {
		for i := range pad {
			pad[i] = p
		}
		for i, k := range key {
			pad[i] = k ^ p
		}
		h.Reset()
		h.Write(pad[:])
		state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			panic("sigv4: sha256 state cannot be marshaled: " + err.Error())
		}
		if p == 0x36 {
			m.inner = state
		} else {
			m.outer = state
		}
	}
	return m
}

// hmac returns HMAC-SHA256(k, msg) without allocating.
func (sc *scratch) hmac(k *macKey, msg []byte) [32]byte {
	if sc.h == nil {
		sc.h = sha256.New()
	}
	u := sc.h.(encoding.BinaryUnmarshaler)
	if u.UnmarshalBinary(k.inner) != nil {
		panic("sigv4: bad sha256 state")
	}
	sc.h.Write(msg)
	inner := sc.h.Sum(sc.sum[:0])
	if u.UnmarshalBinary(k.outer) != nil {
		panic("sigv4: bad sha256 state")
	}
	sc.h.Write(inner) // consumed before Sum reuses sc.sum
	sc.h.Sum(sc.sum[:0])
	return sc.sum
}

// signature computes the SigV4 signature of the canonical request in
// sc.buf: HMAC(key, "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" +
// hex(SHA256(canonical request))). The string to sign is left in sc.mac.
func (sc *scratch) signature(key *macKey, amzDate, scope []byte) [32]byte {
	crHash := sha256.Sum256(sc.buf)
	m := append(sc.mac[:0], Algorithm...)
	m = append(m, '\n')
	m = append(m, amzDate...)
	m = append(m, '\n')
	m = append(m, scope...)
	m = append(m, '\n')
	m = hex.AppendEncode(m, crHash[:])
	sc.mac = m
	return sc.hmac(key, m)
}

// charClass holds classToken and classSpace bits per byte.
const charClass = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x02\x00\x00\x02\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x02\x01\x00\x01\x01\x01\x01\x01\x00\x00\x01\x01\x00\x01\x01\x00" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x00\x01\x00" +
	noClass16 + noClass16 + noClass16 + noClass16 + noClass16 + noClass16 + noClass16 + noClass16

// noClass16 is 16 bytes of neither class (every byte >= 0x80 is).
const noClass16 = "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
