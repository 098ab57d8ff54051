package rest

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"github.com/duckicelake/duckicelake/governance"
	"strings"
	"time"
)

// Config configures a Server. Zero values select the defaults named on each
// field.
type Config struct {
	// Name is the catalog's name and its REST prefix: clients reach
	// /v1/<Name>/namespaces ("lake").
	Name string
	// Schema is the Postgres schema holding the ducklake_* tables ("" is
	// public).
	Schema string

	// Dev serves every route without a token, as principal "dev" with scope
	// "*". A token that is sent anyway is still verified. Never in
	// production.
	Dev bool
	// TokenKey signs and verifies the catalog's access tokens (HS256), at
	// least 32 bytes. Required unless Dev (then a random per-process key is
	// used when empty).
	TokenKey []byte
	// TokenTTL is the lifetime of issued access tokens (1h).
	TokenTTL time.Duration
	// Clients may exchange client credentials for access tokens.
	Clients []Client

	// GatewayURL is the gateway as clients reach it, with its scheme
	// ("http://127.0.0.1:9000"); vended credentials point s3.endpoint here.
	GatewayURL string
	// Region is the region vended credentials sign for ("us-east-1").
	Region string
	// VendTTL is the lifetime of vended credentials (0: the keyring's
	// default lifetime).
	VendTTL time.Duration
	// Signer configures remote signing (see SignerConfig).
	Signer SignerConfig

	// SnapshotTTL bounds how long the current snapshot id is served from
	// memory before Postgres is asked again (100ms): a commit by any writer
	// becomes visible to LoadTable within it.
	SnapshotTTL time.Duration
	// CacheEntries bounds the number of cached LoadTable responses (4096).
	CacheEntries int
	// MaxBodyBytes bounds a request body (1 MiB).
	MaxBodyBytes int
	// PurgeTimeout bounds deleting a dropped table's objects (5m).
	PurgeTimeout time.Duration
	// RequestTimeout is the deadline of one request (30s): its Postgres
	// queries, the Authorizer and materialisation run under it.
	RequestTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultName         = "lake"
	DefaultTokenTTL     = time.Hour
	DefaultRegion       = "us-east-1"
	DefaultSnapshotTTL  = 100 * time.Millisecond
	DefaultCacheEntries = 4096
	DefaultMaxBodyBytes = 1 << 20
	DefaultPurgeTimeout = 5 * time.Minute
	// DefaultRequestTimeout is Config.RequestTimeout's default.
	DefaultRequestTimeout = 30 * time.Second
	// MinTokenKeyLen is the shortest TokenKey accepted, in bytes.
	MinTokenKeyLen = 32
)

func (c *Config) applyDefaults() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.TokenTTL <= 0 {
		c.TokenTTL = DefaultTokenTTL
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.SnapshotTTL <= 0 {
		c.SnapshotTTL = DefaultSnapshotTTL
	}
	if c.CacheEntries <= 0 {
		c.CacheEntries = DefaultCacheEntries
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.PurgeTimeout <= 0 {
		c.PurgeTimeout = DefaultPurgeTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	c.GatewayURL = strings.TrimSuffix(c.GatewayURL, "/")
}

func (c *Config) validate() error {
	if strings.ContainsAny(c.Name, "/?#%\x1f") || strings.TrimSpace(c.Name) != c.Name {
		return fmt.Errorf("rest: catalog name %q: must not contain '/', '?', '#', '%%', 0x1F or surrounding spaces", c.Name)
	}
	if !c.Dev && len(c.TokenKey) == 0 {
		return errors.New("rest: no token key: configure one (32+ random bytes) or run in dev mode")
	}
	if len(c.TokenKey) > 0 && len(c.TokenKey) < MinTokenKeyLen {
		return fmt.Errorf("rest: token key is %d bytes, need at least %d", len(c.TokenKey), MinTokenKeyLen)
	}
	if c.GatewayURL != "" && !strings.HasPrefix(c.GatewayURL, "http://") && !strings.HasPrefix(c.GatewayURL, "https://") {
		return fmt.Errorf("rest: gateway URL %q: want http:// or https://", c.GatewayURL)
	}
	seen := make(map[string]bool, len(c.Clients))
	for _, cl := range c.Clients {
		if seen[cl.ID] {
			return fmt.Errorf("rest: OAuth client %q is configured twice", cl.ID)
		}
		seen[cl.ID] = true
	}
	return nil
}

// Client is an OAuth2 client allowed the client-credentials grant.
type Client struct {
	ID     string
	Secret string
	// Scopes are granted to the client's tokens: "*" or
	// "ns:<namespace>:<r|w|rw|*>" (namespace "*" for all).
	Scopes []string
	// Roles travel in the token's roles claim, for governance.
	Roles []string
}

// secretMatches compares in constant time, whatever the lengths.
func (c *Client) secretMatches(secret string) bool {
	a := sha256.Sum256([]byte(c.Secret))
	b := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// ParseClients parses the client list of DUCKICELAKE_OAUTH_CLIENTS:
//
//	id:secret|scopes[|roles][,id:secret|scopes[|roles]…]
//
// Scopes and roles are separated by spaces; a client without scopes gets
// none (its tokens authenticate but reach nothing). Example:
//
//	"etl:s3cret|ns:sales:rw ns:hr:r|writer,admin:pw|*"
func ParseClients(s string) ([]Client, error) {
	var out []Client
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		fields := strings.Split(entry, "|")
		if len(fields) > 3 {
			return nil, fmt.Errorf("rest: OAuth client %d: %d '|'-separated fields; want id:secret|scopes[|roles]", i+1, len(fields))
		}
		id, secret, ok := strings.Cut(fields[0], ":")
		if !ok || id == "" || secret == "" {
			return nil, fmt.Errorf("rest: OAuth client %d: want id:secret before the first '|'", i+1)
		}
		c := Client{ID: id, Secret: secret}
		if len(fields) > 1 {
			c.Scopes = strings.Fields(fields[1])
			for _, sc := range c.Scopes {
				if _, err := governance.ParseScope(sc); err != nil {
					return nil, fmt.Errorf("rest: OAuth client %q: %w", id, err)
				}
			}
		}
		if len(fields) > 2 {
			c.Roles = strings.Fields(fields[2])
		}
		out = append(out, c)
	}
	return out, nil
}
