package objstore

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound reports an object that does not exist. Every Store wraps it,
// so errors.Is(err, ErrNotFound) is the one test for a missing object.
var ErrNotFound = errors.New("object not found")

// ErrTooLarge reports an object larger than the caller allowed Get to
// return.
var ErrTooLarge = errors.New("object too large")

// Object is one entry of a listing.
type Object struct {
	Location Location
	Size     int64
	Modified time.Time
}

// Store reads and writes whole objects by Location. Implementations are
// safe for concurrent use. A Location whose scheme a Store does not serve
// is an error wrapping ErrBadLocation.
type Store interface {
	// Get returns the object at loc, failing with an error wrapping
	// ErrNotFound when there is none and ErrTooLarge when it has more than
	// max bytes.
	Get(ctx context.Context, loc Location, max int64) ([]byte, error)
	// Put stores body at loc, replacing what was there.
	Put(ctx context.Context, loc Location, body []byte) error
	// Exists reports whether an object is at loc.
	Exists(ctx context.Context, loc Location) (bool, error)
	// List calls fn for every object whose location is within directory
	// dir, in key order, until fn returns an error (which List returns).
	List(ctx context.Context, dir Location, fn func(Object) error) error
	// DeletePrefix deletes every object within directory dir. It refuses a
	// bucket's or the file system's root.
	DeletePrefix(ctx context.Context, dir Location) error
}
