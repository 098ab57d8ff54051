package catalog_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// restDataPath is the data path of the test catalogs. DuckDB writes only
// inlined rows in most tests, so no S3 backend is needed unless a test
// says so.
const restDataPath = "s3://lake/data/"

// The OAuth clients of the test catalogs.
var restClients = []rest.Client{
	{ID: "admin", Secret: "admin-pw", Scopes: []string{"*"}},
	{ID: "writer", Secret: "writer-pw", Scopes: []string{"ns:sales:rw"}, Roles: []string{"etl"}},
	{ID: "reader", Secret: "reader-pw", Scopes: []string{"ns:sales:r"}},
	{ID: "stranger", Secret: "stranger-pw", Scopes: []string{"ns:hr:r"}},
	{ID: "nsadmin", Secret: "nsadmin-pw", Scopes: []string{"ns:*:rw"}},
}

// restEnv is a catalog on a fresh Postgres database, served on a real
// 127.0.0.1 port.
type restEnv struct {
	t       testing.TB
	dsn     string
	pool    *pgxpool.Pool
	srv     *rest.Server
	url     string
	keyring *creds.Keyring
	client  *http.Client
	gateway string // the gateway URL the catalog vends for (withOwnGateway's)

	mu     sync.Mutex
	bodies [][]byte // every response body, for the secrets scan
}

type restOption func(*rest.Config, *rest.Deps)

func newRestEnv(t testing.TB, opts ...restOption) *restEnv {
	t.Helper()
	dsn := pgtest.Database(t)
	ctx := context.Background()
	pool := pgtest.Pool(t, dsn)
	if _, err := ducklake.Init(ctx, pool, ducklake.InitOptions{DataPath: restDataPath}); err != nil {
		t.Fatal(err)
	}
	env := &restEnv{t: t, dsn: dsn, pool: pool, keyring: testKeyring(t), client: &http.Client{Timeout: 30 * time.Second}}
	cfg := rest.Config{
		Name:        "lake",
		TokenKey:    []byte("0123456789abcdef0123456789abcdef"),
		Clients:     restClients,
		GatewayURL:  "http://127.0.0.1:9000",
		SnapshotTTL: 20 * time.Millisecond,
	}
	deps := rest.Deps{DB: pool, Keyring: env.keyring, Materializer: testMaterializer(t, pool), Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	env.gateway = cfg.GatewayURL
	var err error
	if env.srv, err = rest.New(ctx, cfg, deps); err != nil {
		t.Fatal(err)
	}
	hs := &fasthttp.Server{Handler: env.srv.Handler, NoDefaultServerHeader: true}
	env.url = "http://" + testsupport.ServeLocal(t, hs.Serve, hs.ShutdownWithContext)
	return env
}

// testKeyring is the stack's minting keyring when the test stack runs (so
// the gateway accepts what the catalog vends), else a fresh one.
func testKeyring(t testing.TB) *creds.Keyring {
	t.Helper()
	key := creds.Key{ID: "test1"}
	if g := testsupport.LoadStack().Gateway; g.MintKeys != "" {
		id, secret := g.MintKey(t)
		key.ID = id
		var err error
		if key.Secret, err = creds.ParseKeySecret(secret); err != nil {
			t.Fatal(err)
		}
	} else {
		key.Secret = make([]byte, 32)
		rand.Read(key.Secret)
	}
	k, err := creds.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// response is one HTTP exchange's outcome.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// errType returns the ErrorModel type of an error response.
func (r response) errType() string {
	var e struct {
		Error struct {
			Type string `json:"type"`
			Code int    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &e) != nil {
		return ""
	}
	return e.Error.Type
}

// identifiers decodes a list-tables or list-views answer into its
// identifiers, each as namespace.name.
func (r response) identifiers(t testing.TB) []string {
	t.Helper()
	var body struct {
		Identifiers []struct {
			Namespace []string `json:"namespace"`
			Name      string   `json:"name"`
		} `json:"identifiers"`
	}
	r.decode(t, &body)
	var ids []string
	for _, id := range body.Identifiers {
		ids = append(ids, strings.Join(id.Namespace, ".")+"."+id.Name)
	}
	return ids
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

type reqOpt func(*http.Request)

func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

// do sends a request; token "" sends none. body may be a string (sent as
// is) or anything else (sent as JSON).
func (e *restEnv) do(method, path, token string, body any, opts ...reqOpt) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.bodies = append(e.bodies, b)
	e.mu.Unlock()
	return response{code: resp.StatusCode, header: resp.Header, body: b}
}

// token gets an access token for a configured client.
func (e *restEnv) token(client string) string {
	e.t.Helper()
	for _, c := range restClients {
		if c.ID != client {
			continue
		}
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.ID}, "client_secret": {c.Secret}, "scope": {"catalog"}}
		resp, err := e.client.PostForm(e.url+"/v1/oauth/tokens", form)
		if err != nil {
			e.t.Fatal(err)
		}
		defer resp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
			e.t.Fatalf("token for %s: %d %v", client, resp.StatusCode, err)
		}
		return tok.AccessToken
	}
	e.t.Fatalf("no client %s", client)
	return ""
}

// tokens is an access token of every client in restClients, by id.
func (e *restEnv) tokens() map[string]string {
	e.t.Helper()
	tok := map[string]string{}
	for _, c := range restClients {
		tok[c.ID] = e.token(c.ID)
	}
	return tok
}

// salesEnv is newRestEnv whose DuckDB has made table sales.orders (id
// INTEGER, v VARCHAR) with rows (1, 'a') and (2, 'b'), then run more.
func salesEnv(t *testing.T, more ...string) *restEnv {
	t.Helper()
	env := newRestEnv(t)
	env.duck(append([]string{
		"CREATE SCHEMA l.sales",
		"CREATE TABLE l.sales.orders (id INTEGER, v VARCHAR)",
		"INSERT INTO l.sales.orders VALUES (1, 'a'), (2, 'b')",
	}, more...)...)
	return env
}

// queryStrings is the one text column of the rows of sql in the catalog's
// Postgres.
func (e *restEnv) queryStrings(t *testing.T, sql string, args ...any) []string {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// duck runs SQL statements with a real DuckDB attached to the catalog and
// returns each statement's rows.
func (e *restEnv) duck(stmts ...string) [][][]any {
	e.t.Helper()
	var out [][][]any
	testsupport.DuckDB(e.t, &out, e.dsn, restDataPath, stmts...)
	return out
}

// scanSecrets fails the test when any response carried one of secrets.
func (e *restEnv) scanSecrets(secrets ...string) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.bodies) == 0 {
		e.t.Fatal("no responses to scan")
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, b := range e.bodies {
			if bytes.Contains(b, []byte(s)) {
				e.t.Errorf("a response contains a root secret (%s…): %.200s", s[:4], b)
			}
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
