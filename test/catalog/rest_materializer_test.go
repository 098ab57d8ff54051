package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/rest"
)

// testMaterializer is what LoadTable runs on in these tests.
//
// Until catalog/materialize lands, it is historyMaterializer: the table's
// snapshot history from the DuckLake reader as a small metadata document.
// That is enough for what these tests check of the REST layer (caching,
// ETags, refs, time travel, vending, concurrency); the metadata itself is
// the materialiser's own tests' business.
func testMaterializer(t testing.TB, pool *pgxpool.Pool) *countingMaterializer {
	t.Helper()
	return &countingMaterializer{m: historyMaterializer{r: ducklake.NewReader(pool, "")}}
}

// countingMaterializer counts the calls that reach the materialiser.
type countingMaterializer struct {
	m     rest.Materializer
	calls atomic.Int64
}

func (c *countingMaterializer) Materialize(ctx context.Context, t ducklake.Table, snap int64) (rest.Metadata, error) {
	c.calls.Add(1)
	return c.m.Materialize(ctx, t, snap)
}

type historyMaterializer struct{ r *ducklake.Reader }

// Materialize lists the snapshots up to snap that changed the table (by
// ducklake_snapshot_changes), the newest being the current one, and names
// the document after it, so an unchanged table keeps its location.
func (h historyMaterializer) Materialize(ctx context.Context, t ducklake.Table, snap int64) (rest.Metadata, error) {
	snaps, err := h.r.Snapshots(ctx)
	if err != nil {
		return rest.Metadata{}, err
	}
	schemas, err := h.r.Schemas(ctx, snap)
	if err != nil {
		return rest.Metadata{}, err
	}
	var schema string
	for _, s := range schemas {
		if s.ID == t.SchemaID {
			schema = s.Name
		}
	}
	id := strconv.FormatInt(t.ID, 10)
	type snapshot struct {
		ID           int64             `json:"snapshot-id"`
		Parent       *int64            `json:"parent-snapshot-id,omitempty"`
		Sequence     int64             `json:"sequence-number"`
		Timestamp    int64             `json:"timestamp-ms"`
		ManifestList string            `json:"manifest-list"`
		Summary      map[string]string `json:"summary"`
		SchemaID     int               `json:"schema-id"`
	}
	var hist []snapshot
	for _, s := range snaps {
		if s.ID > snap {
			break
		}
		touched := false
		for _, c := range ducklake.ParseChanges(s.Changes) {
			if c.Target == id || strings.HasSuffix(c.Target, "."+`"`+t.Name+`"`) && strings.HasPrefix(c.Target, `"`+schema+`"`) {
				touched = true
			}
		}
		if touched {
			sn := snapshot{ID: s.ID, Sequence: int64(len(hist) + 1), Timestamp: s.Time.UnixMilli(), SchemaID: 0,
				ManifestList: fmt.Sprintf("%smetadata/snap-%d.avro", t.Path, s.ID), Summary: map[string]string{"operation": "append"}}
			if n := len(hist); n > 0 {
				sn.Parent = &hist[n-1].ID
			}
			hist = append(hist, sn)
		}
	}
	if len(hist) == 0 {
		return rest.Metadata{}, fmt.Errorf("table %d has no history", t.ID)
	}
	// The schema, with every column as a string: the REST layer never looks
	// inside it, clients only need it to parse.
	cols, err := h.r.Columns(ctx, snap, t.ID)
	if err != nil {
		return rest.Metadata{}, err
	}
	fields := []map[string]any{}
	last := int64(0)
	for _, c := range cols {
		fields = append(fields, map[string]any{"id": c.ID, "name": c.Name, "required": false, "type": "string"})
		last = max(last, c.ID)
	}
	cur := hist[len(hist)-1]
	doc, err := json.Marshal(map[string]any{
		"format-version":        2,
		"table-uuid":            t.UUID,
		"location":              strings.TrimSuffix(t.Path, "/"),
		"last-sequence-number":  cur.Sequence,
		"last-updated-ms":       cur.Timestamp,
		"last-column-id":        last,
		"schemas":               []any{map[string]any{"type": "struct", "schema-id": 0, "fields": fields}},
		"current-schema-id":     0,
		"partition-specs":       []any{map[string]any{"spec-id": 0, "fields": []any{}}},
		"default-spec-id":       0,
		"last-partition-id":     999,
		"sort-orders":           []any{map[string]any{"order-id": 0, "fields": []any{}}},
		"default-sort-order-id": 0,
		"current-snapshot-id":   cur.ID,
		"refs":                  map[string]any{"main": map[string]any{"snapshot-id": cur.ID, "type": "branch"}},
		"snapshots":             hist,
		"snapshot-log":          []any{},
		"metadata-log":          []any{},
	})
	if err != nil {
		return rest.Metadata{}, err
	}
	return rest.Metadata{Location: fmt.Sprintf("%smetadata/%05d-%s.metadata.json", t.Path, cur.ID, t.UUID), JSON: doc}, nil
}
