// Package refusal is the catalog's one type of refused request: a kind
// that callers branch on with errors.Is, and a message written for the
// client. catalog/commit and catalog/service declare their kinds;
// catalog/rest answers each kind with its Iceberg ErrorModel, in one table.
//
// It imports only the standard library.
package refusal

import (
	"errors"
	"fmt"
)

// The kinds catalog/commit and catalog/service share: one value each, so
// that a refusal means the same to a transport whichever package made it.
var (
	ErrConflict      = errors.New("commit conflict")       // retry the request
	ErrInvalid       = errors.New("invalid request")       // the caller's input is wrong
	ErrUnsupported   = errors.New("unsupported operation") // not something DuckLake or this catalog does
	ErrForbidden     = errors.New("forbidden")
	ErrAlreadyExists = errors.New("already exists")
)

// Error is a request refused for a reason the client should see.
type Error struct {
	Kind    error  // what callers match with errors.Is
	Message string // for the client
}

func (e *Error) Error() string { return e.Message }

// Unwrap lets errors.Is match the kind.
func (e *Error) Unwrap() error { return e.Kind }

// New is the refusal of kind with a message made as fmt.Sprintf makes it.
func New(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}
