package ducklake

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// viewMetadataTable holds the Iceberg metadata of views made or changed
// over REST, by DuckLake view id: DuckLake keeps only a view's SQL.
const viewMetadataTable = "duckicelake_view_metadata"

// View is a live ducklake_view row with what the catalog serves with it.
type View struct {
	ID       int64
	UUID     string
	SchemaID int64
	ViewDef
	// SchemaPath is its schema's path, resolved.
	SchemaPath string
	// Created is when the view id first appeared.
	Created time.Time
	// Metadata is its sidecar row; nil for a view without one (DuckDB's).
	Metadata *ViewMetadata
}

// ViewDef is what a ducklake_view row says of a view, and its comment.
type ViewDef struct {
	Dialect, SQL, Aliases string
	// Comment is the live "comment" tag; nil without one.
	Comment *string
}

// ViewMetadata is a view's Iceberg metadata sidecar row.
type ViewMetadata struct {
	Location string
	Document []byte
	// Files is how many metadata files were written.
	Files int
	// SQL is the ducklake_view SQL the document was written for: a view
	// whose row has other SQL was changed by another writer since.
	SQL string
}

// LiveView finds view name of live schema schema; an error wrapping
// ErrNotFound when it (or its schema) does not exist.
func (c *Catalog) LiveView(ctx context.Context, q Querier, schema, name string) (View, error) {
	var (
		v       View
		created *time.Time
		spath   string
		srel    bool
		meta    *string
		metaLoc *string
		files   *int32
		metaSQL *string
		dialect *string
		sql     *string
		aliases *string
	)
	err := q.QueryRow(ctx, `SELECT v.view_id, coalesce(v.view_uuid::text, ''), v.schema_id, v.dialect, v.sql, v.column_aliases,
			coalesce(sc.path, ''), coalesce(sc.path_is_relative, true),
			(SELECT sn.snapshot_time FROM `+c.t("ducklake_snapshot")+` sn
				WHERE sn.snapshot_id = (SELECT min(o.begin_snapshot) FROM `+c.t("ducklake_view")+` o WHERE o.view_id = v.view_id)),
			(SELECT tg.value FROM `+c.t("ducklake_tag")+` tg
				WHERE tg.object_id = v.view_id AND tg.key = 'comment' AND tg.end_snapshot IS NULL ORDER BY tg.begin_snapshot DESC LIMIT 1),
			m.metadata, m.metadata_location, m.files, m.ducklake_sql
		FROM `+c.t("ducklake_view")+` v
		JOIN `+c.t("ducklake_schema")+` sc ON sc.schema_id = v.schema_id AND sc.end_snapshot IS NULL
		LEFT JOIN `+c.t(viewMetadataTable)+` m ON m.view_id = v.view_id
		WHERE sc.schema_name = $1 AND v.view_name = $2 AND v.end_snapshot IS NULL`, schema, name).Scan(
		&v.ID, &v.UUID, &v.SchemaID, &dialect, &sql, &aliases, &spath, &srel, &created, &v.Comment, &meta, &metaLoc, &files, &metaSQL)
	switch {
	case isNoRows(err):
		return View{}, notFound(ObjectView, schema+"."+name)
	case err != nil:
		return View{}, fmt.Errorf("look up view %s.%s: %w", schema, name, err)
	}
	v.Dialect, v.SQL, v.Aliases = deref(dialect), deref(sql), deref(aliases)
	v.SchemaPath = resolvePath(c.dataPath, spath, srel)
	if created != nil {
		v.Created = *created
	}
	if meta != nil {
		v.Metadata = &ViewMetadata{Location: deref(metaLoc), Document: []byte(*meta), SQL: deref(metaSQL)}
		if files != nil {
			v.Metadata.Files = int(*files)
		}
	}
	return v, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// ViewNames lists the names of the live views of live schema schema, in no
// particular order; an error wrapping ErrNotFound when the schema does not
// exist.
func (c *Catalog) ViewNames(ctx context.Context, q Querier, schema string) ([]string, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+c.t("ducklake_schema")+` WHERE schema_name = $1 AND end_snapshot IS NULL)`,
		schema).Scan(&exists); err != nil {
		return nil, fmt.Errorf("look up schema %q: %w", schema, err)
	}
	if !exists {
		return nil, notFound(ObjectSchema, schema)
	}
	return Collect(ctx, q, "read views", `SELECT v.view_name FROM `+c.t("ducklake_view")+` v
		JOIN `+c.t("ducklake_schema")+` sc ON sc.schema_id = v.schema_id AND sc.end_snapshot IS NULL
		WHERE sc.schema_name = $1 AND v.end_snapshot IS NULL`, []any{schema}, pgx.RowTo[string])
}

// ViewByUUID names the live view of UUID uuid as "schema.view"; found is
// false when no live view has it.
func (c *Catalog) ViewByUUID(ctx context.Context, q Querier, uuid string) (name string, found bool, err error) {
	err = q.QueryRow(ctx, `SELECT sc.schema_name || '.' || v.view_name FROM `+c.t("ducklake_view")+` v
		JOIN `+c.t("ducklake_schema")+` sc ON sc.schema_id = v.schema_id AND sc.end_snapshot IS NULL
		WHERE v.view_uuid::text = $1 AND v.end_snapshot IS NULL LIMIT 1`, uuid).Scan(&name)
	switch {
	case isNoRows(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("look up view UUID %s: %w", uuid, err)
	}
	return name, true, nil
}

// NewView is a view to create.
type NewView struct {
	Schema Schema // live, where it goes
	Name   string
	UUID   string
	ViewDef
	// Metadata is its sidecar row.
	Metadata ViewMetadata
}

// CreateView adds view nv at snapshot next with the next catalog id of
// head, as DuckDB's CREATE VIEW does, with its comment tag and its sidecar
// row. Name clashes are the caller's to check first (NameKind): Iceberg
// words them by what asks. It returns the new view's id.
func (c *Catalog) CreateView(ctx context.Context, tx pgx.Tx, head Head, next int64, nv NewView) (int64, Edit, error) {
	id := head.NextCatalogID
	if err := c.insertView(ctx, tx, next, id, nv.UUID, nv.Schema.ID, nv.Name, nv.ViewDef); err != nil {
		return 0, Edit{}, err
	}
	if err := c.setViewComment(ctx, tx, next, id, nil, nv.Comment); err != nil {
		return 0, Edit{}, err
	}
	if err := c.putViewMetadata(ctx, tx, id, nv.Metadata); err != nil {
		return 0, Edit{}, err
	}
	return id, Edit{Changes: "created_view:" + QuoteName(nv.Schema.Name) + "." + QuoteName(nv.Name), CatalogIDs: 1}, nil
}

func (c *Catalog) insertView(ctx context.Context, tx pgx.Tx, next, id int64, uuid string, schemaID int64, name string, def ViewDef) error {
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_view")+` (view_id, view_uuid, begin_snapshot, end_snapshot, schema_id, view_name, dialect, sql, column_aliases)
		VALUES ($1, $2::uuid, $3, NULL, $4, $5, $6, $7, $8)`, id, uuid, next, schemaID, name, def.Dialect, def.SQL, def.Aliases); err != nil {
		return fmt.Errorf("insert view %q: %w", name, err)
	}
	return nil
}

// ReplaceView changes live view v (called name) at snapshot next to def
// and its sidecar row to md, as DuckDB's CREATE OR REPLACE VIEW does: the
// row ends and one with the same id and UUID begins, only when what the
// row holds changes; the comment tag follows def's comment.
func (c *Catalog) ReplaceView(ctx context.Context, tx pgx.Tx, next int64, v View, name string, def ViewDef, md ViewMetadata) (Edit, error) {
	if def.Dialect != v.Dialect || def.SQL != v.SQL || def.Aliases != v.Aliases {
		if err := c.endRows(ctx, tx, next, "ducklake_view", "view_id", v.ID); err != nil {
			return Edit{}, fmt.Errorf("replace view %q: end: %w", name, err)
		}
		if err := c.insertView(ctx, tx, next, v.ID, v.UUID, v.SchemaID, name, def); err != nil {
			return Edit{}, fmt.Errorf("replace view: %w", err)
		}
	}
	if err := c.setViewComment(ctx, tx, next, v.ID, v.Comment, def.Comment); err != nil {
		return Edit{}, err
	}
	if err := c.putViewMetadata(ctx, tx, v.ID, md); err != nil {
		return Edit{}, err
	}
	return Edit{Changes: fmt.Sprintf("altered_view:%d", v.ID)}, nil
}

// DropView ends live view v's row and tags at snapshot next as DuckDB's
// DROP VIEW does, and forgets its sidecar row.
func (c *Catalog) DropView(ctx context.Context, tx pgx.Tx, next int64, v View, name string) (Edit, error) {
	if err := c.endObject(ctx, tx, next, v.ID, []endedRows{{"ducklake_view", "view_id"}, {"ducklake_tag", "object_id"}}); err != nil {
		return Edit{}, fmt.Errorf("drop view %q: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(viewMetadataTable)+` WHERE view_id = $1`, v.ID); err != nil {
		return Edit{}, fmt.Errorf("drop view %q: metadata: %w", name, err)
	}
	return Edit{Changes: fmt.Sprintf("dropped_view:%d", v.ID)}, nil
}

// RenameView renames live view v (called from) to schema dst's to at
// snapshot next, as DuckDB's ALTER VIEW … RENAME TO does: the row ends and
// one with the same id, UUID and SQL begins under the new name, logged as
// created_view:"schema"."to". Its tags and sidecar row, keyed by id, stay.
func (c *Catalog) RenameView(ctx context.Context, tx pgx.Tx, next int64, v View, from string, dst Schema, to string) (Edit, error) {
	if err := c.endRows(ctx, tx, next, "ducklake_view", "view_id", v.ID); err != nil {
		return Edit{}, fmt.Errorf("rename view: end %q: %w", from, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_view")+` (view_id, view_uuid, begin_snapshot, end_snapshot, schema_id, view_name, dialect, sql, column_aliases)
		SELECT view_id, view_uuid, $1, NULL, $3, $4, dialect, sql, column_aliases FROM `+c.t("ducklake_view")+`
		WHERE view_id = $2 AND end_snapshot = $1`, next, v.ID, dst.ID, to); err != nil {
		return Edit{}, fmt.Errorf("rename view: insert %q: %w", to, err)
	}
	return Edit{Changes: "created_view:" + QuoteName(dst.Name) + "." + QuoteName(to)}, nil
}

// setViewComment makes view viewID's "comment" tag say c (nil: none); old
// is the live tag.
func (c *Catalog) setViewComment(ctx context.Context, tx pgx.Tx, next, viewID int64, old, comment *string) error {
	if old == nil && comment == nil || old != nil && comment != nil && *old == *comment {
		return nil
	}
	if old != nil {
		if _, err := tx.Exec(ctx, `UPDATE `+c.t("ducklake_tag")+` SET end_snapshot = $1 WHERE object_id = $2 AND key = 'comment' AND end_snapshot IS NULL`,
			next, viewID); err != nil {
			return fmt.Errorf("end view comment: %w", err)
		}
	}
	if comment != nil {
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_tag")+` (object_id, begin_snapshot, end_snapshot, key, value) VALUES ($1, $2, NULL, 'comment', $3)`,
			viewID, next, *comment); err != nil {
			return fmt.Errorf("insert view comment: %w", err)
		}
	}
	return nil
}

func (c *Catalog) putViewMetadata(ctx context.Context, tx pgx.Tx, viewID int64, md ViewMetadata) error {
	if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(viewMetadataTable)+` (view_id, metadata_location, metadata, files, ducklake_sql)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (view_id) DO UPDATE SET metadata_location = excluded.metadata_location, metadata = excluded.metadata,
			files = excluded.files, ducklake_sql = excluded.ducklake_sql`, viewID, md.Location, string(md.Document), md.Files, md.SQL); err != nil {
		return fmt.Errorf("write view metadata: %w", err)
	}
	return nil
}
