package config

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

const testKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "duckicelake.toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
	c := mustLoad(t, nil, nil)
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("Load with nothing set = %+v, want the defaults", c)
	}
}

// The example file documents every setting with its default value.
func TestExampleFile(t *testing.T) {
	const path = "../../duckicelake.example.toml"
	c := mustLoad(t, []string{"-config", path}, nil)
	if len(c.Gateway.VirtualHostDomains) == 0 {
		c.Gateway.VirtualHostDomains = nil // [] in the file
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("example file values differ from the defaults:\n got %+v\nwant %+v", c, Default())
	}
	var m map[string]any
	md, err := toml.DecodeFile(path, &m)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings() {
		if s.key == "mint.keys" {
			continue // no default key; the file shows it commented out
		}
		if !md.IsDefined(strings.Split(s.key, ".")...) {
			t.Errorf("example file lacks %s", s.key)
		}
	}
	text, _ := os.ReadFile(path)
	for _, want := range []string{"[[mint.keys]]", "DUCKICELAKE_MINT_KEYS", "flags", "environment", "defaults"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("example file does not mention %q", want)
		}
	}
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "[gateway]\nlisten = \"127.0.0.1:1001\"\nidle_timeout = \"11s\"\n")
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		listen string
		idle   time.Duration
	}{
		{"defaults", nil, nil, "127.0.0.1:9000", 60 * time.Second},
		{"file", []string{"-config", file}, nil, "127.0.0.1:1001", 11 * time.Second},
		{"file from env", nil, map[string]string{"DUCKICELAKE_CONFIG": file}, "127.0.0.1:1001", 11 * time.Second},
		{"env over file", []string{"-config", file}, map[string]string{"DUCKICELAKE_GATEWAY_LISTEN": "127.0.0.1:1002"}, "127.0.0.1:1002", 11 * time.Second},
		{"empty env is unset", []string{"-config", file}, map[string]string{"DUCKICELAKE_GATEWAY_LISTEN": ""}, "127.0.0.1:1001", 11 * time.Second},
		{"flag over env over file", []string{"-config", file, "-gateway.listen", "127.0.0.1:1003"},
			map[string]string{"DUCKICELAKE_GATEWAY_LISTEN": "127.0.0.1:1002", "DUCKICELAKE_GATEWAY_IDLE_TIMEOUT": "12s"}, "127.0.0.1:1003", 12 * time.Second},
		{"flag over default", []string{"--gateway.idle_timeout=13s"}, nil, "127.0.0.1:9000", 13 * time.Second},
		{"last flag wins", []string{"-gateway.listen", "127.0.0.1:1", "-gateway.listen", "127.0.0.1:2"}, nil, "127.0.0.1:2", 60 * time.Second},
		{"-config over DUCKICELAKE_CONFIG", []string{"-config", file}, map[string]string{"DUCKICELAKE_CONFIG": "/nonexistent.toml"}, "127.0.0.1:1001", 11 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.args, tt.env)
			if c.Gateway.Listen != tt.listen || c.Gateway.IdleTimeout != tt.idle {
				t.Errorf("listen %s idle %s, want %s %s", c.Gateway.Listen, c.Gateway.IdleTimeout, tt.listen, tt.idle)
			}
		})
	}
}

// TestEverySetting sets every setting through each source and reads it back.
func TestEverySetting(t *testing.T) {
	values := map[string]string{
		"dev":                            "true",
		"gateway.listen":                 "0.0.0.0:9100",
		"gateway.public_url":             "https://s3.example.com",
		"gateway.region":                 "eu-central-1",
		"gateway.virtual_host_domains":   "s3.example.com, s3.internal",
		"gateway.trust_forwarded":        "true",
		"gateway.header_read_timeout":    "3s",
		"gateway.idle_timeout":           "4s",
		"gateway.shutdown_timeout":       "5s",
		"gateway.authorize_timeout":      "2s",
		"gateway.max_header_bytes":       "32KiB",
		"gateway.max_connections":        "77",
		"gateway.max_connections_per_ip": "7",
		"gateway.max_chunk_size":         "1MiB",
		"catalog.listen":                 "[::1]:8282",
		"catalog.dsn":                    "postgres://dl:pw@db.internal:5432/ducklake",
		"catalog.name":                   "warehouse",
		"catalog.schema":                 "lake_meta",
		"catalog.data_path":              "s3://lake/data/",
		"catalog.snapshot_ttl":           "250ms",
		"catalog.vend_ttl":               "30m",
		"catalog.cleanup_grace":          "2h",
		"catalog.request_timeout":        "45s",
		"catalog.eager":                  "false",
		"catalog.max_connections_per_ip": "9",
		"oauth.clients":                  "etl:pw|ns:sales:rw|writer,admin:pw2|*",
		"oauth.token_key":                testKeyHex,
		"oauth.token_ttl":                "2h",
		"oauth.session_ttl":              "5h",
		"oauth.max_failures_per_client":  "3",
		"oauth.max_failures_per_ip":      "4",
		"oauth.failure_window":           "2m",
		"upstream.endpoint":              "http://127.0.0.1:7070",
		"upstream.region":                "fsn1",
		"upstream.access_key":            "backendkey",
		"upstream.secret_key":            "backend-secret",
		"upstream.path_style":            "false",
		"upstream.connect_timeout":       "6s",
		"upstream.response_timeout":      "7s",
		"root.access_key":                "ROOTADMIN",
		"root.secret_key":                strings.Repeat("r", 40),
		"mint.keys":                      "new:" + testKeyHex + ",old:base64:" + strings.Repeat("A", 43),
		"mint.max_ttl":                   "24h",
		"mint.default_ttl":               "2h",
		"governance.fail_closed":         "true",
		"governance.agent_airtight":      "false",
		"governance.audit_retention":     "240h",
		"governance.audit_buffer":        "1024",
		"duckdb.extension_directory":     "/opt/duckdb/extensions",
		"duckdb.memory_limit":            "512MB",
		"duckdb.threads":                 "3",
		"log.level":                      "debug",
		"log.format":                     "console",
	}
	want := &Config{
		Dev: true,
		Gateway: Gateway{Listen: "0.0.0.0:9100", PublicURL: "https://s3.example.com", Region: "eu-central-1",
			VirtualHostDomains: []string{"s3.example.com", "s3.internal"}, TrustForwarded: true,
			HeaderReadTimeout: 3 * time.Second, IdleTimeout: 4 * time.Second, ShutdownTimeout: 5 * time.Second,
			AuthorizeTimeout: 2 * time.Second, MaxHeaderBytes: 32 << 10, MaxConnections: 77, MaxConnectionsPerIP: 7, MaxChunkSize: 1 << 20},
		Catalog: Catalog{Listen: "[::1]:8282", DSN: "postgres://dl:pw@db.internal:5432/ducklake", Name: "warehouse",
			Schema: "lake_meta", DataPath: "s3://lake/data/", SnapshotTTL: 250 * time.Millisecond, VendTTL: 30 * time.Minute,
			CleanupGrace: 2 * time.Hour, RequestTimeout: 45 * time.Second, MaxConnectionsPerIP: 9},
		OAuth: OAuth{Clients: "etl:pw|ns:sales:rw|writer,admin:pw2|*", TokenKey: testKeyHex, TokenTTL: 2 * time.Hour,
			SessionTTL: 5 * time.Hour, MaxFailuresPerClient: 3, MaxFailuresPerIP: 4, FailureWindow: 2 * time.Minute},
		Upstream: Upstream{Endpoint: "http://127.0.0.1:7070", Region: "fsn1", AccessKey: "backendkey", SecretKey: "backend-secret",
			PathStyle: false, ConnectTimeout: 6 * time.Second, ResponseTimeout: 7 * time.Second},
		Root: Root{AccessKey: "ROOTADMIN", SecretKey: Secret(strings.Repeat("r", 40))},
		Mint: Mint{Keys: []MintKey{{"new", testKeyHex}, {"old", Secret("base64:" + strings.Repeat("A", 43))}},
			MaxTTL: 24 * time.Hour, DefaultTTL: 2 * time.Hour},
		Governance: Governance{FailClosed: true, AgentAirtight: false, AuditRetention: 240 * time.Hour, AuditBuffer: 1024},
		DuckDB:     DuckDB{ExtensionDirectory: "/opt/duckdb/extensions", MemoryLimit: "512MB", Threads: 3},
		Log:        Log{Level: "debug", Format: "console"},
	}
	if len(values) != len(settings()) {
		t.Fatalf("test covers %d settings, there are %d", len(values), len(settings()))
	}

	t.Run("env", func(t *testing.T) {
		env := make(map[string]string)
		for k, v := range values {
			env[EnvName(k)] = v
		}
		c := mustLoad(t, nil, env)
		if !reflect.DeepEqual(c, want) {
			t.Errorf("got  %+v\nwant %+v", c, want)
		}
	})
	t.Run("flags and env for secrets", func(t *testing.T) {
		var args []string
		env := make(map[string]string)
		for _, s := range settings() {
			if s.secret {
				env[EnvName(s.key)] = values[s.key]
				continue
			}
			args = append(args, "-"+s.key+"="+values[s.key])
		}
		c := mustLoad(t, args, env)
		if !reflect.DeepEqual(c, want) {
			t.Errorf("got  %+v\nwant %+v", c, want)
		}
	})
	t.Run("file", func(t *testing.T) {
		file := writeFile(t, `dev = true
[gateway]
listen = "0.0.0.0:9100"
public_url = "https://s3.example.com"
region = "eu-central-1"
virtual_host_domains = ["s3.example.com", "s3.internal"]
trust_forwarded = true
header_read_timeout = "3s"
idle_timeout = "4s"
shutdown_timeout = "5s"
authorize_timeout = "2s"
max_header_bytes = 32768
max_connections = 77
max_connections_per_ip = 7
max_chunk_size = "1MiB"
[catalog]
listen = "[::1]:8282"
dsn = "postgres://dl:pw@db.internal:5432/ducklake"
name = "warehouse"
schema = "lake_meta"
data_path = "s3://lake/data/"
snapshot_ttl = "250ms"
vend_ttl = "30m"
cleanup_grace = "2h"
request_timeout = "45s"
eager = false
max_connections_per_ip = 9
[oauth]
clients = "etl:pw|ns:sales:rw|writer,admin:pw2|*"
token_key = "`+testKeyHex+`"
token_ttl = "2h"
session_ttl = "5h"
max_failures_per_client = 3
max_failures_per_ip = 4
failure_window = "2m"
[upstream]
endpoint = "http://127.0.0.1:7070"
region = "fsn1"
access_key = "backendkey"
secret_key = "backend-secret"
path_style = false
connect_timeout = "6s"
response_timeout = "7s"
[root]
access_key = "ROOTADMIN"
secret_key = "`+strings.Repeat("r", 40)+`"
[mint]
max_ttl = "24h"
default_ttl = "2h"
[[mint.keys]]
id = "new"
secret = "`+testKeyHex+`"
[[mint.keys]]
id = "old"
secret = "base64:`+strings.Repeat("A", 43)+`"
[governance]
fail_closed = true
agent_airtight = false
audit_retention = "240h"
audit_buffer = 1024
[duckdb]
extension_directory = "/opt/duckdb/extensions"
memory_limit = "512MB"
threads = 3
[log]
level = "debug"
format = "console"
`)
		c := mustLoad(t, []string{"-config", file}, nil)
		if !reflect.DeepEqual(c, want) {
			t.Errorf("got  %+v\nwant %+v", c, want)
		}
	})
}

func TestSecretsHaveNoFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	AddFlags(fs)
	for _, name := range []string{"upstream.secret_key", "root.secret_key", "mint.keys", "catalog.dsn", "oauth.clients", "oauth.token_key"} {
		if fs.Lookup(name) != nil {
			t.Errorf("secret %s has a flag", name)
		}
	}
	for _, name := range []string{"config", "gateway.listen", "upstream.endpoint", "dev"} {
		if fs.Lookup(name) == nil {
			t.Errorf("no flag -%s", name)
		}
	}
	if f := fs.Lookup("gateway.listen"); !strings.Contains(f.Usage, "DUCKICELAKE_GATEWAY_LISTEN") || !strings.Contains(f.Usage, "default 127.0.0.1:9000") {
		t.Errorf("usage %q names neither env nor default", f.Usage)
	}
	// A bare boolean flag means true.
	c, _, err := Load([]string{"-dev", "-upstream.path_style=false"}, testsupport.LookupEnv(nil))
	if err != nil || !c.Dev || c.Upstream.PathStyle {
		t.Errorf("dev=%v path_style=%v err=%v", c != nil && c.Dev, c != nil && c.Upstream.PathStyle, err)
	}
}

// TestValidation: every invalid value fails with an error naming its key and
// the source it came from.
func TestValidation(t *testing.T) {
	tests := []struct {
		env  map[string]string
		file string
		key  string // the error must start "config: <key>"
		msg  string
	}{
		{env: map[string]string{"DUCKICELAKE_UPSTREAM_ENDPOINT": "foo"}, key: "upstream.endpoint (from DUCKICELAKE_UPSTREAM_ENDPOINT)", msg: `must be an http(s) URL, got "foo"`},
		{file: "[upstream]\nendpoint = \"ftp://x\"", key: "upstream.endpoint", msg: "must be an http(s) URL"},
		{file: "[upstream]\nendpoint = \"http://\"", key: "upstream.endpoint", msg: "must be an http(s) URL"},
		{file: "[upstream]\nendpoint = \"http://u:p@host\"", key: "upstream.endpoint", msg: "must be an http(s) URL"},
		{file: "[upstream]\nendpoint = \"http://host:99999\"", key: "upstream.endpoint", msg: "bad port"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_LISTEN": "9000"}, key: "gateway.listen", msg: "want host:port"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_LISTEN": "127.0.0.1:http"}, key: "gateway.listen", msg: "want a port"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_LISTEN": "bad host!:1"}, key: "catalog.listen", msg: "bad host"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_PUBLIC_URL": "http://gw.example.com/prefix"}, key: "gateway.public_url", msg: "without a path"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_REGION": "US East"}, key: "gateway.region", msg: "want a region"},
		{env: map[string]string{"DUCKICELAKE_UPSTREAM_REGION": ""}, file: "[upstream]\nregion = \"\"", key: "upstream.region", msg: "want a region"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_VIRTUAL_HOST_DOMAINS": "s3.example.com,https://x"}, key: "gateway.virtual_host_domains", msg: `"https://x"`},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_HEADER_READ_TIMEOUT": "0s"}, key: "gateway.header_read_timeout", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_IDLE_TIMEOUT": "-1s"}, key: "gateway.idle_timeout", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_IDLE_TIMEOUT": "soon"}, key: "gateway.idle_timeout (from DUCKICELAKE_GATEWAY_IDLE_TIMEOUT)", msg: "want a duration"},
		{file: "[gateway]\nidle_timeout = 60", key: "gateway.idle_timeout", msg: "want a duration string"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_SHUTDOWN_TIMEOUT": "0s"}, key: "gateway.shutdown_timeout", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_MAX_HEADER_BYTES": "1KiB"}, key: "gateway.max_header_bytes", msg: "want 4KiB..1MiB, got 1KiB"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_MAX_HEADER_BYTES": "lots"}, key: "gateway.max_header_bytes", msg: "invalid size"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_MAX_CONNECTIONS": "0"}, key: "gateway.max_connections", msg: "at least 1"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_MAX_CONNECTIONS": "many"}, key: "gateway.max_connections", msg: "want an integer"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_MAX_CONNECTIONS_PER_IP": "0"}, key: "gateway.max_connections_per_ip", msg: "at least 1"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_MAX_CHUNK_SIZE": "2GiB"}, key: "gateway.max_chunk_size", msg: "want 8KiB..1GiB"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_TRUST_FORWARDED": "yes please"}, key: "gateway.trust_forwarded", msg: "want true or false"},
		{env: map[string]string{"DUCKICELAKE_UPSTREAM_ACCESS_KEY": "k"}, key: "upstream.secret_key", msg: "required when upstream.access_key"},
		{env: map[string]string{"DUCKICELAKE_UPSTREAM_SECRET_KEY": "s"}, key: "upstream.access_key", msg: "required when upstream.secret_key"},
		{env: map[string]string{"DUCKICELAKE_UPSTREAM_CONNECT_TIMEOUT": "0s"}, key: "upstream.connect_timeout", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_UPSTREAM_RESPONSE_TIMEOUT": "0s"}, key: "upstream.response_timeout", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_ROOT_ACCESS_KEY": "ROOT", "DUCKICELAKE_ROOT_SECRET_KEY": "short"}, key: "root.secret_key", msg: "need at least 32"},
		{env: map[string]string{"DUCKICELAKE_ROOT_SECRET_KEY": strings.Repeat("s", 32)}, key: "root.access_key", msg: "required when root.secret_key"},
		{env: map[string]string{"DUCKICELAKE_ROOT_ACCESS_KEY": "ROOT"}, key: "root.secret_key", msg: "need at least 32"},
		{env: map[string]string{"DUCKICELAKE_ROOT_ACCESS_KEY": "ROOT-1", "DUCKICELAKE_ROOT_SECRET_KEY": strings.Repeat("s", 32)}, key: "root.access_key", msg: "letters and digits"},
		{env: map[string]string{"DUCKICELAKE_ROOT_ACCESS_KEY": "DILAAAAAAAAAAAAAAAAA", "DUCKICELAKE_ROOT_SECRET_KEY": strings.Repeat("s", 32)}, key: "root.access_key", msg: "shape of a minted key"},
		{env: map[string]string{"DUCKICELAKE_MINT_KEYS": "k1:" + testKeyHex[:62]}, key: "mint.keys[0].secret", msg: "31 bytes, need at least 32"},
		{env: map[string]string{"DUCKICELAKE_MINT_KEYS": "k1:" + testKeyHex + ",k2:nothex!"}, key: "mint.keys[1].secret", msg: "neither hex nor base64"},
		{env: map[string]string{"DUCKICELAKE_MINT_KEYS": "k1:" + testKeyHex + ",k1:" + testKeyHex}, key: "mint.keys[1].id", msg: `"k1" is also mint.keys[0].id`},
		{env: map[string]string{"DUCKICELAKE_MINT_KEYS": "bad id:" + testKeyHex}, key: "mint.keys[0].id", msg: "key id"},
		{env: map[string]string{"DUCKICELAKE_MINT_KEYS": testKeyHex}, key: "mint.keys (from DUCKICELAKE_MINT_KEYS)", msg: "want id:secret"},
		{file: "[[mint.keys]]\nid = \"k1\"\nsecret = \"abcd\"", key: "mint.keys[0].secret", msg: "2 bytes"},
		{env: map[string]string{"DUCKICELAKE_MINT_MAX_TTL": "0s"}, key: "mint.max_ttl", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_MINT_MAX_TTL": "1000h"}, key: "mint.max_ttl", msg: "at most 720h"},
		{env: map[string]string{"DUCKICELAKE_MINT_DEFAULT_TTL": "13h"}, key: "mint.default_ttl", msg: "exceeds mint.max_ttl 12h"},
		{env: map[string]string{"DUCKICELAKE_MINT_DEFAULT_TTL": "-1h"}, key: "mint.default_ttl", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_DSN": "postgres://u:hunter2@host:notaport/db"}, key: "catalog.dsn (from DUCKICELAKE_CATALOG_DSN)", msg: "not a Postgres connection string"},
		{env: map[string]string{"DUCKICELAKE_PG_DSN": "host=x port=zz"}, key: "catalog.dsn (from DUCKICELAKE_PG_DSN)", msg: "not a Postgres connection string"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_NAME": "a/b"}, key: "catalog.name", msg: `got "a/b"`},
		{file: "[catalog]\nname = \"\"", key: "catalog.name", msg: "want a name"},
		{file: "[catalog]\nschema = \"\"", key: "catalog.schema", msg: "want a Postgres schema name"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_DATA_PATH": "/data/lake"}, key: "catalog.data_path", msg: "want s3://bucket/prefix/"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_DATA_PATH": "s3:///data/"}, key: "catalog.data_path", msg: "want s3://bucket/prefix/"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_SNAPSHOT_TTL": "0s"}, key: "catalog.snapshot_ttl", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_VEND_TTL": "-1m"}, key: "catalog.vend_ttl", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_REQUEST_TIMEOUT": "0s"}, key: "catalog.request_timeout", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_CLEANUP_GRACE": "-1s"}, key: "catalog.cleanup_grace", msg: "must not be negative"},
		{env: map[string]string{"DUCKICELAKE_GATEWAY_AUTHORIZE_TIMEOUT": "-1s"}, key: "gateway.authorize_timeout", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_EAGER": "often"}, key: "catalog.eager", msg: "want true or false"},
		{env: map[string]string{"DUCKICELAKE_OAUTH_TOKEN_KEY": "abcd"}, key: "oauth.token_key", msg: "at least 32 random bytes"},
		{env: map[string]string{"DUCKICELAKE_OAUTH_TOKEN_TTL": "0s"}, key: "oauth.token_ttl", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_OAUTH_SESSION_TTL": "30m"}, key: "oauth.session_ttl", msg: "at least oauth.token_ttl"},
		{env: map[string]string{"DUCKICELAKE_OAUTH_MAX_FAILURES_PER_CLIENT": "0"}, key: "oauth.max_failures_per_client", msg: "at least 1"},
		{env: map[string]string{"DUCKICELAKE_OAUTH_MAX_FAILURES_PER_IP": "0"}, key: "oauth.max_failures_per_ip", msg: "at least 1"},
		{env: map[string]string{"DUCKICELAKE_OAUTH_FAILURE_WINDOW": "0s"}, key: "oauth.failure_window", msg: "must be positive"},
		{env: map[string]string{"DUCKICELAKE_CATALOG_MAX_CONNECTIONS_PER_IP": "0"}, key: "catalog.max_connections_per_ip", msg: "at least 1"},
		{env: map[string]string{"DUCKICELAKE_LOG_LEVEL": "verbose"}, key: "log.level", msg: `got "verbose"`},
		{env: map[string]string{"DUCKICELAKE_LOG_FORMAT": "xml"}, key: "log.format", msg: `got "xml"`},
		{env: map[string]string{"DUCKICELAKE_DEV": "maybe"}, key: "dev (from DUCKICELAKE_DEV)", msg: "want true or false"},
		{file: "[gateway]\nlisten = 9000", key: "", msg: `"gateway.listen"`}, // TOML type error names the key
		{file: "[gateway]\nlistne = \"x\"\n[extra]\na = 1", key: "gateway.listne", msg: "unknown key"},
	}
	for _, tt := range tests {
		name := tt.key + " " + tt.msg
		t.Run(name, func(t *testing.T) {
			var args []string
			if tt.file != "" {
				args = []string{"-config", writeFile(t, tt.file)}
			}
			_, _, err := Load(args, testsupport.LookupEnv(tt.env))
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.HasPrefix(err.Error(), "config: "+tt.key) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %q\nwant it to start %q and contain %q", err, "config: "+tt.key, tt.msg)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows a password: %v", err)
			}
			var ce *Error
			if tt.key != "" && !errors.As(err, &ce) {
				t.Errorf("%v is not a *config.Error", err)
			}
		})
	}
}

func TestValidationReportsEveryError(t *testing.T) {
	_, _, err := Load(nil, testsupport.LookupEnv(map[string]string{"DUCKICELAKE_LOG_LEVEL": "x", "DUCKICELAKE_LOG_FORMAT": "y"}))
	if err == nil || !strings.Contains(err.Error(), "log.level") || !strings.Contains(err.Error(), "log.format") {
		t.Errorf("err = %v, want both log.level and log.format", err)
	}
	file := writeFile(t, "[gateway]\nlistne = 1\nregoin = 2")
	_, _, err = Load([]string{"-config", file}, testsupport.LookupEnv(nil))
	if err == nil || !strings.Contains(err.Error(), "gateway.listne") || !strings.Contains(err.Error(), "gateway.regoin") {
		t.Errorf("err = %v, want both unknown keys", err)
	}
}

// DUCKICELAKE_PG_DSN also sets catalog.dsn, below DUCKICELAKE_CATALOG_DSN
// and above the file.
func TestPGDSNAlias(t *testing.T) {
	file := writeFile(t, "[catalog]\ndsn = \"postgres://file/db\"\n")
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want Secret
	}{
		{"unset", nil, nil, ""},
		{"file", []string{"-config", file}, nil, "postgres://file/db"},
		{"alias over file", []string{"-config", file}, map[string]string{"DUCKICELAKE_PG_DSN": "postgres://alias/db"}, "postgres://alias/db"},
		{"own variable over alias", []string{"-config", file}, map[string]string{"DUCKICELAKE_PG_DSN": "postgres://alias/db",
			"DUCKICELAKE_CATALOG_DSN": "postgres://own/db"}, "postgres://own/db"},
		{"empty own variable is unset", nil, map[string]string{"DUCKICELAKE_PG_DSN": "postgres://alias/db",
			"DUCKICELAKE_CATALOG_DSN": ""}, "postgres://alias/db"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.args, tt.env)
			if c.Catalog.DSN != tt.want {
				t.Errorf("catalog.dsn = %q, want %q", string(c.Catalog.DSN), string(tt.want))
			}
		})
	}
	err := Default().Require("catalog.dsn")
	if err == nil || !strings.Contains(err.Error(), "DUCKICELAKE_CATALOG_DSN (or DUCKICELAKE_PG_DSN)") {
		t.Errorf("Require(catalog.dsn) = %v, want both variables named", err)
	}
}

func TestTokenKey(t *testing.T) {
	c := Default()
	if k, err := c.TokenKey(); k != nil || err != nil {
		t.Errorf("no key: %x, %v", k, err)
	}
	c.OAuth.TokenKey = testKeyHex
	if k, err := c.TokenKey(); err != nil || len(k) != 32 || k[31] != 0x1f {
		t.Errorf("hex key: %x, %v", k, err)
	}
	c.OAuth.TokenKey = "short"
	if _, err := c.TokenKey(); err == nil || !strings.Contains(err.Error(), "oauth.token_key") {
		t.Errorf("bad key: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, _, err := Load([]string{"-config", "/nonexistent/d.toml"}, testsupport.LookupEnv(nil)); err == nil || !strings.Contains(err.Error(), "/nonexistent/d.toml") {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := Load([]string{"-gateway.idle_timeout", "x"}, testsupport.LookupEnv(nil)); err == nil || !strings.Contains(err.Error(), "-gateway.idle_timeout") {
		t.Errorf("bad flag value: %v", err)
	}
	if _, _, err := Load([]string{"-nope"}, testsupport.LookupEnv(nil)); err == nil || !strings.Contains(err.Error(), "-nope") {
		t.Errorf("unknown flag: %v", err)
	}
	if _, _, err := Load([]string{"-upstream.secret_key", "s"}, testsupport.LookupEnv(nil)); err == nil {
		t.Error("a secret was accepted as a flag")
	}
	if _, _, err := Load([]string{"-h"}, testsupport.LookupEnv(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	_, fs, err := Load([]string{"-gateway.listen", "127.0.0.1:1", "serve", "x"}, testsupport.LookupEnv(nil))
	if err != nil || fmt.Sprint(fs.Args()) != "[serve x]" {
		t.Errorf("args after flags = %v, %v", fs.Args(), err)
	}
}

func TestRequire(t *testing.T) {
	c := Default()
	tests := []struct{ key, want string }{
		{"upstream.endpoint", "config: upstream.endpoint: required; set DUCKICELAKE_UPSTREAM_ENDPOINT, -upstream.endpoint or upstream.endpoint in the config file"},
		{"upstream.secret_key", "config: upstream.secret_key: required; set DUCKICELAKE_UPSTREAM_SECRET_KEY or upstream.secret_key in the config file"},
		{"mint.keys", "config: mint.keys: required; set DUCKICELAKE_MINT_KEYS=id:secret or [[mint.keys]] in the config file; generate one with `duckicelake creds keygen`"},
	}
	for _, tt := range tests {
		err := c.Require(tt.key)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Require(%s) = %v\nwant prefix %s", tt.key, err, tt.want)
		}
	}
	c.Upstream.Endpoint = "http://x"
	if err := c.Require("upstream.endpoint", "gateway.listen", "mint.max_ttl"); err != nil {
		t.Errorf("Require of set keys: %v", err)
	}
	if err := c.Require("no.such"); err == nil {
		t.Error("Require of an unknown key passed")
	}
}

func TestSecretRedaction(t *testing.T) {
	c := Default()
	c.Root.SecretKey = "topsecret-topsecret-topsecret-00"
	c.Mint.Keys = []MintKey{{ID: "k", Secret: "topsecret"}}
	c.Catalog.DSN = "postgres://u:topsecret@db/lake"
	c.OAuth.Clients = "etl:topsecret|*"
	c.OAuth.TokenKey = "topsecret"
	js, _ := json.Marshal(c)
	for _, s := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), string(js)} {
		if strings.Contains(s, "topsecret") {
			t.Errorf("secret printed: %s", s)
		}
	}
	if string(c.Root.SecretKey) != "topsecret-topsecret-topsecret-00" {
		t.Error("string conversion lost the value")
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		ok   bool
	}{
		{"0", 0, true}, {"32768", 32768, true}, {"16KiB", 16 << 10, true}, {"16 MiB", 16 << 20, true},
		{"1GiB", 1 << 30, true}, {"10B", 10, true}, {"-1", 0, false}, {"1.5MiB", 0, false}, {"16MB", 0, false}, {"", 0, false},
		{"9999999999GiB", 0, false},
	}
	for _, tt := range tests {
		var b ByteSize
		err := b.UnmarshalText([]byte(tt.in))
		if (err == nil) != tt.ok || b != tt.want {
			t.Errorf("ByteSize(%q) = %d, %v", tt.in, b, err)
		}
	}
	for b, want := range map[ByteSize]string{0: "0", 1000: "1000", 16 << 10: "16KiB", 16 << 20: "16MiB", 3 << 30: "3GiB", 1536: "1536"} {
		if got := b.String(); got != want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", int64(b), got, want)
		}
	}
}

func TestGatewayURL(t *testing.T) {
	tests := []struct{ listen, public, want string }{
		{"127.0.0.1:9000", "", "http://127.0.0.1:9000"},
		{":9000", "", "http://127.0.0.1:9000"},
		{"0.0.0.0:9000", "", "http://127.0.0.1:9000"},
		{"[::]:9000", "", "http://127.0.0.1:9000"},
		{"[::1]:9000", "", "http://[::1]:9000"},
		{"gw.local:9000", "", "http://gw.local:9000"},
		{"0.0.0.0:9000", "https://s3.example.com/", "https://s3.example.com"},
	}
	for _, tt := range tests {
		c := Default()
		c.Gateway.Listen, c.Gateway.PublicURL = tt.listen, tt.public
		if got := c.GatewayURL(); got != tt.want {
			t.Errorf("GatewayURL(%q, %q) = %q, want %q", tt.listen, tt.public, got, tt.want)
		}
	}
}

func TestKeyringAndRoot(t *testing.T) {
	c, _, err := Load(nil, testsupport.LookupEnv(map[string]string{
		"DUCKICELAKE_MINT_KEYS":       "new:" + testKeyHex + ",old:" + strings.Repeat("ab", 32),
		"DUCKICELAKE_MINT_MAX_TTL":    "2h",
		"DUCKICELAKE_ROOT_ACCESS_KEY": "ROOTADMIN",
		"DUCKICELAKE_ROOT_SECRET_KEY": strings.Repeat("r", 40),
	}))
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.Keyring()
	if err != nil {
		t.Fatal(err)
	}
	if k.ActiveKeyID() != "new" || k.MaxTTL != 2*time.Hour || k.DefaultTTL != time.Hour {
		t.Errorf("keyring: active %q max %s default %s", k.ActiveKeyID(), k.MaxTTL, k.DefaultTTL)
	}
	r, err := c.RootCredential()
	if err != nil || r == nil || r.AccessKeyID() != "ROOTADMIN" {
		t.Errorf("root = %v, %v", r, err)
	}

	none := Default()
	if _, err := none.Keyring(); err == nil || !strings.Contains(err.Error(), "DUCKICELAKE_MINT_KEYS") {
		t.Errorf("no keys: %v", err)
	}
	if r, err := none.RootCredential(); r != nil || err != nil {
		t.Errorf("no root: %v, %v", r, err)
	}
}

func TestFlagsCompose(t *testing.T) {
	// A command with its own flags reads the configuration through -config
	// alone.
	file := writeFile(t, "[gateway]\nregion = \"eu-west-1\"\n")
	fs := flag.NewFlagSet("mint", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	principal := fs.String("principal", "", "")
	f := AddConfigFlag(fs)
	if err := fs.Parse([]string{"-principal", "alice", "-config", file}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Load(testsupport.LookupEnv(nil))
	if err != nil || *principal != "alice" || c.Gateway.Region != "eu-west-1" {
		t.Errorf("principal %q region %v err %v", *principal, c, err)
	}
	if fs.Lookup("gateway.listen") != nil {
		t.Error("AddConfigFlag registered setting flags")
	}
}

// mustLoad loads the configuration of args and the environment env, failing
// the test on an error.
func mustLoad(t *testing.T, args []string, env map[string]string) *Config {
	t.Helper()
	c, _, err := Load(args, testsupport.LookupEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
