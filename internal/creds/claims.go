package creds

import (
	"fmt"
	"strings"
	"time"
)

// Access is a bitmask of what a grant permits.
type Access uint8

// The access bits. List is separate from Read: listing reveals key names
// under a prefix, reading reveals object bytes.
const (
	Read Access = 1 << iota
	Write
	List

	accessAll = Read | Write | List
)

// String returns the access as letters in the order "rwl", e.g. "rl".
func (a Access) String() string {
	if a == 0 {
		return "none"
	}
	var b [3]byte
	n := 0
	for i, c := range "rwl" {
		if a&(1<<i) != 0 {
			b[n] = byte(c)
			n++
		}
	}
	if a&^accessAll != 0 {
		return fmt.Sprintf("%s+%#x", b[:n], uint8(a&^accessAll))
	}
	return string(b[:n])
}

// ParseAccess parses the access part of a grant. It is a set of letters:
// "r" is read and list (reading a dataset needs its listing), "w" is write,
// "l" is list only. So "rw" is read, write and list, and "wl" is write and
// list without read.
func ParseAccess(s string) (Access, error) {
	if s == "" {
		return 0, failf("access is empty; use letters r (read+list), w (write), l (list)")
	}
	var a Access
	for _, c := range s {
		var bit Access
		switch c {
		case 'r':
			bit = Read | List
		case 'w':
			bit = Write
		case 'l':
			bit = List
		default:
			return 0, failf("access %q: unknown letter %q; use r (read+list), w (write), l (list)", s, c)
		}
		a |= bit
	}
	return a, nil
}

// Grant allows Access on the keys of Bucket that start with Prefix.
type Grant struct {
	Bucket string
	// Prefix is a literal key prefix (no wildcards); empty means the whole
	// bucket. It should end with '/': "data/a" also covers "data/ab".
	Prefix string
	Access Access
}

// String formats the grant as ParseGrant reads it: bucket:prefix:access,
// with access spelled as the letters of its bits ("rwl").
func (g Grant) String() string {
	return g.Bucket + ":" + g.Prefix + ":" + g.Access.String()
}

// ParseGrant parses "bucket:prefix:access", e.g. "lake:data/analytics/:rw".
// The prefix may itself contain ':' (bucket names cannot); see ParseAccess
// for the access letters.
func ParseGrant(s string) (Grant, error) {
	first := strings.IndexByte(s, ':')
	last := strings.LastIndexByte(s, ':')
	if first < 0 || first == last {
		return Grant{}, failf("grant %q: want bucket:prefix:access, e.g. lake:data/analytics/:rw", s)
	}
	g := Grant{Bucket: s[:first], Prefix: s[first+1 : last]}
	a, err := ParseAccess(s[last+1:])
	if err != nil {
		return Grant{}, failf("grant %q: %w", s, err)
	}
	g.Access = a
	if err := g.validate(); err != nil {
		return Grant{}, failf("grant %q: %w", s, err)
	}
	return g, nil
}

// Actors and channels a token can carry.
const (
	ActorHuman = "human"
	ActorAgent = "agent"

	ChannelREST = "rest"
	ChannelMCP  = "mcp"
	ChannelSMCP = "smcp"
)

// Claims is what a session token asserts.
type Claims struct {
	Principal string
	Actor     string // ActorHuman or ActorAgent
	Channel   string // ChannelREST, ChannelMCP or ChannelSMCP
	Catalog   string
	Grants    []Grant
	VendID    string // 32 lower-case hex characters, random per mint
	IssuedAt  time.Time
	Expiry    time.Time
	// Table binds a credential vended for one table to it (zero: unbound,
	// a version 1 token). The gateway honours a bound credential only on
	// keys its live table index gives to that table under that name.
	Table TableBinding
}

// TableBinding is the table a credential was vended for. A credential
// outlives neither a drop of its table nor a rename: the table's UUID
// (stable across renames) and its name at vend time must both still
// match the key's table when the credential is used.
type TableBinding struct {
	// UUID is ducklake_table.table_uuid (for a staged create, the UUID
	// the create will commit). Empty: unbound.
	UUID string
	// Namespace and Name are the table's at vend time.
	Namespace, Name string
	// Snapshot is the DuckLake snapshot the vend saw: a gateway whose
	// index is older refreshes it before deciding, instead of refusing a
	// table created moments ago.
	Snapshot int64
	// Staged marks a staged create's vend: the table does not exist yet,
	// so a key no table claims is allowed too.
	Staged bool
}

// Bound reports whether b names a table.
func (b *TableBinding) Bound() bool { return b.UUID != "" }

// Allows reports whether some grant has every bit of access, names bucket,
// and has a prefix that key starts with. The comparison is literal and
// byte-wise: the caller passes the decoded object key.
func (c *Claims) Allows(access Access, bucket, key []byte) bool {
	if access == 0 {
		return false
	}
	for i := range c.Grants {
		g := &c.Grants[i]
		if g.Access&access == access && string(bucket) == g.Bucket && hasPrefix(key, g.Prefix) {
			return true
		}
	}
	return false
}

// AllowsList reports whether a listing of bucket under prefix stays inside a
// grant with List access: prefix must start with the grant's prefix. A list
// prefix shorter than the grant's ("data/" against grant "data/analytics/")
// would reveal names outside the grant and is not allowed.
func (c *Claims) AllowsList(bucket, prefix []byte) bool {
	return c.Allows(List, bucket, prefix)
}

func hasPrefix(s []byte, prefix string) bool {
	return len(s) >= len(prefix) && string(s[:len(prefix)]) == prefix
}
