package sigv4

import (
	"crypto/hmac"
	"net/http"
	"sync"
	"time"
)

// CredentialStore resolves the secret of an access key.
type CredentialStore interface {
	// Secret returns the secret access key of accessKeyID after checking the
	// session token that came with it (empty when the request has none).
	// Return *Error (ErrInvalidAccessKeyID, ErrInvalidToken, ErrExpiredToken,
	// ErrAccessDenied); other errors deny as AccessDenied. The arguments
	// alias request memory: copy them to keep them.
	Secret(accessKeyID, sessionToken []byte) ([]byte, error)
}

// PayloadMode is how the body is protected, from x-amz-content-sha256.
type PayloadMode uint8

const (
	// PayloadUnsigned is UNSIGNED-PAYLOAD: the body is not covered.
	PayloadUnsigned PayloadMode = iota
	// PayloadSHA256 is a hex SHA-256 of the whole body (Result.PayloadHash).
	PayloadSHA256
	// PayloadStreamingSigned is STREAMING-AWS4-HMAC-SHA256-PAYLOAD.
	PayloadStreamingSigned
	// PayloadStreamingSignedTrailer is STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER.
	PayloadStreamingSignedTrailer
	// PayloadStreamingUnsignedTrailer is STREAMING-UNSIGNED-PAYLOAD-TRAILER.
	PayloadStreamingUnsignedTrailer
)

// Streaming reports whether the body is aws-chunked encoded.
func (m PayloadMode) Streaming() bool { return m >= PayloadStreamingSigned }

// scopeMax bounds the credential scope kept in a Result; a scope is
// yyyymmdd/region/service/aws4_request with the Verifier's region and
// service, far below it.
const scopeMax = 128

// Result is what a successful verification established. It is caller-owned
// and reusable: Verify overwrites it completely.
type Result struct {
	// AccessKeyID and SessionToken alias the request's bytes (header auth)
	// or the Result's own buffer (presigned, decoded from the query).
	AccessKeyID, SessionToken []byte
	Presigned                 bool
	Time                      time.Time // x-amz-date / X-Amz-Date
	Mode                      PayloadMode
	PayloadHash               [32]byte // Mode == PayloadSHA256
	Signature                 [32]byte // request (seed) signature
	SigningKey                [32]byte
	DecodedContentLength      int64 // x-amz-decoded-content-length, -1 if absent

	amzDate  [16]byte
	scope    [scopeMax]byte
	scopeLen uint8
	trailer  []byte
	buf      []byte // presigned: decoded credential, signed headers, token
}

// AmzDate returns the request time as signed ("20130524T000000Z").
func (res *Result) AmzDate() []byte { return res.amzDate[:] }

// Scope returns the credential scope ("20130524/us-east-1/s3/aws4_request").
func (res *Result) Scope() []byte { return res.scope[:res.scopeLen] }

// Trailer returns the x-amz-trailer header value (e.g.
// "x-amz-checksum-crc32c"), empty if none; it aliases the request.
func (res *Result) Trailer() []byte { return res.trailer }

// Verifier verifies SigV4 header and presigned authentication the way S3
// does. Set the exported fields before first use and do not copy it after;
// it is safe for concurrent use.
type Verifier struct {
	Region, Service  string           // expected scope ("us-east-1", "s3")
	MaxSkew          time.Duration    // 0 = 15 min
	MaxPresignExpiry time.Duration    // 0 = 7 days
	Now              func() time.Time // nil = time.Now

	// NormalizePath selects the canonical URI rules of non-S3 services
	// (dot segments removed, slashes merged, path encoded again). S3 leaves
	// it off: it signs the path as sent.
	NormalizePath bool

	keys keyCache
	pool sync.Pool // *scratch
}

// NewVerifier returns a Verifier for region and service with the default
// limits.
func NewVerifier(region, service string) *Verifier {
	return &Verifier{Region: region, Service: service}
}

const (
	defaultSkew    = 15 * time.Minute
	maxPresignSecs = 7 * 24 * 3600
)

// Header names sigv4 reads; never modified.
var (
	hAuthorization      = []byte("authorization")
	hAmzDate            = []byte("x-amz-date")
	hDate               = []byte("date")
	hContentSHA256      = []byte("x-amz-content-sha256")
	hSecurityToken      = []byte("x-amz-security-token")
	hDecodedLength      = []byte("x-amz-decoded-content-length")
	hTrailer            = []byte("x-amz-trailer")
	unsignedPayloadLit  = []byte(UnsignedPayload)
	emptyPayloadHashLit = []byte(emptySHA256Hex)
)

func (v *Verifier) scratch() *scratch {
	if sc, ok := v.pool.Get().(*scratch); ok {
		return sc
	}
	return &scratch{vals: make([][]byte, 0, 8)}
}

// maxPooledBuffer keeps one huge request from pinning its buffers.
const maxPooledBuffer = 64 << 10

func (v *Verifier) release(sc *scratch) {
	if cap(sc.buf) > maxPooledBuffer || cap(sc.qbuf) > maxPooledBuffer || cap(sc.params) > 4096 {
		return
	}
	clear(sc.vals[:cap(sc.vals)]) // drop references to request memory
	sc.vals = sc.vals[:0]
	v.pool.Put(sc)
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) maxSkew() time.Duration {
	if v.MaxSkew > 0 {
		return v.MaxSkew
	}
	return defaultSkew
}

// Verify checks the request's header or presigned authentication and fills
// res on success. Every failure is an *Error whose code is what S3 answers.
//
// Header auth needs x-amz-date (or Date), for s3 a signed
// x-amz-content-sha256, and a signed x-amz-security-token when one is sent;
// presigned auth takes the payload as UNSIGNED-PAYLOAD unless the client
// sent X-Amz-Content-Sha256. res aliases r's memory (AccessKeyID,
// SessionToken, Trailer) and stays valid as long as r's buffers do.
func (v *Verifier) Verify(r *Request, store CredentialStore, res *Result) error {
	sc := v.scratch()
	err := v.verify(r, store, res, sc)
	v.release(sc)
	return err
}

// verify is Verify with caller-provided scratch; on success sc.buf holds the
// canonical request and sc.mac the string to sign.
func (v *Verifier) verify(r *Request, store CredentialStore, res *Result, sc *scratch) error {
	*res = Result{buf: res.buf[:0], DecodedContentLength: -1}
	sc.vals = r.Header.AppendValues(sc.vals[:0], hAuthorization)
	nAuth := len(sc.vals)
	var auth []byte
	if nAuth > 0 {
		auth = sc.vals[0]
	}
	kind := presignKind(r.RawQuery)
	switch {
	case nAuth > 1:
		return errManyAuthHeaders
	case nAuth == 1 && kind == 1:
		return errTwoMechanisms
	case nAuth == 1:
		return v.verifyHeader(r, auth, store, res, sc)
	case kind == 1:
		return v.verifyPresigned(r, store, res, sc)
	case kind == 2:
		return errSigV2
	}
	return errAnonymous
}

func (v *Verifier) verifyHeader(r *Request, auth []byte, store CredentialStore, res *Result, sc *scratch) error {
	var a authHeader
	if err := parseAuthorization(auth, &a); err != nil {
		return err
	}
	if err := v.requestDate(r, res, sc); err != nil {
		return err
	}
	if string(a.cred.date) != string(res.amzDate[:8]) {
		return errCredentialDate
	}
	if string(a.cred.region) != v.Region {
		return headerMalformed("the region '" + componentName(a.cred.region) + "' is wrong; expecting '" + v.Region + "'")
	}
	if string(a.cred.service) != v.Service {
		return headerMalformed("incorrect service '" + componentName(a.cred.service) + "'. This endpoint belongs to '" + v.Service + "'.")
	}
	if d := v.now().Sub(res.Time); d > v.maxSkew() || d < -v.maxSkew() {
		return errSkewed
	}
	if len(a.cred.scope) > scopeMax {
		return errBadCredential
	}
	res.scopeLen = uint8(copy(res.scope[:], a.cred.scope))
	res.AccessKeyID = a.cred.accessKeyID
	res.Signature = a.signature

	payload, err := v.headerPayload(r, &a, res, sc)
	if err != nil {
		return err
	}
	if err := sessionTokenHeader(r, a.signedHeaders, res, sc); err != nil {
		return err
	}
	return v.check(r, store, res, sc, a.signedHeaders, payload, false)
}

// requestDate reads x-amz-date, or the Date header as S3 falls back to,
// into res.Time and res.amzDate.
func (v *Verifier) requestDate(r *Request, res *Result, sc *scratch) error {
	sc.vals = r.Header.AppendValues(sc.vals[:0], hAmzDate)
	if len(sc.vals) > 1 {
		return errNoDate
	}
	if len(sc.vals) == 1 {
		t, ok := parseAmzDate(sc.vals[0])
		if !ok {
			return errNoDate
		}
		res.Time = t
		copy(res.amzDate[:], sc.vals[0])
		return nil
	}
	sc.vals = r.Header.AppendValues(sc.vals[:0], hDate)
	if len(sc.vals) != 1 {
		return errNoDate
	}
	t, err := http.ParseTime(string(trimSpace(sc.vals[0])))
	if err != nil {
		return errNoDate
	}
	res.Time = t.UTC()
	appendAmzDate(res.amzDate[:0], res.Time)
	return nil
}

// headerPayload decides the payload mode of a header-authenticated request
// and returns the payload hash line of its canonical request.
func (v *Verifier) headerPayload(r *Request, a *authHeader, res *Result, sc *scratch) ([]byte, error) {
	sc.vals = r.Header.AppendValues(sc.vals[:0], hContentSHA256)
	if len(sc.vals) > 1 {
		return nil, errContentSHA256
	}
	if len(sc.vals) == 0 {
		if v.Service == "s3" {
			return nil, errMissingContentSHA256
		}
		return v.implicitPayload(r, res)
	}
	value := sc.vals[0]
	if v.Service == "s3" && !signedHeadersContain(a.signedHeaders, "x-amz-content-sha256") {
		return nil, errContentSHA256NotSigned
	}
	if err := parsePayloadMode(value, res); err != nil {
		return nil, err
	}
	if res.Mode.Streaming() {
		if err := decodedLength(r, res, sc); err != nil {
			return nil, err
		}
		if res.Mode != PayloadStreamingSigned {
			sc.vals = r.Header.AppendValues(sc.vals[:0], hTrailer)
			if len(sc.vals) > 1 {
				return nil, errTrailer
			}
			if len(sc.vals) == 1 {
				res.trailer = trimSpace(sc.vals[0])
			}
		}
	}
	return value, nil
}

// implicitPayload is the payload hash of a non-S3 request without
// x-amz-content-sha256: the caller-supplied body hash or the empty hash.
func (v *Verifier) implicitPayload(r *Request, res *Result) ([]byte, error) {
	res.Mode = PayloadSHA256
	h := r.PayloadHash
	if h == nil {
		h = emptyPayloadHashLit
	}
	if !decodeHexSHA256(&res.PayloadHash, h) {
		return nil, errContentSHA256
	}
	return h, nil
}

var (
	errMissingContentSHA256 = &Error{ErrInvalidRequest,
		"Missing required header for this request: x-amz-content-sha256"}
	errContentSHA256 = &Error{ErrInvalidArgument,
		"x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER or a valid sha256 value."}
	errContentSHA256NotSigned = &Error{ErrAccessDenied,
		"There were headers present in the request which were not signed: x-amz-content-sha256"}
	errTokenNotSigned = &Error{ErrAccessDenied,
		"There were headers present in the request which were not signed: x-amz-security-token"}
	errManyTokens = &Error{ErrInvalidArgument,
		"The security token must be sent once"}
	errStreamingECDSA = &Error{ErrNotImplemented,
		"SigV4a streaming payloads (STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD) are not implemented"}
	errMissingDecodedLength = &Error{ErrMissingContentLength,
		"x-amz-decoded-content-length is required for STREAMING payloads"}
	errDecodedLength = &Error{ErrInvalidArgument,
		"x-amz-decoded-content-length must be a non-negative integer"}
	errTrailer = &Error{ErrInvalidArgument,
		"x-amz-trailer must be sent once"}
	errPresignStreaming = &Error{ErrInvalidRequest,
		"Presigned requests cannot use a STREAMING payload"}
)

// parsePayloadMode parses an x-amz-content-sha256 value into res.
func parsePayloadMode(v []byte, res *Result) *Error {
	switch string(v) {
	case UnsignedPayload:
		res.Mode = PayloadUnsigned
	case StreamingPayload:
		res.Mode = PayloadStreamingSigned
	case StreamingPayloadTrailer:
		res.Mode = PayloadStreamingSignedTrailer
	case StreamingUnsignedTrailer:
		res.Mode = PayloadStreamingUnsignedTrailer
	case StreamingECDSAPayload, StreamingECDSAPayloadTrailer:
		return errStreamingECDSA
	default:
		if !decodeHexSHA256(&res.PayloadHash, v) {
			return errContentSHA256
		}
		res.Mode = PayloadSHA256
	}
	return nil
}

func decodedLength(r *Request, res *Result, sc *scratch) *Error {
	sc.vals = r.Header.AppendValues(sc.vals[:0], hDecodedLength)
	if len(sc.vals) == 0 {
		return errMissingDecodedLength
	}
	if len(sc.vals) > 1 {
		return errDecodedLength
	}
	v := trimSpace(sc.vals[0])
	if len(v) == 0 || len(v) > 18 { // < 10^18 fits int64
		return errDecodedLength
	}
	n, ok := digits(v)
	if !ok {
		return errDecodedLength
	}
	res.DecodedContentLength = int64(n)
	return nil
}

// sessionTokenHeader takes x-amz-security-token, which must be signed: an
// unsigned token could be swapped by anyone on the path.
func sessionTokenHeader(r *Request, signed []byte, res *Result, sc *scratch) error {
	sc.vals = r.Header.AppendValues(sc.vals[:0], hSecurityToken)
	switch len(sc.vals) {
	case 0:
		return nil
	case 1:
		if !signedHeadersContain(signed, "x-amz-security-token") {
			return errTokenNotSigned
		}
		res.SessionToken = sc.vals[0]
		return nil
	}
	return errManyTokens
}

// check resolves the secret, derives the signing key and compares the
// signature of the canonical request with the one sent.
func (v *Verifier) check(r *Request, store CredentialStore, res *Result, sc *scratch, signed, payload []byte, presigned bool) error {
	secret, err := store.Secret(res.AccessKeyID, res.SessionToken)
	if err != nil {
		if e, ok := err.(*Error); ok {
			return e
		}
		return &Error{ErrAccessDenied, "Access Denied"}
	}
	scope := res.scope[:res.scopeLen]
	key := v.keys.get(secret, scope[:8], v.Region, v.Service)
	res.SigningKey = key.mac.key

	b := append(sc.buf[:0], r.Method...)
	b = append(b, '\n')
	var ok bool
	if b, ok = appendCanonicalURI(b, r.RawPath, v.NormalizePath); !ok {
		sc.buf = b
		return errBadPath
	}
	b = append(b, '\n')
	if b, ok = appendCanonicalQuery(b, r.RawQuery, presigned, sc); !ok {
		sc.buf = b
		return errBadQuery
	}
	b = append(b, '\n')
	b = appendCanonicalHeaders(b, r.Header, signed, sc)
	b = append(b, '\n')
	b = append(b, signed...)
	b = append(b, '\n')
	b = append(b, payload...)
	sc.buf = b

	sig := sc.signature(&key.mac, res.amzDate[:], scope)
	if !hmac.Equal(sig[:], res.Signature[:]) {
		return errSignature
	}
	return nil
}

// appendCanonicalHeaders appends "name:value\n" for each signed header;
// repeated headers are joined with ',' in the order received.
func appendCanonicalHeaders(b []byte, h HeaderReader, signed []byte, sc *scratch) []byte {
	for rest := signed; len(rest) > 0; {
		name := rest
		if i := indexByte(rest, ';'); i >= 0 {
			name, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		b = append(b, name...)
		b = append(b, ':')
		sc.vals = h.AppendValues(sc.vals[:0], name)
		for i, val := range sc.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalValue(b, val)
		}
		b = append(b, '\n')
	}
	return b
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func (v *Verifier) verifyPresigned(r *Request, store CredentialStore, res *Result, sc *scratch) error {
	var p presignParams
	if err := parsePresign(r.RawQuery, &p); err != nil {
		return err
	}
	res.Presigned = true
	// Decode everything into res.buf sized up front, so the slices taken
	// below stay valid.
	if cap(res.buf) < len(r.RawQuery) {
		res.buf = make([]byte, 0, len(r.RawQuery))
	}
	b := res.buf[:0]
	var ok bool

	start := len(b)
	if b, ok = appendQueryDecoded(b, p.date); !ok {
		return errQueryEncoding
	}
	date := b[start:]
	t, ok := parseAmzDate(date)
	if !ok {
		return errQueryDate
	}
	res.Time = t
	copy(res.amzDate[:], date)

	start = len(b)
	if b, ok = appendQueryDecoded(b, p.credential); !ok {
		return errQueryEncoding
	}
	var cred credential
	if !parseCredential(b[start:], &cred) {
		return errQueryCredential
	}
	if string(cred.terminal) != scopeTerminator {
		return queryError("Error parsing the X-Amz-Credential parameter; incorrect terminal '" + componentName(cred.terminal) + "'. This endpoint uses '" + scopeTerminator + "'.")
	}
	if string(cred.date) != string(res.amzDate[:8]) {
		return errQueryCredentialDate
	}
	if string(cred.region) != v.Region {
		return queryError("Error parsing the X-Amz-Credential parameter; the region '" + componentName(cred.region) + "' is wrong; expecting '" + v.Region + "'")
	}
	if string(cred.service) != v.Service {
		return queryError("Error parsing the X-Amz-Credential parameter; incorrect service '" + componentName(cred.service) + "'. This endpoint belongs to '" + v.Service + "'.")
	}
	if len(cred.scope) > scopeMax {
		return errQueryCredential
	}
	res.scopeLen = uint8(copy(res.scope[:], cred.scope))
	res.AccessKeyID = cred.accessKeyID

	expires, ok := digits(p.expires)
	switch {
	case len(p.expires) > 1 && p.expires[0] == '-':
		if _, num := digits(p.expires[1:]); num {
			return errQueryExpiresRange
		}
		return errQueryExpiresNumber
	case !ok || len(p.expires) == 0:
		return errQueryExpiresNumber
	case len(p.expires) > 9:
		return errQueryExpiresRange
	}
	limit := maxPresignSecs
	if v.MaxPresignExpiry > 0 {
		limit = int(v.MaxPresignExpiry / time.Second)
	}
	if expires < 1 || expires > limit {
		return errQueryExpiresRange
	}

	start = len(b)
	if b, ok = appendQueryDecoded(b, p.signedHeaders); !ok {
		return errQueryEncoding
	}
	signed := b[start:]
	if !validSignedHeaders(signed) {
		return errQuerySignedHeaders
	}
	if !decodeSignature(&res.Signature, p.signature) {
		return errQuerySignature
	}

	now := v.now()
	if res.Time.Sub(now) > v.maxSkew() {
		return errSkewed
	}
	if now.Sub(res.Time) > time.Duration(expires)*time.Second {
		return errExpired
	}

	if p.hasToken {
		sc.vals = r.Header.AppendValues(sc.vals[:0], hSecurityToken)
		if len(sc.vals) > 0 {
			return errManyTokens
		}
		start = len(b)
		if b, ok = appendQueryDecoded(b, p.token); !ok {
			return errQueryEncoding
		}
		res.SessionToken = b[start:]
	} else if err := sessionTokenHeader(r, signed, res, sc); err != nil {
		return err
	}

	payload, b, err := v.presignPayload(r, &p, res, sc, b)
	if err != nil {
		return err
	}
	res.buf = b
	return v.check(r, store, res, sc, signed, payload, true)
}

func queryError(msg string) *Error { return &Error{ErrAuthorizationQueryParametersError, msg} }

// presignPayload returns the payload hash of a presigned request: an
// X-Amz-Content-Sha256 query parameter or header if the client sent one,
// else UNSIGNED-PAYLOAD for S3 and the body hash for other services.
func (v *Verifier) presignPayload(r *Request, p *presignParams, res *Result, sc *scratch, b []byte) ([]byte, []byte, error) {
	var value []byte
	switch {
	case p.hasContentSHA256:
		start := len(b)
		var ok bool
		if b, ok = appendQueryDecoded(b, p.contentSHA256); !ok {
			return nil, b, errQueryEncoding
		}
		value = b[start:]
	default:
		sc.vals = r.Header.AppendValues(sc.vals[:0], hContentSHA256)
		if len(sc.vals) > 1 {
			return nil, b, errContentSHA256
		}
		if len(sc.vals) == 1 {
			value = sc.vals[0]
		}
	}
	if value == nil {
		if v.Service == "s3" {
			res.Mode = PayloadUnsigned
			return unsignedPayloadLit, b, nil
		}
		h, err := v.implicitPayload(r, res)
		return h, b, err
	}
	if err := parsePayloadMode(value, res); err != nil {
		return nil, b, err
	}
	if res.Mode.Streaming() {
		return nil, b, errPresignStreaming
	}
	return value, b, nil
}
