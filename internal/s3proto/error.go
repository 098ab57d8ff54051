package s3proto

import (
	"bytes"
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/duckicelake/duckicelake/sigv4"
)

// Error is an S3 error the gateway answers itself, as S3 XML (the remote
// signer turns it into its own refusal). Message is shown to the client: it
// never holds secrets, tokens, signatures or a key name the client was
// refused.
type Error struct {
	Code    string // S3 error code, e.g. "AccessDenied"
	Message string
	Status  int // HTTP status
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is(err, &Error{Code: c}) match on the code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

func newError(code string, status int, msg string) *Error {
	return &Error{Code: code, Message: msg, Status: status}
}

// Constructors for the errors the gateway produces itself. An empty msg
// gives S3's standard message for the code.

// AccessDenied is the answer to every authorisation failure (403).
func AccessDenied(msg string) *Error {
	return newError("AccessDenied", http.StatusForbidden, or(msg, "Access Denied"))
}

// InvalidURI answers a path or query that does not decode (400).
func InvalidURI(msg string) *Error {
	return newError("InvalidURI", http.StatusBadRequest, or(msg, "Couldn't parse the specified URI."))
}

// InvalidArgument answers a parameter or key the gateway refuses (400).
func InvalidArgument(msg string) *Error {
	return newError("InvalidArgument", http.StatusBadRequest, or(msg, "Invalid Argument"))
}

// InvalidRequest answers a request whose parts contradict each other (400).
func InvalidRequest(msg string) *Error {
	return newError("InvalidRequest", http.StatusBadRequest, or(msg, "Invalid Request"))
}

// InvalidBucketName answers a bucket name S3 would not accept (400).
func InvalidBucketName(msg string) *Error {
	return newError("InvalidBucketName", http.StatusBadRequest, or(msg, "The specified bucket is not valid."))
}

// KeyTooLong answers an object key longer than 1024 bytes (400).
func KeyTooLong() *Error {
	return newError("KeyTooLongError", http.StatusBadRequest, "Your key is too long")
}

// MalformedXML answers a request body that is not the XML S3 specifies (400).
func MalformedXML(msg string) *Error {
	return newError("MalformedXML", http.StatusBadRequest,
		or(msg, "The XML you provided was not well-formed or did not validate against our published schema"))
}

// MaxMessageLengthExceeded answers a request body over the gateway's cap (400).
func MaxMessageLengthExceeded() *Error {
	return newError("MaxMessageLengthExceeded", http.StatusBadRequest, "Your request was too big.")
}

// MethodNotAllowed answers a method the resource does not support (405).
func MethodNotAllowed(msg string) *Error {
	return newError("MethodNotAllowed", http.StatusMethodNotAllowed,
		or(msg, "The specified method is not allowed against this resource."))
}

// NotImplemented answers an operation the gateway does not support (501).
func NotImplemented(msg string) *Error {
	return newError("NotImplemented", http.StatusNotImplemented,
		or(msg, "A header you provided implies functionality that is not implemented"))
}

// RequestTimeout answers a client that stopped sending its body (400).
func RequestTimeout() *Error {
	return newError("RequestTimeout", http.StatusBadRequest,
		"Your socket connection to the server was not read from or written to within the timeout period.")
}

// InternalError answers a gateway fault; msg must not expose internals (500).
func InternalError(msg string) *Error {
	return newError("InternalError", http.StatusInternalServerError,
		or(msg, "We encountered an internal error. Please try again."))
}

// SlowDown answers a client over its rate or connection limit (503).
func SlowDown() *Error {
	return newError("SlowDown", http.StatusServiceUnavailable, "Please reduce your request rate.")
}

// ServiceUnavailable answers when the upstream cannot be reached (503).
func ServiceUnavailable(msg string) *Error {
	return newError("ServiceUnavailable", http.StatusServiceUnavailable,
		or(msg, "The service is unavailable. Please retry."))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// FromSigV4 maps a verification error to the S3 error to answer with. An
// *Error anywhere in err's chain is returned as is; a *sigv4.Error keeps
// its code, status and message; any other error becomes AccessDenied with
// the standard message, so verification fails closed and internal error
// text never reaches the client.
func FromSigV4(err error) *Error {
	if err == nil {
		return nil
	}
	var s3e *Error
	if errors.As(err, &s3e) {
		return s3e
	}
	var ve *sigv4.Error
	if !errors.As(err, &ve) {
		return AccessDenied("")
	}
	code := sigv4.CodeOf(err)
	return &Error{Code: code.String(), Message: ve.Message, Status: code.HTTPStatus()}
}

const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

// AppendXML appends e as the S3 XML error document S3 answers with:
//
//	<?xml version="1.0" encoding="UTF-8"?>
//	<Error><Code>…</Code><Message>…</Message><Resource>…</Resource><RequestId>…</RequestId></Error>
//
// Every value is XML-escaped; an empty resource is left out.
func AppendXML(dst []byte, e *Error, resource, requestID []byte) []byte {
	dst = append(dst, xmlHeader...)
	dst = append(dst, "<Error><Code>"...)
	dst = appendEscaped(dst, e.Code)
	dst = append(dst, "</Code><Message>"...)
	dst = appendEscaped(dst, e.Message)
	dst = append(dst, "</Message>"...)
	if len(resource) > 0 {
		dst = append(dst, "<Resource>"...)
		dst = appendEscaped(dst, resource)
		dst = append(dst, "</Resource>"...)
	}
	dst = append(dst, "<RequestId>"...)
	dst = appendEscaped(dst, requestID)
	return append(dst, "</RequestId></Error>"...)
}

// appendEscaped escapes s for XML 1.0 character data and attribute values.
// Bytes XML 1.0 cannot carry at all (control characters other than tab, LF
// and CR, invalid UTF-8) become U+FFFD, so the document always parses.
func appendEscaped[T string | []byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '<':
				dst = append(dst, "&lt;"...)
			case c == '>':
				dst = append(dst, "&gt;"...)
			case c == '&':
				dst = append(dst, "&amp;"...)
			case c == '"':
				dst = append(dst, "&quot;"...)
			case c == '\'':
				dst = append(dst, "&apos;"...)
			case c == '\t':
				dst = append(dst, "&#x9;"...)
			case c == '\n':
				dst = append(dst, "&#xA;"...)
			case c == '\r':
				dst = append(dst, "&#xD;"...)
			case c < 0x20 || c == 0x7f:
				dst = append(dst, "\uFFFD"...)
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size <= 1 || r == 0xFFFE || r == 0xFFFF {
			dst = append(dst, "\uFFFD"...)
			i += max(size, 1)
			continue
		}
		dst = append(dst, s[i:i+size]...)
		i += size
	}
	return dst
}

// ReplaceRequestID appends doc, an S3 error document from a backend, to dst
// with the text of its <RequestId> (a child of the root <Error>; every one,
// should there be several) replaced by requestID, the id the client sees in
// the x-amz-request-id header. ok is false, and dst is returned unchanged,
// when doc is not such a document: no root <Error>, no <RequestId> child
// holding plain text, or markup this scan does not follow. The caller then
// passes doc on as it is. Every other byte of a document that matches
// passes through unchanged.
func ReplaceRequestID(dst, doc, requestID []byte) (_ []byte, ok bool) {
	var spans [maxRequestIDs]span
	n, ok := requestIDTexts(doc, &spans)
	if !ok {
		return dst, false
	}
	prev := 0
	for _, sp := range spans[:n] {
		dst = append(dst, doc[prev:sp.start]...)
		dst = appendEscaped(dst, requestID)
		prev = sp.end
	}
	return append(dst, doc[prev:]...), true
}

// maxRequestIDs bounds the RequestId elements ReplaceRequestID replaces;
// a document with more is not one it rewrites.
const maxRequestIDs = 4

// requestIDTexts finds the text of every RequestId element directly inside
// the root Error element of doc, in order, and checks that the root element
// ends. Any markup it does not know (a DOCTYPE, CDATA, an element inside
// RequestId) ends the search unsuccessfully rather than risk replacing the
// wrong bytes or missing an id.
func requestIDTexts(doc []byte, spans *[maxRequestIDs]span) (n int, ok bool) {
	i := skipProlog(doc)
	if i < 0 {
		return 0, false
	}
	name, next, selfClosing, ok := startTag(doc, i)
	if !ok || selfClosing || string(name) != "Error" {
		return 0, false
	}
	depth := 1
	for i = next; i < len(doc); {
		lt := bytes.IndexByte(doc[i:], '<')
		if lt < 0 {
			return 0, false
		}
		i += lt
		rest := doc[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			j := bytes.Index(rest[4:], []byte("-->"))
			if j < 0 {
				return 0, false
			}
			i += 4 + j + 3
		case bytes.HasPrefix(rest, []byte("<?")):
			j := bytes.Index(rest[2:], []byte("?>"))
			if j < 0 {
				return 0, false
			}
			i += 2 + j + 2
		case bytes.HasPrefix(rest, []byte("</")):
			j := bytes.IndexByte(rest, '>')
			if j < 0 {
				return 0, false
			}
			if depth--; depth == 0 {
				return n, n > 0
			}
			i += j + 1
		case bytes.HasPrefix(rest, []byte("<!")):
			// CDATA or a declaration: not what an S3 error document holds.
			return 0, false
		default:
			name, next, selfClosing, ok := startTag(doc, i)
			if !ok {
				return 0, false
			}
			i = next
			if selfClosing {
				continue
			}
			if depth > 1 || string(name) != "RequestId" {
				depth++
				continue
			}
			j := bytes.IndexByte(doc[next:], '<')
			const closeTag = "</RequestId>"
			if j < 0 || !bytes.HasPrefix(doc[next+j:], []byte(closeTag)) || n == maxRequestIDs {
				return 0, false
			}
			spans[n] = span{next, next + j}
			n++
			i = next + j + len(closeTag)
		}
	}
	return 0, false
}

// skipProlog returns the offset of the root element's '<': after an
// optional byte order mark, XML declaration, comments, processing
// instructions and white space; -1 when doc starts otherwise.
func skipProlog(doc []byte) int {
	i := 0
	if bytes.HasPrefix(doc, []byte("\xef\xbb\xbf")) {
		i = 3
	}
	for i < len(doc) {
		switch c := doc[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case bytes.HasPrefix(doc[i:], []byte("<?")):
			j := bytes.Index(doc[i+2:], []byte("?>"))
			if j < 0 {
				return -1
			}
			i += 2 + j + 2
		case bytes.HasPrefix(doc[i:], []byte("<!--")):
			j := bytes.Index(doc[i+4:], []byte("-->"))
			if j < 0 {
				return -1
			}
			i += 4 + j + 3
		case c == '<':
			return i
		default:
			return -1
		}
	}
	return -1
}

// startTag reads the start tag at doc[i] ('<'): its name, the offset after
// its '>', and whether it closes itself ("<a/>"). Attribute values are
// skipped as quoted strings, so a '>' inside one does not end the tag.
func startTag(doc []byte, i int) (name []byte, next int, selfClosing, ok bool) {
	j := i + 1
	for j < len(doc) && isNameByte(doc[j]) {
		j++
	}
	if j == i+1 {
		return nil, 0, false, false
	}
	name = doc[i+1 : j]
	for j < len(doc) {
		switch c := doc[j]; c {
		case '"', '\'':
			k := bytes.IndexByte(doc[j+1:], c)
			if k < 0 {
				return nil, 0, false, false
			}
			j += 1 + k + 1
		case '/':
			if j+1 < len(doc) && doc[j+1] == '>' {
				return name, j + 2, true, true
			}
			return nil, 0, false, false
		case '>':
			return name, j + 1, false, true
		case '<':
			return nil, 0, false, false
		default:
			j++
		}
	}
	return nil, 0, false, false
}

// isNameByte reports whether c may appear in an XML name as this scan reads
// one: ASCII letters, digits, '_', '-', '.', ':' and any non-ASCII byte.
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == ':' || c >= 0x80
}
