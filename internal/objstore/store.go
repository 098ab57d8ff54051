package objstore

import (
	"context"
	"errors"
	"strings"
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

// Reader is the part of a Store that reads, for consumers that only read
// (catalog/materialize's delete files).
type Reader interface {
	// Get returns the object at loc, failing with an error wrapping
	// ErrNotFound when there is none and ErrTooLarge when it has more than
	// max bytes.
	Get(ctx context.Context, loc Location, max int64) ([]byte, error)
}

// Store reads and writes whole objects by Location. Implementations are
// safe for concurrent use. A Location whose scheme a Store does not serve,
// or a directory where an object is wanted, is an error wrapping
// ErrBadLocation.
type Store interface {
	Reader
	// Put stores body at loc, replacing what was there.
	Put(ctx context.Context, loc Location, body []byte) error
	// Exists reports whether an object is at loc.
	Exists(ctx context.Context, loc Location) (bool, error)
	// List calls fn for every object whose location is within directory
	// dir, in key order, until fn returns an error (which List returns).
	// Keys that Parse refuses are no Location and are not listed.
	List(ctx context.Context, dir Location, fn func(Object) error) error
	// Delete deletes the object at loc; a missing object is no error.
	Delete(ctx context.Context, loc Location) error
	// DeletePrefix deletes every object within directory dir. It refuses a
	// bucket's or the file system's root.
	DeletePrefix(ctx context.Context, dir Location) error
}

// contentType is the Content-Type an object is stored with, by its name:
// what Iceberg clients and browsers expect of metadata files and manifests.
func contentType(loc Location) string {
	switch k := loc.Key(); {
	case strings.HasSuffix(k, ".json"):
		return "application/json"
	case strings.HasSuffix(k, ".avro"):
		return "avro/binary"
	}
	return "application/octet-stream"
}

// objectOf checks that loc names an object (not a directory) of scheme.
func objectOf(loc Location, scheme Scheme) error {
	switch {
	case loc.Scheme() != scheme:
		return &LocationError{Location: loc.String(), Reason: "this store does not serve its scheme"}
	case loc.IsDir():
		return &LocationError{Location: loc.String(), Reason: "it names a directory, not an object"}
	}
	return nil
}

// prefixOf checks that dir may be deleted or listed by a store of scheme,
// and returns it as a directory. A root is refused for deletion.
func prefixOf(dir Location, scheme Scheme, deleting bool) (Location, error) {
	if dir.Scheme() != scheme {
		return Location{}, &LocationError{Location: dir.String(), Reason: "this store does not serve its scheme"}
	}
	dir = dir.AsDir()
	if deleting && dir.Key() == "" {
		return Location{}, &LocationError{Location: dir.String(), Reason: "refusing to delete a whole bucket or file system"}
	}
	return dir, nil
}
