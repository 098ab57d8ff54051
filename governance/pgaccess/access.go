package pgaccess

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// DB is what the package needs from Postgres (*pgxpool.Pool satisfies it):
// a connection of the role that owns the ducklake_* tables, since only the
// owner may enable row-level security on them.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Config configures an Access.
type Config struct {
	// Schema is the Postgres schema of the DuckLake catalog ("" is
	// public).
	Schema string
	// Logger receives what the sweep and the arming do; nil discards.
	Logger *zap.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Access arms, vends and sweeps for one DuckLake catalog.
type Access struct {
	db     DB
	schema string // unquoted
	qs     string // quoted schema
	group  string // the catalog's reader group role (unquoted)
	log    *zap.Logger
	now    func() time.Time
}

// New returns the Access of the catalog db holds in cfg.Schema. It reads
// the database's name (the reader group is per database and schema: roles
// are cluster-wide, grants are not) and changes nothing.
func New(ctx context.Context, db DB, cfg Config) (*Access, error) {
	if db == nil {
		return nil, errors.New("pgaccess: no database")
	}
	schema := cfg.Schema
	if schema == "" {
		schema = "public"
	}
	var dbname string
	if err := db.QueryRow(ctx, `SELECT current_database()`).Scan(&dbname); err != nil {
		return nil, fmt.Errorf("pgaccess: read the database name: %w", err)
	}
	sum := sha256.Sum256([]byte(dbname + "\x00" + schema))
	a := &Access{db: db, schema: schema, qs: pgx.Identifier{schema}.Sanitize(),
		group: "duckicelake_readers_" + hex.EncodeToString(sum[:4]), log: cfg.Logger, now: cfg.Now}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a, nil
}

// Group is the catalog's reader group role: every reader role is a member,
// and the grants and policies name it.
func (a *Access) Group() string { return a.group }

// t qualifies a table of the catalog's schema.
func (a *Access) t(name string) string { return a.qs + "." + pgx.Identifier{name}.Sanitize() }

// Sidecar tables and functions, owned by the catalog's owner and granted
// to nobody: a reader learns what it may see only through the policies.
const (
	roleTable  = "duckicelake_reader_role"
	tableTable = "duckicelake_reader_table"
	fnTables   = "duckicelake_rls_tables"
	fnFiles    = "duckicelake_rls_file_tables"
	fnHidden   = "duckicelake_rls_hidden_tables"
)

// Policy names carry a version: a build that changes a policy's text bumps
// it, and arming replaces what an older build left.
const (
	policyReader = "duckicelake_reader_v1"
	policyOthers = "duckicelake_others_v1"
)

// UnknownTableError is a ducklake_* table this build cannot classify: it
// carries no table_id to police and is not one of the tables this build
// knows. A vend fails closed on it until a build that knows the table
// runs.
type UnknownTableError struct{ Tables []string }

func (e *UnknownTableError) Error() string {
	return fmt.Sprintf("pgaccess: the DuckLake catalog has tables this build cannot police (%s); no reader role is vended",
		strings.Join(e.Tables, ", "))
}

// lockKey is the advisory lock arming holds, per schema: every process
// arms under it, so two processes never interleave their DDL.
func (a *Access) lockKey() string { return "duckicelake.pgaccess.arm:" + a.schema }

// armSQL is the DDL that must exist before any table is armed: the
// sidecars, the group role and the policy functions.
func (a *Access) armSQL() []string {
	g := pgx.Identifier{a.group}.Sanitize()
	roles, tables := a.t(roleTable), a.t(tableTable)
	// The functions run as their owner (SECURITY DEFINER) so a reader needs
	// no grant on the sidecars, and read session_user: a reader role has no
	// member roles, so it cannot SET ROLE to another reader. A role past
	// its expiry sees nothing even in a session opened before it.
	visible := `SELECT t.table_id FROM ` + tables + ` t JOIN ` + roles + ` r ON r.role_name = t.role_name
		WHERE r.role_name = session_user AND r.expires_at > now()`
	fn := func(name, body string) string {
		return `CREATE OR REPLACE FUNCTION ` + a.t(name) + `() RETURNS SETOF bigint
	LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
	AS $fn$` + body + `$fn$`
	}
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + roles + ` (
	role_name text PRIMARY KEY,
	principal text NOT NULL,
	scope text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	expires_at timestamptz NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + tables + ` (
	role_name text NOT NULL REFERENCES ` + roles + ` ON DELETE CASCADE,
	table_id bigint NOT NULL,
	files boolean NOT NULL,
	PRIMARY KEY (role_name, table_id))`,
		`REVOKE ALL ON ` + roles + `, ` + tables + ` FROM PUBLIC`,
		`DO $do$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ` + quoteLiteral(a.group) + `) THEN
		CREATE ROLE ` + g + ` NOLOGIN NOINHERIT;
	END IF;
END $do$`,
		fn(fnTables, visible),
		fn(fnFiles, visible+` AND t.files`),
		// Tags name tables, schemas and views by object_id: a tag is
		// hidden when it names a table the reader may not see.
		fn(fnHidden, `SELECT table_id FROM `+a.t("ducklake_table")+` EXCEPT `+visible),
		`REVOKE ALL ON FUNCTION ` + a.t(fnTables) + `(), ` + a.t(fnFiles) + `(), ` + a.t(fnHidden) + `() FROM PUBLIC`,
		`GRANT EXECUTE ON FUNCTION ` + a.t(fnTables) + `(), ` + a.t(fnFiles) + `(), ` + a.t(fnHidden) + `() TO ` + g,
		`GRANT USAGE ON SCHEMA ` + a.qs + ` TO ` + g,
	}
}

// quoteLiteral is a Postgres string literal (standard_conforming_strings
// on, the default since 9.1: only the quote needs doubling).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// isUndefinedTable reports Postgres's undefined_table (42P01).
func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
