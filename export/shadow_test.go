package export

import (
	"bytes"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// TestShadowServesNoStatisticsFiles: the base table's statistics files
// (Puffin NDV sketches, blob properties: values of the raw data) are in its
// own metadata, never in the shadow metadata a masked principal loads.
func TestShadowServesNoStatisticsFiles(t *testing.T) {
	const base = "s3://lake/data/s/t/"
	root, err := objstore.ParseDir("s3://lake/data/__masked__/t7/sig/")
	if err != nil {
		t.Fatal(err)
	}
	stats := []iceberg.StatisticsFile{{SnapshotID: 3, StatisticsPath: base + "metadata/ndv.stats", FileSizeInBytes: 400, FileFooterSizeInBytes: 300,
		BlobMetadata: []iceberg.BlobMetadata{{Type: "apache-datasketches-theta-v1", SnapshotID: 3, SequenceNumber: 3, Fields: []int{1},
			Properties: map[string]string{"ndv": "4"}}}}}
	parts := []iceberg.PartitionStatisticsFile{{SnapshotID: 3, StatisticsPath: base + "metadata/partition.parquet", FileSizeInBytes: 10}}
	h := &materialize.History{
		Table:     ducklake.Table{ID: 7, UUID: "01938a4e-0000-7000-8000-000000000007", Begin: 1, Name: "t", Path: base},
		Snapshots: []ducklake.Snapshot{{ID: 1, Changes: `created_table:"s"."t"`}, {ID: 3, Changes: "inserted_into_table:7"}},
		Columns:   []ducklake.Column{{ID: 1, Begin: 1, TableID: 7, Order: 1, Name: "email", Type: "varchar", NullsAllowed: true}},
		DataFiles: []ducklake.DataFile{{ID: 1, TableID: 7, Begin: 3, Path: base + "a.parquet", Format: "parquet", RecordCount: 4, FileSizeBytes: 100}},
		Extras:    materialize.Extras{Statistics: stats, PartitionStatistics: parts},
	}
	out, err := materialize.Build(h, 3, materialize.Options{FormatVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Metadata.Statistics) != 1 || len(out.Metadata.PartitionStatistics) != 1 {
		t.Fatalf("the base metadata serves statistics %+v, partition statistics %+v", out.Metadata.Statistics, out.Metadata.PartitionStatistics)
	}
	e := &Export{TableID: 7, Snapshot: 3, Root: root, Files: []File{{Source: "a.parquet", SourceRows: 4,
		Location: root.String() + "a-masked.parquet", Records: 4, Size: 90, Footer: 20}}}
	sh, err := shadowHistory(e, &plan.Table{TableID: 7, Columns: []plan.Column{{ID: 1, Name: "email"}}}, h)
	if err != nil {
		t.Fatal(err)
	}
	shadow, err := materialize.Build(sh, 3, materialize.Options{FormatVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	if shadow.Metadata.Statistics != nil || shadow.Metadata.PartitionStatistics != nil ||
		bytes.Contains(shadow.MetadataJSON, []byte("statistics")) || bytes.Contains(shadow.MetadataJSON, []byte("ndv")) {
		t.Errorf("the shadow metadata has statistics files: %s", shadow.MetadataJSON)
	}
}
