package commit

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/internal/testsupport/parquettest"
)

func TestPositionDeletesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		pos  []int64
	}{
		{"one", "s3://lake/t/data/a.parquet", []int64{7}},
		{"many", "s3://lake/t/data/b.parquet", []int64{0, 1, 5, 1 << 40}},
		{"empty", "s3://lake/t/data/c.parquet", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := materialize.WritePositionDeletes(tc.file, tc.pos)
			if err != nil {
				t.Fatal(err)
			}
			pd, err := materialize.ReadPositionDeletes(context.Background(), body)
			if err != nil {
				t.Fatal(err)
			}
			paths, pos := pd.Paths, pd.Pos
			if !slices.Equal(pos, tc.pos) || len(paths) != len(tc.pos) {
				t.Fatalf("read %v %v, wrote %v", paths, pos, tc.pos)
			}
			for _, p := range paths {
				if p != tc.file {
					t.Fatalf("file_path %q, want %q", p, tc.file)
				}
			}
		})
	}
}

func TestReadPositionDeletesCorrupt(t *testing.T) {
	body, err := materialize.WritePositionDeletes("s3://lake/a.parquet", []int64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{nil, []byte("PAR1"), body[:len(body)/2], body[len(body)/2:]} {
		if _, err := materialize.ReadPositionDeletes(context.Background(), b); err == nil {
			t.Errorf("%d bytes: no error", len(b))
		}
	}
}

func TestDeclaredTarget(t *testing.T) {
	a, b := []byte("s3a://lake/a.parquet"), []byte("s3://lake/b.parquet")
	for _, tc := range []struct {
		name string
		f    iceberg.DataFile
		want string
	}{
		{"referenced", iceberg.DataFile{ReferencedDataFile: "s3a://lake/x.parquet"}, "s3://lake/x.parquet"},
		{"equal bounds", iceberg.DataFile{LowerBounds: map[int][]byte{iceberg.PositionDeleteFilePathID: a},
			UpperBounds: map[int][]byte{iceberg.PositionDeleteFilePathID: a}}, "s3://lake/a.parquet"},
		{"different bounds", iceberg.DataFile{LowerBounds: map[int][]byte{iceberg.PositionDeleteFilePathID: a},
			UpperBounds: map[int][]byte{iceberg.PositionDeleteFilePathID: b}}, ""},
		{"none (DuckDB)", iceberg.DataFile{}, ""},
	} {
		if got := declaredTarget(&tc.f); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// writePositionDeletesOf writes an Iceberg position delete file with rows
// (files[i], pos[i]) in that order, as DuckDB's iceberg extension writes
// one for every data file a DELETE touches.
func writePositionDeletesOf(t *testing.T, files []string, pos []int64) []byte {
	t.Helper()
	fieldID := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "file_path", Type: arrow.BinaryTypes.String, Metadata: fieldID(iceberg.PositionDeleteFilePathID)},
		{Name: "pos", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(iceberg.PositionDeletePosID)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range files {
		b.Field(0).(*array.StringBuilder).Append(files[i])
		b.Field(1).(*array.Int64Builder).Append(pos[i])
	}
	return parquetFile(t, b)
}

// parquetFile writes the record b has built as a Parquet file with the
// library's default properties, as another writer would.
func parquetFile(t *testing.T, b *array.RecordBuilder) []byte {
	t.Helper()
	rec := b.NewRecordBatch()
	defer rec.Release()
	return parquettest.File(t, rec)
}
