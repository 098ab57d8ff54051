package commit

import (
	"errors"

	"github.com/duckicelake/duckicelake/catalog/refusal"
)

// Kinds of commit failure, matched with errors.Is on an *Error. The REST
// layer answers them as CommitFailedException (409), BadRequestException
// (400), UnsupportedOperationException (406), ForbiddenException (403),
// NoSuchTableException (404) and AlreadyExistsException (409).
// All but ErrNotFound are the kinds catalog/service refuses with too.
var (
	ErrConflict    = refusal.ErrConflict
	ErrInvalid     = refusal.ErrInvalid
	ErrUnsupported = refusal.ErrUnsupported
	ErrForbidden   = refusal.ErrForbidden
	ErrNotFound    = errors.New("not found")
	ErrExists      = refusal.ErrAlreadyExists
)

// Error is a commit refused for a reason the client should see
// (refusal.Error); Kind is one of the Err* values above.
type Error = refusal.Error

func newError(kind error, format string, args ...any) *Error {
	return refusal.New(kind, format, args...)
}

func conflict(format string, args ...any) error { return newError(ErrConflict, format, args...) }
func invalid(format string, args ...any) error  { return newError(ErrInvalid, format, args...) }
func unsupported(format string, args ...any) error {
	return newError(ErrUnsupported, format, args...)
}
