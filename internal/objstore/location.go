package objstore

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Scheme is where a Location lives.
type Scheme uint8

// The schemes. SchemeS3 covers s3://, s3a:// and s3n:// (Hadoop's names
// for the same thing); SchemeFile covers absolute local paths and file://.
const (
	SchemeS3 Scheme = iota + 1
	SchemeFile
)

// ErrBadLocation reports a location Parse refuses.
var ErrBadLocation = errors.New("bad location")

// LocationError is Parse's error: the location and why it is refused.
type LocationError struct {
	Location string
	Reason   string
}

func (e *LocationError) Error() string {
	return fmt.Sprintf("%s %q: %s", ErrBadLocation, e.Location, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBadLocation) hold.
func (e *LocationError) Unwrap() error { return ErrBadLocation }

// Location is an absolute object or directory address: an S3 bucket and
// key, or a local path. The zero Location is invalid. A Location is
// comparable; two equal Locations name the same thing.
type Location struct {
	scheme Scheme
	bucket string // S3 only
	// key is the S3 key, or the local path without its leading '/'. A
	// directory's key ends in '/'; the bucket root's is "".
	key string
}

// Parse parses an absolute location: "s3://bucket/key" (also s3a://,
// s3n://), "file:///path" or "/path". It refuses what could be read two
// ways (see the package documentation).
func Parse(s string) (Location, error) {
	bad := func(reason string) (Location, error) {
		return Location{}, &LocationError{Location: s, Reason: reason}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return bad("it contains a control character")
		}
	}
	var l Location
	var rest string
	switch {
	case hasScheme(s, "s3://"), hasScheme(s, "s3a://"), hasScheme(s, "s3n://"):
		_, rest, _ = strings.Cut(s, "://")
		l.scheme = SchemeS3
		var ok bool
		l.bucket, rest, ok = strings.Cut(rest, "/")
		if l.bucket == "" {
			return bad("it names no bucket")
		}
		if !validBucket(l.bucket) {
			return bad("the bucket name is not one S3 allows")
		}
		if !ok {
			rest = ""
		}
	case hasScheme(s, "file://"):
		rest = s[len("file://"):]
		if !strings.HasPrefix(rest, "/") {
			return bad("a file location must be absolute (file:///path)")
		}
		l.scheme, rest = SchemeFile, rest[1:]
	case strings.HasPrefix(s, "/"):
		l.scheme, rest = SchemeFile, s[1:]
	default:
		return bad("want s3://bucket/key or an absolute local path")
	}
	if strings.IndexByte(rest, '\\') >= 0 {
		return bad("it contains a backslash")
	}
	// Segment by segment, without allocating: vending and signing parse a
	// table's location per request.
	for k, more := strings.TrimSuffix(rest, "/"), rest != ""; more; {
		var seg string
		seg, k, more = strings.Cut(k, "/")
		switch seg {
		case "":
			return bad("it has an empty path segment (//)")
		case ".", "..":
			return bad(`it has a "` + seg + `" path segment`)
		}
	}
	l.key = rest
	return l, nil
}

// MustParse is Parse for locations known to be valid (tests, constants);
// it panics on an error.
func MustParse(s string) Location {
	l, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

// ParseDir parses a directory location: as Parse, with a trailing '/'
// added when missing, so that "s3://b/t" is the directory t, which does not
// contain "s3://b/t2/x".
func ParseDir(s string) (Location, error) {
	l, err := Parse(s)
	if err != nil {
		return Location{}, err
	}
	return l.AsDir(), nil
}

// S3 is the Location of key in bucket, checked as Parse checks it.
func S3(bucket, key string) (Location, error) {
	return Parse("s3://" + bucket + "/" + key)
}

func hasScheme(s, scheme string) bool {
	return len(s) >= len(scheme) && strings.EqualFold(s[:len(scheme)], scheme)
}

// validBucket allows the characters S3 bucket names are made of (lower-case
// letters, digits, '.', '-'; upper case and '_' for older buckets and other
// backends).
func validBucket(b string) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// IsZero reports whether l is the zero Location.
func (l Location) IsZero() bool { return l.scheme == 0 }

// Scheme is where l lives.
func (l Location) Scheme() Scheme { return l.scheme }

// Bucket is l's S3 bucket ("" for a local path).
func (l Location) Bucket() string { return l.bucket }

// Key is l's S3 key, or its local path without the leading '/'. A
// directory's ends in '/'.
func (l Location) Key() string { return l.key }

// Path is l's local path ("/data/x"), for SchemeFile.
func (l Location) Path() string { return "/" + l.key }

// IsDir reports whether l names a directory (its key ends in '/', or it is
// a bucket's or the file system's root).
func (l Location) IsDir() bool { return l.key == "" || strings.HasSuffix(l.key, "/") }

// AsDir is l as a directory: its key with a trailing '/'.
func (l Location) AsDir() Location {
	if !l.IsDir() {
		l.key += "/"
	}
	return l
}

// String spells l as s3://bucket/key or as an absolute local path; Parse
// reads it back.
func (l Location) String() string {
	switch l.scheme {
	case SchemeS3:
		return "s3://" + l.bucket + "/" + l.key
	case SchemeFile:
		return "/" + l.key
	}
	return ""
}

// Within reports whether l is inside directory dir (dir is taken as a
// directory whether or not it ends in '/'): the same scheme and bucket, and
// l's key below dir's. A directory is not within itself. This is the one
// containment rule: commits, registration, purges, vending and signing all
// decide with it.
func (l Location) Within(dir Location) bool {
	if l.scheme == 0 || l.scheme != dir.scheme || l.bucket != dir.bucket {
		return false
	}
	d := dir.AsDir().key
	return len(l.key) > len(d) && strings.HasPrefix(l.key, d)
}

// Rel is l's path relative to directory dir ("metadata/v1.json" for
// "s3://b/t/metadata/v1.json" in "s3://b/t"), and whether l is within dir
// at all: the form DuckLake stores a path in when it is under its parent's.
func (l Location) Rel(dir Location) (string, bool) {
	if !l.Within(dir) {
		return "", false
	}
	return l.key[len(dir.AsDir().key):], true
}

// Overlaps reports whether directories a and b share files: one is within
// the other, or they are the same.
func Overlaps(a, b Location) bool {
	a, b = a.AsDir(), b.AsDir()
	return a == b || a.Within(b) || b.Within(a)
}

// Join is the location of rel under directory l: rel is a relative path of
// segments ("metadata/v1.json"), checked as Parse checks a key.
func (l Location) Join(rel string) (Location, error) {
	if strings.HasPrefix(rel, "/") {
		return Location{}, &LocationError{Location: rel, Reason: "a relative path must not start with /"}
	}
	return Parse(l.AsDir().String() + rel)
}

// Dir is the directory holding l ("s3://b/t/x.json" → "s3://b/t/"); the
// root's is itself.
func (l Location) Dir() Location {
	k := strings.TrimSuffix(l.key, "/")
	if i := strings.LastIndexByte(k, '/'); i >= 0 {
		l.key = k[:i+1]
	} else {
		l.key = ""
	}
	return l
}

// Base is l's last segment ("x.json").
func (l Location) Base() string { return path.Base("/" + strings.TrimSuffix(l.key, "/")) }
