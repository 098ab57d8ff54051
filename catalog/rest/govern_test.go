package rest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/governance/plan"
)

// TestStampedMetadataHasNoStatisticsFiles: a principal a mask or a row
// filter applies to is never served the table's statistics files, in
// either tier (the stamp is applied to the base metadata and to the
// shadow's alike): their NDV sketches and blob properties describe the raw
// data. Everything else of the metadata stays.
func TestStampedMetadataHasNoStatisticsFiles(t *testing.T) {
	meta := []byte(`{"format-version":2,"location":"s3://lake/data/s/t","properties":{"owner":"etl"},` +
		`"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"email","required":false,"type":"string"}]}],` +
		`"statistics":[{"snapshot-id":3,"statistics-path":"s3://lake/data/s/t/metadata/ndv.stats","file-size-in-bytes":400,` +
		`"file-footer-size-in-bytes":300,"blob-metadata":[{"type":"apache-datasketches-theta-v1","snapshot-id":3,"sequence-number":3,` +
		`"fields":[1],"properties":{"ndv":"4"}}]}],` +
		`"partition-statistics":[{"snapshot-id":3,"statistics-path":"s3://lake/data/s/t/metadata/p.parquet","file-size-in-bytes":10}]}`)
	pt := &plan.Table{TableID: 7, Namespace: "s", Name: "t", Columns: []plan.Column{{ID: 1, Name: "email"}}}
	for _, c := range []struct {
		name string
		pl   plan.Plan
	}{
		{"masked, cooperative", plan.Plan{Visible: true, Tier: plan.TierCooperative, Signature: "sig1",
			Masks: []plan.Mask{{Column: "email", ColumnID: 1, Policy: "mask_email", Expr: `left("email", 2)`}}}},
		{"masked, airtight", plan.Plan{Visible: true, Tier: plan.TierAirtight, Signature: "sig2",
			Masks: []plan.Mask{{Column: "email", ColumnID: 1, Policy: "mask_email", Expr: `left("email", 2)`, FileLayer: true}}}},
		{"row filtered", plan.Plan{Visible: true, Tier: plan.TierCooperative, Signature: "sig3",
			RowFilters: []plan.RowFilter{{Policy: "eu", Expr: `"email" LIKE '%.eu'`}}, Filter: `"email" LIKE '%.eu'`}},
	} {
		got, err := stampMetadata(meta, pt, &c.pl, "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(got, &doc); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, ok := doc["statistics"]; ok || bytes.Contains(got, []byte("ndv")) || bytes.Contains(got, []byte("partition-statistics")) {
			t.Errorf("%s: statistics files served: %s", c.name, got)
		}
		if !bytes.Contains(got, []byte(`"owner":"etl"`)) || !bytes.Contains(got, []byte(`"location":"s3://lake/data/s/t"`)) {
			t.Errorf("%s: the rest of the metadata changed: %s", c.name, got)
		}
	}
}

func TestUnapplied(t *testing.T) {
	reason, policies := unapplied([]plan.Issue{
		{Policy: "mask_score", Reason: "the column is BIGINT, the mask takes INTEGER"},
		{Policy: "by_region", Reason: "the policy reads column region, which the table no longer has"},
		{Policy: "mask_score", Reason: "again"},
	})
	if !slices.Equal(policies, []string{"mask_score", "by_region"}) {
		t.Errorf("policies = %v", policies)
	}
	for _, want := range []string{"fail open", "mask_score: the column is BIGINT", "by_region: the policy reads column region"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q lacks %q", reason, want)
		}
	}
}
