package rest

import (
	"encoding/json"
	"strings"

	"github.com/valyala/fasthttp"
)

type catalogConfig struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

// endpoints lists the routes this catalog serves, in the spec's notation.
func (s *Server) endpoints() []string {
	e := []string{
		"GET /v1/{prefix}/namespaces",
		"POST /v1/{prefix}/namespaces",
		"GET /v1/{prefix}/namespaces/{namespace}",
		"HEAD /v1/{prefix}/namespaces/{namespace}",
		"DELETE /v1/{prefix}/namespaces/{namespace}",
		"POST /v1/{prefix}/namespaces/{namespace}/properties",
		"GET /v1/{prefix}/namespaces/{namespace}/tables",
	}
	if s.mat != nil {
		e = append(e,
			"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
			"POST /v1/{prefix}/namespaces/{namespace}/tables",
			"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
			"POST /v1/{prefix}/transactions/commit",
		)
	}
	e = append(e,
		"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
		"POST /v1/{prefix}/tables/rename",
	)
	if s.signer != nil {
		e = append(e, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign")
	}
	e = append(e, viewEndpoints...)
	if s.objects != nil {
		if s.mat != nil {
			e = append(e, registerTableEndpoint)
		}
		e = append(e, registerViewEndpoint)
	}
	return e
}

func (s *Server) encodeConfig() ([]byte, error) {
	cfg := catalogConfig{
		Defaults:  map[string]string{},
		Overrides: map[string]string{"prefix": s.cfg.Name, "warehouse": s.dataPath},
		Endpoints: s.endpoints(),
	}
	// Where table files are reached: the gateway, path style. Credentials
	// come per table (vended) or from the client's own configuration.
	for k, v := range s.storageConfig() {
		cfg.Defaults[k] = v
	}
	return json.Marshal(cfg)
}

// storageConfig is the non-secret FileIO configuration of every table.
func (s *Server) storageConfig() map[string]string {
	m := map[string]string{}
	if s.cfg.GatewayURL != "" {
		m["s3.endpoint"] = s.cfg.GatewayURL
		m["s3.path-style-access"] = "true"
		m["s3.region"] = s.cfg.Region
		m["client.region"] = s.cfg.Region
	}
	return m
}

// handleConfig serves GET /v1/config. The warehouse parameter may name the
// catalog or its data path; the answer's overrides carry the prefix every
// other route takes.
func (s *Server) handleConfig(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() && !ctx.IsHead() {
		s.writeError(ctx, methodNotAllowed(ctx, "GET"))
		return
	}
	if w := string(ctx.QueryArgs().Peek("warehouse")); w != "" && w != s.cfg.Name &&
		strings.TrimSuffix(w, "/") != strings.TrimSuffix(s.dataPath, "/") {
		s.writeError(ctx, errorf(fasthttp.StatusNotFound, TypeNoSuchWarehouse,
			"no warehouse %q here; this server's catalog is %q (data path %s)", w, s.cfg.Name, s.dataPath))
		return
	}
	ctx.SetContentType(contentTypeJSON)
	ctx.SetBody(s.configBody)
}
