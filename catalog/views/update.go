package views

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// lastAdded is the id that means "the schema (or version) added last in
// this change set".
const lastAdded = -1

// Update is one metadata update of a CommitViewRequest (the REST spec's
// ViewUpdate); Action says which fields apply.
type Update struct {
	Action        string            `json:"action"`
	UUID          string            `json:"uuid,omitempty"`           // assign-uuid
	FormatVersion int               `json:"format-version,omitempty"` // upgrade-format-version
	Schema        *Schema           `json:"schema,omitempty"`         // add-schema
	Location      *string           `json:"location,omitempty"`       // set-location
	Updates       map[string]string `json:"updates,omitempty"`        // set-properties
	Removals      []string          `json:"removals,omitempty"`       // remove-properties
	ViewVersion   *Version          `json:"view-version,omitempty"`   // add-view-version
	VersionID     *int              `json:"view-version-id,omitempty"`
}

// Create is what a new view starts with (the REST spec's
// CreateViewRequest, with the uuid and location the catalog chose).
type Create struct {
	UUID       string
	Location   string
	Properties map[string]string
	Schema     Schema
	// Version is the first version; its schema-id is replaced by the id
	// Schema gets.
	Version Version
}

// New builds the metadata of a new view.
func New(c Create, now time.Time) (*Metadata, error) {
	b := builder{md: &Metadata{FormatVersion: FormatVersion, Properties: map[string]string{}}, now: now}
	if c.UUID == "" {
		return nil, invalid("a view needs a uuid")
	}
	b.md.UUID = c.UUID
	if err := b.setLocation(c.Location); err != nil {
		return nil, err
	}
	maps.Copy(b.md.Properties, c.Properties)
	v := c.Version.clone()
	v.SchemaID = b.addSchema(c.Schema)
	id, err := b.addVersion(v)
	if err != nil {
		return nil, err
	}
	if err := b.setCurrent(id); err != nil {
		return nil, err
	}
	return b.build()
}

// Apply returns the metadata that updates make of md, which it leaves
// unchanged. Updates are applied to md as it is now, whatever state the
// client built them on: that is what lets a catalog retry a commit after a
// concurrent one (versions and schemas get fresh ids when theirs are
// taken).
func (md *Metadata) Apply(updates []Update, now time.Time) (*Metadata, error) {
	b := builder{md: md.Clone(), prev: md.Current(), now: now}
	if b.prev == nil {
		return nil, invalid("current version %d is not among the versions", md.CurrentVersionID)
	}
	if b.md.Properties == nil {
		b.md.Properties = map[string]string{}
	}
	for i := range updates {
		if err := b.apply(&updates[i]); err != nil {
			return nil, err
		}
	}
	return b.build()
}

// builder is ViewMetadata.Builder of Iceberg's reference implementation.
type builder struct {
	md   *Metadata
	prev *Version // the current version before the change; nil on create
	now  time.Time

	lastSchema, lastVersion *int         // added last in this change set
	added                   map[int]bool // versions added in this change set
	log                     *LogEntry    // the version-log entry to append
}

func (b *builder) apply(u *Update) error {
	switch u.Action {
	case "assign-uuid":
		if u.UUID == "" {
			return invalid("assign-uuid needs a uuid")
		}
		if u.UUID != b.md.UUID {
			return invalid("Cannot reassign uuid of view %s to %s", b.md.UUID, u.UUID)
		}
	case "upgrade-format-version":
		switch {
		case u.FormatVersion < b.md.FormatVersion:
			return invalid("Cannot downgrade v%d view to v%d", b.md.FormatVersion, u.FormatVersion)
		case u.FormatVersion > FormatVersion:
			return invalid("Unsupported format version: %d", u.FormatVersion)
		}
	case "add-schema":
		if u.Schema == nil {
			return invalid("add-schema needs a schema")
		}
		b.addSchema(*u.Schema)
	case "set-location":
		if u.Location == nil {
			return invalid("Invalid location: null")
		}
		return b.setLocation(*u.Location)
	case "set-properties":
		if u.Updates == nil {
			return invalid("set-properties needs updates")
		}
		maps.Copy(b.md.Properties, u.Updates)
	case "remove-properties":
		if u.Removals == nil {
			return invalid("remove-properties needs removals")
		}
		for _, k := range u.Removals {
			delete(b.md.Properties, k)
		}
	case "add-view-version":
		if u.ViewVersion == nil {
			return invalid("add-view-version needs a view-version")
		}
		_, err := b.addVersion(u.ViewVersion.clone())
		return err
	case "set-current-view-version":
		if u.VersionID == nil {
			return invalid("set-current-view-version needs a view-version-id")
		}
		return b.setCurrent(*u.VersionID)
	case "":
		return invalid("an update needs an action")
	default:
		return invalid("%q is not a view update", u.Action)
	}
	return nil
}

func (b *builder) setLocation(loc string) error {
	if loc == "" {
		return invalid("Invalid location: empty")
	}
	b.md.Location = loc
	return nil
}

// addSchema adds s, or finds a schema equal to it, and returns its id. A
// new schema gets the highest id plus one, not the id it came with. Either
// way it is "the schema added last": a commit retried after a concurrent
// one added the same schema still finds it (Iceberg's builder fails there).
func (b *builder) addSchema(s Schema) int {
	id := 0
	for i := range b.md.Schemas {
		have := &b.md.Schemas[i]
		if have.SameAs(&s) {
			id := have.ID
			b.lastSchema = &id
			return id
		}
		id = max(id, have.ID+1)
	}
	s = s.clone()
	s.ID = id
	b.md.Schemas = append(b.md.Schemas, s)
	b.lastSchema = &id
	return id
}

// addVersion adds v, or finds a version that behaves the same, and returns
// its id.
func (b *builder) addVersion(v Version) (int, error) {
	id := v.VersionID
	for i := range b.md.Versions {
		have := &b.md.Versions[i]
		if have.sameAs(&v) {
			// A version added earlier in this change set is still "the
			// last added"; one that existed before is not.
			if id := have.VersionID; b.added[id] {
				b.lastVersion = &id
			} else {
				b.lastVersion = nil
			}
			return have.VersionID, nil
		}
		if have.VersionID >= id {
			id = have.VersionID + 1
		}
	}
	v.VersionID = id
	if v.SchemaID == lastAdded {
		if b.lastSchema == nil {
			return 0, invalid("Cannot set last added schema: no schema has been added")
		}
		v.SchemaID = *b.lastSchema
	}
	if b.md.Schema(v.SchemaID) == nil {
		return 0, invalid("Cannot add version with unknown schema: %d", v.SchemaID)
	}
	if err := v.check(); err != nil {
		return 0, err
	}
	if v.Summary == nil {
		v.Summary = map[string]string{}
	}
	b.md.Versions = append(b.md.Versions, v)
	if b.added == nil {
		b.added = map[int]bool{}
	}
	b.added[id] = true
	b.lastVersion = &id
	return id, nil
}

func (b *builder) setCurrent(id int) error {
	if id == lastAdded {
		if b.lastVersion == nil {
			return invalid("Cannot set last version id: no current version id has been set")
		}
		id = *b.lastVersion
	}
	// On create there is no current version yet, so the first one is
	// always logged.
	if id == b.md.CurrentVersionID && (b.prev != nil || b.log != nil) {
		return nil
	}
	v := b.md.Version(id)
	if v == nil {
		return invalid("Cannot set current version to unknown version: %d", id)
	}
	b.md.CurrentVersionID = id
	// A version added in this change set became current when it was
	// made; one set current again (a rollback) becomes current now.
	ts := b.now.UnixMilli()
	if b.added[id] {
		ts = v.TimestampMS
	}
	b.log = &LogEntry{TimestampMS: ts, VersionID: id}
	return nil
}

func (b *builder) build() (*Metadata, error) {
	md := b.md
	if md.Location == "" {
		return nil, invalid("Invalid location: null")
	}
	if len(md.Versions) == 0 || md.Current() == nil {
		return nil, invalid("Invalid view: no versions were added")
	}
	if b.log != nil {
		md.VersionLog = append(md.VersionLog, *b.log)
	}
	if b.prev != nil && !strings.EqualFold(md.Properties[PropDropDialectAllowed], "true") {
		before, after := b.prev.dialects(), md.Current().dialects()
		for _, d := range before {
			if !slices.Contains(after, d) {
				return nil, invalid("Cannot replace view due to loss of view dialects (%s=false): previous dialects %v, new dialects %v",
					PropDropDialectAllowed, before, after)
			}
		}
	}
	keep := DefaultHistorySize
	if s, ok := md.Properties[PropHistorySize]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, invalid("%s must be positive but was %s", PropHistorySize, s)
		}
		keep = n
	}
	// Keep at least the versions this change added and the current one.
	must := map[int]bool{md.CurrentVersionID: true}
	maps.Copy(must, b.added)
	keep = max(keep, len(must))
	if len(md.Versions) > keep {
		md.Versions, md.VersionLog = expire(md.Versions, md.VersionLog, md.CurrentVersionID, keep)
	}
	if len(md.Properties) == 0 {
		md.Properties = nil
	}
	return md, nil
}

// expire keeps the current version and the newest others (by id, which
// grows with every version) up to keep in all, and drops the version log
// up to its last entry for a version that is gone.
func expire(versions []Version, log []LogEntry, current, keep int) ([]Version, []LogEntry) {
	ids := make([]int, 0, len(versions))
	for _, v := range versions {
		ids = append(ids, v.VersionID)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	retain := map[int]bool{current: true}
	for _, id := range ids {
		if len(retain) >= keep {
			break
		}
		retain[id] = true
	}
	kept := versions[:0:0]
	for _, v := range versions {
		if retain[v.VersionID] {
			kept = append(kept, v)
		}
	}
	var keptLog []LogEntry
	for _, e := range log {
		if retain[e.VersionID] {
			keptLog = append(keptLog, e)
		} else {
			keptLog = keptLog[:0]
		}
	}
	if keptLog == nil {
		keptLog = []LogEntry{}
	}
	return kept, keptLog
}

// MarshalJSON writes version-log, versions and schemas as [] when empty.
func (md Metadata) MarshalJSON() ([]byte, error) {
	type plain Metadata
	if md.VersionLog == nil {
		md.VersionLog = []LogEntry{}
	}
	if md.Schemas == nil {
		md.Schemas = []Schema{}
	}
	if md.Versions == nil {
		md.Versions = []Version{}
	}
	return json.Marshal(plain(md))
}
