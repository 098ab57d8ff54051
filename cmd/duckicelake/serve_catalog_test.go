package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

const testTokenKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func catalogEnv(t *testing.T, dsn string) map[string]string {
	env := serveEnv(t)
	env["DUCKICELAKE_PG_DSN"] = dsn
	env["DUCKICELAKE_OAUTH_TOKEN_KEY"] = testTokenKey
	env["DUCKICELAKE_OAUTH_CLIENTS"] = "etl:etl-secret|*"
	return env
}

func initCatalog(t *testing.T, dsn, dataPath string) {
	t.Helper()
	ctx := context.Background()
	conn := pgtest.Connect(t, dsn)
	if _, err := ducklake.Init(ctx, conn, ducklake.InitOptions{DataPath: dataPath}); err != nil {
		t.Fatal(err)
	}
}

// TestServeCatalog: with catalog.dsn, serve mounts the Iceberg REST catalog
// on the admin listener beside /healthz and /metrics, tokens work, and serve
// stops cleanly. (The eager path and vending through a running stack:
// test/e2e.)
func TestServeCatalog(t *testing.T) {
	dsn := pgtest.Database(t)
	initCatalog(t, dsn, "s3://lake/data/")
	env := catalogEnv(t, dsn)

	rs := startServe(t, env, "-upstream.connect_timeout", "1s", "-catalog.data_path", "s3://lake/data")
	gw, admin := rs.gateway, rs.admin

	do := func(req *http.Request) (int, string) { return testsupport.Do(t, req) }
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", admin+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return do(req)
	}
	// Vended credentials name the gateway as bound (gateway.listen has port 0);
	// remote signing is on (minting keys and a gateway URL).
	if st, body := get("/v1/config?warehouse=lake", ""); st != 200 || !strings.Contains(body, `"prefix":"lake"`) ||
		!strings.Contains(body, `"s3.endpoint":"`+gw+`"`) || !strings.Contains(body, `tables/{table}/sign"`) {
		t.Fatalf("/v1/config: %d %s; want prefix lake, s3.endpoint %s and the sign route", st, body, gw)
	}
	if st, _ := get("/v1/lake/namespaces", ""); st != 401 {
		t.Fatalf("namespaces without a token: %d, want 401", st)
	}
	req, _ := http.NewRequest("POST", admin+"/v1/oauth/tokens", strings.NewReader(url.Values{
		"grant_type": {"client_credentials"}, "client_id": {"etl"}, "client_secret": {"etl-secret"}, "scope": {"catalog"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	st, body := do(req)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if st != 200 || json.Unmarshal([]byte(body), &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %s", st, body)
	}
	if st, body := get("/v1/lake/namespaces", tok.AccessToken); st != 200 || !strings.Contains(body, `["main"]`) {
		t.Fatalf("namespaces: %d %s", st, body)
	}
	// The admin endpoints still answer beside the catalog; /readyz names
	// the dead upstream (Postgres is up).
	if st, _ := get("/healthz", ""); st != 200 {
		t.Fatalf("/healthz %d", st)
	}
	if st, body := get("/readyz", ""); st != 503 || !strings.Contains(body, "upstream") {
		t.Fatalf("/readyz: %d %s", st, body)
	}

	rs.stop()
	out := rs.stdout.String()
	for _, want := range []string{`"msg":"catalog serving"`, `"eager":true`, `"revocations_in_postgres":true`, `"msg":"stopped"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{"etl-secret", testTokenKey, "backend-secret"} {
		if strings.Contains(out, secret) {
			t.Fatal("the log contains a secret")
		}
	}
}

// TestServeCatalogErrors: a catalog serve cannot use stops it before it
// listens, with a message that says what to do.
func TestServeCatalogErrors(t *testing.T) {
	empty := pgtest.Database(t)
	initialised := pgtest.Database(t)
	initCatalog(t, initialised, "s3://lake/data/")
	old := pgtest.Database(t)
	initCatalog(t, old, "s3://lake/data/")
	conn, err := pgx.Connect(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `DELETE FROM duckicelake_schema_migrations WHERE version > 1`); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())

	for _, tc := range []struct {
		name string
		dsn  string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"not initialised", empty, nil, nil, 1, "run `duckicelake init"},
		{"old sidecar", old, nil, nil, 1, "sidecar tables are at version 1"},
		{"data path differs", initialised, nil, []string{"-catalog.data_path", "s3://other/data/"}, 2,
			`catalog.data_path: "s3://other/data/", but the catalog`},
		{"no token key", initialised, map[string]string{"DUCKICELAKE_OAUTH_TOKEN_KEY": ""}, nil, 2, "oauth.token_key: required"},
		{"bad clients", initialised, map[string]string{"DUCKICELAKE_OAUTH_CLIENTS": "nosecret"}, nil, 2, "oauth.clients"},
		{"unreachable", "postgres://postgres@" + testsupport.FreeAddr(t) + "/x?connect_timeout=2", nil, nil, 1, "catalog database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := catalogEnv(t, tc.dsn)
			for k, v := range tc.env {
				env[k] = v
			}
			var stdout, stderr testsupport.SyncBuffer
			code := serve(context.Background(), append([]string{"-gateway.listen", "127.0.0.1:0", "-catalog.listen", "127.0.0.1:0"}, tc.args...),
				&stdout, &stderr, testsupport.LookupEnv(env), func(net.Addr, net.Addr) { t.Error("serve listened") })
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d containing %q", code, stderr.String(), tc.code, tc.want)
			}
		})
	}
}

func TestSplitQualified(t *testing.T) {
	for _, tc := range []struct {
		in, schema, table string
		ok                bool
	}{
		{`"main"."t"`, "main", "t", true},
		{`"a ""b"", c"."x.y"`, `a "b", c`, "x.y", true},
		{`"main"`, "", "", false},
		{`main.t`, "", "", false},
		{`"main"."t`, "", "", false},
		{`"a"."b"."c"`, "", "", false},
		{`"a"x"b"`, "", "", false},
	} {
		s, tb, ok := splitQualified(tc.in)
		if s != tc.schema || tb != tc.table || ok != tc.ok {
			t.Errorf("splitQualified(%s) = %q, %q, %v", tc.in, s, tb, ok)
		}
	}
}

// TestCatalogReady: /readyz answers 503 saying the catalog database is
// unreachable (no detail: TestReadyHidesDatabase) while
// its check fails, and defers to the gateway's own checks otherwise; other
// paths are not checked.
func TestCatalogReady(t *testing.T) {
	var dbErr error
	next := func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("next " + string(ctx.Path())) }
	h := catalogReady(next, func(context.Context) error { return dbErr }, zap.NewNop())
	serveOne := func(path string) (int, string) {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI(path)
		h(&ctx)
		return ctx.Response.StatusCode(), string(ctx.Response.Body())
	}
	if st, body := serveOne("/readyz"); st != 200 || body != "next /readyz" {
		t.Errorf("healthy: %d %q", st, body)
	}
	dbErr = errors.New("catalog database: connection refused")
	if st, body := serveOne("/readyz"); st != 503 || body != "not ready: catalog database unreachable\n" {
		t.Errorf("database down: %d %q", st, body)
	}
	if st, body := serveOne("/v1/config"); st != 200 || body != "next /v1/config" {
		t.Errorf("other path with the database down: %d %q", st, body)
	}
}
