package sigv4

import (
	"bytes"
	"time"

	"github.com/duckicelake/duckicelake/internal/pct"
)

// credential is a parsed "AKID/yyyymmdd/region/service/aws4_request"; every
// slice aliases the input.
type credential struct {
	accessKeyID []byte
	date        []byte // yyyymmdd
	region      []byte
	service     []byte
	terminal    []byte
	scope       []byte // date/region/service/terminal
}

// authHeader is a parsed Authorization header; slices alias the header.
type authHeader struct {
	cred          credential
	signedHeaders []byte // validated: sorted, unique, lower-case, includes host
	signature     [32]byte
}

// Errors whose message never varies.
var (
	errAnonymous = &Error{ErrAccessDenied,
		"Anonymous access is not supported; sign the request with AWS4-HMAC-SHA256"}
	errSigV2 = &Error{ErrInvalidRequest,
		"The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256."}
	errSigV4a = &Error{ErrNotImplemented,
		"SigV4a (AWS4-ECDSA-P256-SHA256) is not implemented; sign with AWS4-HMAC-SHA256"}
	errUnsupportedAuth = &Error{ErrInvalidArgument, "Unsupported Authorization Type"}
	errTwoMechanisms   = &Error{ErrInvalidArgument,
		"Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified"}
	errManyAuthHeaders = &Error{ErrAuthorizationHeaderMalformed,
		"The authorization header is malformed; more than one Authorization header was sent"}
	errMissingComponents = &Error{ErrAuthorizationHeaderMalformed,
		"The authorization header is malformed; the authorization header requires three components: Credential, SignedHeaders, and Signature."}
	errBadCredential = &Error{ErrAuthorizationHeaderMalformed,
		`The authorization header is malformed; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`}
	errBadSignedHeaders = &Error{ErrAuthorizationHeaderMalformed,
		"The authorization header is malformed; SignedHeaders must be a ';'-separated, sorted list of unique lower-case header names that includes host"}
	errBadSignature = &Error{ErrAuthorizationHeaderMalformed,
		"The authorization header is malformed; Signature must be 64 lower-case hex digits"}
	errCredentialDate = &Error{ErrAuthorizationHeaderMalformed,
		"The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date."}
	errNoDate = &Error{ErrAccessDenied,
		"AWS authentication requires a valid Date or x-amz-date header"}
	errSkewed = &Error{ErrRequestTimeTooSkewed,
		"The difference between the request time and the current time is too large."}
	errSignature = &Error{ErrSignatureDoesNotMatch,
		"The request signature we calculated does not match the signature you provided. Check your key and signing method."}
	errBadPath  = &Error{ErrInvalidRequest, "The request path has a malformed percent-encoding"}
	errBadQuery = &Error{ErrInvalidRequest, "The query string has a malformed percent-encoding or is too long"}

	errQueryMissing = &Error{ErrAuthorizationQueryParametersError,
		"Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."}
	errQueryDuplicate = &Error{ErrAuthorizationQueryParametersError,
		"Query-string authentication parameters must each appear once"}
	errQueryAlgorithm = &Error{ErrAuthorizationQueryParametersError,
		`X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"`}
	errQueryCredential = &Error{ErrAuthorizationQueryParametersError,
		`Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`}
	errQueryDate = &Error{ErrAuthorizationQueryParametersError,
		`X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'"`}
	errQueryCredentialDate = &Error{ErrAuthorizationQueryParametersError,
		"Invalid credential date. Date is not the same as X-Amz-Date."}
	errQueryExpiresNumber = &Error{ErrAuthorizationQueryParametersError,
		"X-Amz-Expires should be a number"}
	errQueryExpiresRange = &Error{ErrAuthorizationQueryParametersError,
		"X-Amz-Expires must be between 1 and 604800 seconds (one week)"}
	errQuerySignedHeaders = &Error{ErrAuthorizationQueryParametersError,
		"X-Amz-SignedHeaders must be a ';'-separated, sorted list of unique lower-case header names that includes host"}
	errQuerySignature = &Error{ErrAuthorizationQueryParametersError,
		"X-Amz-Signature must be 64 lower-case hex digits"}
	errQueryEncoding = &Error{ErrAuthorizationQueryParametersError,
		"Query-string authentication parameters have a malformed percent-encoding"}
	errExpired = &Error{ErrAccessDenied, "Request has expired"}
)

func isHeaderSpace(c byte) bool { return c == ' ' || c == '\t' }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isHeaderSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isHeaderSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// authScheme classifies an Authorization header value by its scheme and
// returns the rest after the scheme and its separating whitespace. Only
// AWS4-HMAC-SHA256 comes back without an error.
func authScheme(v []byte) ([]byte, *Error) {
	v = trimSpace(v)
	scheme, rest := v, []byte(nil)
	if i := bytes.IndexAny(v, " \t"); i >= 0 {
		scheme, rest = v[:i], trimSpace(v[i:])
	}
	switch string(scheme) {
	case Algorithm:
		return rest, nil
	case AlgorithmECDSA:
		return nil, errSigV4a
	case "AWS":
		return nil, errSigV2
	}
	return nil, errUnsupportedAuth
}

// parseAuthorization parses an AWS4-HMAC-SHA256 Authorization header. The
// three components may come in any order, separated by ',' with optional
// whitespace on either side (", " is what the SDKs send, "," what some
// hand-rolled clients send); each must appear exactly once.
func parseAuthorization(v []byte, a *authHeader) *Error {
	rest, err := authScheme(v)
	if err != nil {
		return err
	}
	var cred, signed, sig []byte
	var seen uint8
	for len(rest) > 0 {
		var comp []byte
		if i := bytes.IndexByte(rest, ','); i >= 0 {
			comp, rest = trimSpace(rest[:i]), rest[i+1:]
			if len(trimSpace(rest)) == 0 {
				return errMissingComponents // trailing ','
			}
		} else {
			comp, rest = trimSpace(rest), nil
		}
		key, val, ok := bytes.Cut(comp, []byte{'='})
		if !ok {
			return headerMalformed(`the authorization component "` + componentName(comp) + `" is malformed.`)
		}
		var bit uint8
		switch string(key) {
		case "Credential":
			bit, cred = 1, val
		case "SignedHeaders":
			bit, signed = 2, val
		case "Signature":
			bit, sig = 4, val
		default:
			return headerMalformed(`the authorization component "` + componentName(key) + `" is malformed.`)
		}
		if seen&bit != 0 {
			return headerMalformed(`the authorization component "` + string(key) + `" appears more than once.`)
		}
		seen |= bit
	}
	if seen != 7 {
		return errMissingComponents
	}
	if !parseCredential(cred, &a.cred) {
		return errBadCredential
	}
	if string(a.cred.terminal) != scopeTerminator {
		return headerMalformed("incorrect terminal '" + componentName(a.cred.terminal) + "'. This endpoint uses '" + scopeTerminator + "'.")
	}
	if !validSignedHeaders(signed) {
		return errBadSignedHeaders
	}
	a.signedHeaders = signed
	if !decodeSignature(&a.signature, sig) {
		return errBadSignature
	}
	return nil
}

// componentName quotes at most a short, printable prefix of a component in
// an error message, so a misplaced signature is never echoed back whole.
func componentName(b []byte) string {
	const max = 24
	out := make([]byte, 0, max+3)
	for i, c := range b {
		if i == max {
			return string(append(out, "..."...))
		}
		if c < 0x20 || c > 0x7e || c == '"' {
			c = '?'
		}
		out = append(out, c)
	}
	return string(out)
}

func headerMalformed(msg string) *Error {
	return &Error{ErrAuthorizationHeaderMalformed, "The authorization header is malformed; " + msg}
}

// parseCredential splits "AKID/yyyymmdd/region/service/terminal". It checks
// the shape only (five non-empty parts, an 8-digit date); the caller checks
// the values against its own scope.
func parseCredential(v []byte, c *credential) bool {
	var parts [5][]byte
	rest := v
	for i := range 4 {
		j := bytes.IndexByte(rest, '/')
		if j < 0 {
			return false
		}
		parts[i], rest = rest[:j], rest[j+1:]
	}
	if bytes.IndexByte(rest, '/') >= 0 {
		return false
	}
	parts[4] = rest
	for _, p := range parts {
		if len(p) == 0 {
			return false
		}
	}
	if len(parts[1]) != 8 {
		return false
	}
	for _, d := range parts[1] {
		if d < '0' || d > '9' {
			return false
		}
	}
	*c = credential{
		accessKeyID: parts[0],
		date:        parts[1],
		region:      parts[2],
		service:     parts[3],
		terminal:    parts[4],
		scope:       v[len(parts[0])+1:],
	}
	return true
}

// isTokenChar reports whether c may appear in a lower-case header name
// (RFC 9110 tchar without upper-case letters).
func isTokenChar(c byte) bool { return charClass[c]&classToken != 0 }

// validSignedHeaders checks a SignedHeaders list: non-empty lower-case
// names, strictly ascending (sorted, no duplicates), host among them.
func validSignedHeaders(v []byte) bool {
	var prev []byte
	host := false
	for rest := v; ; {
		name := rest
		i := bytes.IndexByte(rest, ';')
		if i >= 0 {
			name, rest = rest[:i], rest[i+1:]
		}
		if len(name) == 0 {
			return false
		}
		for _, c := range name {
			if !isTokenChar(c) {
				return false
			}
		}
		if prev != nil && bytes.Compare(prev, name) >= 0 {
			return false
		}
		if string(name) == "host" {
			host = true
		}
		prev = name
		if i < 0 {
			break
		}
	}
	return host
}

// signedHeadersContain reports whether a validated SignedHeaders list names
// header name.
func signedHeadersContain(list []byte, name string) bool {
	for rest := list; len(rest) > 0; {
		var n []byte
		n, rest, _ = bytes.Cut(rest, []byte{';'})
		if string(n) == name {
			return true
		}
	}
	return false
}

// decodeSignature decodes 64 lower-case hex digits.
func decodeSignature(dst *[32]byte, v []byte) bool { return decodeHex32(dst, v, true) }

// decodeHexSHA256 decodes a 64-digit hex SHA-256 in either case.
func decodeHexSHA256(dst *[32]byte, v []byte) bool { return decodeHex32(dst, v, false) }

// decodeHex32 decodes 64 hex digits, lower-case only if lower.
func decodeHex32(dst *[32]byte, v []byte, lower bool) bool {
	if len(v) != 64 {
		return false
	}
	for i := range 32 {
		hi, ok1 := unhexDigit(v[2*i], lower)
		lo, ok2 := unhexDigit(v[2*i+1], lower)
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func unhexDigit(c byte, lower bool) (byte, bool) {
	if lower {
		return pct.UnhexLower(c)
	}
	return pct.Unhex(c)
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// parseAmzDate parses the ISO 8601 basic format "20060102T150405Z",
// rejecting values time.Date would silently normalise (month 13, Feb 30).
func parseAmzDate(v []byte) (time.Time, bool) {
	if len(v) != 16 || v[8] != 'T' || v[15] != 'Z' {
		return time.Time{}, false
	}
	y, ok1 := digits(v[0:4])
	mo, ok2 := digits(v[4:6])
	d, ok3 := digits(v[6:8])
	h, ok4 := digits(v[9:11])
	mi, ok5 := digits(v[11:13])
	s, ok6 := digits(v[13:15])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC)
	if t.Day() != d {
		return time.Time{}, false
	}
	return t, true
}

// appendAmzDate appends t in UTC as "20060102T150405Z".
func appendAmzDate(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	dst = append4(dst, y)
	dst = append2(dst, int(mo))
	dst = append2(dst, d)
	dst = append(dst, 'T')
	dst = append2(dst, h)
	dst = append2(dst, mi)
	dst = append2(dst, s)
	return append(dst, 'Z')
}

func append2(dst []byte, n int) []byte { return append(dst, byte('0'+n/10), byte('0'+n%10)) }

func append4(dst []byte, n int) []byte {
	if n < 0 || n > 9999 {
		n = 0 // not representable; such a date never verifies
	}
	return append(dst, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

// presignParams holds the raw (still encoded) authentication parameters of
// a presigned query.
type presignParams struct {
	algorithm, credential, date, expires, signedHeaders, signature, token, contentSHA256 []byte
	hasToken, hasContentSHA256                                                           bool
}

// presignKind reports how a query authenticates: 1 = SigV4 presigned
// (X-Amz-Algorithm, -Credential or -Signature present), 2 = SigV2
// (AWSAccessKeyId with Signature), 0 = neither.
func presignKind(q []byte) int {
	v2key, v2sig := false, false
	for rest := q; len(rest) > 0; {
		var name []byte
		name, _, rest = nextQueryParam(rest)
		if len(name) < 9 {
			continue
		}
		switch {
		case queryNameIs(name, "X-Amz-Algorithm"), queryNameIs(name, "X-Amz-Credential"),
			queryNameIs(name, "X-Amz-Signature"):
			return 1
		case queryNameIs(name, "AWSAccessKeyId"):
			v2key = true
		case queryNameIs(name, "Signature"):
			v2sig = true
		}
	}
	if v2key && v2sig {
		return 2
	}
	return 0
}

// parsePresign collects the authentication parameters of a presigned query,
// rejecting duplicates and missing ones. Values stay encoded.
func parsePresign(q []byte, p *presignParams) *Error {
	*p = presignParams{}
	var seen uint16
	for rest := q; len(rest) > 0; {
		var name, value []byte
		name, value, rest = nextQueryParam(rest)
		if len(name) < 10 {
			continue
		}
		var bit uint16
		switch {
		case queryNameIs(name, "X-Amz-Algorithm"):
			bit, p.algorithm = 1, value
		case queryNameIs(name, "X-Amz-Credential"):
			bit, p.credential = 2, value
		case queryNameIs(name, "X-Amz-Date"):
			bit, p.date = 4, value
		case queryNameIs(name, "X-Amz-Expires"):
			bit, p.expires = 8, value
		case queryNameIs(name, "X-Amz-SignedHeaders"):
			bit, p.signedHeaders = 16, value
		case queryNameIs(name, "X-Amz-Signature"):
			bit, p.signature = 32, value
		case queryNameIs(name, "X-Amz-Security-Token"):
			bit, p.token, p.hasToken = 64, value, true
		case queryNameIs(name, "X-Amz-Content-Sha256"):
			bit, p.contentSHA256, p.hasContentSHA256 = 128, value, true
		default:
			continue
		}
		if seen&bit != 0 {
			return errQueryDuplicate
		}
		seen |= bit
	}
	// The algorithm decides between "not implemented" and "malformed"
	// before anything else is judged.
	if seen&1 != 0 {
		switch {
		case queryNameIs(p.algorithm, Algorithm):
		case queryNameIs(p.algorithm, AlgorithmECDSA):
			return errSigV4a
		default:
			return errQueryAlgorithm
		}
	}
	if seen&63 != 63 {
		return errQueryMissing
	}
	return nil
}
