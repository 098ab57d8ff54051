// Package maskview keeps governance's masking views in the DuckLake
// catalog, where DuckDB executes them: for one namespace and one plan set
// (what a principal's plans make of the namespace's governed tables), a
// schema named governance.MaskedNamePrefix + signature holding, under each
// governed table's own name, a DuckLake view that runs the plan's SELECT —
// row filters on raw values first, then the masks — over the base table.
// A DuckDB session whose search_path puts that schema before the table's
// own reads masked rows by unqualified name; principals whose plans have
// the same shape share the schema.
//
// A schema is written once, as DuckLake rows in one snapshot (the schema
// row, its view rows, the change list DuckDB would write) — but a view with
// a Shape (an airtight table's, over its masked copy's current files) is
// rewritten in place when its SQL moves, in a snapshot that ends the old
// view row and begins the new, so the schema's name outlives a refresh and
// an open session reads the new files — and leased: each
// Ensure extends its lease to the expiry of the credential that was told
// to use it, recorded in the sidecar duckicelake_masking_schema. A policy
// or schema change makes a new signature, so the next vend gets a new
// schema; Sweep drops a schema (its views and schema rows ended in one
// snapshot) once its lease has run out, so no open session loses the views
// its search_path names.
//
// maskview may import catalog/ducklake, governance (names) and pgx; its
// callers (catalog/rest) decide which plans go into a set.
package maskview

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
)

// CatalogRef stands for the attached catalog in a view's SQL: DuckDB's
// ducklake extension writes it for the alias a view was made under and
// replaces it with the reader's alias when it binds the view.
const CatalogRef = "{DUCKLAKE_CATALOG}"

// View is one masking view: the governed table's name and the SELECT that
// masks it (with CatalogRef for the catalog).
type View struct {
	Table string
	SQL   string
	// Shape, when set, stands for SQL in the set's signature: the view's
	// SQL may move while its shape stays (an airtight table's view reads
	// the current files of its masked copy, which a refresh changes), so
	// the schema keeps its name and Ensure (or Replace) rewrites the view
	// in place instead.
	Shape string
	// Version orders a shaped view's SQLs (an airtight table's: the
	// snapshot its copy holds): a view is never rewritten with the SQL of
	// an older version, so a vend that planned before a refresh cannot
	// undo the refresh's rewrite. The stored SQL carries it (a leading
	// comment, versionTag), so every process sees it.
	Version int64
}

// versionTag prefixes the stored SQL of a shaped view of version v.
func versionTag(v int64) string { return "/* duckicelake version " + strconv.FormatInt(v, 10) + " */ " }

// stored is v's SQL as written to DuckLake.
func (v *View) stored() string {
	if v.Shape == "" || v.Version <= 0 {
		return v.SQL
	}
	return versionTag(v.Version) + v.SQL
}

// storedVersion is the version a stored SQL carries (0: none).
func storedVersion(sql string) int64 {
	rest, ok := strings.CutPrefix(sql, "/* duckicelake version ")
	if !ok {
		return 0
	}
	n, _, ok := strings.Cut(rest, " */ ")
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// Set is the masking views of one namespace for one plan shape.
type Set struct {
	Namespace string
	// Views are sorted by table name (Add keeps them so).
	Views []View
}

// Add puts v into the set, keeping the views sorted.
func (s *Set) Add(v View) {
	i, _ := slices.BinarySearchFunc(s.Views, v.Table, func(a View, t string) int { return strings.Compare(a.Table, t) })
	s.Views = slices.Insert(s.Views, i, v)
}

// Signature identifies the set: the namespace and every view's name and
// SQL (which carries the plan's masks, filters and the columns' names), or
// its Shape when it has one. 16 hex digits.
func (s *Set) Signature() string {
	h := sha256.New()
	w := func(p string) {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	w(s.Namespace)
	for _, v := range s.Views {
		w(v.Table)
		if v.Shape != "" {
			w("shape")
			w(v.Shape)
			continue
		}
		w(v.SQL)
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:8])
}

// content identifies what the set's views say now: with a shaped view's
// current SQL, which Signature leaves out.
func (s *Set) content() string {
	h := sha256.New()
	for _, v := range s.Views {
		sql := v.stored()
		h.Write([]byte(strconv.Itoa(len(v.Table)) + ":" + v.Table + strconv.Itoa(len(sql)) + ":" + sql))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// SchemaName is the schema of the set with signature sig.
func SchemaName(sig string) string { return governance.MaskedNamePrefix + sig }

// Table is the sidecar that leases the masking schemas.
const Table = "duckicelake_masking_schema"

// DB is what Manager needs from Postgres; *pgxpool.Pool satisfies it.
type DB interface {
	ducklake.TxBeginner
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Manager writes, leases and sweeps the masking schemas of one catalog.
// Its methods are safe for concurrent use.
type Manager struct {
	db     DB
	writer *ducklake.Writer
	schema string // quoted Postgres schema of the catalog
	log    *zap.Logger

	// leased caches the lease each schema is known to hold (schema name →
	// expiry), and written what its views were last written or found to
	// say (Set.content), so a vend for a set whose schema is written, says
	// the same and is leased long enough costs no query.
	mu      sync.Mutex
	leased  map[string]time.Time
	written map[string]string
	// shaped: for each shape, the schemas this process wrote a view of it
	// into, by schema name, with the view's table (Replace).
	shaped map[string]map[string]string
}

// Open returns the Manager of the catalog in Postgres schema schema ("" =
// ducklake.DefaultSchema), whose sidecar migrations (ducklake.Migrate)
// created the lease table.
func Open(ctx context.Context, db DB, schema string, log *zap.Logger) (*Manager, error) {
	if schema == "" {
		schema = ducklake.DefaultSchema
	}
	if log == nil {
		log = zap.NewNop()
	}
	m := &Manager{db: db, writer: ducklake.NewWriter(db, schema), schema: pgx.Identifier{schema}.Sanitize(), log: log,
		leased: map[string]time.Time{}, written: map[string]string{}, shaped: map[string]map[string]string{}}
	var ok bool
	if err := db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, m.t(Table)).Scan(&ok); err != nil {
		return nil, fmt.Errorf("maskview: look up %s: %w", Table, err)
	}
	if !ok {
		return nil, fmt.Errorf("maskview: the catalog has no %s: run the sidecar migrations (duckicelake init, or serve at start)", Table)
	}
	return m, nil
}

func (m *Manager) t(name string) string { return m.schema + "." + name }

// leaseSlack is how far past a requested expiry a lease is extended, so
// vends close together share one write.
const leaseSlack = 5 * time.Minute

// Ensure makes sure set's schema exists with its views and is leased until
// at least until, and returns the schema's name. A set without views has
// no schema ("").
func (m *Manager) Ensure(ctx context.Context, set *Set, until time.Time) (string, error) {
	if len(set.Views) == 0 {
		return "", nil
	}
	sig := set.Signature()
	name := SchemaName(sig)
	content := set.content()
	m.mu.Lock()
	held, same := m.leased[name], m.written[name] == content
	m.mu.Unlock()
	if !held.Before(until) && same {
		return name, nil
	}
	lease := until.Add(leaseSlack)
	if held.After(lease) {
		lease = held
	}
	// The lease first: a sweep deletes only expired leases, and holds the
	// row while it drops the schema, so once this returns the schema is
	// either gone (and written below) or kept.
	if _, err := m.db.Exec(ctx, `INSERT INTO `+m.t(Table)+` (schema_name, namespace, signature, expires_at) VALUES ($1, $2, $3, $4)
	ON CONFLICT (schema_name) DO UPDATE SET expires_at = greatest(`+m.t(Table)+`.expires_at, excluded.expires_at)`,
		name, set.Namespace, sig, lease); err != nil {
		return "", fmt.Errorf("maskview: lease %s: %w", name, err)
	}
	if _, err := m.writer.Commit(ctx, "duckicelake", func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		return m.write(ctx, tx, head, next, name, set.Views)
	}); err != nil && !errors.Is(err, errExists) {
		return "", fmt.Errorf("maskview: write %s: %w", name, err)
	}
	m.mu.Lock()
	if m.leased[name].Before(lease) {
		m.leased[name] = lease
	}
	m.written[name] = content
	for _, v := range set.Views {
		if v.Shape == "" {
			continue
		}
		if m.shaped[v.Shape] == nil {
			m.shaped[v.Shape] = map[string]string{}
		}
		m.shaped[v.Shape][name] = v.Table
	}
	m.mu.Unlock()
	return name, nil
}

// Replace rewrites, with sql, the views of shape shape in every masking
// schema this process wrote one into that is still live — an airtight
// table's masked copy was refreshed, and a session whose search_path names
// the schema should read the new files without a new vend. It returns how
// many schemas it rewrote. Another process's schemas are rewritten by
// their next Ensure.
func (m *Manager) Replace(ctx context.Context, shape, sql string, version int64) (int, error) {
	m.mu.Lock()
	targets := make(map[string]string, len(m.shaped[shape]))
	for name, table := range m.shaped[shape] {
		targets[name] = table
	}
	m.mu.Unlock()
	n := 0
	for name, table := range targets {
		_, err := m.writer.Commit(ctx, "duckicelake", func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
			return m.replace(ctx, tx, head, next, name, []View{{Table: table, SQL: sql, Shape: shape, Version: version}})
		})
		switch {
		case errors.Is(err, errExists):
		case errors.Is(err, errGone):
			m.mu.Lock()
			delete(m.shaped[shape], name)
			delete(m.written, name)
			m.mu.Unlock()
		case err != nil:
			return n, fmt.Errorf("maskview: rewrite %s.%s: %w", name, table, err)
		default:
			n++
			m.mu.Lock()
			delete(m.written, name) // the next Ensure compares again
			m.mu.Unlock()
		}
	}
	return n, nil
}

// errGone ends a Replace whose schema was swept.
var errGone = errors.New("masking schema gone")

// errExists ends a commit that found its schema written: nothing to do.
var errExists = errors.New("masking schema exists")

// write writes the schema row and its views in snapshot next, or — the
// schema written already — rewrites those of its views whose SQL is not
// views' any more.
func (m *Manager) write(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64, name string, views []View) (ducklake.Edit, error) {
	e, err := m.replace(ctx, tx, head, next, name, views)
	if !errors.Is(err, errGone) {
		return e, err
	}
	return m.create(ctx, tx, head, next, name, views)
}

// replace rewrites the views of live schema name whose SQL differs from
// views' in snapshot next: the old row ended, a new one (a new view id,
// as DuckDB's CREATE OR REPLACE VIEW makes) begun — unless the live one is
// of a newer version. errGone: no such live schema; errExists: nothing to
// rewrite.
func (m *Manager) replace(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64, name string, views []View) (ducklake.Edit, error) {
	var schemaID int64
	err := tx.QueryRow(ctx, `SELECT schema_id FROM `+m.t("ducklake_schema")+` WHERE schema_name = $1 AND end_snapshot IS NULL`, name).Scan(&schemaID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ducklake.Edit{}, errGone
	case err != nil:
		return ducklake.Edit{}, fmt.Errorf("look up schema: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT view_id, view_name, sql FROM `+m.t("ducklake_view")+` WHERE schema_id = $1 AND end_snapshot IS NULL`, schemaID)
	if err != nil {
		return ducklake.Edit{}, fmt.Errorf("read views: %w", err)
	}
	type live struct {
		id  int64
		sql string
	}
	have := map[string]live{}
	for rows.Next() {
		var l live
		var table string
		if err := rows.Scan(&l.id, &table, &l.sql); err != nil {
			rows.Close()
			return ducklake.Edit{}, fmt.Errorf("read views: %w", err)
		}
		have[table] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ducklake.Edit{}, fmt.Errorf("read views: %w", err)
	}
	var changes []string
	id := head.NextCatalogID
	for _, v := range views {
		old, ok := have[v.Table]
		sql := v.stored()
		if ok && (old.sql == sql || v.Shape != "" && storedVersion(old.sql) > v.Version) {
			continue
		}
		if ok {
			if _, err := tx.Exec(ctx, `UPDATE `+m.t("ducklake_view")+` SET end_snapshot = $1 WHERE view_id = $2 AND end_snapshot IS NULL`, next, old.id); err != nil {
				return ducklake.Edit{}, fmt.Errorf("end view %q: %w", v.Table, err)
			}
			changes = append(changes, "dropped_view:"+strconv.FormatInt(old.id, 10))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+m.t("ducklake_view")+` (view_id, view_uuid, begin_snapshot, end_snapshot, schema_id, view_name, dialect, sql, column_aliases)
			VALUES ($1, $2::uuid, $3, NULL, $4, $5, 'duckdb', $6, '')`, id, uuid.NewString(), next, schemaID, v.Table, sql); err != nil {
			return ducklake.Edit{}, fmt.Errorf("insert view %q: %w", v.Table, err)
		}
		changes = append(changes, "created_view:"+ducklake.QuoteName(name)+"."+ducklake.QuoteName(v.Table))
		id++
	}
	if len(changes) == 0 {
		return ducklake.Edit{}, errExists
	}
	return ducklake.Edit{Changes: strings.Join(changes, ","), CatalogIDs: id - head.NextCatalogID}, nil
}

// create writes the schema row and its views in snapshot next.
func (m *Manager) create(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64, name string, views []View) (ducklake.Edit, error) {
	id := head.NextCatalogID
	if _, err := tx.Exec(ctx, `INSERT INTO `+m.t("ducklake_schema")+` (schema_id, schema_uuid, begin_snapshot, end_snapshot, schema_name, path, path_is_relative)
		VALUES ($1, $2::uuid, $3, NULL, $4, $5, true)`, id, uuid.NewString(), next, name, name+"/"); err != nil {
		return ducklake.Edit{}, fmt.Errorf("insert schema: %w", err)
	}
	var changes strings.Builder
	changes.WriteString("created_schema:")
	changes.WriteString(ducklake.QuoteName(name))
	for i, v := range views {
		if _, err := tx.Exec(ctx, `INSERT INTO `+m.t("ducklake_view")+` (view_id, view_uuid, begin_snapshot, end_snapshot, schema_id, view_name, dialect, sql, column_aliases)
			VALUES ($1, $2::uuid, $3, NULL, $4, $5, 'duckdb', $6, '')`, id+1+int64(i), uuid.NewString(), next, id, v.Table, v.stored()); err != nil {
			return ducklake.Edit{}, fmt.Errorf("insert view %q: %w", v.Table, err)
		}
		changes.WriteString(",created_view:")
		changes.WriteString(ducklake.QuoteName(name))
		changes.WriteByte('.')
		changes.WriteString(ducklake.QuoteName(v.Table))
	}
	return ducklake.Edit{Changes: changes.String(), CatalogIDs: 1 + int64(len(views))}, nil
}

// Namespace is the base namespace of masking schema name, as its lease
// records it; ok is false for a name that is not a live masking schema.
func (m *Manager) Namespace(ctx context.Context, name string) (ns string, ok bool, err error) {
	err = m.db.QueryRow(ctx, `SELECT namespace FROM `+m.t(Table)+` WHERE schema_name = $1`, name).Scan(&ns)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("maskview: look up %s: %w", name, err)
	}
	return ns, true, nil
}

// Sweep drops the masking schemas whose lease ended before now, each with
// its views, in one snapshot, and returns how many it dropped. Masking
// schemas with no lease at all (a lost sidecar row, a crash between the
// write and the lease) are dropped too: nothing vends them.
func (m *Manager) Sweep(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := m.db.QueryRow(ctx, `SELECT count(*) FROM `+m.t("ducklake_schema")+` s
	LEFT JOIN `+m.t(Table)+` l ON l.schema_name = s.schema_name
	WHERE s.end_snapshot IS NULL AND s.schema_name LIKE $1 AND (l.schema_name IS NULL OR l.expires_at < $2)`,
		likePrefix(governance.MaskedNamePrefix), now).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("maskview: find expired schemas: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	dropped := 0
	_, err = m.writer.Commit(ctx, "duckicelake", func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		dropped = 0
		// Lock the leases first: an Ensure extending one waits, then
		// finds the schema gone and writes it anew.
		if _, err := tx.Exec(ctx, `DELETE FROM `+m.t(Table)+` WHERE expires_at < $1`, now); err != nil {
			return ducklake.Edit{}, fmt.Errorf("end leases: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT s.schema_id, s.schema_name FROM `+m.t("ducklake_schema")+` s
		WHERE s.end_snapshot IS NULL AND s.schema_name LIKE $1
		AND NOT EXISTS (SELECT 1 FROM `+m.t(Table)+` l WHERE l.schema_name = s.schema_name)`, likePrefix(governance.MaskedNamePrefix))
		if err != nil {
			return ducklake.Edit{}, fmt.Errorf("find expired schemas: %w", err)
		}
		type schema struct {
			id   int64
			name string
		}
		gone, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (schema, error) {
			var s schema
			return s, r.Scan(&s.id, &s.name)
		})
		if err != nil {
			return ducklake.Edit{}, fmt.Errorf("find expired schemas: %w", err)
		}
		var changes []string
		for _, s := range gone {
			vrows, err := tx.Query(ctx, `UPDATE `+m.t("ducklake_view")+` SET end_snapshot = $1 WHERE schema_id = $2 AND end_snapshot IS NULL RETURNING view_id`, next, s.id)
			if err != nil {
				return ducklake.Edit{}, fmt.Errorf("drop the views of %s: %w", s.name, err)
			}
			ids, err := pgx.CollectRows(vrows, pgx.RowTo[int64])
			if err != nil {
				return ducklake.Edit{}, fmt.Errorf("drop the views of %s: %w", s.name, err)
			}
			for _, id := range ids {
				changes = append(changes, "dropped_view:"+strconv.FormatInt(id, 10))
			}
			if _, err := tx.Exec(ctx, `UPDATE `+m.t("ducklake_schema")+` SET end_snapshot = $1 WHERE schema_id = $2 AND end_snapshot IS NULL`, next, s.id); err != nil {
				return ducklake.Edit{}, fmt.Errorf("drop %s: %w", s.name, err)
			}
			changes = append(changes, "dropped_schema:"+strconv.FormatInt(s.id, 10))
			dropped++
		}
		if len(changes) == 0 {
			return ducklake.Edit{}, errExists
		}
		return ducklake.Edit{Changes: strings.Join(changes, ",")}, nil
	})
	if err != nil && !errors.Is(err, errExists) {
		return 0, fmt.Errorf("maskview: sweep: %w", err)
	}
	m.mu.Lock()
	for name, until := range m.leased {
		if until.Before(now) {
			delete(m.leased, name)
			delete(m.written, name)
			for _, in := range m.shaped {
				delete(in, name)
			}
		}
	}
	m.mu.Unlock()
	if dropped > 0 {
		m.log.Info("masking views: dropped expired masking schemas", zap.Int("schemas", dropped))
	}
	return dropped, nil
}

// likePrefix is a LIKE pattern matching names that start with p.
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}
