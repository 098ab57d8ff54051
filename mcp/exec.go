package mcp

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/duckicelake/duckicelake/governance/sqlcheck"
	"github.com/duckicelake/duckicelake/governance/sqltext"
	"github.com/duckicelake/duckicelake/internal/defaults"
	"github.com/duckicelake/duckicelake/internal/duckenv"
)

// Limits bound one query.
type Limits struct {
	// MaxRows is the most rows returned (default 1000); more are cut off.
	MaxRows int
	// MaxBytes bounds the result's JSON encoding (default 1 MiB).
	MaxBytes int
	// Timeout bounds running the query, once its tables are loaded
	// (default 30s).
	Timeout time.Duration
	// MemoryLimit bounds DuckDB's memory (default "1GB").
	MemoryLimit string
	// Threads bounds DuckDB's threads (default 2).
	Threads int
}

func (l *Limits) applyDefaults() {
	l.MaxRows = defaults.Positive(l.MaxRows, 1000)
	l.MaxBytes = defaults.Positive(l.MaxBytes, 1<<20)
	l.Timeout = defaults.Positive(l.Timeout, 30*time.Second)
	if l.MemoryLimit == "" {
		l.MemoryLimit = "1GB"
	}
	l.Threads = defaults.Positive(l.Threads, 2)
}

// Column is a result column.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Result is a query's answer.
type Result struct {
	Columns []Column `json:"columns"`
	Rows    [][]any  `json:"rows"`
	// Truncated says the rows were cut off at a limit (Limit says which).
	Truncated bool   `json:"truncated"`
	Limit     string `json:"limit,omitempty"`
}

// ToolError is a refusal the agent can act on: its text says what to
// change. It never holds a credential.
type ToolError struct{ Msg string }

func (e *ToolError) Error() string { return e.Msg }

func toolErr(format string, args ...any) error { return &ToolError{Msg: fmt.Sprintf(format, args...)} }

// tierProperty is the stamped tier of a governed table
// (catalog/rest's duckicelake.governance.tier).
const tierProperty = "duckicelake.governance.tier"

// executor runs queries for sessions.
type executor struct {
	cat    *Catalog
	check  *sqlcheck.Checker
	extDir string
	limits Limits
}

// run checks q, loads the tables it reads for the session, and runs it in
// a fresh locked-down DuckDB.
func (x *executor) run(ctx context.Context, id *Identity, q string) (*Result, error) {
	// Loading the tables may wait for the catalog to build a masked copy;
	// that has its own bound. Timeout bounds the query itself.
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	refs, err := x.check.CheckQuery(ctx, q)
	if err != nil {
		var se *sqlcheck.Error
		if errors.As(err, &se) {
			return nil, toolErr("%s", se.Msg)
		}
		return nil, err
	}
	type source struct {
		ref      sqlcheck.TableRef
		metadata string
		secret   duckenv.S3
	}
	var sources []source
	for _, r := range refs {
		if !id.canRead(r.Namespace) {
			return nil, toolErr("table %s.%s does not exist or is not visible to you (list_tables shows what you can read)", r.Namespace, r.Table)
		}
		lt, err := x.cat.loadTable(ctx, id, r.Namespace, r.Table, true)
		if err != nil {
			if ctx.Err() != nil {
				return nil, toolErr("table %s.%s could not be loaded within %s; retry", r.Namespace, r.Table, loadTimeout)
			}
			return nil, tableErr(r, err)
		}
		if tier := lt.Metadata.Properties[tierProperty]; tier != "" && tier != "airtight" {
			// Fail closed: masks that only a cooperative reader applies
			// are not this executor's to apply.
			return nil, toolErr("table %s.%s is masked for you only cooperatively; this server reads masked tables on the bytes only "+
				"(the operator's governance.agent_airtight setting)", r.Namespace, r.Table)
		}
		if len(lt.StorageCredentials) != 1 {
			return nil, toolErr("no read credential could be obtained for table %s.%s", r.Namespace, r.Table)
		}
		sc := lt.StorageCredentials[0]
		cfg := sc.Config
		sources = append(sources, source{ref: r, metadata: lt.MetadataLocation, secret: duckenv.S3{
			Endpoint: cfg["s3.endpoint"], Region: cfg["client.region"], AccessKeyID: cfg["s3.access-key-id"],
			Secret: cfg["s3.secret-access-key"], SessionToken: cfg["s3.session-token"],
			PathStyle: cfg["s3.path-style-access"] == "true", Scope: sc.Prefix,
		}})
	}

	db, err := duckenv.Open(ctx, duckenv.Options{ExtensionDirectory: x.extDir, Extensions: []string{"httpfs", "avro", "iceberg"},
		Threads: x.limits.Threads, MemoryLimit: x.limits.MemoryLimit})
	if err != nil {
		return nil, fmt.Errorf("query engine: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // settings below are per database; one connection keeps it simple
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var allowed []string
	schemas := map[string]bool{}
	for i, s := range sources {
		stmt, err := duckenv.SecretSQL(fmt.Sprintf("t%d", i), s.secret)
		if err != nil {
			return nil, fmt.Errorf("table %s.%s: %w", s.ref.Namespace, s.ref.Table, err)
		}
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("table %s.%s: secret: %w", s.ref.Namespace, s.ref.Table, redactErr(err))
		}
		allowed = append(allowed, s.secret.Scope)
		ns, err := sqltext.Ident(s.ref.Namespace)
		if err != nil {
			return nil, err
		}
		view, err := sqltext.Qualified(s.ref.Namespace, s.ref.Table)
		if err != nil {
			return nil, err
		}
		if !schemas[s.ref.Namespace] {
			schemas[s.ref.Namespace] = true
			if _, err := conn.ExecContext(ctx, "CREATE SCHEMA "+ns); err != nil {
				return nil, err
			}
		}
		loc, err := sqltext.String(s.metadata)
		if err != nil {
			return nil, err
		}
		if _, err := conn.ExecContext(ctx, "CREATE VIEW "+view+
			" AS SELECT * FROM iceberg_scan("+loc+")"); err != nil {
			return nil, err
		}
	}
	// The sandbox: files and URLs only under the vended prefixes (so only
	// through the gateway, with the session's own credentials), no
	// extension loading, and no setting the query could change back.
	lock := []string{"SET autoload_known_extensions = false", "SET autoinstall_known_extensions = false"}
	if len(allowed) > 0 {
		lits := make([]string, len(allowed))
		for i, a := range allowed {
			if lits[i], err = sqltext.String(a); err != nil {
				return nil, err
			}
		}
		lock = append(lock, "SET allowed_directories = ["+strings.Join(lits, ", ")+"]")
	}
	lock = append(lock, "SET enable_external_access = false", "SET lock_configuration = true")
	for _, s := range lock {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("lock the query engine: %w", err)
		}
	}
	qctx, qcancel := context.WithTimeout(ctx, x.limits.Timeout)
	defer qcancel()
	return x.collect(qctx, conn, q)
}

// loadTimeout bounds loading a query's tables (LoadTable, which may build
// a masked copy, and starting DuckDB).
const loadTimeout = 2 * time.Minute

// collect runs q and reads its rows up to the limits.
func (x *executor) collect(ctx context.Context, conn *sql.Conn, q string) (*Result, error) {
	// The row limit is DuckDB's to keep, so a query producing more rows
	// stops there instead of being computed in full. q is one checked
	// SELECT (CheckQuery), so it nests as a subquery.
	q = strings.TrimRight(strings.TrimSpace(q), "; \t\n")
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT * FROM (\n%s\n) LIMIT %d", q, x.limits.MaxRows+1))
	if err != nil {
		return nil, queryErr(ctx, err, x.limits.Timeout)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: make([]Column, len(types)), Rows: [][]any{}}
	for i, t := range types {
		res.Columns[i] = Column{Name: t.Name(), Type: t.DatabaseTypeName()}
	}
	size := 0
	for rows.Next() {
		if len(res.Rows) == x.limits.MaxRows {
			res.Truncated, res.Limit = true, fmt.Sprintf("max rows (%d)", x.limits.MaxRows)
			break
		}
		vals := make([]any, len(types))
		ptrs := make([]any, len(types))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			vals[i] = jsonValue(v)
		}
		b, err := json.Marshal(vals)
		if err != nil {
			return nil, err
		}
		if size += len(b) + 1; size > x.limits.MaxBytes {
			res.Truncated, res.Limit = true, fmt.Sprintf("max bytes (%d)", x.limits.MaxBytes)
			break
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, queryErr(ctx, err, x.limits.Timeout)
	}
	return res, nil
}

// jsonValue is v as JSON can carry it.
func jsonValue(v any) any {
	switch t := v.(type) {
	case []byte:
		return string(t)
	case time.Time:
		return t.Format(time.RFC3339Nano)
	case fmt.Stringer:
		return t.String()
	}
	return v
}

func queryErr(ctx context.Context, err error, limit time.Duration) error {
	if ctx.Err() != nil {
		return toolErr("the query ran past its time limit (%s) and was cancelled: select fewer rows, aggregate, or filter", limit)
	}
	return toolErr("DuckDB refused the query: %s", firstLine(redactErr(err).Error()))
}

func tableErr(r sqlcheck.TableRef, err error) error {
	var ce *catalogError
	switch {
	case errors.Is(err, ErrNotFound):
		return toolErr("table %s.%s does not exist or is not visible to you (list_tables shows what you can read)", r.Namespace, r.Table)
	case errors.As(err, &ce):
		return toolErr("table %s.%s: the catalog refused: %s", r.Namespace, r.Table, ce.Message)
	}
	return err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// redactErr keeps credentials out of an error text: DuckDB quotes a
// failing CREATE SECRET.
func redactErr(err error) error {
	if s := err.Error(); strings.Contains(strings.ToUpper(s), "SECRET") || strings.Contains(s, "KEY_ID") {
		return errors.New("the query engine refused a credential")
	}
	return err
}
