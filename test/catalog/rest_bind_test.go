package catalog_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/gateway"
	"github.com/duckicelake/duckicelake/governance/engine"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/tableindex"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// withOwnGateway serves a gateway in this process for the catalog under
// test, wired as serve wires one: upstream the stack's S3 backend, the
// catalog's keyring, and governance's engine over the catalog's database
// with a live key index. The stack's own gateway knows the stack's catalog
// only, so it refuses what this catalog vends (each credential is bound to
// a table of this catalog). With governed, the catalog gets the engine too:
// a drop or a rename then brings the index up to date before it answers.
func withOwnGateway(t *testing.T, st s3Stack, governed bool) restOption {
	return func(c *rest.Config, d *rest.Deps) {
		ctx := context.Background()
		gs := store.New(d.DB.(*pgxpool.Pool), c.Schema)
		live := &tableindex.Live{Load: gs.Reader().TableIndexSource}
		eng, err := engine.New(ctx, engine.Config{Store: gs, Index: live, Logger: d.Logger})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := gateway.New(gateway.Config{Region: st.region, Upstream: gateway.UpstreamConfig{Endpoint: st.endpoint, Region: st.region,
			AccessKeyID: st.key, SecretAccessKey: st.secret, PathStyle: true}}, gateway.Deps{Keyring: d.Keyring, Authorizer: eng, Logger: d.Logger})
		if err != nil {
			t.Fatal(err)
		}
		c.GatewayURL = "http://" + testsupport.ServeLocal(t, srv.Serve, srv.Shutdown)
		if governed {
			d.Governance = &rest.Governance{Engine: eng}
		}
	}
}

// vendedClient is an S3 client with the credential a vending answer
// carries (LoadTable's config or a staged create's), for env's gateway.
func vendedClient(t *testing.T, env *restEnv, st s3Stack, r response) *s3.Client {
	t.Helper()
	if r.code != 200 {
		t.Fatalf("vend: %d %s", r.code, r.body)
	}
	var body struct {
		Config map[string]string `json:"config"`
	}
	r.decode(t, &body)
	c := body.Config
	if c["s3.session-token"] == "" {
		t.Fatalf("no credential vended: %s", r.body)
	}
	if c["s3.endpoint"] != env.gateway {
		t.Fatalf("s3.endpoint = %q, want the gateway %s", c["s3.endpoint"], env.gateway)
	}
	return st.client(c["s3.endpoint"], c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])
}

// TestRESTVendBoundToTable (issue 14, hole 6): a credential vended for a
// table is refused at the gateway once the table is dropped (with purge) —
// no planting files in the purged prefix — and stays refused when another
// client creates a table at the same location; once the table is renamed
// it is refused, and a fresh LoadTable of the new name works. A staged
// create's credential works before the commit and after it, and is
// refused once its table is dropped and for another table later at that
// path.
func TestRESTVendBoundToTable(t *testing.T) {
	st := requireStack(t, true)
	env := newRestEnv(t, withOwnGateway(t, st, true), func(_ *rest.Config, d *rest.Deps) { d.Objects = objstore.NewS3(st.root()) })
	ns := "b" + randomHex(4)
	env.duck("CREATE SCHEMA l."+ns, "CREATE TABLE l."+ns+".t (x INTEGER)", "CREATE TABLE l."+ns+".r1 (x INTEGER)")
	tok := env.token("admin")
	vending := withHeader("X-Iceberg-Access-Delegation", "vended-credentials")
	load := func(name string) *s3.Client {
		t.Helper()
		return vendedClient(t, env, st, env.do("GET", "/v1/lake/namespaces/"+ns+"/tables/"+name, tok, nil, vending))
	}
	list := func(cl *s3.Client, prefix string) error {
		_, err := cl.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(st.bucket), Prefix: aws.String(prefix)})
		return err
	}
	type check struct {
		what string
		err  error
		deny bool
	}
	expect := func(step string, checks ...check) {
		t.Helper()
		for _, c := range checks {
			if c.deny && !denied(c.err) {
				t.Errorf("%s: %s = %v, want AccessDenied", step, c.what, c.err)
			}
			if !c.deny && c.err != nil {
				t.Errorf("%s: %s = %v, want success", step, c.what, c.err)
			}
		}
	}

	// Drop with purge, then a new table at the same location.
	dir := "data/" + ns + "/t/"
	if err := st.put(t, st.root(), dir+"seed.parquet"); err != nil {
		t.Fatal(err)
	}
	old := load("t")
	expect("before the drop",
		check{"GET", st.get(t, old, dir+"seed.parquet"), false},
		check{"PUT", st.put(t, old, dir+"mine.parquet"), false},
		check{"LIST", list(old, dir), false})
	if r := env.do("DELETE", "/v1/lake/namespaces/"+ns+"/tables/t?purgeRequested=true", tok, nil); r.code != 204 {
		t.Fatalf("drop with purge: %d %s", r.code, r.body)
	}
	// Iceberg's client-side purge (Spark's DROP TABLE … PURGE) drops the
	// table, then reads and deletes what it left with the FileIO it
	// loaded: the old credential may read, list and delete there while no
	// other table has the path, never write.
	_, delErr := old.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(st.bucket), Key: aws.String(dir + "seed.parquet")})
	expect("after the drop",
		check{"PUT into the purged prefix", st.put(t, old, dir+"planted.parquet"), true},
		check{"LIST of what the drop left", list(old, dir), false},
		check{"DELETE of what the drop left", delErr, false})
	if err := st.get(t, old, dir+"seed.parquet"); err == nil || denied(err) {
		t.Errorf("after the drop: GET of a purged file = %v, want NoSuchKey", err)
	}
	if got := st.keys(t, dir); len(got) != 0 {
		t.Errorf("objects under the purged prefix: %v", got)
	}
	env.duck("CREATE TABLE l." + ns + ".t (y VARCHAR)") // another client, at the same location
	fresh := load("t")
	if err := st.put(t, fresh, dir+"new.parquet"); err != nil {
		t.Fatalf("the new table's own credential: %v (its location must be %s for this test)", err, dir)
	}
	expect("a new table at the old location",
		check{"PUT", st.put(t, old, dir+"planted.parquet"), true},
		check{"GET", st.get(t, old, dir+"new.parquet"), true},
		check{"LIST", list(old, dir), true})

	// Rename within the namespace; a move to another is refused (406) and
	// changes nothing.
	rdir := "data/" + ns + "/r1/"
	if err := st.put(t, st.root(), rdir+"seed.parquet"); err != nil {
		t.Fatal(err)
	}
	before := load("r1")
	env.duck("CREATE SCHEMA l." + ns + "x")
	rename := func(dstNS, dst string) response {
		return env.do("POST", "/v1/lake/tables/rename", tok, map[string]any{
			"source":      map[string]any{"namespace": []string{ns}, "name": "r1"},
			"destination": map[string]any{"namespace": []string{dstNS}, "name": dst}})
	}
	if r := rename(ns+"x", "r1"); r.code != 406 {
		t.Fatalf("rename to another namespace: %d %s", r.code, r.body)
	}
	expect("after a refused move", check{"GET", st.get(t, before, rdir+"seed.parquet"), false})
	if r := rename(ns, "r2"); r.code != 204 {
		t.Fatalf("rename: %d %s", r.code, r.body)
	}
	expect("after the rename",
		check{"GET", st.get(t, before, rdir+"seed.parquet"), true},
		check{"PUT", st.put(t, before, rdir+"planted.parquet"), true},
		check{"LIST", list(before, rdir), true})
	renamed := load("r2")
	expect("a fresh load of the new name",
		check{"GET", st.get(t, renamed, rdir+"seed.parquet"), false},
		check{"LIST", list(renamed, rdir), false})

	// Staged create, its commit, then another table at its path.
	r := env.do("POST", "/v1/lake/namespaces/"+ns+"/tables", tok, map[string]any{"name": "s", "schema": locSchema, "stage-create": true}, vending)
	var staged struct {
		Metadata struct {
			UUID     string `json:"table-uuid"`
			Location string `json:"location"`
		} `json:"metadata"`
	}
	r.decode(t, &staged)
	stagedCl := vendedClient(t, env, st, r)
	sdir := "data/" + ns + "/s/"
	if staged.Metadata.Location != "s3://lake/"+sdir[:len(sdir)-1] {
		t.Fatalf("staged location %q, want s3://lake/%s", staged.Metadata.Location, sdir)
	}
	expect("staged, before the commit", check{"PUT", st.put(t, stagedCl, sdir+"data/a.parquet"), false})
	if r := env.do("POST", "/v1/lake/namespaces/"+ns+"/tables/s", tok, map[string]any{
		"requirements": []any{map[string]any{"type": "assert-create"}},
		"updates": []any{
			map[string]any{"action": "assign-uuid", "uuid": staged.Metadata.UUID},
			map[string]any{"action": "add-schema", "schema": locSchema},
			map[string]any{"action": "set-current-schema", "schema-id": -1},
			map[string]any{"action": "set-location", "location": staged.Metadata.Location},
		}}); r.code != 200 {
		t.Fatalf("commit of the staged create: %d %s", r.code, r.body)
	}
	expect("staged, after the commit",
		check{"PUT", st.put(t, stagedCl, sdir+"data/b.parquet"), false},
		check{"GET", st.get(t, stagedCl, sdir+"data/a.parquet"), false})
	if r := env.do("DELETE", "/v1/lake/namespaces/"+ns+"/tables/s", tok, nil); r.code != 204 {
		t.Fatalf("drop s: %d %s", r.code, r.body)
	}
	expect("staged, after its table was dropped", check{"PUT", st.put(t, stagedCl, sdir+"data/c.parquet"), true})
	env.duck("CREATE TABLE l." + ns + ".s (z INTEGER)")
	other := load("s")
	if err := st.get(t, other, sdir+"data/a.parquet"); err != nil {
		t.Fatalf("the new table's own credential: %v (its location must be %s for this test)", err, sdir)
	}
	expect("staged, another table at its path",
		check{"PUT", st.put(t, stagedCl, sdir+"data/c.parquet"), true},
		check{"GET", st.get(t, stagedCl, sdir+"data/a.parquet"), true})
}
