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
