package ducklake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// FormatVersion is the DuckLake format version this package reads and
// creates: the value DuckDB 1.5.x stores under ducklake_metadata key "version".
const FormatVersion = "1.0"

// DefaultSchema is the Postgres schema holding the catalog tables when none is
// configured; DuckDB uses the connection's default schema, "public".
const DefaultSchema = "public"

// ErrUnsupportedVersion is matched (errors.Is) by a *VersionError.
var ErrUnsupportedVersion = errors.New("unsupported DuckLake catalog version")

// ErrNotCatalog reports a Postgres schema that holds some ducklake_* tables
// but not a usable catalog (no ducklake_metadata, or no version in it).
var ErrNotCatalog = errors.New("not a DuckLake catalog")

// ErrDataPathMismatch reports an init whose --data-path differs from the one
// stored in the existing catalog.
var ErrDataPathMismatch = errors.New("data path does not match the catalog")

// VersionError reports a catalog whose format version is not FormatVersion.
type VersionError struct {
	Version string // as stored in ducklake_metadata
}

func (e *VersionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "catalog is DuckLake %s", e.Version)
	if duckdb := duckDBLineOf(e.Version); duckdb != "" {
		fmt.Fprintf(&b, " (%s)", duckdb)
	}
	fmt.Fprintf(&b, "; duckicelake supports DuckLake %s (DuckDB 1.5.x)", FormatVersion)
	if olderThanSupported(e.Version) {
		b.WriteString(": open it once with DuckDB 1.5.x — ATTACH 'ducklake:postgres:<dsn>' AS l (AUTOMATIC_MIGRATION TRUE) — to migrate it to 1.0, then rerun")
	} else {
		b.WriteString(": it is newer than this duckicelake understands; use a duckicelake release that supports it")
	}
	return b.String()
}

func (e *VersionError) Is(target error) bool { return target == ErrUnsupportedVersion }

func duckDBLineOf(version string) string {
	switch version {
	case "0.1", "0.2":
		return "DuckDB 1.3"
	case "0.3", "0.3-dev1":
		return "DuckDB 1.4"
	case "0.4", "0.4-dev1":
		return "a DuckDB 1.5 pre-release"
	}
	return ""
}

// olderThanSupported reports whether DuckDB 1.5.x can migrate version to 1.0.
func olderThanSupported(version string) bool {
	return strings.HasPrefix(version, "0.")
}

// Beginner is what Init needs from a connection: *pgx.Conn, *pgxpool.Pool
// and pgx.Tx all satisfy it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// InitOptions configures Init.
type InitOptions struct {
	// DataPath is where DuckDB writes Parquet files, e.g. "s3://lake/data/".
	// Required for a new catalog; for an existing one it must match the stored
	// path when set. A trailing "/" is added when missing, as DuckDB does.
	DataPath string
	// Schema is the Postgres schema of the catalog tables (DuckDB's
	// METADATA_SCHEMA); "" means DefaultSchema.
	Schema string
	// CreatedBy is stored under ducklake_metadata key "created_by" in a new
	// catalog (DuckDB writes "DuckDB <source id>"); "" means "duckicelake".
	CreatedBy string
}

// InitResult describes what Init did.
type InitResult struct {
	Created    bool   // a new DuckLake catalog was created
	DataPath   string // the catalog's data path
	Migrations []int  // sidecar migration versions applied by this call
}

// Init creates the DuckLake catalog in opts.Schema unless it exists, then
// applies pending sidecar migrations, all in one transaction under a
// transaction-scoped advisory lock so concurrent inits serialise. Running it
// again on an initialised catalog changes nothing.
func Init(ctx context.Context, db Beginner, opts InitOptions) (InitResult, error) {
	var res InitResult
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("ducklake init: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('duckicelake init ' || $1, 0))`, schema); err != nil {
		return res, fmt.Errorf("ducklake init: advisory lock: %w", err)
	}
	if schema != DefaultSchema {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return res, fmt.Errorf("ducklake init: create schema %s: %w", schema, err)
		}
	}

	existing, err := ducklakeTables(ctx, tx, schema)
	if err != nil {
		return res, err
	}
	switch {
	case len(existing) == 0:
		dataPath := normaliseDataPath(opts.DataPath)
		if dataPath == "" {
			return res, errors.New("ducklake init: a new catalog needs a data path (e.g. s3://lake/data/)")
		}
		createdBy := opts.CreatedBy
		if createdBy == "" {
			createdBy = "duckicelake"
		}
		if err := createCatalog(ctx, tx, schema, dataPath, createdBy); err != nil {
			return res, err
		}
		res.Created, res.DataPath = true, dataPath
	case !existing["ducklake_metadata"]:
		return res, fmt.Errorf("ducklake init: schema %q has %d ducklake_* tables but no ducklake_metadata: %w", schema, len(existing), ErrNotCatalog)
	default:
		md, err := readMetadata(ctx, tx, pgx.Identifier{schema}.Sanitize())
		if err != nil {
			return res, fmt.Errorf("ducklake init: %w", err)
		}
		if err := checkVersion(md); err != nil {
			return res, fmt.Errorf("ducklake init: %w", err)
		}
		res.DataPath = md.DataPath
		if want := normaliseDataPath(opts.DataPath); want != "" && want != md.DataPath {
			return res, fmt.Errorf("ducklake init: catalog data path is %q, not %q: %w", md.DataPath, want, ErrDataPathMismatch)
		}
	}

	applied, err := migrate(ctx, tx, schema)
	if err != nil {
		return res, err
	}
	res.Migrations = applied
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("ducklake init: commit: %w", err)
	}
	return res, nil
}

// normaliseDataPath mirrors DuckDB: trailing separators collapse to one "/".
func normaliseDataPath(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return ""
	}
	return p + "/"
}

// ducklakeTables lists the ducklake_* tables in schema.
func ducklakeTables(ctx context.Context, q pgx.Tx, schema string) (map[string]bool, error) {
	rows, err := q.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 AND table_name LIKE 'ducklake\_%'`, schema)
	if err != nil {
		return nil, fmt.Errorf("ducklake init: list tables: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("ducklake init: list tables: %w", err)
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m, nil
}

func checkVersion(md Metadata) error {
	switch md.Version {
	case FormatVersion:
		return nil
	case "":
		return fmt.Errorf("ducklake_metadata has no version: %w", ErrNotCatalog)
	}
	return &VersionError{Version: md.Version}
}

// catalogDDL is the DuckLake 1.0 schema exactly as the ducklake extension of
// DuckDB 1.5.5 creates it (DuckLakeMetadataManager::InitializeDuckLake), with
// DuckDB's VARCHAR/TIMESTAMPTZ spelled as Postgres receives them. The
// comparison with a real DuckDB-made catalog is in schema_test.go.
var catalogDDL = []string{
	`CREATE TABLE %s.ducklake_metadata("key" VARCHAR NOT NULL, "value" VARCHAR NOT NULL, "scope" VARCHAR, scope_id BIGINT)`,
	`CREATE TABLE %s.ducklake_snapshot(snapshot_id BIGINT PRIMARY KEY, snapshot_time TIMESTAMPTZ, schema_version BIGINT, next_catalog_id BIGINT, next_file_id BIGINT)`,
	`CREATE TABLE %s.ducklake_snapshot_changes(snapshot_id BIGINT PRIMARY KEY, changes_made VARCHAR, author VARCHAR, commit_message VARCHAR, commit_extra_info VARCHAR)`,
	`CREATE TABLE %s.ducklake_schema(schema_id BIGINT PRIMARY KEY, schema_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN)`,
	`CREATE TABLE %s.ducklake_table(table_id BIGINT, table_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, table_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN)`,
	`CREATE TABLE %s.ducklake_view(view_id BIGINT, view_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, view_name VARCHAR, dialect VARCHAR, "sql" VARCHAR, column_aliases VARCHAR)`,
	`CREATE TABLE %s.ducklake_tag(object_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, "key" VARCHAR, "value" VARCHAR)`,
	`CREATE TABLE %s.ducklake_column_tag(table_id BIGINT, column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, "key" VARCHAR, "value" VARCHAR)`,
	`CREATE TABLE %s.ducklake_data_file(data_file_id BIGINT PRIMARY KEY, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, file_order BIGINT, path VARCHAR, path_is_relative BOOLEAN, file_format VARCHAR, record_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, row_id_start BIGINT, partition_id BIGINT, encryption_key VARCHAR, mapping_id BIGINT, partial_max BIGINT)`,
	`CREATE TABLE %s.ducklake_file_column_stats(data_file_id BIGINT, table_id BIGINT, column_id BIGINT, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR)`,
	`CREATE TABLE %s.ducklake_file_variant_stats(data_file_id BIGINT, table_id BIGINT, column_id BIGINT, variant_path VARCHAR, shredded_type VARCHAR, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR)`,
	`CREATE TABLE %s.ducklake_delete_file(delete_file_id BIGINT PRIMARY KEY, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, format VARCHAR, delete_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, encryption_key VARCHAR, partial_max BIGINT)`,
	`CREATE TABLE %s.ducklake_column(column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, table_id BIGINT, column_order BIGINT, column_name VARCHAR, column_type VARCHAR, initial_default VARCHAR, default_value VARCHAR, nulls_allowed BOOLEAN, parent_column BIGINT, default_value_type VARCHAR, default_value_dialect VARCHAR)`,
	`CREATE TABLE %s.ducklake_table_stats(table_id BIGINT, record_count BIGINT, next_row_id BIGINT, file_size_bytes BIGINT)`,
	`CREATE TABLE %s.ducklake_table_column_stats(table_id BIGINT, column_id BIGINT, contains_null BOOLEAN, contains_nan BOOLEAN, min_value VARCHAR, max_value VARCHAR, extra_stats VARCHAR)`,
	`CREATE TABLE %s.ducklake_partition_info(partition_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT)`,
	`CREATE TABLE %s.ducklake_partition_column(partition_id BIGINT, table_id BIGINT, partition_key_index BIGINT, column_id BIGINT, "transform" VARCHAR)`,
	`CREATE TABLE %s.ducklake_file_partition_value(data_file_id BIGINT, table_id BIGINT, partition_key_index BIGINT, partition_value VARCHAR)`,
	`CREATE TABLE %s.ducklake_files_scheduled_for_deletion(data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, schedule_start TIMESTAMPTZ)`,
	`CREATE TABLE %s.ducklake_inlined_data_tables(table_id BIGINT, table_name VARCHAR, schema_version BIGINT)`,
	`CREATE TABLE %s.ducklake_column_mapping(mapping_id BIGINT, table_id BIGINT, "type" VARCHAR)`,
	`CREATE TABLE %s.ducklake_name_mapping(mapping_id BIGINT, column_id BIGINT, source_name VARCHAR, target_field_id BIGINT, parent_column BIGINT, is_partition BOOLEAN)`,
	`CREATE TABLE %s.ducklake_schema_versions(begin_snapshot BIGINT, schema_version BIGINT, table_id BIGINT)`,
	`CREATE TABLE %s.ducklake_macro(schema_id BIGINT, macro_id BIGINT, macro_name VARCHAR, begin_snapshot BIGINT, end_snapshot BIGINT)`,
	`CREATE TABLE %s.ducklake_macro_impl(macro_id BIGINT, impl_id BIGINT, dialect VARCHAR, "sql" VARCHAR, "type" VARCHAR)`,
	`CREATE TABLE %s.ducklake_macro_parameters(macro_id BIGINT, impl_id BIGINT, column_id BIGINT, parameter_name VARCHAR, parameter_type VARCHAR, default_value VARCHAR, default_value_type VARCHAR)`,
	`CREATE TABLE %s.ducklake_sort_info(sort_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT)`,
	`CREATE TABLE %s.ducklake_sort_expression(sort_id BIGINT, table_id BIGINT, sort_key_index BIGINT, expression VARCHAR, dialect VARCHAR, sort_direction VARCHAR, null_order VARCHAR)`,
	// The initial state: snapshot 0 creates schema "main".
	`INSERT INTO %s.ducklake_snapshot VALUES (0, NOW(), 0, 1, 0)`,
	`INSERT INTO %s.ducklake_snapshot_changes VALUES (0, 'created_schema:"main"', NULL, NULL, NULL)`,
	`INSERT INTO %s.ducklake_schema VALUES (0, gen_random_uuid(), 0, NULL, 'main', 'main/', true)`,
}

func createCatalog(ctx context.Context, tx pgx.Tx, schema, dataPath, createdBy string) error {
	qs := pgx.Identifier{schema}.Sanitize()
	for _, stmt := range catalogDDL {
		if _, err := tx.Exec(ctx, fmt.Sprintf(stmt, qs)); err != nil {
			return fmt.Errorf("ducklake init: %s: %w", firstWords(stmt), err)
		}
	}
	_, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.ducklake_metadata ("key", "value") VALUES
		('version', $1), ('created_by', $2), ('data_path', $3), ('encrypted', 'false')`, qs),
		FormatVersion, createdBy, dataPath)
	if err != nil {
		return fmt.Errorf("ducklake init: insert metadata: %w", err)
	}
	return nil
}

func firstWords(stmt string) string {
	if i := strings.IndexByte(stmt, '('); i > 0 {
		return strings.Replace(stmt[:i], "%s.", "", 1)
	}
	return stmt
}

// A migration changes duckicelake's own sidecar tables. Migrations are
// append-only: a released version never changes, a new one is added.
type migration struct {
	version int
	sql     string // %[1]s is the quoted schema
}

var migrations = []migration{
	{1, `
CREATE TABLE %[1]s.duckicelake_revocation (
	vend_id    text PRIMARY KEY,
	expires_at timestamptz NOT NULL
);
CREATE INDEX duckicelake_revocation_expires_at ON %[1]s.duckicelake_revocation (expires_at);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_table_property (
	table_id bigint NOT NULL,
	key      text NOT NULL,
	value    text NOT NULL,
	PRIMARY KEY (table_id, key)
);`},
	// The eager path (catalog/eager): every snapshot committed, by DuckDB or
	// by us, notifies channel duckicelake_snapshot once it commits, with
	// payload "<snapshot id> <schema>" — catalogs in several schemas of one
	// database share the channel. The body is on one line so that pg_dump
	// prints no ";\n" inside it.
	{2, `
CREATE OR REPLACE FUNCTION %[1]s.duckicelake_snapshot_notify() RETURNS trigger LANGUAGE plpgsql
	AS $$BEGIN PERFORM pg_notify('duckicelake_snapshot', NEW.snapshot_id::text || ' ' || TG_TABLE_SCHEMA); RETURN NULL; END$$;
DROP TRIGGER IF EXISTS duckicelake_snapshot_notify ON %[1]s.ducklake_snapshot;
CREATE TRIGGER duckicelake_snapshot_notify AFTER INSERT ON %[1]s.ducklake_snapshot
	FOR EACH ROW EXECUTE FUNCTION %[1]s.duckicelake_snapshot_notify();`},
	// What Iceberg commits keep beside DuckLake's rows (catalog/commit):
	// partition specs with their field names and ids, sort orders with
	// their ids and transforms, tags and branches. IF NOT EXISTS: catalogs
	// served before migrations created them got them from the server.
	{3, `
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_table_partition_field (
	table_id       bigint NOT NULL,
	begin_snapshot bigint NOT NULL,
	end_snapshot   bigint,
	spec_position  integer NOT NULL,
	column_id      bigint NOT NULL,
	transform      text NOT NULL,
	name           text NOT NULL,
	PRIMARY KEY (table_id, begin_snapshot, spec_position)
);
ALTER TABLE %[1]s.duckicelake_table_partition_field ADD COLUMN IF NOT EXISTS field_id integer;
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_table_partition_spec (
	table_id              bigint NOT NULL,
	begin_snapshot        bigint NOT NULL,
	end_snapshot          bigint,
	spec_id               integer NOT NULL,
	partition_id          bigint,
	plain_spec_id         integer NOT NULL,
	unpartitioned_spec_id integer NOT NULL,
	PRIMARY KEY (table_id, begin_snapshot)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_table_sort_order (
	table_id       bigint NOT NULL,
	begin_snapshot bigint NOT NULL,
	end_snapshot   bigint,
	order_id       integer NOT NULL,
	sort_id        bigint,
	fields         text NOT NULL,
	PRIMARY KEY (table_id, begin_snapshot)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_table_ref (
	table_id              bigint NOT NULL,
	name                  text NOT NULL,
	ref_type              text NOT NULL CHECK (ref_type IN ('branch', 'tag')),
	snapshot_id           bigint NOT NULL,
	max_ref_age_ms        bigint,
	max_snapshot_age_ms   bigint,
	min_snapshots_to_keep integer,
	PRIMARY KEY (table_id, name)
);`},
	// The metadata files catalog/materialize wrote, so a table's
	// metadata-log lists earlier metadata files that exist.
	{4, `
CREATE TABLE %[1]s.duckicelake_metadata_file (
	table_id        bigint NOT NULL,
	snapshot_id     bigint NOT NULL,
	location        text NOT NULL,
	last_updated_ms bigint NOT NULL,
	PRIMARY KEY (table_id, location)
);
CREATE INDEX duckicelake_metadata_file_snapshot ON %[1]s.duckicelake_metadata_file (table_id, snapshot_id);`},
	// The REST catalog's own state (catalog/rest): Iceberg namespace
	// properties by DuckLake schema id, and view metadata by view id —
	// ducklake_sql is the ducklake_view SQL the metadata was written with,
	// so a view another writer changed is derived from its row again. IF
	// NOT EXISTS: servers before this migration created them themselves.
	{5, `
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_namespace_property (
	schema_id bigint NOT NULL,
	key       text NOT NULL,
	value     text NOT NULL,
	PRIMARY KEY (schema_id, key)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_view_metadata (
	view_id           bigint PRIMARY KEY,
	metadata_location text   NOT NULL,
	metadata          text   NOT NULL,
	files             int    NOT NULL,
	ducklake_sql      text   NOT NULL
);`},
	// Governance (governance/store): tags, object tags, masking and
	// row-access policies, attachments, roles, role and object grants, and
	// the audit trail. Objects are named by DuckLake ids, which survive
	// renames and are never reused (0 where a kind has no such part). The
	// version row counts changes; every change bumps it in its own
	// transaction and notifies channel duckicelake_governance with payload
	// "<version> <schema>".
	{6, `
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_version (
	id      integer PRIMARY KEY CHECK (id = 1),
	version bigint  NOT NULL
);
INSERT INTO %[1]s.duckicelake_gov_version VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_tag (
	namespace  text NOT NULL,
	name       text NOT NULL,
	comment    text NOT NULL DEFAULT '',
	created_by text NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (namespace, name)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_object_tag (
	object_kind   text   NOT NULL CHECK (object_kind IN ('schema', 'table', 'column')),
	schema_id     bigint NOT NULL,
	table_id      bigint NOT NULL DEFAULT 0,
	column_id     bigint NOT NULL DEFAULT 0,
	tag_namespace text   NOT NULL,
	tag_name      text   NOT NULL,
	created_by    text   NOT NULL DEFAULT '',
	created_at    timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (object_kind, schema_id, table_id, column_id, tag_namespace, tag_name),
	FOREIGN KEY (tag_namespace, tag_name) REFERENCES %[1]s.duckicelake_gov_tag (namespace, name)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_masking_policy (
	name           text PRIMARY KEY,
	signature      text    NOT NULL DEFAULT '',
	param          text    NOT NULL DEFAULT '',
	arg_type       text    NOT NULL DEFAULT '',
	body           text    NOT NULL DEFAULT '',
	action         text    NOT NULL DEFAULT '',
	unmasked_roles text[]  NOT NULL DEFAULT '{}',
	file_layer     boolean NOT NULL DEFAULT false,
	comment        text    NOT NULL DEFAULT '',
	updated_by     text    NOT NULL DEFAULT '',
	updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_row_policy (
	name           text PRIMARY KEY,
	body           text   NOT NULL,
	columns        text[] NOT NULL DEFAULT '{}',
	unmasked_roles text[] NOT NULL DEFAULT '{}',
	comment        text   NOT NULL DEFAULT '',
	updated_by     text   NOT NULL DEFAULT '',
	updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_attachment (
	policy_kind   text   NOT NULL CHECK (policy_kind IN ('masking', 'row-access')),
	policy_name   text   NOT NULL,
	target_kind   text   NOT NULL CHECK (target_kind IN ('tag', 'column', 'table')),
	tag_namespace text   NOT NULL DEFAULT '',
	tag_name      text   NOT NULL DEFAULT '',
	schema_id     bigint NOT NULL DEFAULT 0,
	table_id      bigint NOT NULL DEFAULT 0,
	column_id     bigint NOT NULL DEFAULT 0,
	bindings      jsonb,
	created_by    text   NOT NULL DEFAULT '',
	created_at    timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (policy_kind, policy_name, target_kind, tag_namespace, tag_name, schema_id, table_id, column_id)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_role (
	name       text PRIMARY KEY,
	comment    text NOT NULL DEFAULT '',
	created_by text NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_role_grant (
	role       text NOT NULL REFERENCES %[1]s.duckicelake_gov_role (name),
	principal  text NOT NULL,
	created_by text NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (role, principal)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_gov_object_grant (
	object_kind text   NOT NULL CHECK (object_kind IN ('schema', 'table')),
	schema_id   bigint NOT NULL,
	table_id    bigint NOT NULL DEFAULT 0,
	privilege   text   NOT NULL,
	role        text   NOT NULL REFERENCES %[1]s.duckicelake_gov_role (name),
	created_by  text   NOT NULL DEFAULT '',
	created_at  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (object_kind, schema_id, table_id, privilege, role)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_audit (
	id          bigserial PRIMARY KEY,
	ts          timestamptz NOT NULL,
	source      text NOT NULL,
	request_id  text NOT NULL DEFAULT '',
	principal   text NOT NULL DEFAULT '',
	actor       text NOT NULL DEFAULT '',
	channel     text NOT NULL DEFAULT '',
	delegator   text NOT NULL DEFAULT '',
	action      text NOT NULL DEFAULT '',
	namespace   text NOT NULL DEFAULT '',
	table_name  text NOT NULL DEFAULT '',
	bucket      text NOT NULL DEFAULT '',
	key         text NOT NULL DEFAULT '',
	decision    text NOT NULL DEFAULT '',
	reason      text NOT NULL DEFAULT '',
	policy_ids  text[] NOT NULL DEFAULT '{}',
	status      integer NOT NULL DEFAULT 0,
	error       text NOT NULL DEFAULT '',
	bytes_in    bigint NOT NULL DEFAULT 0,
	bytes_out   bigint NOT NULL DEFAULT 0,
	latency_ms  double precision NOT NULL DEFAULT 0,
	detail      jsonb
);
CREATE INDEX IF NOT EXISTS duckicelake_audit_ts ON %[1]s.duckicelake_audit (ts);
CREATE INDEX IF NOT EXISTS duckicelake_audit_principal ON %[1]s.duckicelake_audit (principal, id);
CREATE INDEX IF NOT EXISTS duckicelake_audit_table ON %[1]s.duckicelake_audit (namespace, table_name, id);`},
	// Masked exports (export/): per table and plan signature, the snapshot
	// the current copy was built at and its shadow metadata; per base file
	// (or inlined-rows source), the masked copy made of it and that copy's
	// statistics; and the copies no export uses any more, kept until no
	// credential that could read them is still valid.
	{7, `
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_export (
	table_id          bigint NOT NULL,
	signature         text   NOT NULL,
	snapshot_id       bigint NOT NULL,
	root              text   NOT NULL,
	metadata_location text   NOT NULL DEFAULT '',
	built_at          timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (table_id, signature)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_export_file (
	table_id     bigint NOT NULL,
	signature    text   NOT NULL,
	source       text   NOT NULL,
	source_rows  bigint NOT NULL,
	location     text   NOT NULL,
	record_count bigint NOT NULL,
	file_size    bigint NOT NULL,
	footer_size  bigint NOT NULL,
	stats        jsonb  NOT NULL DEFAULT '{}',
	PRIMARY KEY (table_id, signature, source)
);
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_export_retired (
	location  text PRIMARY KEY,
	delete_at timestamptz NOT NULL
);`},
	// The statistics files engines register (Iceberg set-statistics and
	// set-partition-statistics: Trino's and Spark's ANALYZE), per table,
	// snapshot and kind ('table' or 'partition'), each the Iceberg
	// StatisticsFile or PartitionStatisticsFile as committed; set_snapshot
	// is the snapshot of the commit that set it.
	{8, `
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_table_statistics (
	table_id     bigint NOT NULL,
	snapshot_id  bigint NOT NULL,
	kind         text   NOT NULL CHECK (kind IN ('table', 'partition')),
	file         jsonb  NOT NULL,
	set_snapshot bigint NOT NULL,
	PRIMARY KEY (table_id, snapshot_id, kind)
);`},
	// Table-level expiry (catalog/commit's remove-snapshots when a DuckLake
	// snapshot also changed another table): the DuckLake snapshots that no
	// longer exist for one table though they stay for the rest of the
	// catalog; catalog/materialize leaves them out of that table's
	// history. expired_at is the snapshot of the commit that expired it.
	{9, `
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_table_expired_snapshot (
	table_id    bigint NOT NULL,
	snapshot_id bigint NOT NULL,
	expired_at  bigint NOT NULL,
	PRIMARY KEY (table_id, snapshot_id)
);`},
	// The leases of governance's masking schemas (catalog/maskview): which
	// base namespace and plan-set signature each serves, and until when a
	// credential told to use it may still be in use.
	{10, `
CREATE TABLE IF NOT EXISTS %[1]s.duckicelake_masking_schema (
	schema_name text PRIMARY KEY,
	namespace   text NOT NULL,
	signature   text NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT now(),
	expires_at  timestamptz NOT NULL
);`},
	// Coalesced audit rows (governance.Event.Coalesce): how many identical
	// events a row stands for, and when the last of them happened (NULL
	// for a row of one).
	{11, `
ALTER TABLE %[1]s.duckicelake_audit
	ADD COLUMN IF NOT EXISTS event_count integer NOT NULL DEFAULT 1,
	ADD COLUMN IF NOT EXISTS last_ts     timestamptz;`},
}

// TxBeginner opens transactions; *pgxpool.Pool satisfies it.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Migrate applies the sidecar migrations an existing catalog lacks, under
// Init's lock, so servers of a newer build bring an older catalog (or one
// DuckDB created) up to date when they start. It reports the versions it
// applied.
func Migrate(ctx context.Context, db TxBeginner, schema string) ([]int, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	tx, err := db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return nil, fmt.Errorf("ducklake migrate: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('duckicelake init ' || $1, 0))`, schema); err != nil {
		return nil, fmt.Errorf("ducklake migrate: advisory lock: %w", err)
	}
	applied, err := migrate(ctx, tx, schema)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("ducklake migrate: commit: %w", err)
	}
	return applied, nil
}

// SidecarVersion is the newest sidecar migration this build knows.
func SidecarVersion() int { return migrations[len(migrations)-1].version }

func migrate(ctx context.Context, tx pgx.Tx, schema string) ([]int, error) {
	qs := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.duckicelake_schema_migrations (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`, qs)); err != nil {
		return nil, fmt.Errorf("ducklake init: migrations table: %w", err)
	}
	var current int
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(max(version), 0) FROM %s.duckicelake_schema_migrations`, qs)).Scan(&current); err != nil {
		return nil, fmt.Errorf("ducklake init: read migrations: %w", err)
	}
	if current > SidecarVersion() {
		return nil, fmt.Errorf("ducklake init: sidecar schema is at version %d, newer than this build's %d; use a newer duckicelake", current, SidecarVersion())
	}
	var applied []int
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(m.sql, qs)); err != nil {
			return nil, fmt.Errorf("ducklake init: sidecar migration %d: %w", m.version, err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s.duckicelake_schema_migrations (version) VALUES ($1)`, qs), m.version); err != nil {
			return nil, fmt.Errorf("ducklake init: record migration %d: %w", m.version, err)
		}
		applied = append(applied, m.version)
	}
	return applied, nil
}
