package s3proto

import (
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
