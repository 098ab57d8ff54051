package commit

import (
	"bytes"
	"compress/gzip"
	"errors"
	"testing"
)

// registerSeed is a small format v2 metadata file: a partitioned, sorted
// table with one snapshot.
const registerSeed = `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1",
"location":"s3://lake/data/s/t","last-sequence-number":1,"last-updated-ms":1700000000000,"last-column-id":3,
"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[
 {"id":1,"name":"id","required":true,"type":"long"},
 {"id":2,"name":"s","required":false,"type":{"type":"struct","fields":[{"id":3,"name":"a","required":false,"type":"string","doc":"d"}]}}]}],
"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[{"source-id":1,"field-id":1000,"name":"b","transform":"bucket[4]"}]}],
"last-partition-id":1000,"default-sort-order-id":1,"sort-orders":[{"order-id":0,"fields":[]},
 {"order-id":1,"fields":[{"source-id":1,"transform":"identity","direction":"asc","null-order":"nulls-first"}]}],
"properties":{"owner":"x"},"current-snapshot-id":5,
"snapshots":[{"snapshot-id":5,"sequence-number":1,"timestamp-ms":1700000000000,"manifest-list":"s3://lake/data/s/t/metadata/snap-5.avro","summary":{"operation":"append"},"schema-id":0}],
"refs":{"main":{"snapshot-id":5,"type":"branch"}}}`

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b) //nolint:errcheck // a bytes.Buffer
	w.Close()  //nolint:errcheck
	return buf.Bytes()
}

// FuzzParseTableMetadata: a metadata file to register is written by any
// client that can write to the namespace's location. Parsing, validating
// and planning the table it describes must refuse what is wrong with an
// error and never panic.
func FuzzParseTableMetadata(f *testing.F) {
	f.Add([]byte(registerSeed))
	f.Add(gz([]byte(registerSeed)))
	f.Add([]byte(`{"format-version":3}`))
	ns := Namespace{ID: 1, Name: "s", Path: "s3://lake/data/s/"}
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := parseTableMetadata(data, 1<<20)
		if err != nil {
			return
		}
		if err := md.Validate(); err != nil {
			return
		}
		_ = md.CurrentSnapshot()
		p, _, err := registrationPlan(ns, "t", md, 3)
		if err == nil && (p == nil || p.location == "") {
			t.Fatalf("a plan without a location and no error: %+v", p)
		}
	})
}

func TestRegistrationPlan(t *testing.T) {
	ns := Namespace{ID: 1, Name: "s", Path: "s3://lake/data/s/"}
	for _, data := range [][]byte{[]byte(registerSeed), gz([]byte(registerSeed))} {
		md, err := parseTableMetadata(data, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := md.Validate(); err != nil {
			t.Fatal(err)
		}
		p, spec, err := registrationPlan(ns, "t", md, 3)
		if err != nil {
			t.Fatal(err)
		}
		if p.location != "s3://lake/data/s/t" || p.path != "t/" || spec == nil || spec.Fields[0].Name != "b" || p.formatVersion != 2 {
			t.Errorf("plan: location %s, path %s, spec %+v, format %d", p.location, p.path, spec, p.formatVersion)
		}
		if len(p.columns) != 3 || p.columns[2].id != 3 || p.columns[2].doc != "d" {
			t.Errorf("columns keep their ids and docs: %+v", p.columns)
		}
	}
	// A location outside the namespace is refused before anything is read.
	md, _ := parseTableMetadata(bytes.Replace([]byte(registerSeed), []byte("s3://lake/data/s/t"), []byte("s3://lake/other/t"), 1), 1<<20)
	if _, _, err := registrationPlan(ns, "t", md, 3); !errors.Is(err, ErrForbidden) {
		t.Errorf("location outside the namespace: %v", err)
	}
	// A gzip bomb stops at the limit.
	bomb := gz(bytes.Repeat([]byte(" "), 4<<20))
	if _, err := parseTableMetadata(bomb, 1<<20); err == nil {
		t.Error("4 MiB of gzip content passed a 1 MiB limit")
	}
}
