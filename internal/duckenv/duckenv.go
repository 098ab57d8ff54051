package duckenv

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/duckicelake/duckicelake/governance/sqltext"
)

// S3 is an S3 endpoint and the credential DuckDB reads and writes it with.
type S3 struct {
	// Endpoint is http(s)://host[:port].
	Endpoint     string
	Region       string
	AccessKeyID  string
	Secret       string
	SessionToken string
	// PathStyle addresses buckets in the path (the default for
	// S3-compatible backends here).
	PathStyle bool
	// Scope, when set, limits the secret to URLs under it
	// ("s3://bucket/prefix/"): DuckDB picks the secret of the longest
	// scope that matches.
	Scope string
	// Scopes, when set with Scope, are further URL prefixes the secret is
	// for (one credential granted on several directories).
	Scopes []string
}

// Options configure an embedded DuckDB.
type Options struct {
	// ExtensionDirectory holds the extensions (DuckDB's layout:
	// <dir>/v1.5.5/<platform>/); empty is DuckDB's default.
	ExtensionDirectory string
	// Extensions are loaded at start ("httpfs", "ducklake", "postgres").
	Extensions []string
	// S3, when its endpoint is set, becomes DuckDB's S3 secret.
	S3 S3
	// Threads bounds DuckDB's worker threads (0: DuckDB's default).
	Threads int
	// MemoryLimit bounds DuckDB's memory ("2GB"; empty: DuckDB's default).
	MemoryLimit string
	// TempDirectory is where DuckDB spills ("": DuckDB's default).
	TempDirectory string
}

// Open starts an in-memory DuckDB as opts say. Every connection of the
// returned pool is configured the same way.
func Open(ctx context.Context, opts Options) (*sql.DB, error) {
	var init []string
	if opts.ExtensionDirectory != "" {
		d, err := sqltext.String(opts.ExtensionDirectory)
		if err != nil {
			return nil, fmt.Errorf("duckdb: extension directory: %w", err)
		}
		init = append(init, "SET extension_directory = "+d)
	}
	init = append(init, "SET autoinstall_known_extensions = false", "SET autoload_known_extensions = true")
	if opts.Threads > 0 {
		init = append(init, fmt.Sprintf("SET threads = %d", opts.Threads))
	}
	if opts.MemoryLimit != "" {
		m, err := sqltext.String(opts.MemoryLimit)
		if err != nil {
			return nil, err
		}
		init = append(init, "SET memory_limit = "+m)
	}
	if opts.TempDirectory != "" {
		d, err := sqltext.String(opts.TempDirectory)
		if err != nil {
			return nil, err
		}
		init = append(init, "SET temp_directory = "+d)
	}
	for _, e := range opts.Extensions {
		if !plain(e) {
			return nil, fmt.Errorf("duckdb: extension name %q", e)
		}
		init = append(init, "LOAD "+e)
	}
	if opts.S3.Endpoint != "" {
		s, err := SecretSQL("duckicelake_s3", opts.S3)
		if err != nil {
			return nil, err
		}
		init = append(init, s,
			// httpfs buffers one multipart part per file it writes, sized
			// s3_uploader_max_filesize / 10,000 parts: 76 MiB at its 800GB
			// default, more than a modest memory_limit allows for even one
			// file. 100GB makes 10 MB parts (files up to 100 GB).
			"SET s3_uploader_max_filesize = '100GB'")
	}
	conn, err := duckdb.NewConnector("", func(execer driver.ExecerContext) error {
		for _, q := range init {
			if _, err := execer.ExecContext(context.Background(), q, nil); err != nil {
				return fmt.Errorf("duckdb: %s: %w", redact(q), err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("duckdb: start: %w", err)
	}
	db := sql.OpenDB(conn)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, hint(err, opts)
	}
	return db, nil
}

// hint adds what to do to the usual failure: extensions not where they
// are looked for.
func hint(err error, opts Options) error {
	if strings.Contains(err.Error(), "extension") {
		where := opts.ExtensionDirectory
		if where == "" {
			where = "DuckDB's default directory (~/.duckdb/extensions)"
		}
		return fmt.Errorf("%w (the DuckDB 1.5.5 extensions %s must be installed in %s: set duckdb.extension_directory, "+
			"or install them with DuckDB 1.5.5: INSTALL httpfs; INSTALL ducklake; INSTALL postgres)", err, strings.Join(opts.Extensions, ", "), where)
	}
	return err
}

// SecretSQL is the CREATE SECRET statement for s, named name (quoted
// here), for the URLs under s.Scope when it is set: the embedded DuckDB's,
// the MCP executor's, and the one DuckLake-direct vends hand their clients.
func SecretSQL(name string, s S3) (string, error) {
	qn, err := sqltext.Ident(name)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("duckdb: S3 endpoint %q: want http(s)://host[:port]", s.Endpoint)
	}
	region := s.Region
	if region == "" {
		region = "us-east-1"
	}
	style := "vhost"
	if s.PathStyle {
		style = "path"
	}
	parts := []string{"TYPE S3"}
	for _, kv := range [][2]string{{"KEY_ID", s.AccessKeyID}, {"SECRET", s.Secret}, {"SESSION_TOKEN", s.SessionToken},
		{"ENDPOINT", u.Host}, {"REGION", region}, {"URL_STYLE", style}, {"SCOPE", s.Scope}} {
		if kv[1] == "" {
			continue
		}
		if kv[0] == "SCOPE" && len(s.Scopes) > 0 {
			lits := make([]string, 0, 1+len(s.Scopes))
			for _, sc := range append([]string{s.Scope}, s.Scopes...) {
				lit, err := sqltext.String(sc)
				if err != nil {
					return "", fmt.Errorf("duckdb: S3 SCOPE: %w", err)
				}
				lits = append(lits, lit)
			}
			parts = append(parts, "SCOPE ["+strings.Join(lits, ", ")+"]")
			continue
		}
		lit, err := sqltext.String(kv[1])
		if err != nil {
			return "", fmt.Errorf("duckdb: S3 %s: %w", kv[0], err)
		}
		parts = append(parts, kv[0]+" "+lit)
	}
	parts = append(parts, fmt.Sprintf("USE_SSL %t", u.Scheme == "https"))
	return "CREATE OR REPLACE SECRET " + qn + " (" + strings.Join(parts, ", ") + ")", nil
}

// redact keeps secrets out of error messages.
func redact(q string) string {
	if strings.Contains(q, "SECRET") {
		return "CREATE SECRET …"
	}
	return q
}

func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

// AttachDuckLake attaches the DuckLake catalog in Postgres (dsn in libpq
// key=value or URL form, Postgres schema schema) as alias, with its data
// path, read-only when readOnly. extra are further ATTACH options, written
// by the caller (e.g. "DATA_INLINING_ROW_LIMIT 0").
func AttachDuckLake(ctx context.Context, db *sql.DB, alias, dsn, schema, dataPath string, readOnly bool, extra ...string) error {
	q, err := AttachSQL(alias, dsn, schema, dataPath, readOnly, extra...)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("duckdb: attach the DuckLake catalog: %w", err)
	}
	return nil
}

// AttachSQL is the ATTACH statement AttachDuckLake runs, every name and
// literal quoted: the one place it is written, for the embedded DuckDB and
// for the statement DuckLake-direct vends hand their clients.
func AttachSQL(alias, dsn, schema, dataPath string, readOnly bool, extra ...string) (string, error) {
	target, err := sqltext.String("ducklake:postgres:" + dsn)
	if err != nil {
		return "", err
	}
	a, err := sqltext.Ident(alias)
	if err != nil {
		return "", err
	}
	opts := []string{}
	if dataPath != "" {
		p, err := sqltext.String(dataPath)
		if err != nil {
			return "", err
		}
		opts = append(opts, "DATA_PATH "+p)
	}
	if schema != "" && schema != "public" {
		s, err := sqltext.String(schema)
		if err != nil {
			return "", err
		}
		opts = append(opts, "METADATA_SCHEMA "+s)
	}
	if readOnly {
		opts = append(opts, "READ_ONLY")
	}
	opts = append(opts, extra...)
	q := "ATTACH " + target + " AS " + a
	if len(opts) > 0 {
		q += " (" + strings.Join(opts, ", ") + ")"
	}
	return q, nil
}
