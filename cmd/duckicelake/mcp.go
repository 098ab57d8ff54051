package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/mcp"
)

const mcpUsage = `usage: duckicelake mcp -catalog URL -principal NAME [flags]

Serves the governed MCP server over stdio for one agent session: every call
is an agent session (actor agent, channel mcp) of -principal, planned,
masked and audited by the catalog as such. Tools: list_namespaces,
list_tables, describe_table, query (one read-only SELECT, run here in an
embedded DuckDB that reads through the gateway with the credentials the
catalog vends for the session; the agent never sees them).

The server speaks to the catalog as a trusted broker: DUCKICELAKE_MCP_CLIENT
is an OAuth client "id:secret" of the catalog whose scopes include broker
(or *). The streamable HTTP endpoint of the same server is /mcp on the
running serve's admin listener (bearer: the agent's own OAuth token).

flags:
`

func runMCP(args []string, stdout, stderr io.Writer) int {
	return withSignals(func(ctx context.Context) int { return mcpCmd(ctx, args, stdout, stderr) })
}

func mcpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("mcp", mcpUsage, stderr)
	catURL := fs.String("catalog", os.Getenv("DUCKICELAKE_MCP_CATALOG"), "the catalog's base URL, http://host:port (DUCKICELAKE_MCP_CATALOG)")
	prefix := fs.String("warehouse", "lake", "the catalog name")
	principal := fs.String("principal", os.Getenv("DUCKICELAKE_MCP_PRINCIPAL"), "the principal the agent acts for (DUCKICELAKE_MCP_PRINCIPAL)")
	extDir := fs.String("extension-directory", os.Getenv("DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY"), "DuckDB 1.5.5 extensions (httpfs, avro, iceberg)")
	maxRows := fs.Int("max-rows", 1000, "most rows a query returns")
	maxBytes := fs.Int("max-bytes", 1<<20, "most bytes of rows a query returns")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit of a query")
	if code, done := parseCommand(fs, args); done {
		return code
	}
	client := os.Getenv("DUCKICELAKE_MCP_CLIENT")
	id, secret, ok := strings.Cut(client, ":")
	switch {
	case *catURL == "":
		fmt.Fprintln(stderr, "duckicelake mcp: -catalog is required")
		return 2
	case *principal == "":
		fmt.Fprintln(stderr, "duckicelake mcp: -principal is required")
		return 2
	case !ok || id == "":
		fmt.Fprintln(stderr, "duckicelake mcp: DUCKICELAKE_MCP_CLIENT must be the broker's OAuth client, id:secret")
		return 2
	}
	// Logs and audit lines go to stderr: stdout is the MCP stream.
	log := zap.New(zapcore.NewCore(serveEncoder("json"), zapcore.Lock(zapcore.AddSync(stderr)), zapcore.InfoLevel))
	defer log.Sync()
	src := &clientToken{url: strings.TrimSuffix(*catURL, "/") + "/v1/oauth/tokens", id: id, secret: secret}
	srv, err := mcp.New(mcp.Config{
		Catalog:      mcp.Catalog{URL: *catURL, Prefix: *prefix, Token: src.token},
		ExtensionDir: *extDir,
		Limits:       mcp.Limits{MaxRows: *maxRows, MaxBytes: *maxBytes, Timeout: *timeout},
		Audit:        governance.NewZapSink(log),
		Logger:       log,
		Version:      version,
	})
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake mcp: %v\n", err)
		return 1
	}
	defer srv.Close()
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = src.token(tctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake mcp: %v\n", err)
		return 1
	}
	if err := srv.Stdio(ctx, mcp.Identity{Principal: *principal}); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "duckicelake mcp: %v\n", err)
		return 1
	}
	return 0
}

// clientToken is a client-credentials token, renewed before it expires.
type clientToken struct {
	url, id, secret string
	mu              sync.Mutex
	tok             string
	exp             time.Time
}

func (c *clientToken) token(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok != "" && time.Until(c.exp) > time.Minute {
		return c.tok, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.id}, "client_secret": {c.secret}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("broker token: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		Scope       string `json:"scope"`
		Error       string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("broker token: %d %s", resp.StatusCode, out.Error)
	}
	if sc := " " + out.Scope + " "; !strings.Contains(sc, " broker ") && !strings.Contains(sc, " * ") {
		// Fail closed before any session: the catalog would ignore the
		// delegation and serve the broker as itself, a human.
		return "", fmt.Errorf("broker token: client %s has scopes %q, without broker (or *): it cannot speak for an agent session", c.id, out.Scope)
	}
	c.tok, c.exp = out.AccessToken, time.Now().Add(time.Duration(out.ExpiresIn)*time.Second)
	return c.tok, nil
}

// newMCPServer is the MCP server of serve: it speaks to this process's
// catalog over the admin listener (an ordinary client) with broker tokens
// the catalog issues it, and authenticates agents by their own tokens.
func newMCPServer(cfg *config.Config, cat *catalogService, catalogURL string, audit governance.Sink, log *zap.Logger) (*mcp.Server, error) {
	var limits mcp.Limits
	if v := os.Getenv("DUCKICELAKE_MCP_QUERY_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("DUCKICELAKE_MCP_QUERY_TIMEOUT: %w", err)
		}
		limits.Timeout = d
	}
	return mcp.New(mcp.Config{
		Limits: limits,
		Catalog: mcp.Catalog{URL: catalogURL, Prefix: cfg.Catalog.Name,
			Token: func(context.Context) (string, error) { return cat.rest.BrokerToken() }},
		ExtensionDir: cfg.DuckDB.ExtensionDirectory,
		Audit:        audit,
		Logger:       log,
		Version:      version,
	})
}

// mcpPath is where serve's admin listener serves MCP over streamable HTTP.
const mcpPath = "/mcp"

// withMCP serves /mcp with ms, everything else with next.
func withMCP(next fasthttp.RequestHandler, ms *mcp.Server, cat *catalogService) fasthttp.RequestHandler {
	h := fasthttpadaptor.NewFastHTTPHandler(ms.HTTPHandler(func(_ context.Context, tok string) (mcp.Identity, error) {
		sub, scopes, err := cat.rest.VerifyBearer(tok)
		if err != nil {
			return mcp.Identity{}, err
		}
		// Connecting over MCP is the agent signal: the session is the
		// token's subject as an agent, capped at the token's scopes.
		return mcp.Identity{Principal: sub, Scopes: scopes}, nil
	}))
	return func(ctx *fasthttp.RequestCtx) {
		// Compared as string(p) == …, which does not allocate.
		if p := ctx.Path(); string(p) == mcpPath || string(p) == mcpPath+"/" {
			h(ctx)
			return
		}
		next(ctx)
	}
}
