package commit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Target is the table a commit applies to.
type Target struct {
	Namespace Namespace
	Name      string
	// Table is the table as it is at the head snapshot; nil when it does
	// not exist (a create transaction's assert-create).
	Table *ducklake.Table
	// Base is the table's Iceberg metadata at the head snapshot, as the
	// catalog serves it; the requirements are checked against it. nil
	// with Table.
	Base *iceberg.TableMetadata
	// Manifests were read before the transaction (ReadManifests); nil
	// reads them now.
	Manifests *Manifests
	// Governor says the committing principal administers governance: only
	// it may set or remove the governance-owned table property
	// MaskingDisabledProperty.
	Governor bool
}

// plan is a commit's updates, folded into the state they ask for.
type plan struct {
	// governed: the updates set or remove MaskingDisabledProperty.
	governed      bool
	uuid          string
	formatVersion int
	schemas       []*iceberg.Schema // added
	schema        *iceberg.Schema   // to be current; nil: unchanged
	specs         []iceberg.PartitionSpec
	spec          *iceberg.PartitionSpec // to be the default; nil: unchanged
	orders        []iceberg.SortOrder
	order         *iceberg.SortOrder // to be the default; nil: unchanged
	location      string
	props         map[string]*string // nil value: remove
	snapshots     []*iceberg.Snapshot
	onMain        map[int64]bool // client snapshot ids set-snapshot-ref main points at
	refs          []Update       // set-snapshot-ref of other refs
	removeRefs    []string
	// replaceMain: remove-snapshot-ref main, Iceberg's replace
	// transaction — the table's rows end and the commit's snapshot (if
	// any) holds only the new files.
	replaceMain bool
	// removeSnapshots are the table's Iceberg snapshots remove-snapshots
	// asks to remove, ascending; ids the table does not have are left out,
	// as Iceberg's TableMetadata.Builder ignores them.
	removeSnapshots []int64
	// specAlias maps the id the client gave a spec this commit adds to the
	// DuckLake partition id it got: files of the same commit name the
	// former.
	specAlias map[int]int64
	// statistics are the statistics files set (or removed) by the commit,
	// the last update for each winning.
	statistics map[statsKey]statsUpdate
}

// Commit checks a table commit's requirements against target and writes
// its updates into tx as part of snap. It returns the table as it is
// after the commit (created, with assert-create).
func (c *Catalog) Commit(ctx context.Context, tx pgx.Tx, snap *Snapshot, target Target, req *TableCommit) (ducklake.Table, error) {
	if err := c.Check(ctx, tx, target, req); err != nil {
		return ducklake.Table{}, err
	}
	create := target.Table == nil
	p, err := foldUpdates(req.Updates, target.Base, c.maxFormat)
	if err != nil {
		return ducklake.Table{}, err
	}
	if p.governed && !target.Governor {
		return ducklake.Table{}, newError(ErrForbidden, "table property %q: only a governance administrator may set or remove it", MaskingDisabledProperty)
	}
	var t ducklake.Table
	if create {
		if t, err = c.createFromUpdates(ctx, tx, snap, target, p); err != nil {
			return t, err
		}
	} else {
		t = *target.Table
		if err := c.applyMetadata(ctx, tx, snap, t, target.Base, p); err != nil {
			return t, err
		}
		if p.replaceMain {
			if err := c.endContents(ctx, tx, snap, t); err != nil {
				return t, err
			}
		}
	}
	m := target.Manifests
	if m == nil {
		m = newManifests()
	}
	var dir TableDir
	if len(p.snapshots) > 0 {
		if dir, err = tableDirOf(t.Path); err != nil {
			return t, err
		}
	}
	for _, s := range p.snapshots {
		ch, err := c.snapshotChanges(ctx, m, dir, s)
		if err != nil {
			return t, err
		}
		if err := c.applyFiles(ctx, tx, snap, t, ch, s.Summary["operation"], p.specAlias); err != nil {
			return t, err
		}
		if err := c.scheduleClientManifests(ctx, tx, snap, t, m, dir, s); err != nil {
			return t, err
		}
	}
	if len(p.snapshots) > 0 {
		if err := c.unscheduleRecorded(ctx, tx, snap, t); err != nil {
			return t, err
		}
	}
	if err := c.applyRefs(ctx, tx, snap, t, target.Base, p); err != nil {
		return t, err
	}
	if err := c.applyStatistics(ctx, tx, snap, t, target.Base, p); err != nil {
		return t, err
	}
	if len(p.removeSnapshots) > 0 {
		if err := c.removeSnapshots(ctx, tx, snap, t, target.Base, p.removeSnapshots); err != nil {
			return t, err
		}
	}
	return t, nil
}

// Check checks a commit's requirements against target without changing
// anything (Commit checks them too; this is for commits without updates).
func (c *Catalog) Check(ctx context.Context, tx pgx.Tx, target Target, req *TableCommit) error {
	create := slices.ContainsFunc(req.Requirements, func(r Requirement) bool { return r.Type == AssertCreate })
	switch {
	case create && target.Table != nil:
		return conflict("Requirement failed: table already exists: %s.%s", target.Namespace.Name, target.Name)
	case !create && target.Table == nil:
		return newError(ErrNotFound, "Table does not exist: %s.%s", target.Namespace.Name, target.Name)
	case create && len(req.Requirements) > 1:
		return conflict("Requirement failed: table %s.%s does not exist yet, so only assert-create can hold", target.Namespace.Name, target.Name)
	case create:
		return nil
	}
	return c.checkRequirements(ctx, tx, target, req.Requirements)
}

// checkRequirements compares each requirement with the table's state.
func (c *Catalog) checkRequirements(ctx context.Context, tx pgx.Tx, target Target, reqs []Requirement) error {
	md := target.Base
	failed := func(format string, args ...any) error {
		return conflict("Requirement failed: "+format, args...)
	}
	for _, r := range reqs {
		switch r.Type {
		case AssertTableUUID:
			if !strings.EqualFold(r.UUID, md.TableUUID) {
				return failed("UUID does not match: expected %s != %s", md.TableUUID, r.UUID)
			}
		case AssertRefSnapshotID:
			cur, exists, err := c.refSnapshot(ctx, tx, target, r.Ref)
			if err != nil {
				return err
			}
			switch {
			case r.SnapshotID == nil && exists:
				return failed("reference %s was created concurrently (it points at snapshot %d)", r.Ref, cur)
			case r.SnapshotID != nil && !exists:
				return failed("branch or tag %s is missing, expected %d", r.Ref, *r.SnapshotID)
			case r.SnapshotID != nil && cur != *r.SnapshotID:
				return failed("branch or tag %s has changed: expected id %d != %d", r.Ref, *r.SnapshotID, cur)
			}
		default:
			if want, have, what := assertedID(r, md); want != nil && *want != have {
				return failed("%s changed: expected id %d != %d", what, *want, have)
			}
		}
	}
	return nil
}

// assertedID is the id an id-asserting requirement expects, the one md
// has and what the id is of (for the failure); nil for other requirements.
func assertedID(r Requirement, md *iceberg.TableMetadata) (*int, int, string) {
	switch r.Type {
	case AssertLastAssignedFieldID:
		return r.LastAssignedFieldID, md.LastColumnID, "last assigned field id"
	case AssertCurrentSchemaID:
		return r.CurrentSchemaID, md.CurrentSchemaID, "current schema"
	case AssertLastAssignedPartitionID:
		return r.LastAssignedPartitionID, md.LastPartitionID, "last assigned partition id"
	case AssertDefaultSpecID:
		return r.DefaultSpecID, md.DefaultSpecID, "default partition spec"
	case AssertDefaultSortOrderID:
		return r.DefaultSortOrderID, md.DefaultSortOrderID, "default sort order"
	}
	return nil, 0, ""
}

// refSnapshot is where ref points: main from the metadata, other refs
// from the sidecar.
func (c *Catalog) refSnapshot(ctx context.Context, tx pgx.Tx, target Target, ref string) (int64, bool, error) {
	if ref == iceberg.MainBranch {
		r, ok := target.Base.Refs[ref]
		return r.SnapshotID, ok, nil
	}
	var id int64
	err := tx.QueryRow(ctx, `SELECT snapshot_id FROM `+c.t(refTable)+` WHERE table_id = $1 AND name = $2`, target.Table.ID, ref).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read ref %s: %w", ref, err)
	}
	return id, true, nil
}

// foldUpdates walks the updates in order and works out the state they
// ask for. base is nil for a create transaction.
func foldUpdates(updates []Update, base *iceberg.TableMetadata, maxFormat int) (*plan, error) {
	p := &plan{props: map[string]*string{}, onMain: map[int64]bool{}, specAlias: map[int]int64{}}
	if base != nil {
		p.formatVersion = base.FormatVersion
	}
	added := map[int64]bool{}
	removed := map[int64]bool{}
	for i := range updates {
		u := &updates[i]
		switch u.Action {
		case ActionAssignUUID:
			if _, err := uuid.Parse(u.UUID); err != nil {
				return nil, invalid("assign-uuid: %q is not a UUID", u.UUID)
			}
			if base != nil && !strings.EqualFold(u.UUID, base.TableUUID) {
				return nil, invalid("assign-uuid: the table's UUID is %s and cannot change", base.TableUUID)
			}
			p.uuid = strings.ToLower(u.UUID)
		case ActionUpgradeFormatVersion:
			switch {
			case u.FormatVersion < p.formatVersion:
				return nil, invalid("upgrade-format-version: cannot downgrade from %d to %d", p.formatVersion, u.FormatVersion)
			case u.FormatVersion > maxFormat:
				return nil, unsupported("upgrade-format-version %d: this catalog serves Iceberg format versions up to %d", u.FormatVersion, maxFormat)
			case u.FormatVersion < 1:
				return nil, invalid("upgrade-format-version: %d", u.FormatVersion)
			case u.FormatVersion == 1:
				return nil, unsupported("format version 1: this catalog serves Iceberg format versions 2 to %d", maxFormat)
			}
			p.formatVersion = max(u.FormatVersion, 2)
		case ActionAddSchema:
			p.schemas = append(p.schemas, u.Schema)
		case ActionSetCurrentSchema:
			s, err := pick(*u.SchemaID, p.schemas, func(s *iceberg.Schema) int { return s.ID }, baseSchemas(base), "schema")
			if err != nil {
				return nil, err
			}
			p.schema = s
		case ActionAddSpec:
			p.specs = append(p.specs, *u.Spec)
		case ActionSetDefaultSpec:
			s, err := pick(*u.SpecID, p.specs, func(s iceberg.PartitionSpec) int { return s.ID }, baseSpecs(base), "partition spec")
			if err != nil {
				return nil, err
			}
			p.spec = &s
		case ActionAddSortOrder:
			p.orders = append(p.orders, *u.SortOrder)
		case ActionSetDefaultSortOrder:
			o, err := pick(*u.SortOrderID, p.orders, func(o iceberg.SortOrder) int { return o.OrderID }, baseOrders(base), "sort order")
			if err != nil {
				return nil, err
			}
			p.order = &o
		case ActionAddSnapshot:
			s := u.Snapshot
			switch s.Summary["operation"] {
			case iceberg.OpAppend, iceberg.OpOverwrite, iceberg.OpDelete, iceberg.OpReplace:
			default:
				return nil, invalid("add-snapshot: snapshot %d has operation %q", s.SnapshotID, s.Summary["operation"])
			}
			if s.ManifestList == "" {
				return nil, invalid("add-snapshot: snapshot %d has no manifest list", s.SnapshotID)
			}
			if added[s.SnapshotID] || base != nil && base.SnapshotByID(s.SnapshotID) != nil {
				return nil, invalid("add-snapshot: snapshot %d already exists", s.SnapshotID)
			}
			added[s.SnapshotID] = true
			p.snapshots = append(p.snapshots, s)
		case ActionSetSnapshotRef:
			id := *u.SnapshotID
			switch {
			case removed[id]:
				return nil, invalid("set-snapshot-ref %s: snapshot %d was removed by this commit", u.RefName, id)
			case u.RefName == iceberg.MainBranch && u.Type != "branch":
				return nil, invalid("set-snapshot-ref: main is a branch")
			case u.RefName == iceberg.MainBranch && added[id]:
				p.onMain[id] = true
			case u.RefName == iceberg.MainBranch && p.replaceMain:
				return nil, unsupported("set-snapshot-ref main → %d after removing main: a replaced table goes on from a new snapshot only", id)
			case u.RefName == iceberg.MainBranch && base != nil && base.Refs[iceberg.MainBranch].SnapshotID == id && base.CurrentSnapshotID != nil:
				// Already there.
			case u.RefName == iceberg.MainBranch:
				return nil, unsupported("set-snapshot-ref main → %d: moving main to another snapshot (rollback, cherry-pick) cannot be expressed in DuckLake, whose history is linear; commit the changes as a new snapshot instead", id)
			case u.Type == "branch" && added[id]:
				return nil, unsupported("set-snapshot-ref %s: writes to branches other than main are not supported (DuckLake has one line of history; other branches are read-only pointers)", u.RefName)
			case !added[id] && (base == nil || base.SnapshotByID(id) == nil):
				return nil, invalid("set-snapshot-ref %s: snapshot %d does not exist", u.RefName, id)
			default:
				p.refs = append(p.refs, *u)
			}
		case ActionRemoveSnapshotRef:
			if u.RefName == iceberg.MainBranch {
				// Iceberg's replace transaction (CREATE OR REPLACE, REPLACE
				// TABLE … AS SELECT): main is dropped and, usually, set
				// again to a snapshot of only the new files. In DuckLake:
				// every row of the table ends in this commit's snapshot.
				if base == nil || len(p.snapshots) > 0 {
					return nil, invalid("remove-snapshot-ref main: only before the replacement's snapshot, on an existing table")
				}
				p.replaceMain = true
				continue
			}
			p.removeRefs = append(p.removeRefs, u.RefName)
		case ActionRemoveSnapshots:
			if err := p.removeSnapshotIDs(u.SnapshotIDs, base, added, removed); err != nil {
				return nil, err
			}
		case ActionSetLocation:
			loc, err := objstore.ParseDir(u.Location)
			if err != nil {
				return nil, badLocation("set-location", err)
			}
			if base != nil {
				if cur, err := objstore.ParseDir(base.Location); err != nil || loc != cur {
					return nil, unsupported("set-location: DuckLake decides where a table's files live (its data path); the location stays %s", base.Location)
				}
			}
			p.location = u.Location
		case ActionSetProperties:
			for k, v := range u.Updates {
				if strings.EqualFold(k, MaskingDisabledProperty) {
					if v != "true" && v != "false" {
						return nil, invalid("table property %q: %q is neither true nor false", MaskingDisabledProperty, v)
					}
					k, p.governed = MaskingDisabledProperty, true
				} else if err := checkProperty(k); err != nil {
					return nil, err
				}
				p.props[k] = &v
			}
		case ActionRemoveProperties:
			for _, k := range u.Removals {
				if strings.EqualFold(k, MaskingDisabledProperty) {
					k, p.governed = MaskingDisabledProperty, true
				} else if err := checkProperty(k); err != nil {
					return nil, err
				}
				p.props[k] = nil
			}
		case ActionSetStatistics, ActionRemoveStatistics, ActionSetPartitionStatistics, ActionRemovePartitionStatistics:
			if err := p.foldStatistics(u, base, added, removed); err != nil {
				return nil, err
			}
		case ActionRemovePartitionSpecs:
			if base != nil && slices.Contains(u.SpecIDs, base.DefaultSpecID) {
				return nil, invalid("remove-partition-specs: spec %d is the default", base.DefaultSpecID)
			}
		case ActionRemoveSchemas:
			if base != nil && slices.Contains(u.SchemaIDs, base.CurrentSchemaID) {
				return nil, invalid("remove-schemas: schema %d is current", base.CurrentSchemaID)
			}
		case ActionAddEncryptionKey, ActionRemoveEncryptionKey:
			return nil, unsupported("%s: this catalog does not take encrypted tables", u.Action)
		}
	}
	for _, s := range p.snapshots {
		if !p.onMain[s.SnapshotID] {
			return nil, unsupported("add-snapshot %d without set-snapshot-ref main: staged snapshots (write-audit-publish) are not supported", s.SnapshotID)
		}
	}
	if len(p.schemas) > 0 && (p.schema == nil || !slices.Contains(p.schemas, p.schema)) {
		return nil, unsupported("add-schema without making it current: DuckLake keeps only the current schema")
	}
	if len(p.specs) > 0 && (p.spec == nil || !slices.ContainsFunc(p.specs, func(s iceberg.PartitionSpec) bool { return specEqual(s, *p.spec) })) {
		return nil, unsupported("add-spec without making it the default: DuckLake keeps only the current partitioning")
	}
	if len(p.orders) > 0 && p.order == nil {
		return nil, unsupported("add-sort-order without making it the default: DuckLake keeps only the current sort order")
	}
	return p, nil
}

// removeSnapshotIDs folds one remove-snapshots update into p, with
// Iceberg's semantics (TableMetadata.Builder.removeSnapshots): ids the
// table does not have are ignored, and tags and branches left pointing at a
// removed snapshot are removed with it. The current snapshot cannot go:
// Iceberg would drop the main branch, and a DuckLake table always has a
// current state.
func (p *plan) removeSnapshotIDs(ids []int64, base *iceberg.TableMetadata, added, removed map[int64]bool) error {
	for _, id := range ids {
		switch {
		case added[id]:
			return invalid("remove-snapshots: snapshot %d is added by this same commit", id)
		case base == nil || base.SnapshotByID(id) == nil || removed[id]:
			continue
		case base.CurrentSnapshotID != nil && id == *base.CurrentSnapshotID:
			return invalid("remove-snapshots: snapshot %d is the table's current snapshot (main) and cannot be removed", id)
		}
		removed[id] = true
		p.removeSnapshots = append(p.removeSnapshots, id)
	}
	slices.Sort(p.removeSnapshots)
	dangling := func(name string) {
		if !slices.Contains(p.removeRefs, name) {
			p.removeRefs = append(p.removeRefs, name)
		}
	}
	p.refs = slices.DeleteFunc(p.refs, func(u Update) bool {
		if removed[*u.SnapshotID] {
			dangling(u.RefName)
			return true
		}
		return false
	})
	if base == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(base.Refs)) {
		repointed := slices.ContainsFunc(p.refs, func(u Update) bool { return u.RefName == name })
		if name != iceberg.MainBranch && removed[base.Refs[name].SnapshotID] && !repointed {
			dangling(name)
		}
	}
	return nil
}

// pick resolves an id in set-current-schema, set-default-spec and
// set-default-sort-order: -1 is the last one added by this commit; other
// ids name one added by this commit or one the table has.
func pick[T any](id int, added []T, idOf func(T) int, existing []T, what string) (T, error) {
	var zero T
	if id == -1 {
		if len(added) == 0 {
			return zero, invalid("set %s -1 (the last added) without adding one", what)
		}
		return added[len(added)-1], nil
	}
	for i := len(added) - 1; i >= 0; i-- {
		if idOf(added[i]) == id {
			return added[i], nil
		}
	}
	for _, e := range existing {
		if idOf(e) == id {
			return e, nil
		}
	}
	return zero, invalid("%s %d does not exist", what, id)
}

func baseSchemas(md *iceberg.TableMetadata) []*iceberg.Schema {
	if md == nil {
		return nil
	}
	return md.Schemas
}

func baseSpecs(md *iceberg.TableMetadata) []iceberg.PartitionSpec {
	if md == nil {
		return nil
	}
	return md.PartitionSpecs
}

func baseOrders(md *iceberg.TableMetadata) []iceberg.SortOrder {
	if md == nil {
		return nil
	}
	return md.SortOrders
}

func specEqual(a, b iceberg.PartitionSpec) bool {
	return a.ID == b.ID && slices.Equal(a.Fields, b.Fields)
}

// createFromUpdates creates the table a create transaction describes: its
// schema, spec and sort order are the ones the updates make current (ids
// kept: the client may already have written files with them).
func (c *Catalog) createFromUpdates(ctx context.Context, tx pgx.Tx, snap *Snapshot, target Target, p *plan) (ducklake.Table, error) {
	if p.schema == nil {
		return ducklake.Table{}, invalid("a create transaction needs add-schema and set-current-schema")
	}
	props := map[string]string{}
	for k, v := range p.props {
		if v != nil {
			props[k] = *v
		}
	}
	tp, err := planTable(target.Namespace, target.Name, p.location, p.schema, p.spec, p.order, props, false, c.maxFormat)
	if err != nil {
		return ducklake.Table{}, err
	}
	tp.formatVersion = max(tp.formatVersion, p.formatVersion)
	tp.known = p.specs
	if p.uuid != "" {
		tp.uuid = p.uuid
	}
	t, err := c.writeTable(ctx, tx, snap, target.Namespace, tp)
	if err == nil && p.spec != nil {
		p.specAlias[p.spec.ID] = tp.partitionID
	}
	return t, err
}

// applyMetadata applies schema, partitioning, sort order and property
// changes to an existing table.
func (c *Catalog) applyMetadata(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, base *iceberg.TableMetadata, p *plan) error {
	altered := false
	if p.schema != nil {
		if cur := base.SchemaByID(base.CurrentSchemaID); cur == nil || !cur.Equal(p.schema) {
			changed, err := c.evolveSchema(ctx, tx, snap, t.ID, p.schema)
			if err != nil {
				return err
			}
			altered = altered || changed
		}
	}
	if p.spec != nil || p.order != nil {
		cols, err := c.columnsAt(ctx, tx, snap, t.ID)
		if err != nil {
			return err
		}
		fields, err := ducklake.BuildFields(cols)
		if err != nil {
			return fmt.Errorf("table %d: %w", t.ID, err)
		}
		top := topLevel(fields)
		if p.spec != nil {
			known := append(slices.Clone(base.PartitionSpecs), p.specs...)
			changed, id, err := c.replacePartition(ctx, tx, snap, t.ID, p.spec, known, top)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(p.specs, func(s iceberg.PartitionSpec) bool { return specEqual(s, *p.spec) }) {
				p.specAlias[p.spec.ID] = id
			}
			altered = altered || changed
		}
		if p.order != nil {
			keys, err := duckSort(p.order, top)
			if err != nil {
				return err
			}
			changed, err := c.replaceSort(ctx, tx, snap, t.ID, *p.order, keys, top)
			if err != nil {
				return err
			}
			altered = altered || changed
		}
	}
	if altered {
		if err := c.schemaVersion(ctx, tx, snap, t.ID); err != nil {
			return err
		}
		snap.change(fmt.Sprintf("altered_table:%d", t.ID))
	}
	set := map[string]string{}
	var remove []string
	for k, v := range p.props {
		if v == nil {
			remove = append(remove, k)
		} else {
			set[k] = *v
		}
	}
	if p.formatVersion > base.FormatVersion {
		set[formatVersionProperty] = strconv.Itoa(p.formatVersion)
	}
	if len(set) > 0 || len(remove) > 0 || len(p.refs) > 0 || len(p.removeRefs) > 0 {
		// The metadata changes though DuckLake's rows do not: the change
		// entry is what tells the materialiser (and DuckDB's conflict
		// check) that this table changed.
		snap.change(fmt.Sprintf("altered_table:%d", t.ID))
	}
	slices.Sort(remove)
	return c.setProperties(ctx, tx, t.ID, set, remove)
}

// schemaVersion records that table tableID's schema changes at the
// snapshot (once per snapshot and table).
func (c *Catalog) schemaVersion(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64) error {
	snap.schemaChanged = true
	_, err := tx.Exec(ctx, `INSERT INTO `+c.t("ducklake_schema_versions")+` (begin_snapshot, schema_version, table_id)
		SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM `+c.t("ducklake_schema_versions")+` WHERE begin_snapshot = $1 AND table_id = $3)`,
		snap.ID, snap.NewSchemaVersion(), tableID)
	if err != nil {
		return fmt.Errorf("insert schema version: %w", err)
	}
	return c.inlinedTable(ctx, tx, snap, tableID)
}

// replacePartition makes spec the table's partitioning unless it already
// is: DuckLake's partition keys, as ALTER TABLE … SET PARTITIONED BY
// writes them (a new DuckLake partition only when the keys change), and
// the sidecar's record of the client's spec. known are the specs the
// client knows (see newSpecVersion). It returns the DuckLake partition id
// the spec's files go to, 0 for none.
func (c *Catalog) replacePartition(ctx context.Context, tx pgx.Tx, snap *Snapshot, tableID int64, spec *iceberg.PartitionSpec,
	known []iceberg.PartitionSpec, top map[int64]ducklake.Field) (bool, int64, error) {
	keys, _, err := duckPartition(spec, top)
	if err != nil {
		return false, 0, err
	}
	cur, err := c.reader(tx).Partition(ctx, snap.ID, tableID)
	if err != nil {
		return false, 0, err
	}
	var curKeys []duckKey
	var id int64
	if cur != nil {
		id = cur.ID
		for _, col := range cur.Columns {
			curKeys = append(curKeys, duckKey{column: col.ColumnID, transform: col.Transform})
		}
	}
	changed := false
	if !slices.Equal(keys, curKeys) {
		if _, err := tx.Exec(ctx, `UPDATE `+c.t("ducklake_partition_info")+` SET end_snapshot = $1 WHERE table_id = $2 AND end_snapshot IS NULL`, snap.ID, tableID); err != nil {
			return false, 0, fmt.Errorf("end the partitioning of table %d: %w", tableID, err)
		}
		id = 0
		if len(keys) > 0 {
			if id, err = c.writePartition(ctx, tx, snap, tableID, keys); err != nil {
				return false, 0, err
			}
		}
		changed = true
	}
	prev, err := c.currentSpec(ctx, tx, snap, tableID)
	if err != nil {
		return false, 0, err
	}
	v := newSpecVersion(*spec, id, known, prev)
	if v.equal(prev) {
		return changed, id, nil
	}
	if err := c.writeSpec(ctx, tx, snap, tableID, v); err != nil {
		return false, 0, err
	}
	return true, id, nil
}

// applyRefs stores tags and read-only branches in the sidecar.
func (c *Catalog) applyRefs(ctx context.Context, tx pgx.Tx, snap *Snapshot, t ducklake.Table, base *iceberg.TableMetadata, p *plan) error {
	for _, name := range p.removeRefs {
		if _, err := tx.Exec(ctx, `DELETE FROM `+c.t(refTable)+` WHERE table_id = $1 AND name = $2`, t.ID, name); err != nil {
			return fmt.Errorf("remove ref %s: %w", name, err)
		}
	}
	for _, u := range p.refs {
		id := *u.SnapshotID
		if base == nil || base.SnapshotByID(id) == nil {
			id = snap.ID // a snapshot this commit added: it becomes ours
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+c.t(refTable)+` (table_id, name, ref_type, snapshot_id, max_ref_age_ms, max_snapshot_age_ms, min_snapshots_to_keep)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (table_id, name) DO UPDATE SET ref_type = excluded.ref_type, snapshot_id = excluded.snapshot_id,
				max_ref_age_ms = excluded.max_ref_age_ms, max_snapshot_age_ms = excluded.max_snapshot_age_ms,
				min_snapshots_to_keep = excluded.min_snapshots_to_keep`,
			t.ID, u.RefName, u.Type, id, u.MaxRefAgeMS, u.MaxSnapshotAgeMS, u.MinSnapshotsToKeep); err != nil {
			return fmt.Errorf("set ref %s: %w", u.RefName, err)
		}
	}
	return nil
}
