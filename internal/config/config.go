package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration. Field comments name the TOML key.
type Config struct {
	Dev        bool       `toml:"dev"` // development stack; never in production
	Gateway    Gateway    `toml:"gateway"`
	Catalog    Catalog    `toml:"catalog"`
	Upstream   Upstream   `toml:"upstream"`
	Root       Root       `toml:"root"`
	Mint       Mint       `toml:"mint"`
	OAuth      OAuth      `toml:"oauth"`
	Governance Governance `toml:"governance"`
	DuckDB     DuckDB     `toml:"duckdb"`
	Log        Log        `toml:"log"`
}

// Governance configures policy enforcement and the audit trail.
type Governance struct {
	// FailClosed makes the cooperative tier (metadata stamping, masking
	// views) deny on a governance error instead of serving unmasked with
	// an audit record. Vending, signing, the gateway and the airtight tier
	// always fail closed.
	FailClosed bool `toml:"fail_closed"`
	// AgentAirtight holds agent sessions to the airtight tier (masked
	// copies only) whenever a restriction applies to them.
	AgentAirtight bool `toml:"agent_airtight"`
	// AuditRetention is how long audit trail rows are kept in Postgres.
	AuditRetention time.Duration `toml:"audit_retention"`
	// AuditBuffer bounds the gateway's audit events waiting to be written
	// to Postgres; what overflows is counted and logged.
	AuditBuffer int `toml:"audit_buffer"`
}

// DuckDB configures the embedded DuckDB (policy validation, exports,
// seeding).
type DuckDB struct {
	// ExtensionDirectory holds the DuckDB 1.5.5 extensions (httpfs,
	// ducklake, postgres) as DuckDB installs them
	// (<dir>/v1.5.5/<platform>/<name>.duckdb_extension). Empty: DuckDB's
	// default (~/.duckdb/extensions), where INSTALL puts them.
	ExtensionDirectory string `toml:"extension_directory"`
	// MemoryLimit bounds the memory of the DuckDB that writes masked copies
	// ("2GB"; empty: DuckDB's default, 80% of RAM). An export streams
	// through it and spills, so a limit far below the table's size is safe.
	MemoryLimit string `toml:"memory_limit"`
	// Threads bounds its worker threads (0: one per core).
	Threads int `toml:"threads"`
}

// Gateway configures the S3 listener.
type Gateway struct {
	Listen string `toml:"listen"`
	// PublicURL is how clients reach the gateway (behind a proxy or NAT);
	// empty means derived from Listen, see Config.GatewayURL.
	PublicURL string `toml:"public_url"`
	Region    string `toml:"region"` // the SigV4 region clients sign for
	// VirtualHostDomains are the base domains of virtual-hosted-style
	// requests: with "s3.example.com", Host "lake.s3.example.com" names
	// bucket "lake". Empty: path style only.
	VirtualHostDomains []string `toml:"virtual_host_domains"`
	// TrustForwarded honours X-Forwarded-Host and X-Forwarded-Proto from a
	// proxy in front of the gateway. Only behind a proxy that sets them.
	TrustForwarded    bool          `toml:"trust_forwarded"`
	HeaderReadTimeout time.Duration `toml:"header_read_timeout"`
	IdleTimeout       time.Duration `toml:"idle_timeout"`
	ShutdownTimeout   time.Duration `toml:"shutdown_timeout"` // how long in-flight requests may finish
	// AuthorizeTimeout bounds one request's Authorizer call (the policy
	// store may be Postgres); past it the request is denied, fail closed.
	AuthorizeTimeout time.Duration `toml:"authorize_timeout"`
	MaxHeaderBytes   ByteSize      `toml:"max_header_bytes"` // request line and headers
	MaxConnections   int           `toml:"max_connections"`
	// MaxConnectionsPerIP bounds the connections one client address (an
	// IPv6 one by its /64) may hold open; behind a proxy all of them
	// come from the proxy's address.
	MaxConnectionsPerIP int      `toml:"max_connections_per_ip"`
	MaxChunkSize        ByteSize `toml:"max_chunk_size"` // largest aws-chunked chunk accepted
}

// Catalog configures the catalog listener and the Iceberg REST catalog on
// the DuckLake metastore. Without DSN, serve runs the gateway only.
type Catalog struct {
	Listen string `toml:"listen"`
	// DSN is the Postgres connection string of the DuckLake catalog
	// database (URL or libpq key=value form); it may hold a password.
	DSN Secret `toml:"dsn"`
	// Name is the catalog's name and REST prefix (/v1/<name>/namespaces).
	Name string `toml:"name"`
	// Schema is the Postgres schema of the ducklake_* tables.
	Schema string `toml:"schema"`
	// DataPath is where DuckDB writes the catalog's Parquet files
	// ("s3://lake/data/"): what `duckicelake init` stores; when set, serve
	// refuses a catalog whose stored data path differs.
	DataPath string `toml:"data_path"`
	// SnapshotTTL bounds how long LoadTable may serve a snapshot id before
	// asking Postgres again, when no NOTIFY announced a newer one.
	SnapshotTTL time.Duration `toml:"snapshot_ttl"`
	// VendTTL is the lifetime of credentials vended with LoadTable (capped
	// by mint.max_ttl).
	VendTTL time.Duration `toml:"vend_ttl"`
	// CleanupGrace is how long a file DuckLake scheduled for deletion
	// (ducklake_files_scheduled_for_deletion: expired snapshots' files,
	// engines' manifest lists and manifests once their commit is durable)
	// stays in storage before serve deletes it; 0 deletes it at the next
	// sweep.
	CleanupGrace time.Duration `toml:"cleanup_grace"`
	// RequestTimeout bounds one catalog request: every Postgres query, the
	// Authorizer and materialisation run under a context with this
	// deadline, also cancelled when the client disconnects.
	RequestTimeout time.Duration `toml:"request_timeout"`
	// Eager follows DuckLake commits by LISTEN/NOTIFY: every process learns
	// of a new snapshot at once, and one elected process materialises the
	// changed tables before anyone asks.
	Eager bool `toml:"eager"`
	// MaxConnectionsPerIP bounds the concurrent connections from one client
	// address (IPv6: one /64) on the catalog listener.
	MaxConnectionsPerIP int `toml:"max_connections_per_ip"`
}

// OAuth configures the catalog's OAuth2 token endpoint.
type OAuth struct {
	// Clients may exchange client credentials for access tokens:
	// "id:secret|scopes[|roles][,…]" with space-separated scopes ("*" or
	// "ns:<namespace>:<r|w|rw|*>") and roles.
	Clients Secret `toml:"clients"`
	// TokenKey signs the catalog's access tokens: hex or base64 of at least
	// 32 random bytes.
	TokenKey Secret        `toml:"token_key"`
	TokenTTL time.Duration `toml:"token_ttl"`
	// SessionTTL bounds a session: token exchange (refresh) never yields a
	// token valid longer than this after the client's secret was checked.
	SessionTTL time.Duration `toml:"session_ttl"`
	// MaxFailuresPerClient and MaxFailuresPerIP are the failed
	// authentications per FailureWindow a client id, and a source address,
	// may make; beyond them the token endpoint answers 429.
	MaxFailuresPerClient int           `toml:"max_failures_per_client"`
	MaxFailuresPerIP     int           `toml:"max_failures_per_ip"`
	FailureWindow        time.Duration `toml:"failure_window"`
}

// Upstream is the S3 backend behind the gateway.
type Upstream struct {
	Endpoint  string `toml:"endpoint"` // http(s)://host[:port]
	Region    string `toml:"region"`
	AccessKey string `toml:"access_key"`
	SecretKey Secret `toml:"secret_key"`
	PathStyle bool   `toml:"path_style"`
	// ConnectTimeout bounds dialling the upstream; ResponseTimeout bounds the
	// wait for its response headers once the request is sent.
	ConnectTimeout  time.Duration `toml:"connect_timeout"`
	ResponseTimeout time.Duration `toml:"response_timeout"`
}

// Root is the operator's static credential for administration.
type Root struct {
	AccessKey string `toml:"access_key"`
	SecretKey Secret `toml:"secret_key"`
}

// Mint configures credential minting.
type Mint struct {
	// Keys are the minting keys; the first mints, all verify.
	Keys       []MintKey     `toml:"keys"`
	MaxTTL     time.Duration `toml:"max_ttl"`
	DefaultTTL time.Duration `toml:"default_ttl"`
}

// MintKey is a named minting key; Secret is hex or base64 of at least 32
// bytes (creds.ParseKeySecret).
type MintKey struct {
	ID     string `toml:"id"`
	Secret Secret `toml:"secret"`
}

// Log configures logging.
type Log struct {
	Level  string `toml:"level"`  // debug, info, warn, error
	Format string `toml:"format"` // json, console
}

// Secret is a configuration string that must not be printed: fmt and JSON
// show it as "[redacted]". Use string(s) for the value.
type Secret string

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// MarshalText redacts the secret in JSON and other text encodings.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ByteSize is a size in bytes; as text it may carry a KiB, MiB or GiB suffix.
type ByteSize int64

// UnmarshalText parses "32768", "16KiB", "16MiB", "1GiB".
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return fmt.Errorf("invalid size %q (want bytes, optionally with KiB, MiB or GiB)", text)
	}
	*b = ByteSize(n * mult)
	return nil
}

// String formats the size with the largest exact binary unit.
func (b ByteSize) String() string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.mult == 0 {
			return strconv.FormatInt(int64(b)/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// Default returns the built-in defaults: a gateway on 127.0.0.1:9000 and a
// catalog listener on 127.0.0.1:8181, no upstream, no root credential, no
// minting keys and no catalog database.
func Default() *Config {
	return &Config{
		Gateway: Gateway{
			Listen:              "127.0.0.1:9000",
			Region:              "us-east-1",
			HeaderReadTimeout:   10 * time.Second,
			IdleTimeout:         60 * time.Second,
			ShutdownTimeout:     30 * time.Second,
			AuthorizeTimeout:    5 * time.Second,
			MaxHeaderBytes:      16 << 10,
			MaxConnections:      4096,
			MaxConnectionsPerIP: 1024,
			MaxChunkSize:        16 << 20,
		},
		Catalog: Catalog{
			Listen:         "127.0.0.1:8181",
			Name:           "lake",
			Schema:         "public",
			SnapshotTTL:    100 * time.Millisecond,
			VendTTL:        time.Hour,
			CleanupGrace:   time.Hour,
			RequestTimeout: 30 * time.Second,
			Eager:          true,

			MaxConnectionsPerIP: 256,
		},
		Upstream: Upstream{
			Region:          "us-east-1",
			PathStyle:       true,
			ConnectTimeout:  5 * time.Second,
			ResponseTimeout: 60 * time.Second,
		},
		Mint: Mint{MaxTTL: 12 * time.Hour, DefaultTTL: time.Hour},
		OAuth: OAuth{TokenTTL: time.Hour, SessionTTL: 12 * time.Hour,
			MaxFailuresPerClient: 10, MaxFailuresPerIP: 50, FailureWindow: time.Minute},
		Governance: Governance{AgentAirtight: true, AuditRetention: 90 * 24 * time.Hour, AuditBuffer: 65536},
		Log:        Log{Level: "info", Format: "json"},
	}
}
