package catalog_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/s3test"
)

// s3Stack is the S3 part of the test stack (scripts/test.sh).
type s3Stack struct {
	endpoint, key, secret, region, bucket string
	gateway                               string // "" when only the backend runs
}

// requireStack skips (or, under CI, fails) without the S3 backend, and with
// gateway also without the gateway.
func requireStack(t *testing.T, gateway bool) s3Stack {
	t.Helper()
	parts := []testsupport.Part{testsupport.S3Part}
	if gateway {
		parts = append(parts, testsupport.GatewayPart)
	}
	s := testsupport.RequireStack(t, parts...)
	st := s3Stack{endpoint: s.S3.Endpoint, key: s.S3.AccessKey, secret: s.S3.SecretKey, region: s.S3.Region,
		bucket: s.S3.Bucket, gateway: s.Gateway.URL}
	if st.bucket != "lake" {
		t.Skipf("the test catalogs live in bucket lake, the stack's bucket is %s", st.bucket)
	}
	return st
}

func (st s3Stack) client(endpoint, key, secret, token string) *s3.Client {
	return s3test.Client(endpoint, st.region, key, secret, token, s3test.WhenRequired, s3test.Timeout(time.Minute))
}

func (st s3Stack) root() *s3.Client { return st.client(st.endpoint, st.key, st.secret, "") }

func (st s3Stack) put(t *testing.T, cl *s3.Client, key string) error {
	t.Helper()
	_, err := cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(st.bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("x"))})
	return err
}

func (st s3Stack) get(t *testing.T, cl *s3.Client, key string) error {
	t.Helper()
	out, err := cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(st.bucket), Key: aws.String(key)})
	if err == nil {
		out.Body.Close()
	}
	return err
}

func (st s3Stack) keys(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := st.root().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(st.bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	slices.Sort(keys)
	return keys
}

// duckDBThroughGateway makes the DuckDB runs of t (rest_duckdb.py and the
// scripts that share its REST_DUCK_S3_* settings) reach S3 through the
// gateway, as principal, with access to the data of namespace ns.
func duckDBThroughGateway(t *testing.T, env *restEnv, st s3Stack, principal, ns string, access creds.Access) {
	t.Helper()
	m, err := env.keyring.Mint(creds.Claims{Principal: principal, Actor: creds.ActorHuman, Channel: creds.ChannelREST,
		Grants: []creds.Grant{{Bucket: "lake", Prefix: "data/" + ns + "/", Access: access}}})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"REST_DUCK_S3_ENDPOINT": env.gateway, "REST_DUCK_S3_KEY": m.AccessKeyID,
		"REST_DUCK_S3_SECRET": m.SecretAccessKey, "REST_DUCK_S3_TOKEN": m.SessionToken, "REST_DUCK_S3_REGION": st.region} {
		t.Setenv(k, v)
	}
}

func denied(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "AccessDenied"
}

// TestRESTVendedCredentialsAtTheGateway: what LoadTable vends works at the
// real gateway, for the table's prefix only, read-only for a reader.
func TestRESTVendedCredentialsAtTheGateway(t *testing.T) {
	st := requireStack(t, true)
	env := newRestEnv(t, withOwnGateway(t, st, false))
	ns := "v" + randomHex(4)
	env.duck("CREATE SCHEMA l."+ns, "CREATE TABLE l."+ns+".t (x INTEGER)", "CREATE TABLE l."+ns+".u (x INTEGER)")
	admin := env.token("admin")
	prefix := "data/" + ns + "/t/"
	if err := st.put(t, st.root(), prefix+"seed.parquet"); err != nil {
		t.Fatal(err)
	}
	if err := st.put(t, st.root(), "data/"+ns+"/u/other.parquet"); err != nil {
		t.Fatal(err)
	}

	vend := func(scope string) *s3.Client {
		t.Helper()
		// A token with just this scope, by token exchange of the admin's.
		r := env.do("POST", "/v1/oauth/tokens", "", "grant_type=urn:ietf:params:oauth:grant-type:token-exchange&subject_token_type=urn:ietf:params:oauth:token-type:access_token&subject_token="+admin+"&scope="+scope,
			withHeader("Content-Type", "application/x-www-form-urlencoded"))
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		r.decode(t, &tok)
		return vendedClient(t, env, st, env.do("GET", "/v1/lake/namespaces/"+ns+"/tables/t", tok.AccessToken, nil, withHeader("X-Iceberg-Access-Delegation", "vended-credentials")))
	}

	writer := vend("ns:" + ns + ":rw")
	if err := st.get(t, writer, prefix+"seed.parquet"); err != nil {
		t.Errorf("writer reads the table: %v", err)
	}
	if err := st.put(t, writer, prefix+"new.parquet"); err != nil {
		t.Errorf("writer writes into the table: %v", err)
	}
	if err := st.put(t, writer, prefix+"metadata/v1.metadata.json"); err != nil {
		t.Errorf("writer writes the table's metadata/: %v", err)
	}
	if err := st.get(t, writer, "data/"+ns+"/u/other.parquet"); !denied(err) {
		t.Errorf("writer reads another table: %v, want AccessDenied", err)
	}
	if err := st.put(t, writer, "data/"+ns+"/tx/evil.parquet"); !denied(err) {
		t.Errorf("writer writes next to the table (prefix tx/ shares t): %v, want AccessDenied", err)
	}

	reader := vend("ns:" + ns + ":r")
	if err := st.get(t, reader, prefix+"new.parquet"); err != nil {
		t.Errorf("reader reads the table: %v", err)
	}
	if err := st.put(t, reader, prefix+"reader.parquet"); !denied(err) {
		t.Errorf("reader writes: %v, want AccessDenied", err)
	}
	if _, err := reader.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(st.bucket), Prefix: aws.String(prefix)}); err != nil {
		t.Errorf("reader lists the table: %v", err)
	}
	if _, err := reader.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(st.bucket), Prefix: aws.String("data/" + ns + "/")}); !denied(err) {
		t.Errorf("reader lists the namespace: %v, want AccessDenied", err)
	}
	if got := st.keys(t, prefix); !slices.Equal(got, []string{prefix + "metadata/v1.metadata.json", prefix + "new.parquet", prefix + "seed.parquet"}) {
		t.Errorf("objects under the table = %v", got)
	}
}

// TestRESTPurge: DELETE …?purgeRequested=true deletes the table's objects
// and nothing else, and is refused up front when another live table's files
// share the prefix (DuckDB reuses a path when a table is renamed and a new
// one takes the old name).
func TestRESTPurge(t *testing.T) {
	st := requireStack(t, false)
	env := newRestEnv(t, func(_ *rest.Config, d *rest.Deps) { d.Objects = objstore.NewS3(st.root()) })
	ns := "p" + randomHex(4)
	env.duck("CREATE SCHEMA l."+ns, "CREATE TABLE l."+ns+".t (x INTEGER)", "CREATE TABLE l."+ns+".t2 (x INTEGER)",
		"CREATE TABLE l."+ns+".old (x INTEGER)", "ALTER TABLE l."+ns+".old RENAME TO moved", "CREATE TABLE l."+ns+".old (x INTEGER)")
	tok := env.token("admin")
	for _, k := range []string{"t/a.parquet", "t/metadata/v1.metadata.json", "t2/b.parquet", "old/c.parquet"} {
		if err := st.put(t, st.root(), "data/"+ns+"/"+k); err != nil {
			t.Fatal(err)
		}
	}
	if r := env.do("DELETE", "/v1/lake/namespaces/"+ns+"/tables/t?purgeRequested=true", tok, nil); r.code != 204 {
		t.Fatalf("drop with purge: %d %s", r.code, r.body)
	}
	if got := st.keys(t, "data/"+ns+"/"); !slices.Equal(got, []string{"data/" + ns + "/old/c.parquet", "data/" + ns + "/t2/b.parquet"}) {
		t.Errorf("after the purge of t: %v", got)
	}
	r := env.do("DELETE", "/v1/lake/namespaces/"+ns+"/tables/moved?purgeRequested=true", tok, nil)
	if r.code != 409 || !strings.Contains(string(r.body), ns+".old") {
		t.Errorf("purge of a table sharing its prefix: %d %s", r.code, r.body)
	}
	if r := env.do("HEAD", "/v1/lake/namespaces/"+ns+"/tables/moved", tok, nil); r.code != 204 {
		t.Errorf("a refused purge dropped the table: %d", r.code)
	}
	if got := st.keys(t, "data/"+ns+"/old/"); len(got) != 1 {
		t.Errorf("a refused purge deleted files: %v", got)
	}
}

// TestRESTNoRootKeysInResponses: the catalog process holds the upstream's
// root keys (for purging), the minting key and the token key; no response of
// any route may carry them.
func TestRESTNoRootKeysInResponses(t *testing.T) {
	rootKey, rootSecret := "ROOTKEY"+strings.ToUpper(randomHex(6)), randomHex(20)
	if s3 := testsupport.LoadStack().S3; s3.AccessKey != "" {
		rootKey, rootSecret = s3.AccessKey, s3.SecretKey
	}
	st := s3Stack{endpoint: "http://127.0.0.1:1", region: "us-east-1", bucket: "lake"}
	tokenKey := []byte(randomHex(16))
	env := newRestEnv(t, func(c *rest.Config, d *rest.Deps) {
		c.TokenKey = tokenKey
		d.Objects = objstore.NewS3(st.client(st.endpoint, rootKey, rootSecret, ""))
	})
	env.duck("CREATE SCHEMA l.s", "CREATE TABLE l.s.t (x INTEGER)", "INSERT INTO l.s.t VALUES (1)")
	for _, c := range restClients {
		tok := env.token(c.ID)
		for _, path := range []string{
			"/v1/config", "/v1/lake/namespaces", "/v1/lake/namespaces/s", "/v1/lake/namespaces/s/tables",
			"/v1/lake/namespaces/s/tables/t", "/v1/lake/namespaces/s/tables/t?snapshots=refs",
			"/v1/lake/namespaces/s/tables/t/credentials", "/v1/lake/namespaces/nope/tables/t",
		} {
			env.do("GET", path, tok, nil, withHeader("X-Iceberg-Access-Delegation", "vended-credentials,remote-signing"))
		}
	}
	admin := env.token("admin")
	env.do("POST", "/v1/lake/namespaces", admin, map[string]any{"namespace": []string{"x"}})
	env.do("DELETE", "/v1/lake/namespaces/s/tables/t?purgeRequested=true", admin, nil) // the purge itself fails: no backend
	env.do("POST", "/v1/lake/namespaces", admin, `{`)

	mintKey := ""
	if g := testsupport.LoadStack().Gateway; g.MintKeys != "" {
		_, mintKey = g.MintKey(t)
	}
	env.scanSecrets(rootKey, rootSecret, string(tokenKey), hex.EncodeToString(tokenKey), mintKey)
}
