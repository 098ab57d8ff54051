package catalog_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/duckicelake/duckicelake/internal/creds"
)

// TestRESTRoutes walks every route of the catalog in order — reads, DDL,
// errors — against a catalog that a real DuckDB filled, then checks with
// DuckDB that the DDL landed as DuckDB itself would have written it.
func TestRESTRoutes(t *testing.T) {
	env := salesEnv(t,
		"CREATE TABLE l.sales.items (id INTEGER)",
		"INSERT INTO l.sales.items VALUES (10)",
		"CREATE SCHEMA l.hr",
		"CREATE TABLE l.hr.people (name VARCHAR)",
		"CREATE TABLE l.hr.odd (d INTERVAL)",
		"INSERT INTO l.hr.odd VALUES (INTERVAL 1 DAY)",
	)
	tok := env.tokens()
	expired, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "duckicelake", "aud": "lake", "sub": "admin", "scopes": []string{"*"},
		"exp": time.Now().Add(-time.Hour).Unix(),
	}).SignedString([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	tok["expired"] = expired
	tok["forged"] = tok["reader"][:strings.LastIndexByte(tok["reader"], '.')] + ".AAAA"
	tok["garbage"] = "garbage"

	namespaces := func(want ...string) func(*testing.T, response) {
		return func(t *testing.T, r response) {
			var body struct {
				Namespaces [][]string `json:"namespaces"`
				Next       *string    `json:"next-page-token"`
			}
			r.decode(t, &body)
			var got []string
			for _, ns := range body.Namespaces {
				got = append(got, strings.Join(ns, "."))
			}
			if !slices.Equal(got, want) {
				t.Errorf("namespaces = %v, want %v", got, want)
			}
		}
	}
	tables := func(want ...string) func(*testing.T, response) {
		return func(t *testing.T, r response) {
			if got := r.identifiers(t); !slices.Equal(got, want) {
				t.Errorf("tables = %v, want %v", got, want)
			}
		}
	}
	properties := func(want map[string]string) func(*testing.T, response) {
		return func(t *testing.T, r response) {
			var body struct {
				Namespace  []string          `json:"namespace"`
				Properties map[string]string `json:"properties"`
			}
			r.decode(t, &body)
			if len(body.Properties) != len(want) {
				t.Errorf("properties = %v, want %v", body.Properties, want)
			}
			for k, v := range want {
				if body.Properties[k] != v {
					t.Errorf("properties = %v, want %v", body.Properties, want)
				}
			}
		}
	}
	jsonEq := func(want string) func(*testing.T, response) {
		return func(t *testing.T, r response) {
			var got, w any
			r.decode(t, &got)
			if err := json.Unmarshal([]byte(want), &w); err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			wb, _ := json.Marshal(w)
			if string(g) != string(wb) {
				t.Errorf("body = %s, want %s", g, wb)
			}
		}
	}
	vended := func(client string, want creds.Access) func(*testing.T, response) {
		return func(t *testing.T, r response) {
			var body struct {
				Creds []struct {
					Prefix string            `json:"prefix"`
					Config map[string]string `json:"config"`
				} `json:"storage-credentials"`
			}
			r.decode(t, &body)
			if len(body.Creds) != 1 || body.Creds[0].Prefix != "s3://lake/data/sales/orders/" {
				t.Fatalf("storage-credentials = %+v", body.Creds)
			}
			checkVended(t, env, body.Creds[0].Config, client, "data/sales/orders/", want)
		}
	}

	type step struct {
		name     string
		method   string
		path     string
		token    string
		body     any
		header   [2]string
		code     int
		errType  string
		check    func(*testing.T, response)
		duckdbOK []string // SQL that must succeed after the step
	}
	rename := func(srcNS, src, dstNS, dst string) map[string]any {
		return map[string]any{
			"source":      map[string]any{"namespace": []string{srcNS}, "name": src},
			"destination": map[string]any{"namespace": []string{dstNS}, "name": dst},
		}
	}
	steps := []step{
		// Configuration: no token needed.
		{name: "config", method: "GET", path: "/v1/config", code: 200, check: func(t *testing.T, r response) {
			var c struct {
				Overrides map[string]string `json:"overrides"`
				Defaults  map[string]string `json:"defaults"`
				Endpoints []string          `json:"endpoints"`
			}
			r.decode(t, &c)
			if c.Overrides["prefix"] != "lake" || !slices.Contains(c.Endpoints, "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}") ||
				!slices.Contains(c.Endpoints, "POST /v1/{prefix}/tables/rename") || c.Defaults["s3.endpoint"] != "http://127.0.0.1:9000" ||
				// No storage client here, so no registering.
				slices.Contains(c.Endpoints, "POST /v1/{prefix}/namespaces/{namespace}/register") {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "config by warehouse name", method: "GET", path: "/v1/config?warehouse=lake", code: 200},
		{name: "config by data path", method: "GET", path: "/v1/config?warehouse=" + url.QueryEscape("s3://lake/data"), code: 200},
		{name: "config of an unknown warehouse", method: "GET", path: "/v1/config?warehouse=other", code: 404, errType: "NoSuchWarehouseException"},

		// Authentication.
		{name: "no token", method: "GET", path: "/v1/lake/namespaces", code: 401, errType: "NotAuthorizedException"},
		{name: "garbage token", method: "GET", path: "/v1/lake/namespaces", token: tok["garbage"], code: 401, errType: "NotAuthorizedException"},
		{name: "expired token", method: "GET", path: "/v1/lake/namespaces", token: tok["expired"], code: 401, errType: "NotAuthorizedException"},
		{name: "forged token", method: "GET", path: "/v1/lake/namespaces", token: tok["forged"], code: 401, errType: "NotAuthorizedException"},

		// Namespaces: list, filtered by what the caller may read.
		{name: "list namespaces", method: "GET", path: "/v1/lake/namespaces", token: tok["admin"], code: 200, check: namespaces("hr", "main", "sales")},
		{name: "list namespaces as reader", method: "GET", path: "/v1/lake/namespaces", token: tok["reader"], code: 200, check: namespaces("sales")},
		{name: "list namespaces as stranger", method: "GET", path: "/v1/lake/namespaces", token: tok["stranger"], code: 200, check: namespaces("hr")},
		{name: "list first page", method: "GET", path: "/v1/lake/namespaces?pageToken=&pageSize=2", token: tok["admin"], code: 200,
			check: jsonEq(`{"namespaces":[["hr"],["main"]],"next-page-token":"bWFpbg"}`)},
		{name: "list next page", method: "GET", path: "/v1/lake/namespaces?pageToken=bWFpbg&pageSize=2", token: tok["admin"], code: 200,
			check: jsonEq(`{"namespaces":[["sales"]],"next-page-token":null}`)},
		{name: "list children", method: "GET", path: "/v1/lake/namespaces?parent=sales", token: tok["admin"], code: 200, check: namespaces()},
		{name: "list children of an unknown parent", method: "GET", path: "/v1/lake/namespaces?parent=nope", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "list children of a multi-level parent", method: "GET", path: "/v1/lake/namespaces?parent=a%1Fb", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "bad page size", method: "GET", path: "/v1/lake/namespaces?pageToken=&pageSize=0", token: tok["admin"], code: 400, errType: "BadRequestException"},
		{name: "unknown prefix", method: "GET", path: "/v1/other/namespaces", token: tok["admin"], code: 404, errType: "NoSuchWarehouseException"},

		// Namespaces: load, exists.
		{name: "load namespace", method: "GET", path: "/v1/lake/namespaces/sales", token: tok["reader"], code: 200,
			check: properties(map[string]string{"location": "s3://lake/data/sales/"})},
		{name: "load namespace without scope", method: "GET", path: "/v1/lake/namespaces/hr", token: tok["reader"], code: 403, errType: "ForbiddenException"},
		{name: "load unknown namespace", method: "GET", path: "/v1/lake/namespaces/nope", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "load multi-level namespace", method: "GET", path: "/v1/lake/namespaces/a%1Fb", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "multi-level namespace exists", method: "HEAD", path: "/v1/lake/namespaces/a%1Fb", token: tok["admin"], code: 404},
		{name: "tables of a multi-level namespace", method: "GET", path: "/v1/lake/namespaces/a%1Fb/tables", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "create table in a multi-level namespace", method: "POST", path: "/v1/lake/namespaces/a%1Fb/tables", token: tok["admin"],
			body: `{"name":"t"}`, code: 404, errType: "NoSuchNamespaceException"},
		// Java's client loads metadata table sales.orders.files as table
		// "files" of namespace sales.orders first, and builds it from
		// sales.orders on NoSuchTable.
		{name: "load a metadata table name", method: "GET", path: "/v1/lake/namespaces/sales%1Forders/tables/files", token: tok["reader"], code: 404, errType: "NoSuchTableException"},
		{name: "metadata table name exists", method: "HEAD", path: "/v1/lake/namespaces/sales%1Forders/tables/files", token: tok["reader"], code: 404},
		{name: "view of a multi-level namespace", method: "GET", path: "/v1/lake/namespaces/a%1Fb/views/v", token: tok["admin"], code: 404, errType: "NoSuchViewException"},
		{name: "namespace with an empty level", method: "GET", path: "/v1/lake/namespaces/a%1F", token: tok["admin"], code: 400, errType: "BadRequestException"},
		{name: "namespace exists", method: "HEAD", path: "/v1/lake/namespaces/sales", token: tok["reader"], code: 204},
		{name: "namespace does not exist", method: "HEAD", path: "/v1/lake/namespaces/nope", token: tok["admin"], code: 404},

		// Namespaces: create, properties, drop.
		{name: "create namespace", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"],
			body: map[string]any{"namespace": []string{"mkt"}, "properties": map[string]string{"owner": "ann", "team": "t0"}}, code: 200,
			check:    properties(map[string]string{"owner": "ann", "team": "t0", "location": "s3://lake/data/mkt/"}),
			duckdbOK: []string{"CREATE TABLE l.mkt.probe (x INTEGER)", "DROP TABLE l.mkt.probe"}},
		{name: "create existing namespace", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"],
			body: map[string]any{"namespace": []string{"mkt"}}, code: 409, errType: "AlreadyExistsException"},
		{name: "create namespace without wildcard scope", method: "POST", path: "/v1/lake/namespaces", token: tok["writer"],
			body: map[string]any{"namespace": []string{"sales2"}}, code: 403, errType: "ForbiddenException"},
		{name: "create namespace with ns:*:rw", method: "POST", path: "/v1/lake/namespaces", token: tok["nsadmin"],
			body: map[string]any{"namespace": []string{"ops"}, "properties": map[string]string{"location": "s3://lake/elsewhere/ops"}}, code: 200,
			check: properties(map[string]string{"location": "s3://lake/elsewhere/ops/"})},
		{name: "create namespace: malformed JSON", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"], body: `{"namespace": [`, code: 400, errType: "BadRequestException"},
		{name: "create namespace: wrong type", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"], body: `{"namespace": "x"}`, code: 400, errType: "BadRequestException"},
		{name: "create namespace: trailing data", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"], body: `{"namespace": ["x"]} {}`, code: 400, errType: "BadRequestException"},
		{name: "create namespace: empty body", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"], body: ``, code: 400, errType: "BadRequestException"},
		{name: "create namespace: no namespace", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"], body: `{}`, code: 400, errType: "BadRequestException"},
		{name: "create namespace: two levels", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"],
			body: map[string]any{"namespace": []string{"a", "b"}}, code: 400, errType: "BadRequestException"},
		{name: "create namespace: slash", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"],
			body: map[string]any{"namespace": []string{"a/b"}}, code: 400, errType: "BadRequestException"},
		{name: "update properties", method: "POST", path: "/v1/lake/namespaces/mkt/properties", token: tok["admin"],
			body: map[string]any{"updates": map[string]string{"team": "t1", "tier": "gold"}, "removals": []string{"owner", "nope"}}, code: 200,
			check: jsonEq(`{"updated":["team","tier"],"removed":["owner"],"missing":["nope"]}`)},
		{name: "properties after update", method: "GET", path: "/v1/lake/namespaces/mkt", token: tok["admin"], code: 200,
			check: properties(map[string]string{"team": "t1", "tier": "gold", "location": "s3://lake/data/mkt/"})},
		{name: "update and remove one key", method: "POST", path: "/v1/lake/namespaces/mkt/properties", token: tok["admin"],
			body: map[string]any{"updates": map[string]string{"team": "x"}, "removals": []string{"team"}}, code: 422, errType: "UnprocessableEntityException"},
		{name: "change location", method: "POST", path: "/v1/lake/namespaces/mkt/properties", token: tok["admin"],
			body: map[string]any{"updates": map[string]string{"location": "s3://x/"}}, code: 406, errType: "UnsupportedOperationException"},
		{name: "update properties without write scope", method: "POST", path: "/v1/lake/namespaces/sales/properties", token: tok["reader"],
			body: map[string]any{"updates": map[string]string{"a": "b"}}, code: 403, errType: "ForbiddenException"},
		{name: "update properties of unknown namespace", method: "POST", path: "/v1/lake/namespaces/nope/properties", token: tok["admin"],
			body: map[string]any{"updates": map[string]string{"a": "b"}}, code: 404, errType: "NoSuchNamespaceException"},
		{name: "update properties: malformed JSON", method: "POST", path: "/v1/lake/namespaces/mkt/properties", token: tok["admin"], body: `{"updates": 1}`, code: 400, errType: "BadRequestException"},
		{name: "drop non-empty namespace", method: "DELETE", path: "/v1/lake/namespaces/sales", token: tok["admin"], code: 409, errType: "NamespaceNotEmptyException"},
		{name: "drop namespace without wildcard scope", method: "DELETE", path: "/v1/lake/namespaces/mkt", token: tok["writer"], code: 403, errType: "ForbiddenException"},
		{name: "drop namespace", method: "DELETE", path: "/v1/lake/namespaces/mkt", token: tok["admin"], code: 204},
		{name: "dropped namespace is gone", method: "GET", path: "/v1/lake/namespaces/mkt", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "drop unknown namespace", method: "DELETE", path: "/v1/lake/namespaces/mkt", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "drop the default schema", method: "DELETE", path: "/v1/lake/namespaces/main", token: tok["admin"], code: 400, errType: "BadRequestException"},
		{name: "recreate a dropped namespace", method: "POST", path: "/v1/lake/namespaces", token: tok["admin"],
			body: map[string]any{"namespace": []string{"mkt"}}, code: 200, check: properties(map[string]string{"location": "s3://lake/data/mkt/"})},

		// Tables: list, exists, load.
		{name: "list tables", method: "GET", path: "/v1/lake/namespaces/sales/tables", token: tok["reader"], code: 200, check: tables("sales.items", "sales.orders")},
		{name: "list tables paged", method: "GET", path: "/v1/lake/namespaces/sales/tables?pageToken=&pageSize=1", token: tok["reader"], code: 200,
			check: jsonEq(`{"identifiers":[{"namespace":["sales"],"name":"items"}],"next-page-token":"aXRlbXM"}`)},
		{name: "list tables of unknown namespace", method: "GET", path: "/v1/lake/namespaces/nope/tables", token: tok["admin"], code: 404, errType: "NoSuchNamespaceException"},
		{name: "list tables without scope", method: "GET", path: "/v1/lake/namespaces/sales/tables", token: tok["stranger"], code: 403, errType: "ForbiddenException"},
		{name: "table exists", method: "HEAD", path: "/v1/lake/namespaces/sales/tables/orders", token: tok["reader"], code: 204},
		{name: "table does not exist", method: "HEAD", path: "/v1/lake/namespaces/sales/tables/nope", token: tok["reader"], code: 404},
		{name: "load table", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders", token: tok["reader"], code: 200, check: func(t *testing.T, r response) {
			var body struct {
				Location string            `json:"metadata-location"`
				Metadata map[string]any    `json:"metadata"`
				Config   map[string]string `json:"config"`
				Creds    []any             `json:"storage-credentials"`
			}
			r.decode(t, &body)
			if !strings.HasPrefix(body.Location, "s3://lake/data/sales/orders/metadata/") || body.Metadata["format-version"] == nil ||
				body.Config["s3.endpoint"] != "http://127.0.0.1:9000" || body.Config["s3.access-key-id"] != "" || body.Creds != nil {
				t.Errorf("LoadTableResult = %s", r.body)
			}
			// Weak when the answer came gzip-compressed (Go's client asks for it).
			if etag := strings.TrimPrefix(r.header.Get("ETag"), "W/"); len(etag) < 10 || etag[0] != '"' {
				t.Errorf("ETag = %q", etag)
			}
		}},
		{name: "load table without data", method: "GET", path: "/v1/lake/namespaces/hr/tables/people", token: tok["admin"], code: 200},
		{name: "load table Iceberg cannot express", method: "GET", path: "/v1/lake/namespaces/hr/tables/odd", token: tok["admin"], code: 406, errType: "UnsupportedOperationException"},
		{name: "load table with refs", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders?snapshots=refs", token: tok["reader"], code: 200},
		{name: "load table: bad snapshots", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders?snapshots=some", token: tok["reader"], code: 400, errType: "BadRequestException"},
		{name: "load table: bad snapshot-id", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders?snapshot-id=x", token: tok["reader"], code: 400, errType: "BadRequestException"},
		{name: "load table: unknown snapshot", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders?snapshot-id=999999", token: tok["reader"], code: 404, errType: "NoSuchTableException"},
		{name: "load table before it existed", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders?snapshot-id=1", token: tok["reader"], code: 404, errType: "NoSuchTableException"},
		{name: "load unknown table", method: "GET", path: "/v1/lake/namespaces/sales/tables/nope", token: tok["reader"], code: 404, errType: "NoSuchTableException"},
		{name: "load table of unknown namespace", method: "GET", path: "/v1/lake/namespaces/nope/tables/orders", token: tok["admin"], code: 404, errType: "NoSuchTableException"},
		{name: "load table without scope", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders", token: tok["stranger"], code: 403, errType: "ForbiddenException"},
		{name: "load table vended (reader)", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders", token: tok["reader"],
			header: [2]string{"X-Iceberg-Access-Delegation", "vended-credentials"}, code: 200, check: vended("reader", creds.Read|creds.List)},
		{name: "load table vended (writer)", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders", token: tok["writer"],
			header: [2]string{"X-Iceberg-Access-Delegation", "remote-signing, vended-credentials"}, code: 200, check: vended("writer", creds.Read|creds.List|creds.Write)},
		{name: "credentials (reader)", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders/credentials", token: tok["reader"], code: 200, check: vended("reader", creds.Read|creds.List)},
		{name: "credentials (writer)", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders/credentials", token: tok["writer"], code: 200, check: vended("writer", creds.Read|creds.List|creds.Write)},
		{name: "credentials of unknown table", method: "GET", path: "/v1/lake/namespaces/sales/tables/nope/credentials", token: tok["reader"], code: 404, errType: "NoSuchTableException"},
		{name: "credentials without scope", method: "GET", path: "/v1/lake/namespaces/sales/tables/orders/credentials", token: tok["stranger"], code: 403, errType: "ForbiddenException"},
		{name: "report metrics", method: "POST", path: "/v1/lake/namespaces/sales/tables/orders/metrics", token: tok["reader"], body: map[string]any{"report-type": "scan-report"}, code: 204},
		{name: "report metrics: malformed", method: "POST", path: "/v1/lake/namespaces/sales/tables/orders/metrics", token: tok["reader"], body: `[1,`, code: 400, errType: "BadRequestException"},

		// Tables: rename.
		{name: "rename table", method: "POST", path: "/v1/lake/tables/rename", token: tok["writer"], body: rename("sales", "items", "sales", "items2"), code: 204,
			duckdbOK: []string{"SELECT * FROM l.sales.items2", "INSERT INTO l.sales.items2 VALUES (11)"}},
		{name: "renamed table lists", method: "GET", path: "/v1/lake/namespaces/sales/tables", token: tok["reader"], code: 200, check: tables("sales.items2", "sales.orders")},
		{name: "renamed table loads", method: "GET", path: "/v1/lake/namespaces/sales/tables/items2", token: tok["reader"], code: 200},
		{name: "old name is gone", method: "GET", path: "/v1/lake/namespaces/sales/tables/items", token: tok["reader"], code: 404, errType: "NoSuchTableException"},
		{name: "rename a missing table", method: "POST", path: "/v1/lake/tables/rename", token: tok["writer"], body: rename("sales", "items", "sales", "x"), code: 404, errType: "NoSuchTableException"},
		{name: "rename onto a table", method: "POST", path: "/v1/lake/tables/rename", token: tok["writer"], body: rename("sales", "orders", "sales", "items2"), code: 409, errType: "AlreadyExistsException"},
		{name: "rename across namespaces", method: "POST", path: "/v1/lake/tables/rename", token: tok["admin"], body: rename("sales", "orders", "hr", "orders"), code: 406, errType: "UnsupportedOperationException"},
		{name: "rename into a missing namespace", method: "POST", path: "/v1/lake/tables/rename", token: tok["admin"], body: rename("sales", "orders", "nope", "orders"), code: 404, errType: "NoSuchNamespaceException",
			check: func(t *testing.T, r response) {
				if !strings.Contains(string(r.body), "Namespace does not exist: nope") {
					t.Errorf("body %s", r.body)
				}
			}},
		{name: "rename a missing table into a missing namespace", method: "POST", path: "/v1/lake/tables/rename", token: tok["admin"], body: rename("sales", "nope", "nope", "orders"), code: 404, errType: "NoSuchTableException"},
		{name: "rename from a multi-level namespace", method: "POST", path: "/v1/lake/tables/rename", token: tok["admin"],
			body: map[string]any{"source": map[string]any{"namespace": []string{"a", "b"}, "name": "t"}, "destination": map[string]any{"namespace": []string{"sales"}, "name": "t"}}, code: 404, errType: "NoSuchTableException"},
		{name: "rename into a multi-level namespace", method: "POST", path: "/v1/lake/tables/rename", token: tok["admin"],
			body: map[string]any{"source": map[string]any{"namespace": []string{"sales"}, "name": "orders"}, "destination": map[string]any{"namespace": []string{"a", "b"}, "name": "t"}}, code: 404, errType: "NoSuchNamespaceException"},
		{name: "rename without write scope", method: "POST", path: "/v1/lake/tables/rename", token: tok["reader"], body: rename("sales", "orders", "sales", "o2"), code: 403, errType: "ForbiddenException"},
		{name: "rename: malformed JSON", method: "POST", path: "/v1/lake/tables/rename", token: tok["writer"], body: `{"source":`, code: 400, errType: "BadRequestException"},
		{name: "rename: no destination", method: "POST", path: "/v1/lake/tables/rename", token: tok["writer"],
			body: map[string]any{"source": map[string]any{"namespace": []string{"sales"}, "name": "orders"}}, code: 400, errType: "BadRequestException"},
		{name: "rename: no name", method: "POST", path: "/v1/lake/tables/rename", token: tok["writer"],
			body: map[string]any{"source": map[string]any{"namespace": []string{"sales"}}, "destination": map[string]any{"namespace": []string{"sales"}, "name": "x"}}, code: 400, errType: "BadRequestException"},

		// Tables: drop.
		{name: "drop table without write scope", method: "DELETE", path: "/v1/lake/namespaces/sales/tables/items2", token: tok["reader"], code: 403, errType: "ForbiddenException"},
		{name: "drop table: bad purgeRequested", method: "DELETE", path: "/v1/lake/namespaces/sales/tables/items2?purgeRequested=maybe", token: tok["writer"], code: 400, errType: "BadRequestException"},
		{name: "drop table with purge, no storage client", method: "DELETE", path: "/v1/lake/namespaces/sales/tables/items2?purgeRequested=true", token: tok["writer"], code: 406, errType: "UnsupportedOperationException"},
		{name: "drop table", method: "DELETE", path: "/v1/lake/namespaces/sales/tables/items2", token: tok["writer"], code: 204},
		{name: "drop dropped table", method: "DELETE", path: "/v1/lake/namespaces/sales/tables/items2", token: tok["writer"], code: 404, errType: "NoSuchTableException"},
		{name: "dropped table does not exist", method: "HEAD", path: "/v1/lake/namespaces/sales/tables/items2", token: tok["reader"], code: 404},

		// Routes that are not served.
		{name: "create table without a name", method: "POST", path: "/v1/lake/namespaces/sales/tables", token: tok["admin"], body: `{}`, code: 400, errType: "BadRequestException"},
		{name: "commit against another table UUID", method: "POST", path: "/v1/lake/namespaces/sales/tables/orders", token: tok["admin"],
			body: `{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000000"}],"updates":[]}`, code: 409, errType: "CommitFailedException"},
		{name: "register a view without a name", method: "POST", path: "/v1/lake/namespaces/sales/register-view", token: tok["admin"], body: `{}`, code: 400, errType: "BadRequestException"},
		{name: "register a view without a storage client", method: "POST", path: "/v1/lake/namespaces/sales/register-view", token: tok["admin"],
			body: `{"name":"v9","metadata-location":"s3://lake/data/sales/v9/metadata/00001-x.metadata.json"}`, code: 406, errType: "UnsupportedOperationException"},
		{name: "register a table without write scope", method: "POST", path: "/v1/lake/namespaces/sales/register", token: tok["reader"],
			body: `{"name":"t9","metadata-location":"s3://lake/data/sales/t9/metadata/00001-x.metadata.json"}`, code: 403, errType: "ForbiddenException"},
		{name: "register a table without a storage client", method: "POST", path: "/v1/lake/namespaces/sales/register", token: tok["writer"],
			body: `{"name":"t9","metadata-location":"s3://lake/data/sales/t9/metadata/00001-x.metadata.json"}`, code: 406, errType: "UnsupportedOperationException"},
		{name: "register: wrong method", method: "GET", path: "/v1/lake/namespaces/sales/register", token: tok["admin"], code: 405, errType: "MethodNotAllowedException"},
		{name: "wrong method", method: "PUT", path: "/v1/lake/namespaces", token: tok["admin"], code: 405, errType: "MethodNotAllowedException"},
		{name: "unknown route", method: "GET", path: "/v1/lake/bogus", token: tok["admin"], code: 404, errType: "NotFoundException"},
		{name: "not v1", method: "GET", path: "/v2/config", code: 404, errType: "NotFoundException"},
	}
	for _, st := range steps {
		var opts []reqOpt
		if st.header[0] != "" {
			opts = append(opts, withHeader(st.header[0], st.header[1]))
		}
		r := env.do(st.method, st.path, st.token, st.body, opts...)
		if r.code != st.code {
			t.Fatalf("%s: %s %s = %d %s; want %d", st.name, st.method, st.path, r.code, r.body, st.code)
		}
		if st.code >= 400 && st.method != "HEAD" {
			// Every error is an IcebergErrorResponse whose code matches.
			var e struct {
				Error *struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &e); err != nil || e.Error == nil || e.Error.Code != st.code || e.Error.Message == "" {
				t.Errorf("%s: error body %s is not an ErrorModel for %d", st.name, r.body, st.code)
			} else if st.errType != "" && e.Error.Type != st.errType {
				t.Errorf("%s: error type %s, want %s (%s)", st.name, e.Error.Type, st.errType, e.Error.Message)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s: Content-Type %q", st.name, ct)
			}
		}
		if st.check != nil {
			t.Run(st.name, func(t *testing.T) { st.check(t, r) })
		}
		if len(st.duckdbOK) > 0 {
			env.duck(st.duckdbOK...)
		}
	}

	// What DuckDB sees after all of it.
	got := env.duck(
		"SELECT schema_name FROM duckdb_schemas() WHERE database_name = 'l' ORDER BY 1",
		"SELECT schema_name || '.' || table_name FROM duckdb_tables() WHERE database_name = 'l' ORDER BY 1",
		"SELECT count(*) FROM l.sales.orders",
	)
	if s := flat(got[0]); !slices.Equal(s, []string{"hr", "main", "mkt", "ops", "sales"}) {
		t.Errorf("DuckDB schemas = %v", s)
	}
	if s := flat(got[1]); !slices.Equal(s, []string{"hr.odd", "hr.people", "sales.orders"}) {
		t.Errorf("DuckDB tables = %v", s)
	}
	if s := flat(got[2]); !slices.Equal(s, []string{"2"}) {
		t.Errorf("DuckDB count(orders) = %v", s)
	}
	// Time travel in DuckDB to before the drop still finds the renamed
	// table's rows, inserted before and after the rename.
	var snap int64
	if err := env.pool.QueryRow(t.Context(), `SELECT max(snapshot_id) FROM ducklake_snapshot_changes WHERE changes_made LIKE 'dropped_table:%'`).Scan(&snap); err != nil {
		t.Fatal(err)
	}
	if got := env.duck("SELECT id FROM l.sales.items2 AT (VERSION => " + itoa(snap-1) + ") ORDER BY id"); !slices.Equal(flat(got[0]), []string{"10", "11"}) {
		t.Errorf("DuckDB items2 before the drop = %v", got[0])
	}
}

// checkVended verifies a vended credential: the gateway's keyring accepts
// it, it is scoped to the table's prefix with the right access, and the
// FileIO settings point at the gateway.
func checkVended(t *testing.T, env *restEnv, cfg map[string]string, principal, prefix string, want creds.Access) {
	t.Helper()
	for k, v := range map[string]string{
		"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1", "client.region": "us-east-1",
		"s3.path-style-access": "true", "s3.remote-signing-enabled": "false",
	} {
		if cfg[k] != v {
			t.Errorf("vended %s = %q, want %q", k, cfg[k], v)
		}
	}
	c, _, err := env.keyring.Verify(cfg["s3.access-key-id"], cfg["s3.session-token"], time.Now())
	if err != nil {
		t.Fatalf("vended credential does not verify: %v", err)
	}
	if _, secret, _ := env.keyring.Verify(cfg["s3.access-key-id"], cfg["s3.session-token"], time.Now()); secret != cfg["s3.secret-access-key"] {
		t.Error("vended secret is not the credential's")
	}
	if c.Principal != principal || c.Catalog != "lake" || c.Channel != creds.ChannelREST || len(c.Grants) != 1 {
		t.Fatalf("vended claims = %+v", c)
	}
	if g := c.Grants[0]; g.Bucket != "lake" || g.Prefix != prefix || g.Access != want {
		t.Errorf("vended grant = %v, want lake:%s:%v", g, prefix, want)
	}
	if ms := cfg["s3.session-token-expires-at-ms"]; ms != itoa(c.Expiry.UnixMilli()) {
		t.Errorf("s3.session-token-expires-at-ms = %s, credential expires %v", ms, c.Expiry)
	}
}

func flat(rows [][]any) []string {
	var out []string
	for _, r := range rows {
		var parts []string
		for _, v := range r {
			switch x := v.(type) {
			case float64:
				parts = append(parts, itoa(int64(x)))
			default:
				b, _ := json.Marshal(x)
				parts = append(parts, strings.Trim(string(b), `"`))
			}
		}
		out = append(out, strings.Join(parts, ","))
	}
	return out
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
