package service

import (
	"errors"
	"fmt"
)

// Kinds of refusal, matched with errors.Is on an [*Error]. Each is one
// Iceberg ErrorModel type to a transport.
var (
	ErrNoSuchNamespace = errors.New("no such namespace")
	ErrNoSuchTable     = errors.New("no such table")
	ErrNoSuchView      = errors.New("no such view")
	ErrAlreadyExists   = errors.New("already exists")
	ErrNotEmpty        = errors.New("namespace not empty")
	ErrForbidden       = errors.New("forbidden")
	ErrConflict        = errors.New("commit conflict")       // retry the request
	ErrInvalid         = errors.New("invalid request")       // the caller's input is wrong
	ErrUnprocessable   = errors.New("unprocessable request") // well-formed, contradictory
	ErrUnsupported     = errors.New("unsupported operation")
)

// Error is a request the catalog refuses for a reason the client should
// see: Message is written for the client, Kind is one of the Err* values.
type Error struct {
	Kind    error
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unwrap lets errors.Is match the kind.
func (e *Error) Unwrap() error { return e.Kind }

func refuse(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
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
