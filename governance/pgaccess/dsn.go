package pgaccess

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/duckicelake/duckicelake/internal/duckenv"
)

// ReaderDSN is the libpq key=value DSN a client logs in as r with: the
// owner DSN's host, port, database and TLS settings (sslmode, sslrootcert),
// r's name and password, nothing else of the owner's (never its user or
// password).
func ReaderDSN(owner string, r Role) (string, error) {
	cfg, err := pgconn.ParseConfig(owner)
	if err != nil {
		return "", fmt.Errorf("pgaccess: the catalog's DSN: %w", err)
	}
	kv := [][2]string{{"host", cfg.Host}, {"port", strconv.Itoa(int(cfg.Port))}, {"dbname", cfg.Database},
		{"user", r.Name}, {"password", r.Password}}
	for _, k := range []string{"sslmode", "sslrootcert"} {
		if v := dsnParam(owner, k); v != "" {
			kv = append(kv, [2]string{k, v})
		}
	}
	var b strings.Builder
	for i, p := range kv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(kvQuote(p[1]))
	}
	return b.String(), nil
}

// dsnParam is parameter key of a URL or key=value DSN ("" when absent).
// pgconn.Config keeps the TLS settings only as a tls.Config, so the two
// a reader must share with the owner are read from the text.
func dsnParam(dsn, key string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return ""
		}
		return u.Query().Get(key)
	}
	for _, f := range strings.Fields(dsn) {
		if k, v, ok := strings.Cut(f, "="); ok && k == key {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// kvQuote quotes a libpq key=value value when it needs it: single quotes,
// backslash before a quote or a backslash.
func kvQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " '\\\t\n") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// Attach is the statement a client runs to attach the catalog as alias
// with the reader DSN dsn: read-only, over the catalog's schema and data
// path.
func Attach(alias, dsn, schema, dataPath string) (string, error) {
	return duckenv.AttachSQL(alias, dsn, schema, dataPath, true)
}
