package sigv4

import "net/http"

// ErrorCode is the S3 error a failed verification answers with. Each code
// maps 1:1 to an S3 error code string and HTTP status.
type ErrorCode uint8

// The S3 error codes verification can produce.
const (
	ErrAccessDenied ErrorCode = iota + 1
	ErrSignatureDoesNotMatch
	ErrInvalidAccessKeyID
	ErrInvalidToken
	ErrExpiredToken
	ErrAuthorizationHeaderMalformed
	ErrAuthorizationQueryParametersError
	ErrRequestTimeTooSkewed
	ErrMissingSecurityHeader
	ErrXAmzContentSHA256Mismatch
	ErrIncompleteBody
	ErrInvalidDigest
	ErrBadDigest
	ErrInvalidArgument
	ErrInvalidRequest
	ErrMalformedTrailer
	ErrInvalidChunkSize
	ErrEntityTooLarge
	ErrMissingContentLength
	ErrNotImplemented
	errCodeEnd
)

var errorCodeInfo = [errCodeEnd]struct {
	name   string
	status int
}{
	ErrAccessDenied:                      {"AccessDenied", http.StatusForbidden},
	ErrSignatureDoesNotMatch:             {"SignatureDoesNotMatch", http.StatusForbidden},
	ErrInvalidAccessKeyID:                {"InvalidAccessKeyId", http.StatusForbidden},
	ErrInvalidToken:                      {"InvalidToken", http.StatusBadRequest},
	ErrExpiredToken:                      {"ExpiredToken", http.StatusBadRequest},
	ErrAuthorizationHeaderMalformed:      {"AuthorizationHeaderMalformed", http.StatusBadRequest},
	ErrAuthorizationQueryParametersError: {"AuthorizationQueryParametersError", http.StatusBadRequest},
	ErrRequestTimeTooSkewed:              {"RequestTimeTooSkewed", http.StatusForbidden},
	ErrMissingSecurityHeader:             {"MissingSecurityHeader", http.StatusBadRequest},
	ErrXAmzContentSHA256Mismatch:         {"XAmzContentSHA256Mismatch", http.StatusBadRequest},
	ErrIncompleteBody:                    {"IncompleteBody", http.StatusBadRequest},
	ErrInvalidDigest:                     {"InvalidDigest", http.StatusBadRequest},
	ErrBadDigest:                         {"BadDigest", http.StatusBadRequest},
	ErrInvalidArgument:                   {"InvalidArgument", http.StatusBadRequest},
	ErrInvalidRequest:                    {"InvalidRequest", http.StatusBadRequest},
	ErrMalformedTrailer:                  {"MalformedTrailerError", http.StatusBadRequest},
	ErrInvalidChunkSize:                  {"InvalidChunkSizeError", http.StatusBadRequest},
	ErrEntityTooLarge:                    {"EntityTooLarge", http.StatusBadRequest},
	ErrMissingContentLength:              {"MissingContentLength", http.StatusLengthRequired},
	ErrNotImplemented:                    {"NotImplemented", http.StatusNotImplemented},
}

// String returns the S3 error code, e.g. "SignatureDoesNotMatch".
func (c ErrorCode) String() string {
	if c == 0 || c >= errCodeEnd {
		return "InternalError"
	}
	return errorCodeInfo[c].name
}

// HTTPStatus returns the status S3 answers the code with.
func (c ErrorCode) HTTPStatus() int {
	if c == 0 || c >= errCodeEnd {
		return http.StatusInternalServerError
	}
	return errorCodeInfo[c].status
}

// Error is a verification failure. Message is safe to show to the client:
// it never contains secrets, signatures or session tokens.
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Is makes errors.Is(err, &Error{Code: c}) match on the code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

func newError(code ErrorCode, msg string) *Error { return &Error{Code: code, Message: msg} }

// CodeOf returns the S3 error code of err, or ErrAccessDenied for any error
// that is not an *Error: verification fails closed.
func CodeOf(err error) ErrorCode {
	for err != nil {
		if e, ok := err.(*Error); ok {
			return e.Code
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			break
		}
		err = u.Unwrap()
	}
	return ErrAccessDenied
}
