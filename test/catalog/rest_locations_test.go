package catalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// The regression tests of issue 14's catalog holes 2, 3 and 4: every
// location a client names is refused by one rule (objstore's Parse and
// Location.Within) before the catalog reads anything with its root
// credentials, and the refusal does not depend on what the bucket holds.

var locSchema = map[string]any{"type": "struct", "schema-id": 0, "fields": []any{
	map[string]any{"id": 1, "name": "id", "required": false, "type": "long"}}}

// rootPut stores body at key of the stack's bucket with the root keys, as
// a client with its own credentials for the bucket could.
func rootPut(t *testing.T, st s3Stack, bucket, key string, body []byte) {
	t.Helper()
	if _, err := st.root().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

// errorModel decodes an Iceberg ErrorModel response.
func errorModel(t *testing.T, r response) (code int, typ, message string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("not an ErrorModel: %d %s", r.code, r.body)
	}
	return e.Error.Code, e.Error.Type, e.Error.Message
}

func (e *restEnv) liveTables(t *testing.T, ns string) []string {
	t.Helper()
	return e.queryStrings(t, `SELECT t.table_name FROM ducklake_table t JOIN ducklake_schema s USING (schema_id)
		WHERE s.schema_name = $1 AND t.end_snapshot IS NULL AND s.end_snapshot IS NULL ORDER BY 1`, ns)
}

// TestTableLocationsWithDotSegments (issue 14, hole 2): a table location
// with a "." or ".." segment — the namespace's parent, the namespace
// itself, another live table's directory spelled with "./" — is refused
// on create and staged create with 400 and an ErrorModel, and so is a
// metadata file to register whose table location is one; nothing is
// created.
func TestTableLocationsWithDotSegments(t *testing.T) {
	a := "la" + randomHex(4)
	env := writeEnv(t, a)
	st := requireStack(t, true)
	tok := clientToken(t, env, "writer-"+a, "pw")
	tables := "/v1/lake/namespaces/" + a + "/tables"
	if r := env.do("POST", tables, tok, map[string]any{"name": "t2", "schema": locSchema}); r.code != 200 {
		t.Fatalf("create t2: %d %s", r.code, r.body)
	}
	nsPath := restDataPath + a
	meta := fmt.Sprintf(`{"format-version":2,"table-uuid":"6e1a7c55-0b7e-4c1b-9a43-0c3f1f4a%s","location":%q,"last-sequence-number":0,
		"last-updated-ms":1,"last-column-id":1,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[
		{"id":1,"name":"id","required":false,"type":"long"}]}],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],
		"last-partition-id":999,"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}]}`, randomHex(2), nsPath+"/..")
	metaKey := "data/" + a + "/reg/metadata/00001-reg.metadata.json"
	rootPut(t, st, "lake", metaKey, []byte(meta))

	before := env.snapshotCount(t)
	for i, loc := range []string{nsPath + "/..", nsPath + "/../", nsPath + "/x/..", nsPath + "/./t2", nsPath + "/t3/."} {
		for _, stage := range []bool{false, true} {
			name := fmt.Sprintf("bad%d", i)
			r := env.do("POST", tables, tok, map[string]any{"name": name, "schema": locSchema, "location": loc, "stage-create": stage})
			code, typ, msg := errorModel(t, r)
			if r.code != 400 || code != 400 || typ != "BadRequestException" || !strings.Contains(msg, "path segment") {
				t.Errorf("create (staged %v) at %s: %d %s", stage, loc, r.code, r.body)
			}
		}
	}
	r := env.do("POST", "/v1/lake/namespaces/"+a+"/register", tok, map[string]any{"name": "reg", "metadata-location": "s3://lake/" + metaKey})
	if code, typ, msg := errorModel(t, r); r.code != 400 || code != 400 || typ != "BadRequestException" || !strings.Contains(msg, `".." path segment`) {
		t.Errorf("register a metadata file whose location is %s/..: %d %s", nsPath, r.code, r.body)
	}
	if got := env.liveTables(t, a); fmt.Sprint(got) != "[t2]" {
		t.Errorf("tables of %s after the refusals: %v", a, got)
	}
	if env.snapshotCount(t) != before {
		t.Errorf("the refusals made %d snapshots", env.snapshotCount(t)-before)
	}
}

// clientSnapshot writes, with the root keys as a client with bucket
// credentials could, a manifest listing dataFiles and a manifest list
// naming it; the manifest's location is manifestAt and the objects are
// stored at keys manifestKey and listKey (where a backend on a file system
// resolves the locations' ".." segments). It returns the add-snapshot and
// set-snapshot-ref updates of a snapshot whose manifest list is listAt.
func clientSnapshot(t *testing.T, st s3Stack, id int64, listAt, listKey, manifestAt, manifestKey string, dataFiles ...string) []map[string]any {
	t.Helper()
	schema := &iceberg.Schema{Fields: []iceberg.NestedField{{ID: 1, Name: "id", Type: iceberg.Primitive(iceberg.TypeLong)}}}
	mw, err := iceberg.NewManifestWriter(iceberg.ManifestInfo{FormatVersion: 2, Content: iceberg.ManifestData, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	var entries []iceberg.ManifestEntry
	for _, p := range dataFiles {
		entries = append(entries, iceberg.ManifestEntry{Status: iceberg.StatusAdded, File: &iceberg.DataFile{
			Content: iceberg.ContentData, Path: p, Format: "PARQUET", RecordCount: 3, FileSizeBytes: 400}})
	}
	body, mf, err := mw.Write(entries, 0)
	if err != nil {
		t.Fatal(err)
	}
	mf.Path, mf.AddedSnapshotID = manifestAt, id
	rootPut(t, st, "lake", manifestKey, body)
	list, err := iceberg.WriteManifestList(iceberg.ManifestListInfo{FormatVersion: 2, SnapshotID: id, SequenceNumber: 1}, []iceberg.ManifestFile{mf})
	if err != nil {
		t.Fatal(err)
	}
	rootPut(t, st, "lake", listKey, list)
	return []map[string]any{
		{"action": "add-snapshot", "snapshot": map[string]any{"snapshot-id": id, "sequence-number": 1, "timestamp-ms": time.Now().UnixMilli(),
			"manifest-list": listAt, "summary": map[string]string{"operation": "append"}, "schema-id": 0}},
		{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": id},
	}
}

// createTransaction is a transactions/commit body creating table ns.name
// with set-location location and then updates.
func createTransaction(ns, name, location string, updates ...map[string]any) map[string]any {
	all := []map[string]any{
		{"action": "add-schema", "schema": locSchema},
		{"action": "set-current-schema", "schema-id": -1},
		{"action": "set-location", "location": location},
	}
	return map[string]any{"table-changes": []any{map[string]any{
		"identifier":   map[string]any{"namespace": []string{ns}, "name": name},
		"requirements": []any{map[string]any{"type": "assert-create"}},
		"updates":      append(all, updates...),
	}}}
}

// locationsEnv is writeEnv for namespace a with a second namespace b, and
// a token of a's writer.
func locationsEnv(t *testing.T) (env *restEnv, st s3Stack, a, b, tok string) {
	t.Helper()
	a, b = "la"+randomHex(4), "lb"+randomHex(4)
	env = writeEnv(t, a)
	st = requireStack(t, true)
	env.duck("CREATE SCHEMA l." + b)
	return env, st, a, b, clientToken(t, env, "writer-"+a, "pw")
}

// TestCommitCannotReachOtherNamespaces (issue 14, hole 3): a create
// transaction in namespace a whose table location climbs out of a, whose
// manifest list is a/../a/t/metadata/snap-….avro and which lists a data
// file under a/../b/s/ is refused (400: a table location that is no
// location), and so is one whose table is inside a but whose manifest
// list and data file climb out of it (403, as any file outside the table);
// nothing is recorded: no table, no data file, no snapshot.
func TestCommitCannotReachOtherNamespaces(t *testing.T) {
	env, st, a, b, tok := locationsEnv(t)
	id := time.Now().UnixNano() % 1e12
	up := restDataPath + a + "/.."
	updates := clientSnapshot(t, st, id,
		up+"/"+a+"/t/metadata/snap-"+fmt.Sprint(id)+".avro", "data/"+a+"/t/metadata/snap-"+fmt.Sprint(id)+".avro",
		up+"/"+a+"/t/metadata/m-"+fmt.Sprint(id)+".avro", "data/"+a+"/t/metadata/m-"+fmt.Sprint(id)+".avro",
		up+"/"+b+"/s/data/stolen.parquet")
	before := env.snapshotCount(t)
	r := env.do("POST", "/v1/lake/transactions/commit", tok, createTransaction(a, "x", up, updates...))
	if code, typ, _ := errorModel(t, r); r.code != 400 || code != 400 || typ != "BadRequestException" {
		t.Errorf("a create transaction at %s: %d %s", up, r.code, r.body)
	}
	// The same through a table of a whose location is inside a: the list
	// and the data file climb out of it.
	inside := restDataPath + a + "/y"
	updates = clientSnapshot(t, st, id+1,
		inside+"/../"+a+"/t/metadata/snap-"+fmt.Sprint(id+1)+".avro", "data/"+a+"/t/metadata/snap-"+fmt.Sprint(id+1)+".avro",
		inside+"/metadata/m-"+fmt.Sprint(id+1)+".avro", "data/"+a+"/y/metadata/m-"+fmt.Sprint(id+1)+".avro",
		inside+"/../../"+b+"/s/data/stolen.parquet")
	r = env.do("POST", "/v1/lake/transactions/commit", tok, createTransaction(a, "y", inside, updates...))
	if code, typ, msg := errorModel(t, r); r.code != 403 || code != 403 || typ != "ForbiddenException" || !strings.Contains(msg, "is not inside the table location "+inside) {
		t.Errorf("a create transaction whose manifest list climbs out of %s: %d %s", inside, r.code, r.body)
	}
	var files int
	if err := env.pool.QueryRow(context.Background(), `SELECT count(*) FROM ducklake_data_file WHERE path LIKE '%stolen.parquet'`).Scan(&files); err != nil {
		t.Fatal(err)
	}
	if got := env.liveTables(t, a); files != 0 || len(got) != 0 || env.snapshotCount(t) != before {
		t.Errorf("recorded: %d data files, tables %v, %d snapshots", files, got, env.snapshotCount(t)-before)
	}
}

// TestCommitLocationsNoExistenceOracle (issue 14, hole 4): a create
// transaction whose set-location is outside its namespace — another
// namespace's table directory, another bucket — and whose manifest list
// names a key there is refused before anything is read: the answer for an
// existing key and for a missing one are byte for byte the same.
func TestCommitLocationsNoExistenceOracle(t *testing.T) {
	env, st, a, b, tok := locationsEnv(t)
	admin := env.token("admin")
	if r := env.do("POST", "/v1/lake/namespaces/"+b+"/tables", admin, map[string]any{"name": "s", "schema": locSchema}); r.code != 200 {
		t.Fatalf("create %s.s: %d %s", b, r.code, r.body)
	}
	other := "other" + randomHex(4)
	ctx := context.Background()
	if _, err := st.root().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(other)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.root().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(other), Key: aws.String("x/metadata/secret.avro")})
		st.root().DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(other)})
	})

	before := env.snapshotCount(t)
	for _, tc := range []struct{ name, bucket, dir string }{
		{"another namespace's table", "lake", "data/" + b + "/s"},
		{"another namespace", "lake", "data/" + b},
		{"another bucket", other, "x"},
	} {
		// Not Avro: a read would answer "bad manifest list", a missing
		// key "does not exist".
		rootPut(t, st, tc.bucket, tc.dir+"/metadata/secret.avro", []byte("Obj\x01 not really avro"))
		location := "s3://" + tc.bucket + "/" + tc.dir
		var answers []string
		for _, list := range []string{location + "/metadata/secret.avro", location + "/metadata/nosuch.avro"} {
			r := env.do("POST", "/v1/lake/transactions/commit", tok, createTransaction(a, "probe", location,
				map[string]any{"action": "add-snapshot", "snapshot": map[string]any{"snapshot-id": 7, "sequence-number": 1,
					"timestamp-ms": 1, "manifest-list": list, "summary": map[string]string{"operation": "append"}}},
				map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 7}))
			if code, typ, _ := errorModel(t, r); r.code != 403 || code != 403 || typ != "ForbiddenException" {
				t.Errorf("%s, manifest list %s: %d %s", tc.name, list, r.code, r.body)
			}
			answers = append(answers, fmt.Sprint(r.code)+" "+string(r.body))
		}
		if answers[0] != answers[1] {
			t.Errorf("%s: an existing key and a missing one are told apart:\n%s\n%s", tc.name, answers[0], answers[1])
		}
	}
	if got := env.liveTables(t, a); len(got) != 0 || env.snapshotCount(t) != before {
		t.Errorf("recorded: tables %v, %d snapshots", got, env.snapshotCount(t)-before)
	}
}

// TestStagedCreateCannotClaimAnotherTable (issue 14, hole 1): a staged
// create at a live table's directory — or one inside it, or one holding
// it — is refused as an overlap, before any credential is vended for it;
// a write-only token's vended credential for a staged table of its own
// reads nothing; and a write-only create is answered 200, not 403 after
// the table was made.
func TestStagedCreateCannotClaimAnotherTable(t *testing.T) {
	a := "lo" + randomHex(4)
	env := writeEnv(t, a)
	rw := clientToken(t, env, "writer-"+a, "pw")
	wo := clientToken(t, env, "wo-"+a, "pw")
	tables := "/v1/lake/namespaces/" + a + "/tables"
	if r := env.do("POST", tables, rw, map[string]any{"name": "t1", "schema": locSchema}); r.code != 200 {
		t.Fatalf("create t1: %d %s", r.code, r.body)
	}
	nsPath := restDataPath + a
	vend := withHeader("X-Iceberg-Access-Delegation", "vended-credentials")
	for _, tok := range []string{rw, wo} {
		for _, loc := range []string{nsPath + "/t1", nsPath + "/t1/", nsPath + "/t1/inner"} {
			r := env.do("POST", tables, tok, map[string]any{"name": "st" + randomHex(2), "schema": locSchema, "location": loc,
				"stage-create": true}, vend)
			code, typ, msg := errorModel(t, r)
			if r.code != 403 || code != 403 || typ != "ForbiddenException" || !strings.Contains(msg, "overlaps") {
				t.Errorf("staged create at %s: %d %s", loc, r.code, r.body)
			}
			if bytes.Contains(r.body, []byte("s3.access-key-id")) {
				t.Errorf("staged create at %s vended a credential: %s", loc, r.body)
			}
		}
	}
	// Its own staged table: the write-only token's credential cannot read.
	r := env.do("POST", tables, wo, map[string]any{"name": "own", "schema": locSchema, "stage-create": true}, vend)
	if r.code != 200 {
		t.Fatalf("staged create of a new table: %d %s", r.code, r.body)
	}
	var staged struct {
		Creds []struct {
			Config map[string]string `json:"config"`
		} `json:"storage-credentials"`
	}
	if err := json.Unmarshal(r.body, &staged); err != nil {
		t.Fatal(err)
	}
	if len(staged.Creds) == 1 {
		st := requireStack(t, true)
		c := st.client(env.gateway, staged.Creds[0].Config["s3.access-key-id"], staged.Creds[0].Config["s3.secret-access-key"],
			staged.Creds[0].Config["s3.session-token"])
		if _, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("lake"),
			Prefix: aws.String(strings.TrimPrefix(nsPath, "s3://lake/") + "/own/")}); err == nil {
			t.Error("a write-only token's vended credential lists")
		}
	}
	// A write-only create: made and answered 200.
	if r := env.do("POST", tables, wo, map[string]any{"name": "wonly", "schema": locSchema}); r.code != 200 {
		t.Errorf("write-only create: %d %s", r.code, r.body)
	}
	if got := env.liveTables(t, a); fmt.Sprint(got) != "[t1 wonly]" {
		t.Errorf("tables of %s: %v", a, got)
	}
}
