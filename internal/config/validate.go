package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/duckicelake/duckicelake/internal/creds"
)

// Validate checks every setting and reports each invalid one, naming its
// key. Load has already called it.
func (c *Config) Validate() error { return c.validate(nil) }

func (c *Config) validate(source map[string]string) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Source: source[key], Msg: fmt.Sprintf(format, args...)})
	}
	checkListen := func(key, addr string) {
		if err := validListen(addr); err != nil {
			bad(key, "%v", err)
		}
	}
	checkPositive := func(key string, d time.Duration) {
		if d <= 0 {
			bad(key, "must be positive, got %s", d)
		}
	}
	checkRegion := func(key, r string) {
		if r == "" || len(r) > 64 || strings.Trim(r, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			bad(key, "want a region like \"us-east-1\" (lower-case letters, digits, '-'), got %q", r)
		}
	}

	g := &c.Gateway
	checkListen("gateway.listen", g.Listen)
	if g.PublicURL != "" {
		if err := validURL(g.PublicURL, false); err != nil {
			bad("gateway.public_url", "%v", err)
		}
	}
	checkRegion("gateway.region", g.Region)
	for _, d := range g.VirtualHostDomains {
		if !validHostname(d) {
			bad("gateway.virtual_host_domains", "want host names like \"s3.example.com\" (no scheme, port or path), got %q", d)
		}
	}
	checkPositive("gateway.header_read_timeout", g.HeaderReadTimeout)
	checkPositive("gateway.idle_timeout", g.IdleTimeout)
	checkPositive("gateway.shutdown_timeout", g.ShutdownTimeout)
	checkPositive("gateway.authorize_timeout", g.AuthorizeTimeout)
	if g.MaxHeaderBytes < 4<<10 || g.MaxHeaderBytes > 1<<20 {
		bad("gateway.max_header_bytes", "want 4KiB..1MiB, got %s", g.MaxHeaderBytes)
	}
	if g.MaxConnections < 1 {
		bad("gateway.max_connections", "must be at least 1, got %d", g.MaxConnections)
	}
	if g.MaxConnectionsPerIP < 1 {
		bad("gateway.max_connections_per_ip", "must be at least 1, got %d", g.MaxConnectionsPerIP)
	}
	if g.MaxChunkSize < 8<<10 || g.MaxChunkSize > 1<<30 {
		bad("gateway.max_chunk_size", "want 8KiB..1GiB, got %s", g.MaxChunkSize)
	}

	cat := &c.Catalog
	checkListen("catalog.listen", cat.Listen)
	if cat.DSN != "" {
		if _, err := pgconn.ParseConfig(string(cat.DSN)); err != nil {
			// pgconn redacts the password in its message.
			bad("catalog.dsn", "not a Postgres connection string (postgres://user@host:port/db or host=… dbname=…): %v", err)
		}
	}
	if cat.Name == "" || strings.ContainsAny(cat.Name, "/?#%\x1f") || strings.TrimSpace(cat.Name) != cat.Name {
		bad("catalog.name", "want a name without '/', '?', '#', '%%' or surrounding spaces, got %q", cat.Name)
	}
	if cat.Schema == "" || len(cat.Schema) > 63 || strings.ContainsRune(cat.Schema, 0) {
		bad("catalog.schema", "want a Postgres schema name (1 to 63 bytes), got %q", cat.Schema)
	}
	if cat.DataPath != "" {
		if b, _, _ := strings.Cut(strings.TrimPrefix(cat.DataPath, "s3://"), "/"); !strings.HasPrefix(cat.DataPath, "s3://") || b == "" {
			bad("catalog.data_path", "want s3://bucket/prefix/, got %q", cat.DataPath)
		}
	}
	checkPositive("catalog.snapshot_ttl", cat.SnapshotTTL)
	checkPositive("catalog.vend_ttl", cat.VendTTL)
	checkPositive("catalog.request_timeout", cat.RequestTimeout)
	if cat.CleanupGrace < 0 {
		bad("catalog.cleanup_grace", "must not be negative, got %s", cat.CleanupGrace)
	}
	if cat.MaxConnectionsPerIP < 1 {
		bad("catalog.max_connections_per_ip", "must be at least 1, got %d", cat.MaxConnectionsPerIP)
	}

	o := &c.OAuth
	if o.TokenKey != "" {
		if _, err := creds.ParseKeySecret(string(o.TokenKey)); err != nil {
			bad("oauth.token_key", "want hex or base64 of at least 32 random bytes (`openssl rand -hex 32`)")
		}
	}
	checkPositive("oauth.token_ttl", o.TokenTTL)
	checkPositive("oauth.session_ttl", o.SessionTTL)
	if o.SessionTTL > 0 && o.SessionTTL < o.TokenTTL {
		bad("oauth.session_ttl", "must be at least oauth.token_ttl (%s), got %s", o.TokenTTL, o.SessionTTL)
	}
	if o.MaxFailuresPerClient < 1 {
		bad("oauth.max_failures_per_client", "must be at least 1, got %d", o.MaxFailuresPerClient)
	}
	if o.MaxFailuresPerIP < 1 {
		bad("oauth.max_failures_per_ip", "must be at least 1, got %d", o.MaxFailuresPerIP)
	}
	checkPositive("oauth.failure_window", o.FailureWindow)

	u := &c.Upstream
	if u.Endpoint != "" {
		if err := validURL(u.Endpoint, true); err != nil {
			bad("upstream.endpoint", "%v", err)
		}
	}
	checkRegion("upstream.region", u.Region)
	if (u.AccessKey == "") != (u.SecretKey == "") {
		if u.AccessKey == "" {
			bad("upstream.access_key", "required when upstream.secret_key is set")
		} else {
			bad("upstream.secret_key", "required when upstream.access_key is set")
		}
	}
	checkPositive("upstream.connect_timeout", u.ConnectTimeout)
	checkPositive("upstream.response_timeout", u.ResponseTimeout)

	r := &c.Root
	switch {
	case r.AccessKey == "" && r.SecretKey == "":
	case r.AccessKey == "":
		bad("root.access_key", "required when root.secret_key is set")
	case len(r.SecretKey) < creds.MinRootSecretLen:
		bad("root.secret_key", "is %d characters, need at least %d", len(r.SecretKey), creds.MinRootSecretLen)
	default:
		if _, err := creds.NewRoot(r.AccessKey, string(r.SecretKey)); err != nil {
			bad("root.access_key", "%s", creds.Message(err))
		}
	}

	m := &c.Mint
	seen := make(map[string]int)
	for i, k := range m.Keys {
		key := fmt.Sprintf("mint.keys[%d]", i)
		if prev, dup := seen[k.ID]; dup {
			bad(key+".id", "%q is also mint.keys[%d].id", k.ID, prev)
		}
		seen[k.ID] = i
		secret, err := creds.ParseKeySecret(string(k.Secret))
		if err != nil {
			bad(key+".secret", "%s", creds.Message(err))
			continue
		}
		if _, err := creds.NewKeyring(creds.Key{ID: k.ID, Secret: secret}); err != nil {
			bad(key+".id", "%s", creds.Message(err))
		}
	}
	checkPositive("mint.max_ttl", m.MaxTTL)
	checkPositive("mint.default_ttl", m.DefaultTTL)
	if m.MaxTTL > creds.MaxLifetime {
		bad("mint.max_ttl", "at most %s, got %s", creds.MaxLifetime, m.MaxTTL)
	}
	if m.DefaultTTL > m.MaxTTL && m.MaxTTL > 0 {
		bad("mint.default_ttl", "%s exceeds mint.max_ttl %s", m.DefaultTTL, m.MaxTTL)
	}

	checkPositive("governance.audit_retention", c.Governance.AuditRetention)
	if c.Governance.AuditBuffer < 1 {
		bad("governance.audit_buffer", "want at least 1, got %d", c.Governance.AuditBuffer)
	}

	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "want debug, info, warn or error, got %q", c.Log.Level)
	}
	switch c.Log.Format {
	case "json", "console":
	default:
		bad("log.format", "want json or console, got %q", c.Log.Format)
	}
	return errors.Join(errs...)
}

func validListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("want a port 0..65535, got %q", addr)
	}
	if host != "" && net.ParseIP(host) == nil && !validHostname(host) {
		return fmt.Errorf("bad host in %q", addr)
	}
	return nil
}

// validURL accepts http(s)://host[:port], with a path only if allowPath.
func validURL(s string, allowPath bool) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return fmt.Errorf("must be an http(s) URL, got %q", s)
	}
	if !allowPath && u.Path != "" && u.Path != "/" {
		return fmt.Errorf("must be an http(s) URL without a path, got %q", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("bad port in %q", s)
		}
	}
	return nil
}

func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// GatewayURL returns the URL clients use for the gateway: gateway.public_url
// if set, else http:// and gateway.listen, with an unspecified host (":9000",
// "0.0.0.0:9000", "[::]:9000") shown as 127.0.0.1.
func (c *Config) GatewayURL() string {
	if c.Gateway.PublicURL != "" {
		return strings.TrimSuffix(c.Gateway.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(c.Gateway.Listen)
	if err != nil {
		return "http://" + c.Gateway.Listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Keyring returns the minting keyring of mint.keys (the first key mints)
// with the TTL caps of mint.max_ttl and mint.default_ttl. It fails with
// Require's message when no key is configured.
func (c *Config) Keyring() (*creds.Keyring, error) {
	if err := c.Require("mint.keys"); err != nil {
		return nil, err
	}
	keys := make([]creds.Key, len(c.Mint.Keys))
	for i, k := range c.Mint.Keys {
		secret, err := creds.ParseKeySecret(string(k.Secret))
		if err != nil {
			return nil, &Error{Key: fmt.Sprintf("mint.keys[%d].secret", i), Msg: creds.Message(err)}
		}
		keys[i] = creds.Key{ID: k.ID, Secret: secret}
	}
	k, err := creds.NewKeyring(keys[0], keys[1:]...)
	if err != nil {
		return nil, &Error{Key: "mint.keys", Msg: creds.Message(err)}
	}
	k.MaxTTL, k.DefaultTTL = c.Mint.MaxTTL, c.Mint.DefaultTTL
	return k, nil
}

// RootCredential returns the operator root credential, or nil when none is
// configured.
func (c *Config) RootCredential() (*creds.Root, error) {
	if c.Root.AccessKey == "" && c.Root.SecretKey == "" {
		return nil, nil
	}
	r, err := creds.NewRoot(c.Root.AccessKey, string(c.Root.SecretKey))
	if err != nil {
		return nil, &Error{Key: "root", Msg: creds.Message(err)}
	}
	return r, nil
}

// TokenKey returns the decoded oauth.token_key, or nil when none is set.
func (c *Config) TokenKey() ([]byte, error) {
	if c.OAuth.TokenKey == "" {
		return nil, nil
	}
	k, err := creds.ParseKeySecret(string(c.OAuth.TokenKey))
	if err != nil {
		return nil, &Error{Key: "oauth.token_key", Msg: "want hex or base64 of at least 32 random bytes (`openssl rand -hex 32`)"}
	}
	return k, nil
}
