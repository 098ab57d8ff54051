package pgaccess

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// TableAccess is one table a reader role may see.
type TableAccess struct {
	TableID int64
	// Files: the reader may see the table's file rows and statistics
	// (false for a table it may read only masked: its base files stay
	// hidden, so it reads as empty by name).
	Files bool
}

// Grant is what a reader role is created with.
type Grant struct {
	// Principal is the governance principal the role stands for.
	Principal string
	// Scope names what the vend covered ("analytics", "analytics.orders"),
	// for the operator.
	Scope string
	// Tables are the tables the role sees; every other table is invisible
	// in every ducklake_* table that names it.
	Tables []TableAccess
	// Expiry is the role's VALID UNTIL (required, in the future).
	Expiry time.Time
}

// Role is a created reader role.
type Role struct {
	Name     string
	Password string
	Expiry   time.Time
}

// ErrNoExpiry refuses a grant without a future expiry: a reader role never
// lives forever.
var ErrNoExpiry = errors.New("pgaccess: a reader role needs an expiry in the future")

// maxSubject bounds the principal's part of a role name (Postgres names
// are at most 63 bytes: duckicelake_p_ + 20 + _ + 8 + _ + 12 = 56).
const maxSubject = 20

// RoleName is a fresh reader role name for principal: duckicelake_p_, the
// principal's name reduced to [a-z0-9_], the first 8 hex digits of its
// SHA-256 (two principals that reduce alike stay apart) and a random
// nonce, so concurrent vends never share a role.
func RoleName(principal string) (string, error) {
	var b strings.Builder
	for _, r := range strings.ToLower(principal) {
		if b.Len() == maxSubject {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(principal))
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	return "duckicelake_p_" + b.String() + "_" + hex.EncodeToString(sum[:4]) + "_" + hex.EncodeToString(nonce[:]), nil
}

// scramIterations is Postgres's default scram_iterations.
const scramIterations = 4096

// scramVerifier is the SCRAM-SHA-256 verifier Postgres stores for
// password: computed here, so the password itself never reaches Postgres
// (nor its statement log).
func scramVerifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, scramIterations, sha256.Size)
	if err != nil {
		return "", err
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	server := mac(salted, "Server Key")
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, enc(salt), enc(stored[:]), enc(server)), nil
}

// newPassword is 32 random bytes, base64url: nothing a DSN must quote.
func newPassword() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// CreateRole creates a reader role for g: LOGIN with a random password
// (stored as a SCRAM verifier), VALID UNTIL g.Expiry, read-only by default
// and by grant (its group holds SELECT and nothing else), a member of the
// catalog's reader group, with g.Tables recorded for the policies. It
// first makes sure the policies are armed (Ensure), so a process that
// missed the arming heals on its first vend, and fails closed on a table
// it cannot police.
func (a *Access) CreateRole(ctx context.Context, g Grant) (Role, error) {
	if g.Expiry.IsZero() || !g.Expiry.After(a.now()) {
		return Role{}, ErrNoExpiry
	}
	if err := a.Ensure(ctx); err != nil {
		return Role{}, err
	}
	name, err := RoleName(g.Principal)
	if err != nil {
		return Role{}, err
	}
	pw, err := newPassword()
	if err != nil {
		return Role{}, err
	}
	verifier, err := scramVerifier(pw)
	if err != nil {
		return Role{}, err
	}
	// Postgres keeps VALID UNTIL to the microsecond; whole seconds are
	// what the client is told.
	exp := g.Expiry.UTC().Truncate(time.Second)
	qn := pgx.Identifier{name}.Sanitize()
	tx, err := a.db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return Role{}, fmt.Errorf("pgaccess: create role: %w", err)
	}
	defer tx.Rollback(ctx)
	// CREATE ROLE is transactional: the role, its settings and its rows
	// exist together or not at all, so a failed vend leaves no orphan.
	stmts := []string{
		`CREATE ROLE ` + qn + ` LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS` +
			` PASSWORD ` + quoteLiteral(verifier) + ` VALID UNTIL ` + quoteLiteral(exp.Format(time.RFC3339)) +
			` IN ROLE ` + pgx.Identifier{a.group}.Sanitize(),
		`ALTER ROLE ` + qn + ` SET default_transaction_read_only = on`,
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return Role{}, fmt.Errorf("pgaccess: create role: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+a.t(roleTable)+` (role_name, principal, scope, expires_at) VALUES ($1, $2, $3, $4)`,
		name, g.Principal, g.Scope, exp); err != nil {
		return Role{}, fmt.Errorf("pgaccess: record role: %w", err)
	}
	if len(g.Tables) > 0 {
		ids := make([]int64, len(g.Tables))
		files := make([]bool, len(g.Tables))
		for i, t := range g.Tables {
			ids[i], files[i] = t.TableID, t.Files
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+a.t(tableTable)+` (role_name, table_id, files)
	SELECT $1, t.id, bool_or(t.files) FROM unnest($2::bigint[], $3::boolean[]) AS t(id, files) GROUP BY t.id`,
			name, ids, files); err != nil {
			return Role{}, fmt.Errorf("pgaccess: record role tables: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Role{}, fmt.Errorf("pgaccess: create role: %w", err)
	}
	return Role{Name: name, Password: pw, Expiry: exp}, nil
}

// Sweep drops the reader roles past their expiry, ending their open
// sessions first (VALID UNTIL is checked at login only; the policies
// already show an expired role nothing). Every process sweeps; a role
// another process dropped meanwhile is skipped.
func (a *Access) Sweep(ctx context.Context) (int, error) {
	rows, err := a.db.Query(ctx, `SELECT role_name FROM `+a.t(roleTable)+` WHERE expires_at <= $1 ORDER BY 1`, a.now())
	if err != nil {
		if isUndefinedTable(err) {
			return 0, nil // never armed: nothing to sweep
		}
		return 0, fmt.Errorf("pgaccess: sweep: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("pgaccess: sweep: %w", err)
	}
	n := 0
	for _, name := range names {
		if err := a.dropRole(ctx, name); err != nil {
			a.log.Warn("pgaccess: drop an expired reader role", zap.String("role", name), zap.Error(err))
			continue
		}
		n++
	}
	return n, nil
}

// dropRole ends name's sessions and drops it with its rows.
func (a *Access) dropRole(ctx context.Context, name string) error {
	if _, err := a.db.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, name); err != nil {
		return err
	}
	tx, err := a.db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `DELETE FROM `+a.t(roleTable)+` WHERE role_name = $1`, name); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DROP ROLE IF EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
