package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/model"
)

// Channel is the NOTIFY channel of governance changes; the payload is
// "<version> <schema>".
const Channel = "duckicelake_governance"

// DB is what the store needs from Postgres; *pgxpool.Pool satisfies it.
type DB interface {
	ducklake.Querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Store reads and writes governance in the catalog's Postgres schema.
type Store struct {
	db         DB
	schema     string // quoted
	schemaName string
	reader     *ducklake.Reader
	now        func() time.Time
}

// New returns the Store of the catalog in Postgres schema schema ("" is
// ducklake.DefaultSchema).
func New(db DB, schema string) *Store {
	if schema == "" {
		schema = ducklake.DefaultSchema
	}
	return &Store{db: db, schema: pgx.Identifier{schema}.Sanitize(), schemaName: schema,
		reader: ducklake.NewReader(db, schema), now: time.Now}
}

// Reader is the DuckLake reader the store resolves names with.
func (s *Store) Reader() *ducklake.Reader { return s.reader }

func (s *Store) t(name string) string { return s.schema + "." + name }

// Version is the governance version: it grows with every change.
func (s *Store) Version(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.QueryRow(ctx, `SELECT version FROM `+s.t("duckicelake_gov_version")+` WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("governance: read the version: %w", err)
	}
	return v, nil
}

// Load reads the whole governance configuration, consistently, and
// returns it indexed.
func (s *Store) Load(ctx context.Context) (*model.State, error) {
	tx, err := s.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("governance: load: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	return s.load(ctx, tx)
}

func (s *Store) load(ctx context.Context, tx pgx.Tx) (*model.State, error) {
	st := &model.State{}
	if err := tx.QueryRow(ctx, `SELECT version FROM `+s.t("duckicelake_gov_version")+` WHERE id = 1`).Scan(&st.Version); err != nil {
		return nil, fmt.Errorf("governance: load the version: %w", err)
	}
	type loader struct {
		what string
		sql  string
		scan func(pgx.Rows) error
	}
	loaders := []loader{
		{"tags", `SELECT namespace, name, comment FROM ` + s.t("duckicelake_gov_tag") + ` ORDER BY namespace, name`,
			func(r pgx.Rows) error {
				var t model.Tag
				err := r.Scan(&t.Namespace, &t.Name, &t.Comment)
				st.Tags = append(st.Tags, t)
				return err
			}},
		{"object tags", `SELECT object_kind, schema_id, table_id, column_id, tag_namespace, tag_name FROM ` + s.t("duckicelake_gov_object_tag") +
			` ORDER BY object_kind, schema_id, table_id, column_id, tag_namespace, tag_name`,
			func(r pgx.Rows) error {
				var ot model.ObjectTag
				var kind string
				err := r.Scan(&kind, &ot.Object.SchemaID, &ot.Object.TableID, &ot.Object.ColumnID, &ot.Tag.Namespace, &ot.Tag.Name)
				ot.Object.Kind, _ = model.ParseObjectKind(kind)
				st.ObjectTags = append(st.ObjectTags, ot)
				return err
			}},
		{"masking policies", `SELECT name, signature, param, arg_type, body, action, unmasked_roles, file_layer, comment, updated_at FROM ` +
			s.t("duckicelake_gov_masking_policy") + ` ORDER BY name`,
			func(r pgx.Rows) error {
				var m model.MaskingPolicy
				var action string
				err := r.Scan(&m.Name, &m.Signature, &m.Param, &m.ArgType, &m.Body, &action, &m.UnmaskedRoles, &m.FileLayer, &m.Comment, &m.UpdatedAt)
				m.Action = model.StandardAction(action)
				st.Masks = append(st.Masks, m)
				return err
			}},
		{"row-access policies", `SELECT name, body, columns, unmasked_roles, comment, updated_at FROM ` + s.t("duckicelake_gov_row_policy") + ` ORDER BY name`,
			func(r pgx.Rows) error {
				var p model.RowPolicy
				err := r.Scan(&p.Name, &p.Body, &p.Columns, &p.UnmaskedRoles, &p.Comment, &p.UpdatedAt)
				st.RowPolicies = append(st.RowPolicies, p)
				return err
			}},
		{"attachments", `SELECT policy_kind, policy_name, target_kind, tag_namespace, tag_name, schema_id, table_id, column_id, bindings FROM ` +
			s.t("duckicelake_gov_attachment") + ` ORDER BY policy_kind, policy_name, target_kind, tag_namespace, tag_name, schema_id, table_id, column_id`,
			func(r pgx.Rows) error {
				var a model.Attachment
				var pk, tk string
				var bindings []byte
				if err := r.Scan(&pk, &a.Policy, &tk, &a.Tag.Namespace, &a.Tag.Name, &a.Object.SchemaID, &a.Object.TableID, &a.Object.ColumnID, &bindings); err != nil {
					return err
				}
				a.Kind, _ = model.ParsePolicyKind(pk)
				a.Target, _ = model.ParseTargetKind(tk)
				switch a.Target {
				case model.TargetColumn:
					a.Object.Kind = model.ObjectColumn
				case model.TargetTable:
					a.Object.Kind = model.ObjectTable
				}
				if len(bindings) > 0 {
					if err := json.Unmarshal(bindings, &a.Bindings); err != nil {
						return fmt.Errorf("bindings of %s: %w", a.Policy, err)
					}
				}
				st.Attachments = append(st.Attachments, a)
				return nil
			}},
		{"roles", `SELECT name, comment FROM ` + s.t("duckicelake_gov_role") + ` ORDER BY name`,
			func(r pgx.Rows) error {
				var ro model.Role
				err := r.Scan(&ro.Name, &ro.Comment)
				st.Roles = append(st.Roles, ro)
				return err
			}},
		{"role grants", `SELECT role, principal FROM ` + s.t("duckicelake_gov_role_grant") + ` ORDER BY role, principal`,
			func(r pgx.Rows) error {
				var g model.RoleGrant
				err := r.Scan(&g.Role, &g.Principal)
				st.RoleGrants = append(st.RoleGrants, g)
				return err
			}},
		{"object grants", `SELECT object_kind, schema_id, table_id, privilege, role FROM ` + s.t("duckicelake_gov_object_grant") +
			` ORDER BY object_kind, schema_id, table_id, privilege, role`,
			func(r pgx.Rows) error {
				var g model.ObjectGrant
				var kind string
				err := r.Scan(&kind, &g.Object.SchemaID, &g.Object.TableID, &g.Privilege, &g.Role)
				g.Object.Kind, _ = model.ParseObjectKind(kind)
				st.ObjectGrants = append(st.ObjectGrants, g)
				return err
			}},
	}
	for _, l := range loaders {
		rows, err := tx.Query(ctx, l.sql)
		if err != nil {
			return nil, fmt.Errorf("governance: load %s: %w", l.what, err)
		}
		for rows.Next() {
			if err := l.scan(rows); err != nil {
				rows.Close()
				return nil, fmt.Errorf("governance: load %s: %w", l.what, err)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("governance: load %s: %w", l.what, err)
		}
	}
	return st.Index(), nil
}

// Change is one governance change: the audit record it leaves.
type Change struct {
	// Author is the principal making the change (with its delegator, when
	// a broker spoke for it).
	Author governance.Principal
	// What names the change for the audit trail ("upsert masking policy
	// mask_email"); it is the event's reason.
	What string
	// Namespace and Table, when the change is about one.
	Namespace, Table string
	RequestID        string
}

// Tx is a change in progress.
type Tx struct {
	pgx.Tx
	s     *Store
	state *model.State
}

// State is the governance configuration as this change sees it: every
// change committed before it, none after (changes are serialised).
func (t *Tx) State(ctx context.Context) (*model.State, error) {
	if t.state == nil {
		st, err := t.s.load(ctx, t.Tx)
		if err != nil {
			return nil, err
		}
		t.state = st
	}
	return t.state, nil
}

// Run runs one statement of the change; "{T}" in sql stands for table,
// qualified with the catalog's schema. It returns the rows affected.
func (t *Tx) Run(ctx context.Context, table, sql string, args ...any) (int64, error) {
	tag, err := t.Tx.Exec(ctx, strings.ReplaceAll(sql, "{T}", t.s.t(table)), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// Apply runs do in one transaction with the version bump, the audit
// record and the notification, retrying a serialisation failure. It
// returns the new version.
func (s *Store) Apply(ctx context.Context, c Change, do func(ctx context.Context, tx *Tx) error) (int64, error) {
	const attempts = 5
	var last error
	for i := 0; i < attempts; i++ {
		v, err := s.apply(ctx, c, do)
		if err == nil {
			return v, nil
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "40001" && pe.Code != "40P01" {
			return 0, err
		}
		last = err
	}
	return 0, fmt.Errorf("governance: the change kept conflicting with others: %w", last)
}

func (s *Store) apply(ctx context.Context, c Change, do func(ctx context.Context, tx *Tx) error) (int64, error) {
	tx, err := s.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return 0, fmt.Errorf("governance: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// The version row serialises changes: each takes it first.
	var v int64
	if err := tx.QueryRow(ctx, `UPDATE `+s.t("duckicelake_gov_version")+` SET version = version + 1 WHERE id = 1 RETURNING version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("governance: bump the version: %w", err)
	}
	if err := do(ctx, &Tx{Tx: tx, s: s}); err != nil {
		return 0, err
	}
	ev := governance.Event{
		Source: governance.SourceCatalog, RequestID: []byte(c.RequestID), Action: governance.ActionAdminGovernance.String(),
		Principal: c.Author.ID, Actor: c.Author.ActorOrDefault(), Channel: c.Author.ChannelOrDefault(), Delegator: c.Author.Delegator,
		Namespace: c.Namespace, Table: c.Table, Decision: governance.OutcomeAllow, Reason: c.What, Status: 200,
	}
	if err := InsertEvents(ctx, tx, s.schema, []time.Time{s.now()}, []*governance.Event{&ev}); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, fmt.Sprintf("%d %s", v, s.schemaName)); err != nil {
		return 0, fmt.Errorf("governance: notify: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("governance: commit: %w", err)
	}
	return v, nil
}

// IsUniqueViolation reports a primary-key or unique conflict.
func IsUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// IsForeignKeyViolation reports a reference to a missing tag or role, or
// the delete of one still referenced.
func IsForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}
