package rest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/duckicelake/duckicelake/catalog/oauth"
	"github.com/duckicelake/duckicelake/internal/defaults"
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
	// SessionTTL bounds a session: no token exchange extends one past
	// SessionTTL after its client authenticated (12h).
	SessionTTL time.Duration
	// Clients may exchange client credentials for access tokens.
	Clients []Client
	// MaxAuthFailuresPerClient and MaxAuthFailuresPerIP failed
	// authentications per AuthFailureWindow, per client id and per source
	// address, are answered; beyond them the token endpoint answers 429
	// (10 and 50 per minute; see catalog/oauth).
	MaxAuthFailuresPerClient int
	MaxAuthFailuresPerIP     int
	AuthFailureWindow        time.Duration

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
	DefaultTokenTTL     = oauth.DefaultTokenTTL
	DefaultRegion       = "us-east-1"
	DefaultSnapshotTTL  = 100 * time.Millisecond
	DefaultCacheEntries = 4096
	DefaultMaxBodyBytes = 1 << 20
	DefaultPurgeTimeout = 5 * time.Minute
	// DefaultRequestTimeout is Config.RequestTimeout's default.
	DefaultRequestTimeout = 30 * time.Second
	// MinTokenKeyLen is the shortest TokenKey accepted, in bytes.
	MinTokenKeyLen = oauth.MinKeyLen
)

func (c *Config) applyDefaults() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	c.TokenTTL = defaults.Positive(c.TokenTTL, DefaultTokenTTL)
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	c.SnapshotTTL = defaults.Positive(c.SnapshotTTL, DefaultSnapshotTTL)
	c.CacheEntries = defaults.Positive(c.CacheEntries, DefaultCacheEntries)
	c.MaxBodyBytes = defaults.Positive(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.PurgeTimeout = defaults.Positive(c.PurgeTimeout, DefaultPurgeTimeout)
	c.RequestTimeout = defaults.Positive(c.RequestTimeout, DefaultRequestTimeout)
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
	return nil
}

// Client is an OAuth2 client allowed the client-credentials grant.
type Client = oauth.Client

// ParseClients parses the client list of DUCKICELAKE_OAUTH_CLIENTS
// (oauth.ParseClients).
func ParseClients(s string) ([]Client, error) {
	cs, err := oauth.ParseClients(s)
	if err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	return cs, nil
}
