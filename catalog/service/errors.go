package service

import (
	"errors"

	"github.com/duckicelake/duckicelake/catalog/refusal"
)

// Kinds of refusal, matched with errors.Is on an [*Error]. Each is one
// Iceberg ErrorModel type to a transport.
// The five catalog/commit shares are catalog/refusal's.
var (
	ErrNoSuchNamespace = errors.New("no such namespace")
	ErrNoSuchTable     = errors.New("no such table")
	ErrNoSuchView      = errors.New("no such view")
	ErrAlreadyExists   = refusal.ErrAlreadyExists
	ErrNotEmpty        = errors.New("namespace not empty")
	ErrForbidden       = refusal.ErrForbidden
	ErrConflict        = refusal.ErrConflict                 // retry the request
	ErrInvalid         = refusal.ErrInvalid                  // the caller's input is wrong
	ErrInvalidView     = errors.New("invalid view metadata") // a view change the view rules refuse
	ErrUnprocessable   = errors.New("unprocessable request") // well-formed, contradictory
	ErrUnsupported     = refusal.ErrUnsupported
)

// Error is a request the catalog refuses for a reason the client should
// see (refusal.Error); Kind is one of the Err* values above.
type Error = refusal.Error

func refuse(kind error, format string, args ...any) *Error {
	return refusal.New(kind, format, args...)
}

// NoSuchNamespace is the refusal of a request naming a namespace that does
// not exist.
func NoSuchNamespace(name string) *Error {
	return refuse(ErrNoSuchNamespace, "Namespace does not exist: %s", name)
}

// NoSuchView is the refusal of a request naming a view that does not
// exist (or whose namespace does not).
func NoSuchView(ns, name string) *Error {
	return refuse(ErrNoSuchView, "View does not exist: %s.%s", ns, name)
}
