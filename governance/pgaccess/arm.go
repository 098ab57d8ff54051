package pgaccess

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// class is how a ducklake_* table is exposed to readers.
type class uint8

const (
	// classExcluded: never granted (raw inlined rows, snapshot change
	// lists naming hidden tables, paths of files scheduled for deletion).
	classExcluded class = iota + 1
	// classOpen: granted whole; holds nothing per table (the catalog's
	// options, snapshots, schemas, views, macros). Schema names and view
	// definitions stay readable: DuckDB needs both to resolve names.
	classOpen
	// classTable: rows of a table the reader may see (table_id).
	classTable
	// classTableOrNull: as classTable, and rows naming no table.
	classTableOrNull
	// classFiles: file rows and statistics, of tables whose bytes the
	// reader may read.
	classFiles
	// classTag: tags by object_id, hidden when they name a hidden table.
	classTag
	// classMapping: name mappings, by the column mappings the reader sees.
	classMapping
	// classNoRows: granted, and every row hidden. The index of inlined-row
	// tables: readers are never granted those tables (raw rows with no
	// table_id to police), and a reader told they exist would fail its
	// scans on them, so it is told of none and reads the Parquet files.
	classNoRows
	// classInlinedDelete: ducklake_inlined_delete_<table id>, the row
	// positions DuckDB deleted from that table's files without writing a
	// delete file. No values, and a reader needs them to read the table
	// right: granted, its rows policed like file rows by the id in its name.
	classInlinedDelete
	// classUnknown: no table_id and not known: the vend fails closed.
	classUnknown
)

// inlinedDeletePrefix names the per-table inlined-deletion tables.
const inlinedDeletePrefix = "ducklake_inlined_delete_"

// inlinedDeleteTable is the table id in an inlined-deletion table's name.
func inlinedDeleteTable(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, inlinedDeletePrefix)
	if !ok || id == "" || len(id) > 19 {
		return "", false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return id, true
}

// known are the DuckLake 1.0 tables whose exposure is not just "rows of
// visible tables". Any other ducklake_* table with a table_id column is
// policed by it (classTable), automatically.
var known = map[string]class{
	"ducklake_metadata":                     classOpen,
	"ducklake_snapshot":                     classOpen,
	"ducklake_schema":                       classOpen,
	"ducklake_view":                         classOpen,
	"ducklake_macro":                        classOpen,
	"ducklake_macro_impl":                   classOpen,
	"ducklake_macro_parameters":             classOpen,
	"ducklake_snapshot_changes":             classExcluded,
	"ducklake_files_scheduled_for_deletion": classExcluded,
	"ducklake_tag":                          classTag,
	"ducklake_name_mapping":                 classMapping,
	"ducklake_schema_versions":              classTableOrNull,
	"ducklake_data_file":                    classFiles,
	"ducklake_delete_file":                  classFiles,
	"ducklake_file_column_stats":            classFiles,
	"ducklake_file_variant_stats":           classFiles,
	"ducklake_file_partition_value":         classFiles,
	"ducklake_table_column_stats":           classFiles,
	"ducklake_table_stats":                  classFiles,
	"ducklake_inlined_data_tables":          classNoRows,
}

// classify says how table name (with or without a table_id column) is
// exposed.
func classify(name string, hasTableID bool) class {
	if c, ok := known[name]; ok {
		return c
	}
	if _, ok := inlinedDeleteTable(name); ok {
		return classInlinedDelete
	}
	// Inlined rows: one table per DuckLake table and schema version, raw
	// values with no table_id to police.
	if strings.HasPrefix(name, "ducklake_inlined_") {
		return classExcluded
	}
	if hasTableID {
		return classTable
	}
	return classUnknown
}

// catalogTable is a ducklake_* table and the state of its arming.
type catalogTable struct {
	name       string
	hasTableID bool
	rls        bool
	policies   []string
	granted    bool
}

func (c *catalogTable) class() class { return classify(c.name, c.hasTableID) }

// armed reports whether c is exposed as its class says.
func (c *catalogTable) armed() bool {
	switch c.class() {
	case classExcluded, classUnknown:
		return !c.granted
	case classOpen:
		return c.granted
	}
	return c.granted && c.rls && slices.Contains(c.policies, policyReader) && slices.Contains(c.policies, policyOthers)
}

// tables lists the catalog's ducklake_* tables and their arming.
func (a *Access) tables(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) ([]catalogTable, error) {
	rows, err := q.Query(ctx, `SELECT c.relname::text,
	EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'table_id' AND NOT a.attisdropped),
	c.relrowsecurity,
	ARRAY(SELECT p.polname::text FROM pg_policy p WHERE p.polrelid = c.oid ORDER BY 1),
	EXISTS (SELECT 1 FROM pg_roles g WHERE g.rolname = $2) AND has_table_privilege($2, c.oid, 'SELECT')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname LIKE 'ducklake\_%'
ORDER BY 1`, a.schema, a.group)
	if err != nil {
		return nil, fmt.Errorf("pgaccess: list the catalog tables: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (catalogTable, error) {
		var t catalogTable
		err := r.Scan(&t.name, &t.hasTableID, &t.rls, &t.policies, &t.granted)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgaccess: list the catalog tables: %w", err)
	}
	return out, nil
}

// ready reports whether the sidecars, the group and the functions exist.
func (a *Access) ready(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL
	AND to_regprocedure($3) IS NOT NULL AND to_regprocedure($4) IS NOT NULL AND to_regprocedure($5) IS NOT NULL
	AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $6)`,
		a.t(roleTable), a.t(tableTable), a.t(fnTables)+"()", a.t(fnFiles)+"()", a.t(fnHidden)+"()", a.group).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("pgaccess: check the sidecars: %w", err)
	}
	return ok, nil
}

// check reports what is not armed: the tables to (re)arm, whether the
// sidecars need creating, and the tables no build policy covers.
func (a *Access) check(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (todo []catalogTable, sidecars bool, unknown []string, err error) {
	ok, err := a.ready(ctx, q)
	if err != nil {
		return nil, false, nil, err
	}
	ts, err := a.tables(ctx, q)
	if err != nil {
		return nil, false, nil, err
	}
	for _, t := range ts {
		if t.class() == classUnknown {
			unknown = append(unknown, t.name)
		}
		if !ok || !t.armed() {
			todo = append(todo, t)
		}
	}
	return todo, !ok, unknown, nil
}

// Ensure makes sure row-level security covers every ducklake_* table,
// arming what is missing (a process that never armed, a table DuckDB added
// since): the check is one catalog query when all is armed, so every vend
// calls it. It fails with *UnknownTableError when a ducklake_* table
// cannot be policed.
func (a *Access) Ensure(ctx context.Context) error {
	todo, sidecars, unknown, err := a.check(ctx, a.db)
	if err != nil {
		return err
	}
	if len(todo) > 0 || sidecars {
		if err := a.Arm(ctx); err != nil {
			return err
		}
	}
	if len(unknown) > 0 {
		return &UnknownTableError{Tables: unknown}
	}
	return nil
}

// Arm puts the policies in place, in one transaction under the advisory
// lock: the sidecars, the group and the functions, then for every
// ducklake_* table not armed yet its grant, row-level security and
// policies (an excluded or unknown table has its grant revoked). Arming
// what is armed changes nothing, so every process may call it at start.
func (a *Access) Arm(ctx context.Context) error {
	tx, err := a.db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("pgaccess: arm: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, a.lockKey()); err != nil {
		return fmt.Errorf("pgaccess: arm: lock: %w", err)
	}
	// Another process may have armed while this one waited.
	todo, sidecars, _, err := a.check(ctx, tx)
	if err != nil {
		return err
	}
	if len(todo) == 0 && !sidecars {
		return nil
	}
	if sidecars {
		for _, q := range a.armSQL() {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("pgaccess: arm: %w", err)
			}
		}
		// The functions may be new: every table's policies are rebuilt.
		if todo, err = a.tables(ctx, tx); err != nil {
			return err
		}
	}
	var names []string
	for _, t := range todo {
		for _, q := range a.tableSQL(&t) {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("pgaccess: arm %s: %w", t.name, err)
			}
		}
		names = append(names, t.name)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgaccess: arm: %w", err)
	}
	a.log.Info("pgaccess: row-level security armed", zap.String("schema", a.schema), zap.Strings("tables", names))
	return nil
}

// tableSQL arms one table as its class says.
func (a *Access) tableSQL(t *catalogTable) []string {
	qt := a.t(t.name)
	g := pgx.Identifier{a.group}.Sanitize()
	var out []string
	// Policies this build does not name (an older version's) go; ours are
	// rebuilt, so a changed text takes effect.
	for _, p := range t.policies {
		if strings.HasPrefix(p, "duckicelake_") {
			out = append(out, `DROP POLICY IF EXISTS `+pgx.Identifier{p}.Sanitize()+` ON `+qt)
		}
	}
	var using string
	switch t.class() {
	case classExcluded, classUnknown:
		return append(out, `REVOKE ALL ON `+qt+` FROM `+g)
	case classOpen:
		return append(out, `GRANT SELECT ON `+qt+` TO `+g)
	case classTable:
		using = `table_id IN (SELECT ` + a.t(fnTables) + `())`
	case classTableOrNull:
		using = `table_id IS NULL OR table_id IN (SELECT ` + a.t(fnTables) + `())`
	case classFiles:
		using = `table_id IN (SELECT ` + a.t(fnFiles) + `())`
	case classInlinedDelete:
		id, _ := inlinedDeleteTable(t.name)
		using = id + ` IN (SELECT ` + a.t(fnFiles) + `())`
	case classTag:
		using = `object_id NOT IN (SELECT ` + a.t(fnHidden) + `())`
	case classNoRows:
		using = `false`
	case classMapping:
		// The reader's own view of the column mappings, itself policed.
		using = `mapping_id IN (SELECT mapping_id FROM ` + a.t("ducklake_column_mapping") + `)`
	}
	// Roles outside the reader group (the owner's writers, other
	// applications) keep what they had: the membership test is an InitPlan,
	// evaluated once per scan.
	others := `((SELECT NOT pg_has_role(current_user, ` + quoteLiteral(a.group) + `, 'MEMBER')))`
	return append(out,
		`GRANT SELECT ON `+qt+` TO `+g,
		`ALTER TABLE `+qt+` ENABLE ROW LEVEL SECURITY`,
		`CREATE POLICY `+policyReader+` ON `+qt+` AS PERMISSIVE FOR SELECT TO `+g+` USING (`+using+`)`,
		`CREATE POLICY `+policyOthers+` ON `+qt+` AS PERMISSIVE FOR ALL TO PUBLIC USING `+others+` WITH CHECK `+others,
	)
}
