// Package rest serves the Apache Iceberg REST catalog API
// (specs/iceberg/rest-catalog-open-api.yaml) over a DuckLake catalog in
// Postgres.
//
// An Iceberg namespace is a DuckLake schema (one level), an Iceberg table a
// DuckLake table, and an Iceberg snapshot id the DuckLake snapshot id. What a
// change does is catalog/service's (namespaces; table load, create,
// register, drop and rename; Iceberg commits; views), written as DuckDB's ducklake extension writes
// it — one Postgres transaction that adds a snapshot, bumps the schema
// version, logs ducklake_snapshot_changes and ends or adds the versioned rows
// — so DuckDB clients attached to the same catalog see the change, and a
// concurrent DuckDB commit makes ours retry rather than corrupt anything.
// Its typed refusals (service.Error) become Iceberg ErrorModels in one
// table (errors.go).
//
// Authentication is OAuth2 client credentials (POST /v1/oauth/tokens) that
// yield an HS256 JWT carrying scopes: "*" (everything) or
// "ns:<namespace>:<r|w|rw|*>", where the namespace may be "*" for every
// namespace. Reads need r on the namespace, writes w; creating or dropping a
// namespace needs w on "*". Every /v1 route but /v1/config and
// /v1/oauth/tokens requires a bearer token unless Config.Dev is set.
//
// With "X-Iceberg-Access-Delegation: vended-credentials", LoadTable and the
// credentials route hand out a credential minted by internal/creds for the
// gateway, scoped to the table's prefix: read and list, plus write for a
// principal with w on the namespace. The upstream's own keys never leave the
// process. The credential is bound to the table (creds.TableBinding: its
// UUID, name and the snapshot of the load; a staged create's to the UUID it
// will commit), so the gateway refuses it once the table is dropped or
// renamed; a drop or rename refreshes this process's key index before it
// answers.
//
// With "X-Iceberg-Access-Delegation: remote-signing" the table's config
// carries no credential but the sign endpoint instead (s3.signer.uri,
// s3.signer.endpoint, s3.remote-signing-enabled; for PyIceberg s3.signer and
// its fsspec FileIO). POST …/tables/{table}/sign and the legacy
// POST /v1/aws/s3/sign admit each S3 request with the gateway's own
// pipeline (governance.AdmitS3: the table's prefix at the token's r/w
// scope, then the Authorizer) and sign it for the gateway with a
// short-lived credential minted for the table, or with SignerConfig.Direct
// for the upstream with its root key.
//
// A table or view is registered (POST …/register, …/register-view) from a
// metadata file inside its namespace's location, read with the catalog's
// root credentials (Deps.Objects): a table becomes a DuckLake table holding
// the current snapshot's files (commit.Catalog.Register), a view a DuckLake
// view with its Iceberg metadata in the sidecar. Views made or changed here
// get a real metadata file at the location they report, when that location
// is inside their namespace's, so the file can be registered again.
//
// A namespace of several levels cannot exist (DuckLake schemas have one):
// routes about one answer as for any missing namespace — NoSuchTable for a
// table in it, which is what makes Java's client fall back to metadata
// tables (ns.tbl.files) — while creating one is a 400.
//
// The package is transport: one route table (routes.go: method, pattern,
// governance.Action, handler, enabled-when) drives routing, the /v1/config
// endpoints list, the per-route metrics (duckicelake_catalog_requests_total
// and _request_seconds, labelled by pattern) and the authorisation call
// (authorizeRoute: the token's scope for the route's action, then the
// Authorizer on table routes). A route that is off, or a spec route this
// catalog does not serve, answers 406 UnsupportedOperationException, the
// one status for that type. Every request's work runs under a context with
// Config.RequestTimeout that is cancelled when the client hangs up
// (reqctx.go); every 4xx/5xx is logged once with its route and principal.
// It imports catalog/service, catalog/ducklake, catalog/commit,
// catalog/iceberg, catalog/views, catalog/oauth, governance and internal/*;
// nothing imports it but cmd. What still reads catalog/ducklake from here
// is the current snapshot (cache.go), the start-up checks, and governance's
// reads: the tables a plan or a masking schema covers, and the
// schemas a DuckLake-direct vend lists.
//
// LoadTable answers from pre-encoded bytes for (table, snapshot, form) with an
// ETag, so a cache hit is a map lookup and a write; the current snapshot id is
// re-read from Postgres at most once per Config.SnapshotTTL.
package rest
