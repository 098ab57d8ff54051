package commit

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// CreateTableRequest is the REST API's CreateTableRequest.
type CreateTableRequest struct {
	Name          string                 `json:"name"`
	Location      string                 `json:"location,omitempty"`
	Schema        *iceberg.Schema        `json:"schema"`
	PartitionSpec *iceberg.PartitionSpec `json:"partition-spec,omitempty"`
	WriteOrder    *iceberg.SortOrder     `json:"write-order,omitempty"`
	StageCreate   bool                   `json:"stage-create,omitempty"`
	Properties    map[string]string      `json:"properties,omitempty"`
}

// TableIdentifier names a table: a one-level namespace (a DuckLake schema)
// and a name.
type TableIdentifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// TableCommit is the REST API's CommitTableRequest: one table's
// requirements and updates. Identifier is required inside a
// CommitTransactionRequest.
type TableCommit struct {
	Identifier   *TableIdentifier `json:"identifier,omitempty"`
	Requirements []Requirement    `json:"requirements"`
	Updates      []Update         `json:"updates"`
}

// Requirement types (TableRequirement.type).
const (
	AssertCreate                  = "assert-create"
	AssertTableUUID               = "assert-table-uuid"
	AssertRefSnapshotID           = "assert-ref-snapshot-id"
	AssertLastAssignedFieldID     = "assert-last-assigned-field-id"
	AssertCurrentSchemaID         = "assert-current-schema-id"
	AssertLastAssignedPartitionID = "assert-last-assigned-partition-id"
	AssertDefaultSpecID           = "assert-default-spec-id"
	AssertDefaultSortOrderID      = "assert-default-sort-order-id"
)

// Requirement is one TableRequirement. SnapshotID is nil both when absent
// and when null; SnapshotIDSet says whether the key was sent (a null
// snapshot-id asserts that the ref does not exist).
type Requirement struct {
	Type                    string `json:"type"`
	UUID                    string `json:"uuid"`
	Ref                     string `json:"ref"`
	SnapshotID              *int64 `json:"snapshot-id"`
	SnapshotIDSet           bool   `json:"-"`
	LastAssignedFieldID     *int   `json:"last-assigned-field-id"`
	CurrentSchemaID         *int   `json:"current-schema-id"`
	LastAssignedPartitionID *int   `json:"last-assigned-partition-id"`
	DefaultSpecID           *int   `json:"default-spec-id"`
	DefaultSortOrderID      *int   `json:"default-sort-order-id"`
}

// UnmarshalJSON decodes a requirement and checks that its type is known
// and its required fields are there; the spec asks servers to refuse
// unknown requirements with 400.
func (r *Requirement) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	type plain Requirement
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*r = Requirement(p)
	_, r.SnapshotIDSet = raw["snapshot-id"]
	need := func(ok bool, field string) error {
		if !ok {
			return invalid("requirement %s needs %s", r.Type, field)
		}
		return nil
	}
	switch r.Type {
	case AssertCreate:
		return nil
	case AssertTableUUID:
		return need(r.UUID != "", "uuid")
	case AssertRefSnapshotID:
		if err := need(r.Ref != "", "ref"); err != nil {
			return err
		}
		return need(r.SnapshotIDSet, "snapshot-id")
	case AssertLastAssignedFieldID:
		return need(r.LastAssignedFieldID != nil, "last-assigned-field-id")
	case AssertCurrentSchemaID:
		return need(r.CurrentSchemaID != nil, "current-schema-id")
	case AssertLastAssignedPartitionID:
		return need(r.LastAssignedPartitionID != nil, "last-assigned-partition-id")
	case AssertDefaultSpecID:
		return need(r.DefaultSpecID != nil, "default-spec-id")
	case AssertDefaultSortOrderID:
		return need(r.DefaultSortOrderID != nil, "default-sort-order-id")
	case "":
		return invalid("a requirement needs a type")
	}
	return invalid("unknown requirement type %q", r.Type)
}

// Update actions (TableUpdate.action).
const (
	ActionAssignUUID                = "assign-uuid"
	ActionUpgradeFormatVersion      = "upgrade-format-version"
	ActionAddSchema                 = "add-schema"
	ActionSetCurrentSchema          = "set-current-schema"
	ActionAddSpec                   = "add-spec"
	ActionSetDefaultSpec            = "set-default-spec"
	ActionAddSortOrder              = "add-sort-order"
	ActionSetDefaultSortOrder       = "set-default-sort-order"
	ActionAddSnapshot               = "add-snapshot"
	ActionSetSnapshotRef            = "set-snapshot-ref"
	ActionRemoveSnapshots           = "remove-snapshots"
	ActionRemoveSnapshotRef         = "remove-snapshot-ref"
	ActionSetLocation               = "set-location"
	ActionSetProperties             = "set-properties"
	ActionRemoveProperties          = "remove-properties"
	ActionSetStatistics             = "set-statistics"
	ActionRemoveStatistics          = "remove-statistics"
	ActionSetPartitionStatistics    = "set-partition-statistics"
	ActionRemovePartitionStatistics = "remove-partition-statistics"
	ActionRemovePartitionSpecs      = "remove-partition-specs"
	ActionRemoveSchemas             = "remove-schemas"
	ActionAddEncryptionKey          = "add-encryption-key"
	ActionRemoveEncryptionKey       = "remove-encryption-key"
)

// Update is one TableUpdate; which fields are set depends on Action.
type Update struct {
	Action             string                 `json:"action"`
	UUID               string                 `json:"uuid,omitempty"`
	FormatVersion      int                    `json:"format-version,omitempty"`
	Schema             *iceberg.Schema        `json:"schema,omitempty"`
	LastColumnID       *int                   `json:"last-column-id,omitempty"`
	SchemaID           *int                   `json:"schema-id,omitempty"`
	Spec               *iceberg.PartitionSpec `json:"spec,omitempty"`
	SpecID             *int                   `json:"spec-id,omitempty"`
	SortOrder          *iceberg.SortOrder     `json:"sort-order,omitempty"`
	SortOrderID        *int                   `json:"sort-order-id,omitempty"`
	Snapshot           *iceberg.Snapshot      `json:"snapshot,omitempty"`
	RefName            string                 `json:"ref-name,omitempty"`
	Type               string                 `json:"type,omitempty"`
	SnapshotID         *int64                 `json:"snapshot-id,omitempty"`
	MaxRefAgeMS        *int64                 `json:"max-ref-age-ms,omitempty"`
	MaxSnapshotAgeMS   *int64                 `json:"max-snapshot-age-ms,omitempty"`
	MinSnapshotsToKeep *int                   `json:"min-snapshots-to-keep,omitempty"`
	SnapshotIDs        []int64                `json:"snapshot-ids,omitempty"`
	Location           string                 `json:"location,omitempty"`
	Updates            map[string]string      `json:"updates,omitempty"`
	Removals           []string               `json:"removals,omitempty"`
	SpecIDs            []int                  `json:"spec-ids,omitempty"`
	SchemaIDs          []int                  `json:"schema-ids,omitempty"`
	// Statistics (set-statistics) and PartitionStatistics
	// (set-partition-statistics) are the files to register.
	Statistics          *iceberg.StatisticsFile          `json:"statistics,omitempty"`
	PartitionStatistics *iceberg.PartitionStatisticsFile `json:"partition-statistics,omitempty"`
}

// UnmarshalJSON decodes an update and checks that its action is known and
// its required fields are there.
func (u *Update) UnmarshalJSON(data []byte) error {
	type plain Update
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*u = Update(p)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	has := func(key string) bool {
		v, ok := raw[key]
		return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
	}
	var need []string
	switch u.Action {
	case ActionAssignUUID:
		need = []string{"uuid"}
	case ActionUpgradeFormatVersion:
		need = []string{"format-version"}
	case ActionAddSchema:
		need = []string{"schema"}
	case ActionSetCurrentSchema:
		need = []string{"schema-id"}
	case ActionAddSpec:
		need = []string{"spec"}
	case ActionSetDefaultSpec:
		need = []string{"spec-id"}
	case ActionAddSortOrder:
		need = []string{"sort-order"}
	case ActionSetDefaultSortOrder:
		need = []string{"sort-order-id"}
	case ActionAddSnapshot:
		need = []string{"snapshot"}
	case ActionSetSnapshotRef:
		need = []string{"ref-name", "type", "snapshot-id"}
	case ActionRemoveSnapshots:
		need = []string{"snapshot-ids"}
	case ActionRemoveSnapshotRef:
		need = []string{"ref-name"}
	case ActionSetLocation:
		need = []string{"location"}
	case ActionSetProperties:
		need = []string{"updates"}
	case ActionRemoveProperties:
		need = []string{"removals"}
	case ActionSetStatistics:
		need = []string{"statistics"}
	case ActionSetPartitionStatistics:
		need = []string{"partition-statistics"}
	case ActionRemoveStatistics, ActionRemovePartitionStatistics:
		need = []string{"snapshot-id"}
	case ActionRemovePartitionSpecs, ActionRemoveSchemas, ActionAddEncryptionKey, ActionRemoveEncryptionKey:
	case "":
		return invalid("an update needs an action")
	default:
		return invalid("unknown update action %q", u.Action)
	}
	for _, k := range need {
		if !has(k) {
			return invalid("update %s needs %s", u.Action, k)
		}
	}
	if u.Action == ActionSetSnapshotRef && u.Type != "branch" && u.Type != "tag" {
		return invalid("set-snapshot-ref: type must be branch or tag, not %q", u.Type)
	}
	switch u.Action {
	case ActionSetStatistics:
		return checkStatisticsFile(raw["statistics"], u.Statistics, u.SnapshotID)
	case ActionSetPartitionStatistics:
		return checkStatisticsFile(raw["partition-statistics"], nil, nil)
	}
	return nil
}

// checkStatisticsFile checks that a StatisticsFile (f) or
// PartitionStatisticsFile (f nil) has the fields the spec requires, and
// that set-statistics' deprecated snapshot-id, when sent, agrees with the
// file's.
func checkStatisticsFile(raw json.RawMessage, f *iceberg.StatisticsFile, snapshotID *int64) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return invalid("statistics file: %v", err)
	}
	need := []string{"snapshot-id", "statistics-path", "file-size-in-bytes"}
	what := "partition statistics file"
	if f != nil {
		need = append(need, "file-footer-size-in-bytes", "blob-metadata")
		what = "statistics file"
	}
	for _, k := range need {
		if v, ok := fields[k]; !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return invalid("%s needs %s", what, k)
		}
	}
	if f != nil && snapshotID != nil && *snapshotID != f.SnapshotID {
		return invalid("set-statistics: snapshot-id %d is not the statistics file's snapshot-id %d", *snapshotID, f.SnapshotID)
	}
	return nil
}

// reservedPrefix marks table properties duckicelake keeps for itself;
// clients may not set or remove them.
const reservedPrefix = "duckicelake."

// MaskingDisabledProperty opts a table out of governance's masking views
// ("true"): the one reserved property a client may set, and only a
// governance administrator (Target.Governor). A masked principal then
// reads the table on no DuckLake-direct path rather than raw.
const MaskingDisabledProperty = "duckicelake.masking-disabled"

func reservedProperty(key string) bool {
	return strings.HasPrefix(strings.ToLower(key), reservedPrefix)
}
