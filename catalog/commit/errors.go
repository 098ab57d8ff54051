package commit

import (
	"errors"

	"github.com/duckicelake/duckicelake/catalog/refusal"
)

// Kinds of commit failure, matched with errors.Is on an *Error. The REST
// layer answers them as CommitFailedException (409), BadRequestException
// (400), UnsupportedOperationException (406), ForbiddenException (403),
// NoSuchTableException (404) and AlreadyExistsException (409).
var (
	ErrConflict    = errors.New("commit conflict")
	ErrInvalid     = errors.New("invalid commit")
	ErrUnsupported = errors.New("unsupported by DuckLake")
	ErrForbidden   = errors.New("forbidden")
	ErrNotFound    = errors.New("not found")
	ErrExists      = errors.New("already exists")
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
