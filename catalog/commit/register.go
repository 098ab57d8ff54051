package commit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Registration is an Iceberg table to register (the REST API's
// RegisterTableRequest): its metadata file and the live files of its
// current snapshot, read and checked by ReadRegistration before the
// Postgres transaction (object storage is slow, and the snapshot row a
// commit inserts blocks every other writer), written by Register inside it.
type Registration struct {
	// MetadataLocation is the metadata file, as normalised ("s3://…").
	MetadataLocation string
	// Metadata is its content.
	Metadata *iceberg.TableMetadata
	// files are the current snapshot's live data and delete files, as an
	// add-snapshot that adds them all.
	files *fileChange
}

// ReadRegistration reads the table metadata file at metadataLocation and
// the manifests of its current snapshot, and checks them against what
// DuckLake can hold. Every location is checked before it is read (the
// catalog reads with its root credentials): the metadata file must be
// inside the namespace's location and outside every live table's
// (MetadataFile); the table location it gives must be one a create could
// choose (inside the namespace, overlapping no live table at snapshot
// snap), and the manifest list, manifests and every live file inside it,
// as the commit path requires of a snapshot's files.
func (c *Catalog) ReadRegistration(ctx context.Context, q ducklake.Querier, snap int64, ns Namespace, name, metadataLocation string) (*Registration, error) {
	if err := checkTableName(name); err != nil {
		return nil, err
	}
	loc, holder, err := c.MetadataFile(ctx, q, snap, ns, "metadata file", metadataLocation)
	if err != nil {
		return nil, err
	}
	if holder != "" {
		// The file is that table's: registering it again would make two
		// catalog entries for one table's files.
		return nil, newError(ErrExists, "Table already exists: the table whose location holds metadata file %s is registered as %s", metadataLocation, holder)
	}
	if c.objects == nil {
		return nil, unsupported("this catalog has no storage client to read metadata files with, so it cannot register tables")
	}
	data, err := c.objects.Get(ctx, loc, c.maxObjectBytes)
	if err != nil {
		return nil, objectError("metadata file", metadataLocation, err)
	}
	md, err := parseTableMetadata(data, c.maxObjectBytes)
	if err != nil {
		return nil, invalid("metadata file %s: %v", metadataLocation, err)
	}
	switch {
	case md.FormatVersion == 1:
		return nil, unsupported("metadata file %s is Iceberg format version 1: this catalog serves format versions 2 to %d (upgrade the table first)", metadataLocation, c.maxFormat)
	case md.FormatVersion > c.maxFormat:
		return nil, unsupported("metadata file %s is Iceberg format version %d: this catalog serves format versions up to %d", metadataLocation, md.FormatVersion, c.maxFormat)
	}
	if err := md.Validate(); err != nil {
		return nil, invalid("metadata file %s: %v", metadataLocation, err)
	}
	if md.Location == "" {
		return nil, invalid("metadata file %s has no table location", metadataLocation)
	}
	// What DuckLake cannot hold is refused before the manifests are read,
	// and so is a table location that is not the table's own to take.
	p, _, err := registrationPlan(ns, name, md, c.maxFormat)
	if err != nil {
		return nil, err
	}
	dir, err := c.claim(ctx, q, snap, p.placement, md.Location)
	if err != nil {
		return nil, err
	}
	reg := &Registration{MetadataLocation: loc.String(), Metadata: md, files: &fileChange{}}
	if cur := md.CurrentSnapshot(); cur != nil {
		if reg.files, err = c.liveSnapshotFiles(ctx, md, dir, cur); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// MetadataFile parses location, a metadata file a client asks the catalog
// to read (what names it in messages), and checks that it is inside
// namespace ns's location. holder is the qualified name of a table live at
// snapshot snap whose location holds the file, "" for none: such a file is
// that table's, and callers refuse it without reading it, so that what the
// answer says never depends on what another table's location holds.
func (c *Catalog) MetadataFile(ctx context.Context, q ducklake.Querier, snap int64, ns Namespace, what, location string) (loc objstore.Location, holder string, err error) {
	loc, err = objstore.Parse(location)
	nsDir, derr := objstore.ParseDir(ns.Path)
	if err != nil || derr != nil || !loc.Within(nsDir) {
		return loc, "", newError(ErrForbidden, "%s %s is not inside the location of namespace %s, %s", what, location, ns.Name, ns.Path)
	}
	r := c.reader(q)
	tables, err := r.Tables(ctx, snap)
	if err != nil {
		return loc, "", fmt.Errorf("check %s %s: %w", what, location, err)
	}
	for _, t := range tables {
		if dir, err := objstore.ParseDir(t.Path); err != nil || !loc.Within(dir) {
			continue
		}
		schemas, err := r.Schemas(ctx, snap)
		if err != nil {
			return loc, "", fmt.Errorf("check %s %s: %w", what, location, err)
		}
		for _, sc := range schemas {
			if sc.ID == t.SchemaID {
				return loc, sc.Name + "." + t.Name, nil
			}
		}
		return loc, t.Name, nil
	}
	return loc, "", nil
}

// parseTableMetadata decodes a metadata file, gzip-compressed or not (the
// .gz.metadata.json files of write.metadata.compression-codec=gzip).
func parseTableMetadata(data []byte, maxBytes int64) (*iceberg.TableMetadata, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if data, err = io.ReadAll(io.LimitReader(zr, maxBytes+1)); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if int64(len(data)) > maxBytes {
			return nil, fmt.Errorf("more than %d bytes uncompressed", maxBytes)
		}
	}
	var md iceberg.TableMetadata
	if err := json.Unmarshal(data, &md); err != nil {
		return nil, fmt.Errorf("not Iceberg table metadata: %w", err)
	}
	// Writers of format version 1 (and some of 2) spell "no current
	// snapshot" as -1.
	if md.CurrentSnapshotID != nil && *md.CurrentSnapshotID == -1 {
		md.CurrentSnapshotID = nil
	}
	if len(md.Schemas) == 0 {
		return nil, errors.New("no schemas")
	}
	return &md, nil
}

// liveSnapshotFiles reads snapshot s's manifest list and every manifest in
// it, and collects the files live in s: entries ADDED or EXISTING, whatever
// snapshot added them. Files written under a partition spec other than the
// table's default are refused: DuckLake keeps one partitioning per table
// (an unpartitioned spec is no partitioning and always fits).
func (c *Catalog) liveSnapshotFiles(ctx context.Context, md *iceberg.TableMetadata, dir TableDir, s *iceberg.Snapshot) (*fileChange, error) {
	list, err := c.readManifestList(ctx, s.ManifestList, dir)
	if err != nil {
		return nil, err
	}
	ch := &fileChange{}
	for _, mf := range list.Files {
		man, err := c.readManifest(ctx, mf, dir)
		if err != nil {
			return nil, err
		}
		for _, e := range man.Entries {
			if e.Status == iceberg.StatusDeleted {
				continue
			}
			if len(man.Spec.Fields) > 0 && man.Spec.ID != md.DefaultSpecID {
				return nil, unsupported("file %s was written under partition spec %d, not the table's default spec %d: DuckLake keeps only the current partitioning, so rewrite the table's files under its current spec before registering it", e.File.Path, man.Spec.ID, md.DefaultSpecID)
			}
			if e.File.Content == iceberg.ContentEqualityDeletes {
				// A registration is one DuckLake snapshot: which data files
				// an equality delete applies to goes by sequence numbers
				// that are not carried over.
				return nil, unsupported("equality delete file %s: a registered table's files become one snapshot, so equality deletes cannot be applied by sequence number; rewrite the table's data files (or write position deletes) before registering it", e.File.Path)
			}
			if err := ch.addLive(*e.File, man.Spec, dir); err != nil {
				return nil, err
			}
		}
	}
	return ch, nil
}

// registrationPlan plans the table a metadata file describes: its current
// schema (field ids kept, as the files carry them), default spec and sort
// order, properties, format version and location. It also returns the
// spec, nil when the table is unpartitioned.
func registrationPlan(ns Namespace, name string, md *iceberg.TableMetadata, maxFormat int) (*tablePlan, *iceberg.PartitionSpec, error) {
	schema := md.SchemaByID(md.CurrentSchemaID)
	var spec *iceberg.PartitionSpec
	for i := range md.PartitionSpecs {
		if s := &md.PartitionSpecs[i]; s.ID == md.DefaultSpecID && len(s.Fields) > 0 {
			spec = s
		}
	}
	var order *iceberg.SortOrder
	for i := range md.SortOrders {
		if o := &md.SortOrders[i]; o.OrderID == md.DefaultSortOrderID && len(o.Fields) > 0 {
			order = o
		}
	}
	p, err := planTable(ns, name, md.Location, schema, spec, order, md.Properties, false, maxFormat)
	if err != nil {
		return nil, nil, err
	}
	p.formatVersion = max(p.formatVersion, md.FormatVersion)
	return p, spec, nil
}

// Register creates table name in namespace ns from reg, as part of snap:
// the metadata's current schema (field ids kept, as the files carry them),
// default partition spec and sort order, properties, format version, UUID
// and location, then the current snapshot's live files through the path
// an add-snapshot takes (statistics from the manifests, no data rewritten).
// The Iceberg snapshot history is not carried over: the table's history
// starts at snap, as a DuckLake table's does.
func (c *Catalog) Register(ctx context.Context, tx pgx.Tx, snap *Snapshot, ns Namespace, name string, reg *Registration) (ducklake.Table, error) {
	md := reg.Metadata
	p, spec, err := registrationPlan(ns, name, md, c.maxFormat)
	if err != nil {
		return ducklake.Table{}, err
	}
	// The table keeps its UUID (assert-table-uuid of clients that knew it
	// still holds), unless another live table has it: two catalog entries
	// writing one table's location would corrupt each other.
	if id, err := uuid.Parse(md.TableUUID); err == nil {
		p.uuid = id.String()
		var other string
		err := tx.QueryRow(ctx, `SELECT s.schema_name || '.' || t.table_name FROM `+c.t("ducklake_table")+` t
			JOIN `+c.t("ducklake_schema")+` s ON s.schema_id = t.schema_id AND s.end_snapshot IS NULL
			WHERE t.table_uuid::text = $1 AND t.end_snapshot IS NULL LIMIT 1`, p.uuid).Scan(&other)
		switch {
		case err == nil:
			return ducklake.Table{}, newError(ErrExists, "Table already exists: the table of metadata file %s (UUID %s) is registered as %s", reg.MetadataLocation, p.uuid, other)
		case !errors.Is(err, pgx.ErrNoRows):
			return ducklake.Table{}, fmt.Errorf("look up table UUID %s: %w", p.uuid, err)
		}
	}
	t, err := c.writeTable(ctx, tx, snap, ns, p)
	if err != nil {
		return t, err
	}
	alias := map[int]int64{}
	if spec != nil && p.partitionID != 0 {
		alias[spec.ID] = p.partitionID
	}
	if err := c.applyFiles(ctx, tx, snap, t, reg.files, iceberg.OpAppend, alias); err != nil {
		return t, err
	}
	if err := c.adoptFiles(ctx, tx, ns.ID, t, reg.files); err != nil {
		return t, err
	}
	return t, nil
}

// adoptFiles takes the registered files away from dropped tables of the
// schema that had the same path (a table dropped without purge and
// registered again): DuckLake deletes a dropped table's files once the
// snapshots that saw it expire, and these files now belong to t. The
// dropped table's time travel loses them, as it would at that expiry.
func (c *Catalog) adoptFiles(ctx context.Context, tx pgx.Tx, schemaID int64, t ducklake.Table, files *fileChange) error {
	var rel []string
	for _, list := range [][]addedFile{files.addData, files.addDeletes} {
		for _, f := range list {
			if p, ok := relTo(t.Path, f.file.Path); ok {
				rel = append(rel, p)
			}
		}
	}
	if len(rel) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT table_id FROM `+c.t("ducklake_table")+`
		WHERE schema_id = $1 AND end_snapshot IS NOT NULL AND coalesce(path_is_relative, true) AND path = $2`, schemaID, t.RawPath)
	if err != nil {
		return fmt.Errorf("look up dropped tables at %s: %w", t.Path, err)
	}
	dropped, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("look up dropped tables at %s: %w", t.Path, err)
	}
	adopted := `SELECT data_file_id FROM ` + c.t("ducklake_data_file") + ` WHERE table_id = $1 AND coalesce(path_is_relative, true) AND path = ANY($2)`
	for _, id := range dropped {
		for _, q := range []string{
			`DELETE FROM ` + c.t("ducklake_delete_file") + ` WHERE table_id = $1 AND coalesce(path_is_relative, true) AND path = ANY($2)`,
			`DELETE FROM ` + c.t("ducklake_file_column_stats") + ` WHERE table_id = $1 AND data_file_id IN (` + adopted + `)`,
			`DELETE FROM ` + c.t("ducklake_file_partition_value") + ` WHERE table_id = $1 AND data_file_id IN (` + adopted + `)`,
			`DELETE FROM ` + c.t("ducklake_data_file") + ` WHERE table_id = $1 AND coalesce(path_is_relative, true) AND path = ANY($2)`,
		} {
			if _, err := tx.Exec(ctx, q, id, rel); err != nil {
				return fmt.Errorf("take the files of dropped table %d over: %w", id, err)
			}
		}
	}
	return nil
}
