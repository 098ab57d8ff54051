package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// EnvPrefix starts every environment variable the configuration reads.
const EnvPrefix = "DUCKICELAKE_"

// EnvConfig names the config file when -config is not given.
const EnvConfig = EnvPrefix + "CONFIG"

// EnvPGDSN is also read for catalog.dsn, below DUCKICELAKE_CATALOG_DSN: it
// is the variable scripts/pg.sh and `duckicelake init` use.
const EnvPGDSN = EnvPrefix + "PG_DSN"

// setting is one configuration key and where it lives in a Config.
type setting struct {
	key    string            // TOML key, "gateway.listen"
	usage  string            // flag help
	secret bool              // no flag: command lines are world-readable
	hint   string            // how to obtain a value, for Require
	alias  string            // another environment variable, below EnvName(key)
	field  func(*Config) any // pointer to the field
}

func settings() []setting {
	return []setting{
		{key: "dev", usage: "development stack conveniences; never in production", field: func(c *Config) any { return &c.Dev }},
		{key: "gateway.listen", usage: "S3 gateway listen address", field: func(c *Config) any { return &c.Gateway.Listen }},
		{key: "gateway.public_url", usage: "URL clients reach the gateway at (default: from gateway.listen)", field: func(c *Config) any { return &c.Gateway.PublicURL }},
		{key: "gateway.region", usage: "SigV4 region clients sign for", field: func(c *Config) any { return &c.Gateway.Region }},
		{key: "gateway.virtual_host_domains", usage: "comma-separated base domains for virtual-hosted-style buckets", field: func(c *Config) any { return &c.Gateway.VirtualHostDomains }},
		{key: "gateway.trust_forwarded", usage: "honour X-Forwarded-Host/-Proto from a proxy in front", field: func(c *Config) any { return &c.Gateway.TrustForwarded }},
		{key: "gateway.header_read_timeout", usage: "time to read a request's headers", field: func(c *Config) any { return &c.Gateway.HeaderReadTimeout }},
		{key: "gateway.idle_timeout", usage: "keep-alive idle timeout", field: func(c *Config) any { return &c.Gateway.IdleTimeout }},
		{key: "gateway.shutdown_timeout", usage: "time in-flight requests get to finish on shutdown", field: func(c *Config) any { return &c.Gateway.ShutdownTimeout }},
		{key: "gateway.authorize_timeout", usage: "longest one request's Authorizer call may take before the request is denied", field: func(c *Config) any { return &c.Gateway.AuthorizeTimeout }},
		{key: "gateway.max_header_bytes", usage: "largest request line and headers", field: func(c *Config) any { return &c.Gateway.MaxHeaderBytes }},
		{key: "gateway.max_connections", usage: "most concurrent client connections", field: func(c *Config) any { return &c.Gateway.MaxConnections }},
		{key: "gateway.max_connections_per_ip", usage: "most concurrent connections from one client address (IPv6: one /64)", field: func(c *Config) any { return &c.Gateway.MaxConnectionsPerIP }},
		{key: "gateway.max_chunk_size", usage: "largest aws-chunked chunk accepted", field: func(c *Config) any { return &c.Gateway.MaxChunkSize }},
		{key: "catalog.listen", usage: "catalog, health and metrics listen address", field: func(c *Config) any { return &c.Catalog.Listen }},
		{key: "catalog.dsn", secret: true, alias: EnvPGDSN,
			hint:  "; scripts/pg.sh start prints one for a private cluster",
			field: func(c *Config) any { return &c.Catalog.DSN }},
		{key: "catalog.name", usage: "catalog name, the REST prefix of /v1/<name>/namespaces", field: func(c *Config) any { return &c.Catalog.Name }},
		{key: "catalog.schema", usage: "Postgres schema of the DuckLake catalog tables", field: func(c *Config) any { return &c.Catalog.Schema }},
		{key: "catalog.data_path", usage: "the catalog's data path, s3://bucket/prefix/ (checked against the catalog when set)", field: func(c *Config) any { return &c.Catalog.DataPath }},
		{key: "catalog.snapshot_ttl", usage: "longest a LoadTable may serve a snapshot id without asking Postgres", field: func(c *Config) any { return &c.Catalog.SnapshotTTL }},
		{key: "catalog.vend_ttl", usage: "lifetime of credentials vended with LoadTable", field: func(c *Config) any { return &c.Catalog.VendTTL }},
		{key: "catalog.cleanup_grace", usage: "how long files scheduled for deletion stay in storage before serve deletes them", field: func(c *Config) any { return &c.Catalog.CleanupGrace }},
		{key: "catalog.request_timeout", usage: "deadline of one catalog request (Postgres, Authorizer, materialisation)", field: func(c *Config) any { return &c.Catalog.RequestTimeout }},
		{key: "catalog.eager", usage: "follow DuckLake commits by LISTEN/NOTIFY and materialise them at once", field: func(c *Config) any { return &c.Catalog.Eager }},
		{key: "catalog.max_connections_per_ip", usage: "most concurrent connections from one client address (IPv6: one /64) on the catalog listener", field: func(c *Config) any { return &c.Catalog.MaxConnectionsPerIP }},
		{key: "upstream.endpoint", usage: "S3 backend URL, http(s)://host[:port]", field: func(c *Config) any { return &c.Upstream.Endpoint }},
		{key: "upstream.region", usage: "S3 backend region", field: func(c *Config) any { return &c.Upstream.Region }},
		{key: "upstream.access_key", usage: "S3 backend access key id", field: func(c *Config) any { return &c.Upstream.AccessKey }},
		{key: "upstream.secret_key", secret: true, field: func(c *Config) any { return &c.Upstream.SecretKey }},
		{key: "upstream.path_style", usage: "address the backend path-style", field: func(c *Config) any { return &c.Upstream.PathStyle }},
		{key: "upstream.connect_timeout", usage: "time to connect to the backend", field: func(c *Config) any { return &c.Upstream.ConnectTimeout }},
		{key: "upstream.response_timeout", usage: "time to wait for the backend's response headers", field: func(c *Config) any { return &c.Upstream.ResponseTimeout }},
		{key: "root.access_key", usage: "operator root access key id", field: func(c *Config) any { return &c.Root.AccessKey }},
		{key: "root.secret_key", secret: true, field: func(c *Config) any { return &c.Root.SecretKey }},
		{key: "mint.keys", secret: true,
			hint:  "; generate one with `duckicelake creds keygen` (e.g. DUCKICELAKE_MINT_KEYS=k1:<64 hex digits>)",
			field: func(c *Config) any { return &c.Mint.Keys }},
		{key: "mint.max_ttl", usage: "longest credential lifetime; longer requests are capped", field: func(c *Config) any { return &c.Mint.MaxTTL }},
		{key: "mint.default_ttl", usage: "credential lifetime when none is requested", field: func(c *Config) any { return &c.Mint.DefaultTTL }},
		{key: "oauth.clients", secret: true,
			hint:  " (id:secret|scopes[|roles][,…], e.g. DUCKICELAKE_OAUTH_CLIENTS='etl:<secret>|ns:sales:rw')",
			field: func(c *Config) any { return &c.OAuth.Clients }},
		{key: "oauth.token_key", secret: true,
			hint:  "; generate one with `openssl rand -hex 32`",
			field: func(c *Config) any { return &c.OAuth.TokenKey }},
		{key: "oauth.token_ttl", usage: "lifetime of the catalog's OAuth2 access tokens", field: func(c *Config) any { return &c.OAuth.TokenTTL }},
		{key: "oauth.session_ttl", usage: "longest a session lasts through token exchange before the client must authenticate again", field: func(c *Config) any { return &c.OAuth.SessionTTL }},
		{key: "oauth.max_failures_per_client", usage: "failed authentications a client id may make per oauth.failure_window before 429", field: func(c *Config) any { return &c.OAuth.MaxFailuresPerClient }},
		{key: "oauth.max_failures_per_ip", usage: "failed authentications a source address (IPv6: one /64) may make per oauth.failure_window before 429", field: func(c *Config) any { return &c.OAuth.MaxFailuresPerIP }},
		{key: "oauth.failure_window", usage: "window the token endpoint's failure limits refill over", field: func(c *Config) any { return &c.OAuth.FailureWindow }},
		{key: "governance.fail_closed", usage: "deny on governance errors in the cooperative tier too (default: serve unmasked, audited)", field: func(c *Config) any { return &c.Governance.FailClosed }},
		{key: "governance.agent_airtight", usage: "hold agent sessions to masked copies whenever a restriction applies", field: func(c *Config) any { return &c.Governance.AgentAirtight }},
		{key: "governance.audit_retention", usage: "how long the audit trail keeps rows in Postgres", field: func(c *Config) any { return &c.Governance.AuditRetention }},
		{key: "governance.audit_buffer", usage: "gateway audit events buffered for Postgres; the overflow is counted and logged", field: func(c *Config) any { return &c.Governance.AuditBuffer }},
		{key: "duckdb.memory_limit", usage: "memory limit of the embedded DuckDB that writes masked copies (\"2GB\"; empty: DuckDB's default)", field: func(c *Config) any { return &c.DuckDB.MemoryLimit }},
		{key: "duckdb.threads", usage: "worker threads of the embedded DuckDB that writes masked copies (0: one per core)", field: func(c *Config) any { return &c.DuckDB.Threads }},
		{key: "duckdb.extension_directory", usage: "directory of the DuckDB 1.5.5 extensions (httpfs, ducklake, postgres)", field: func(c *Config) any { return &c.DuckDB.ExtensionDirectory }},
		{key: "log.level", usage: "debug, info, warn or error", field: func(c *Config) any { return &c.Log.Level }},
		{key: "log.format", usage: "json or console", field: func(c *Config) any { return &c.Log.Format }},
	}
}

func lookupSetting(key string) (setting, bool) {
	for _, s := range settings() {
		if s.key == key {
			return s, true
		}
	}
	return setting{}, false
}

// EnvName returns the environment variable of a setting's TOML key.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Error is an invalid setting.
type Error struct {
	Key    string // TOML key, e.g. "upstream.endpoint"
	Source string // where the value came from (env var, flag, file), if known
	Msg    string
}

func (e *Error) Error() string {
	if e.Source != "" {
		return "config: " + e.Key + " (from " + e.Source + "): " + e.Msg
	}
	return "config: " + e.Key + ": " + e.Msg
}

// set parses text into the field ptr points to.
func set(ptr any, text string) error {
	switch p := ptr.(type) {
	case *string:
		*p = text
	case *Secret:
		*p = Secret(text)
	case *bool:
		v, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", text)
		}
		*p = v
	case *int:
		v, err := strconv.Atoi(text)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", text)
		}
		*p = v
	case *time.Duration:
		v, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("want a duration like \"90s\" or \"12h\", got %q", text)
		}
		*p = v
	case *ByteSize:
		return p.UnmarshalText([]byte(text))
	case *[]string:
		*p = nil
		for _, f := range strings.Split(text, ",") {
			if f = strings.TrimSpace(f); f != "" {
				*p = append(*p, f)
			}
		}
	case *[]MintKey:
		*p = nil
		for _, f := range strings.Split(text, ",") {
			id, secret, ok := strings.Cut(strings.TrimSpace(f), ":")
			if !ok {
				return errors.New("want id:secret[,id:secret…]")
			}
			*p = append(*p, MintKey{ID: id, Secret: Secret(secret)})
		}
	default:
		panic(fmt.Sprintf("config: no parser for %T", ptr))
	}
	return nil
}

// show formats a field's value for flag help; secrets are never shown.
func show(ptr any) string {
	switch p := ptr.(type) {
	case *string:
		return *p
	case *[]string:
		return strings.Join(*p, ",")
	case *time.Duration:
		return p.String()
	case *ByteSize:
		return p.String()
	case *bool:
		return strconv.FormatBool(*p)
	case *int:
		return strconv.Itoa(*p)
	}
	return ""
}

// Flags are the configuration flags of one flag.FlagSet. Register them with
// AddFlags or AddConfigFlag, parse the FlagSet, then call Load.
type Flags struct {
	path string
	set  []flagValue // in command-line order
}

type flagValue struct {
	key   string
	value string
}

// AddConfigFlag registers only -config on fs, for commands that read the
// configuration but are not configured by flags themselves.
func AddConfigFlag(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.path, "config", "", "config file (TOML; env "+EnvConfig+")")
	return f
}

// AddFlags registers -config and a flag for every setting except secrets.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := AddConfigFlag(fs)
	def := Default()
	for _, s := range settings() {
		if s.secret {
			continue
		}
		usage := s.usage + " (env " + EnvName(s.key)
		if v := show(s.field(def)); v != "" {
			usage += ", default " + v
		}
		usage += ")"
		parse := func(text string) error {
			// Check the syntax now, so the flag package reports a bad value
			// with the flag's name; it is applied in Load, after the env.
			if err := set(s.field(Default()), text); err != nil {
				return err
			}
			f.set = append(f.set, flagValue{s.key, text})
			return nil
		}
		if _, ok := s.field(def).(*bool); ok {
			fs.BoolFunc(s.key, usage, parse)
		} else {
			fs.Func(s.key, usage, parse)
		}
	}
	return f
}

// Load returns the configuration from defaults, the config file, the
// environment (lookupEnv, nil means os.LookupEnv) and the flags parsed so
// far, in increasing precedence, validated.
func (f *Flags) Load(lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	env := func(name string) string {
		v, _ := lookupEnv(name)
		return v
	}
	c := Default()
	source := make(map[string]string)

	path := f.path
	if path == "" {
		path = env(EnvConfig)
	}
	if path != "" {
		if err := loadFile(c, path, source); err != nil {
			return nil, err
		}
	}
	for _, s := range settings() {
		name := EnvName(s.key)
		v := env(name)
		if v == "" && s.alias != "" {
			name = s.alias
			v = env(name)
		}
		if v == "" {
			continue
		}
		if err := set(s.field(c), v); err != nil {
			return nil, &Error{Key: s.key, Source: name, Msg: err.Error()}
		}
		source[s.key] = name
	}
	for _, fv := range f.set {
		s, _ := lookupSetting(fv.key)
		if err := set(s.field(c), fv.value); err != nil {
			return nil, &Error{Key: s.key, Source: "-" + s.key, Msg: err.Error()}
		}
		source[s.key] = "-" + s.key
	}
	if err := c.validate(source); err != nil {
		return nil, err
	}
	return c, nil
}

func loadFile(c *Config, path string, source map[string]string) error {
	md, err := toml.DecodeFile(path, c)
	if err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		var errs []error
		for _, k := range undecoded {
			errs = append(errs, &Error{Key: k.String(), Source: path, Msg: "unknown key"})
		}
		return errors.Join(errs...)
	}
	for _, s := range settings() {
		parts := strings.Split(s.key, ".")
		if !md.IsDefined(parts...) {
			continue
		}
		source[s.key] = path
		// TOML integers decode into a time.Duration as nanoseconds:
		// "idle_timeout = 60" would be 60ns. Insist on "60s".
		if _, ok := s.field(c).(*time.Duration); ok && md.Type(parts...) != "String" {
			return &Error{Key: s.key, Source: path, Msg: `want a duration string like "90s" or "12h"`}
		}
	}
	return nil
}

// Load parses args (the flags of every setting, and -config) and returns the
// validated configuration and the FlagSet, whose Args are the arguments
// after the flags. The FlagSet prints nothing: a flag error comes back as
// err (flag.ErrHelp for -h); to show usage, SetOutput and call Usage.
// lookupEnv nil means os.LookupEnv.
func Load(args []string, lookupEnv func(string) (string, bool)) (*Config, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("duckicelake", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	c, err := f.Load(lookupEnv)
	return c, fs, err
}

// Require reports, naming where to set it, the first of the given settings
// (TOML keys) that is empty.
func (c *Config) Require(keys ...string) error {
	for _, key := range keys {
		s, ok := lookupSetting(key)
		if !ok {
			return fmt.Errorf("config: Require: unknown key %q", key)
		}
		if !isEmpty(s.field(c)) {
			continue
		}
		where := EnvName(key)
		if s.alias != "" {
			where += " (or " + s.alias + ")"
		}
		if !s.secret {
			where += ", -" + key
		}
		where += " or " + key + " in the config file"
		if key == "mint.keys" {
			where = EnvName(key) + "=id:secret or [[mint.keys]] in the config file"
		}
		return &Error{Key: key, Msg: "required; set " + where + s.hint}
	}
	return nil
}

func isEmpty(ptr any) bool {
	switch p := ptr.(type) {
	case *string:
		return *p == ""
	case *Secret:
		return *p == ""
	case *[]string:
		return len(*p) == 0
	case *[]MintKey:
		return len(*p) == 0
	}
	return false // numbers, durations and booleans always have a value
}
