package admin

import "fmt"

// Kind is what kind of refusal an Error is; the transport maps it to an
// HTTP status.
type Kind uint8

// The kinds.
const (
	// Invalid: the request is malformed or would have no effect (400).
	Invalid Kind = iota + 1
	// NotFound: it names something that does not exist (404).
	NotFound
	// Conflict: it contradicts the configuration (409): a second mask on a
	// column, a delete of something still referenced.
	Conflict
)

// Error is a refused request. Msg is safe to return to the author.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &Error{Kind: Invalid, Msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &Error{Kind: NotFound, Msg: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &Error{Kind: Conflict, Msg: fmt.Sprintf(format, args...)}
}
