package sigv4

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duckicelake/duckicelake/internal/pct"
)

// Header is one header to sign. Name is matched case-insensitively and
// signed lower-case; a name given more than once is signed as one header
// whose values are joined with ',' in the order given.
type Header struct{ Name, Value []byte }

// SignRequest is what Signer.AppendAuthorization signs.
type SignRequest struct {
	Method, RawPath, RawQuery []byte
	// Headers lists every header to sign, including host, x-amz-date (which
	// must be the time passed to AppendAuthorization), x-amz-content-sha256
	// for S3 and x-amz-security-token when the signer has a session token.
	Headers []Header
	// PayloadHash is the hex SHA-256 of the body, UNSIGNED-PAYLOAD or a
	// STREAMING-… literal; nil means the hash of an empty body.
	PayloadHash []byte
}

// Signer signs requests and URLs with one credential. Set the exported
// fields before first use and do not copy it after; it is safe for
// concurrent use.
type Signer struct {
	AccessKeyID, SecretAccessKey, SessionToken, Region, Service string

	// NormalizePath selects the canonical URI rules of non-S3 services;
	// see Verifier.NormalizePath.
	NormalizePath bool

	key  atomic.Pointer[signerKey]
	pool sync.Pool // *scratch
}

type signerKey struct {
	date                    [8]byte
	secret, region, service string
	mac                     macKey
}

// AppendAmzDate appends t in UTC in the x-amz-date format
// ("20060102T150405Z").
func AppendAmzDate(dst []byte, t time.Time) []byte { return appendAmzDate(dst, t) }

func (s *Signer) scratch() *scratch {
	if sc, ok := s.pool.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

func (s *Signer) release(sc *scratch) {
	if cap(sc.buf) > maxPooledBuffer || cap(sc.qbuf) > maxPooledBuffer {
		return
	}
	s.pool.Put(sc)
}

// signingKey returns the key for date (yyyymmdd), derived once per day.
func (s *Signer) signingKey(date []byte) *macKey {
	if k := s.key.Load(); k != nil && string(k.date[:]) == string(date) &&
		k.secret == s.SecretAccessKey && k.region == s.Region && k.service == s.Service {
		return &k.mac
	}
	k := &signerKey{secret: s.SecretAccessKey, region: s.Region, service: s.Service}
	copy(k.date[:], date)
	// Derive from the entry's copy so date (the caller's stack) never escapes.
	var key [32]byte
	DeriveSigningKey(&key, []byte(s.SecretAccessKey), k.date[:], []byte(s.Region), []byte(s.Service))
	k.mac = newMACKey(&key)
	s.key.Store(k)
	return &k.mac
}

// appendScope appends yyyymmdd/region/service/aws4_request.
func (s *Signer) appendScope(dst, amzDate []byte) []byte {
	dst = append(dst, amzDate[:8]...)
	dst = append(dst, '/')
	dst = append(dst, s.Region...)
	dst = append(dst, '/')
	dst = append(dst, s.Service...)
	dst = append(dst, '/')
	return append(dst, scopeTerminator...)
}

// AppendAuthorization appends the Authorization header value for req at t
// and returns it with the signature (the seed of aws-chunked encoding).
// RawPath and RawQuery must be what goes on the wire, validly
// percent-encoded. and RawQuery must be validly percent-encoded.
func (s *Signer) AppendAuthorization(dst []byte, req *SignRequest, t time.Time) ([]byte, [32]byte) {
	sc := s.scratch()
	dst, sig := s.appendAuthorization(dst, req, t, sc)
	s.release(sc)
	return dst, sig
}

// appendAuthorization is AppendAuthorization with caller-provided scratch;
// sc.buf is left holding the canonical request and sc.mac the string to
// sign.
func (s *Signer) appendAuthorization(dst []byte, req *SignRequest, t time.Time, sc *scratch) ([]byte, [32]byte) {
	var dateBuf [16]byte
	amzDate := appendAmzDate(dateBuf[:0], t)
	var scopeBuf [scopeMax]byte
	scope := s.appendScope(scopeBuf[:0], amzDate)

	b := append(sc.buf[:0], req.Method...)
	b = append(b, '\n')
	b, _ = appendCanonicalURI(b, req.RawPath, s.NormalizePath)
	b = append(b, '\n')
	b, _ = appendCanonicalQuery(b, req.RawQuery, false, sc)
	b = append(b, '\n')
	sortHeaders(sc, req.Headers)
	b = appendSignHeaders(b, req.Headers, sc.order)
	b = append(b, '\n')
	signedStart := len(b)
	b = appendSignedNames(b, req.Headers, sc.order)
	signedEnd := len(b)
	b = append(b, '\n')
	if req.PayloadHash == nil {
		b = append(b, emptySHA256Hex...)
	} else {
		b = append(b, req.PayloadHash...)
	}
	sc.buf = b

	sig := sc.signature(s.signingKey(amzDate[:8]), amzDate, scope)

	dst = append(dst, Algorithm+" Credential="...)
	dst = append(dst, s.AccessKeyID...)
	dst = append(dst, '/')
	dst = append(dst, scope...)
	dst = append(dst, ", SignedHeaders="...)
	dst = append(dst, sc.buf[signedStart:signedEnd]...)
	dst = append(dst, ", Signature="...)
	dst = appendLowerHex(dst, sig[:])
	return dst, sig
}

func appendLowerHex(dst, b []byte) []byte {
	const digits = "0123456789abcdef"
	for _, c := range b {
		dst = append(dst, digits[c>>4], digits[c&15])
	}
	return dst
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func compareFold(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := lower(a[i]), lower(b[i])
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

// sortHeaders leaves in sc.order the indexes of hs sorted by name, stable
// so repeated headers keep their order.
func sortHeaders(sc *scratch, hs []Header) {
	o := sc.order[:0]
	for i := range hs {
		o = append(o, i)
	}
	for i := 1; i < len(o); i++ {
		for j := i; j > 0 && compareFold(hs[o[j-1]].Name, hs[o[j]].Name) > 0; j-- {
			o[j-1], o[j] = o[j], o[j-1]
		}
	}
	sc.order = o
}

func appendLowerName(dst, name []byte) []byte {
	for _, c := range name {
		dst = append(dst, lower(c))
	}
	return dst
}

func appendSignHeaders(b []byte, hs []Header, order []int) []byte {
	for i, idx := range order {
		h := hs[idx]
		if i > 0 && compareFold(hs[order[i-1]].Name, h.Name) == 0 {
			b = append(b, ',')
		} else {
			if i > 0 {
				b = append(b, '\n')
			}
			b = appendLowerName(b, h.Name)
			b = append(b, ':')
		}
		b = appendCanonicalValue(b, h.Value)
	}
	if len(order) > 0 {
		b = append(b, '\n')
	}
	return b
}

func appendSignedNames(b []byte, hs []Header, order []int) []byte {
	for i, idx := range order {
		if i > 0 {
			if compareFold(hs[order[i-1]].Name, hs[idx].Name) == 0 {
				continue
			}
			b = append(b, ';')
		}
		b = appendLowerName(b, hs[idx].Name)
	}
	return b
}

// Presign returns rawURL with query authentication valid for expires (1 s
// to 7 days, whole seconds) from t. The path and query are signed as
// written in rawURL, which must be in the form the client will send. The
// host header is signed from the URL unless signedHeaders carries one;
// signedHeaders are the other headers the request will send and sign. The
// payload is UNSIGNED-PAYLOAD for s3 and the empty-body hash for other
// services.
func (s *Signer) Presign(method, rawURL string, signedHeaders []Header, expires time.Duration, t time.Time) (string, error) {
	payload := emptySHA256Hex
	if s.Service == "s3" {
		payload = UnsignedPayload
	}
	sc := s.scratch()
	out, err := s.presign(method, rawURL, signedHeaders, expires, t, payload, sc)
	s.release(sc)
	return out, err
}

// splitURL returns the scheme and authority, the path as written and the
// query of a URL, dropping any fragment.
func splitURL(raw string) (prefix, path, query string) {
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		raw = raw[:i]
	}
	raw, query, _ = strings.Cut(raw, "?")
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	if i := strings.IndexByte(raw[start:], '/'); i >= 0 {
		return raw[:start+i], raw[start+i:], query
	}
	return raw, "", query
}

func (s *Signer) presign(method, rawURL string, signedHeaders []Header, expires time.Duration, t time.Time, payload string, sc *scratch) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("sigv4: presign: %w", err)
	}
	if u.Host == "" {
		return "", errors.New("sigv4: presign: URL has no host")
	}
	secs := int64(expires / time.Second)
	if secs < 1 || secs > maxPresignSecs {
		return "", errors.New("sigv4: presign: expiry must be between 1 second and 7 days")
	}
	prefix, path, query := splitURL(rawURL)
	if presignKind([]byte(query)) != 0 {
		return "", errors.New("sigv4: presign: URL is already signed")
	}
	hs := make([]Header, 0, len(signedHeaders)+1)
	hasHost := false
	for _, h := range signedHeaders {
		if compareFold(h.Name, []byte("host")) == 0 {
			hasHost = true
		}
		hs = append(hs, h)
	}
	if !hasHost {
		hs = append(hs, Header{Name: []byte("host"), Value: []byte(u.Host)})
	}
	sortHeaders(sc, hs)
	amzDate := appendAmzDate(nil, t)
	scope := s.appendScope(nil, amzDate)

	q := []byte(query)
	if len(q) > 0 {
		q = append(q, '&')
	}
	q = append(q, "X-Amz-Algorithm="+Algorithm+"&X-Amz-Credential="...)
	q = pct.AppendEncode(q, []byte(s.AccessKeyID), false)
	q = append(q, "%2F"...)
	q = pct.AppendEncode(q, scope, false)
	q = append(q, "&X-Amz-Date="...)
	q = append(q, amzDate...)
	q = append(q, "&X-Amz-Expires="...)
	q = strconv.AppendInt(q, secs, 10)
	q = append(q, "&X-Amz-SignedHeaders="...)
	q = pct.AppendEncode(q, appendSignedNames(nil, hs, sc.order), false)
	if s.SessionToken != "" {
		q = append(q, "&X-Amz-Security-Token="...)
		q = pct.AppendEncode(q, []byte(s.SessionToken), false)
	}

	b := append(sc.buf[:0], method...)
	b = append(b, '\n')
	var ok bool
	if b, ok = appendCanonicalURI(b, []byte(path), s.NormalizePath); !ok {
		return "", errors.New("sigv4: presign: malformed percent-encoding in path")
	}
	b = append(b, '\n')
	if b, ok = appendCanonicalQuery(b, q, false, sc); !ok {
		return "", errors.New("sigv4: presign: malformed percent-encoding in query")
	}
	b = append(b, '\n')
	b = appendSignHeaders(b, hs, sc.order)
	b = append(b, '\n')
	b = appendSignedNames(b, hs, sc.order)
	b = append(b, '\n')
	b = append(b, payload...)
	sc.buf = b

	sig := sc.signature(s.signingKey(amzDate[:8]), amzDate, scope)
	q = append(q, "&X-Amz-Signature="...)
	q = appendLowerHex(q, sig[:])
	return prefix + path + "?" + string(q), nil
}
