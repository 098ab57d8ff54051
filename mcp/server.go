package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/sqlcheck"
)

// Identity is who an MCP session acts for: an agent session of Principal.
type Identity struct {
	// Principal is the agent's principal (its OAuth token's subject, or the
	// principal the operator runs the stdio server for).
	Principal string
	// Scopes, when not nil, cap what the session reads to what the
	// agent's own token allows (the broker's may allow more).
	Scopes governance.Scopes
	// RequestID is sent with every catalog request of one tool call, so
	// the catalog's audit records name the call.
	RequestID string
	// human makes the session a human's over REST instead of an agent's
	// over MCP: only the demo's side-by-side queries (RunAs).
	human bool
}

// context is the session's actor and channel.
func (id *Identity) context() (actor, channel string) {
	if id.human {
		return governance.ActorHuman, governance.ChannelREST
	}
	return governance.ActorAgent, governance.ChannelMCP
}

// QueryAsHuman runs sql for principal as a human session (actor human,
// channel rest) through the same executor an agent's query runs in: the
// demo's side-by-side comparison. A human whose masks are only
// cooperative is refused, as an agent would be.
func (s *Server) QueryAsHuman(ctx context.Context, principal, sql string) (*Result, error) {
	return s.exec.run(ctx, &Identity{Principal: principal, human: true}, sql)
}

// Connect is an in-process MCP client session of id (the demo's agent):
// the same tools over the MCP protocol, on in-memory transports.
func (s *Server) Connect(ctx context.Context, id Identity) (*sdk.ClientSession, error) {
	ct, st := sdk.NewInMemoryTransports()
	if _, err := s.session(id).Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "duckicelake-demo", Version: s.cfg.Version}, nil)
	return c.Connect(ctx, ct, nil)
}

func (id *Identity) canRead(ns string) bool { return id.Scopes == nil || id.Scopes.CanRead(ns) }

// Config configures the server.
type Config struct {
	Catalog Catalog
	// ExtensionDir holds DuckDB's httpfs, avro and iceberg extensions.
	ExtensionDir string
	Limits       Limits
	// Audit receives one event per tool call; nil records none.
	Audit governance.Sink
	// Logger receives errors; nil discards them.
	Logger *zap.Logger
	// Version is the server version reported to clients.
	Version string
}

// Server is the MCP server. It is safe for concurrent use.
type Server struct {
	cfg  Config
	exec executor
	log  *zap.Logger
}

// New starts the server's SQL checker.
func New(cfg Config) (*Server, error) {
	if cfg.Catalog.URL == "" || cfg.Catalog.Prefix == "" || cfg.Catalog.Token == nil {
		return nil, errors.New("mcp: the catalog URL, prefix and broker token are required")
	}
	cfg.Limits.applyDefaults()
	chk, err := sqlcheck.Open()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.exec = executor{cat: &s.cfg.Catalog, check: chk, extDir: cfg.ExtensionDir, limits: cfg.Limits}
	return s, nil
}

// Close stops the SQL checker.
func (s *Server) Close() error { return s.exec.check.Close() }

// Tool inputs and outputs.
type (
	noInput    struct{}
	tableInput struct {
		Namespace string `json:"namespace" jsonschema:"the namespace"`
		Table     string `json:"table,omitempty" jsonschema:"the table (describe_table)"`
	}
	queryInput struct {
		SQL string `json:"sql" jsonschema:"one read-only SELECT statement over <namespace>.<table> names"`
	}
	namesOutput struct {
		Names []string `json:"names"`
	}
	describeOutput struct {
		Namespace string   `json:"namespace"`
		Table     string   `json:"table"`
		Columns   []Column `json:"columns"`
		Masked    []string `json:"masked_columns"`
		RowFilter string   `json:"row_filter"`
	}
)

// session builds the MCP server of one agent session.
func (s *Server) session(id Identity) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "duckicelake", Version: s.cfg.Version}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "list_namespaces", Description: "List the namespaces you can read."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, namesOutput, error) {
			var out namesOutput
			err := s.call(ctx, &id, "list_namespaces", "", func(ctx context.Context, id *Identity) (string, error) {
				names, err := s.cfg.Catalog.namespaces(ctx, id)
				if err != nil {
					return "", err
				}
				out.Names = []string{}
				for _, n := range names {
					if id.canRead(n) {
						out.Names = append(out.Names, n)
					}
				}
				return "", nil
			})
			return result(err, out)
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "list_tables", Description: "List the tables of a namespace you can read."},
		func(ctx context.Context, req *sdk.CallToolRequest, in tableInput) (*sdk.CallToolResult, namesOutput, error) {
			var out namesOutput
			err := s.call(ctx, &id, "list_tables", in.Namespace, func(ctx context.Context, id *Identity) (string, error) {
				if in.Namespace == "" {
					return "", toolErr("namespace is required (list_namespaces shows them)")
				}
				if !id.canRead(in.Namespace) {
					return "", toolErr("namespace %s does not exist or is not visible to you", in.Namespace)
				}
				names, err := s.cfg.Catalog.tables(ctx, id, in.Namespace)
				if errors.Is(err, ErrNotFound) {
					return "", toolErr("namespace %s does not exist or is not visible to you", in.Namespace)
				}
				out.Names = names
				if out.Names == nil {
					out.Names = []string{}
				}
				return "", err
			})
			return result(err, out)
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "describe_table",
		Description: "Describe a table: its columns and types, which columns are masked for you, and the row filter that applies to you."},
		func(ctx context.Context, req *sdk.CallToolRequest, in tableInput) (*sdk.CallToolResult, describeOutput, error) {
			var out describeOutput
			err := s.call(ctx, &id, "describe_table", in.Namespace+"."+in.Table, func(ctx context.Context, id *Identity) (string, error) {
				d, err := s.describe(ctx, id, in.Namespace, in.Table)
				if err == nil {
					out = *d
				}
				return "", err
			})
			return result(err, out)
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "query",
		Description: "Run one read-only SELECT over <namespace>.<table> names and get its rows " +
			fmt.Sprintf("(at most %d rows, %d bytes, %s).", s.cfg.Limits.MaxRows, s.cfg.Limits.MaxBytes, s.cfg.Limits.Timeout)},
		func(ctx context.Context, req *sdk.CallToolRequest, in queryInput) (*sdk.CallToolResult, Result, error) {
			var out Result
			err := s.call(ctx, &id, "query", "", func(ctx context.Context, id *Identity) (string, error) {
				r, err := s.exec.run(ctx, id, in.SQL)
				if err == nil {
					out = *r
				}
				return "", err
			})
			return result(err, out)
		})
	return srv
}

// result is a tool's answer: out as structured content, or err as a tool
// error (a ToolError's text; any other error in generic words, logged).
func result[T any](err error, out T) (*sdk.CallToolResult, T, error) {
	if err == nil {
		return nil, out, nil
	}
	var zero T
	msg := "the server could not answer; retry, or ask the operator (the error is in the server log)"
	var te *ToolError
	if errors.As(err, &te) {
		msg = te.Msg
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}, zero, nil
}

// call runs one tool call for id, audited.
func (s *Server) call(ctx context.Context, id *Identity, tool, object string, do func(context.Context, *Identity) (string, error)) error {
	start := time.Now()
	cid := *id
	cid.RequestID = "mcp-" + tool + "-" + fmt.Sprint(start.UnixNano())
	_, err := do(ctx, &cid)
	ev := governance.Event{Source: SourceMCP, RequestID: []byte(cid.RequestID), Action: "mcp." + tool,
		Principal: id.Principal, Actor: governance.ActorAgent, Channel: governance.ChannelMCP,
		Decision: governance.OutcomeAllow, Reason: "tool call", Latency: time.Since(start)}
	if ns, t, ok := strings.Cut(object, "."); ok {
		ev.Namespace, ev.Table = ns, t
	} else {
		ev.Namespace = object
	}
	var te *ToolError
	switch {
	case errors.As(err, &te):
		ev.Decision, ev.Reason, ev.Error = governance.OutcomeDeny, te.Msg, "tool_error"
	case err != nil:
		ev.Decision, ev.Reason, ev.Error = governance.OutcomeNone, "server error", "internal"
		s.log.Error("mcp tool failed", zap.String("tool", tool), zap.String("principal", id.Principal), zap.Error(err))
	}
	if s.cfg.Audit != nil {
		s.cfg.Audit.Record(&ev)
	}
	return err
}

// SourceMCP is the audit source of the MCP server's events.
const SourceMCP = "mcp"

// describe answers describe_table.
func (s *Server) describe(ctx context.Context, id *Identity, ns, table string) (*describeOutput, error) {
	if ns == "" || table == "" {
		return nil, toolErr("namespace and table are required")
	}
	if !id.canRead(ns) {
		return nil, toolErr("table %s.%s does not exist or is not visible to you (list_tables shows what you can read)", ns, table)
	}
	lt, err := s.cfg.Catalog.loadTable(ctx, id, ns, table, false)
	if err != nil {
		return nil, tableErr(sqlcheck.TableRef{Namespace: ns, Table: table}, err)
	}
	out := &describeOutput{Namespace: ns, Table: table, Columns: []Column{}, Masked: []string{}, RowFilter: "none: you read every row"}
	for _, sc := range lt.Metadata.Schemas {
		if sc.SchemaID != lt.Metadata.CurrentSchemaID {
			continue
		}
		for _, f := range sc.Fields {
			typ := strings.Trim(string(f.Type), `"`)
			if len(f.Type) > 0 && f.Type[0] == '{' {
				var nested struct {
					Type string `json:"type"`
				}
				_ = json.Unmarshal(f.Type, &nested)
				typ = nested.Type
			}
			out.Columns = append(out.Columns, Column{Name: f.Name, Type: typ})
		}
	}
	for k := range lt.Metadata.Properties {
		if c, ok := strings.CutPrefix(k, "duckicelake.mask."); ok {
			out.Masked = append(out.Masked, c)
		}
	}
	sort.Strings(out.Masked)
	if f := lt.Metadata.Properties["iceberg.row-filter"]; f != "" {
		out.RowFilter = "you read only the rows where " + f
	}
	return out, nil
}

// Stdio serves one agent session for id on stdin/stdout until ctx ends or
// the client disconnects.
func (s *Server) Stdio(ctx context.Context, id Identity) error {
	return s.session(id).Run(ctx, &sdk.StdioTransport{})
}

// Verifier checks an agent's bearer token: the session it opens.
type Verifier func(ctx context.Context, token string) (Identity, error)

// HTTPHandler serves streamable HTTP (stateless, JSON answers): each
// request is authenticated by its bearer token and served as an agent
// session of the token's subject, capped at the token's scopes.
func (s *Server) HTTPHandler(verify Verifier) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		id, _ := r.Context().Value(identityKey{}).(Identity)
		return s.session(id)
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" {
			s.refuse(w, r, "", "missing bearer token: get one from POST /v1/oauth/tokens and send it as Authorization: Bearer")
			return
		}
		id, err := verify(r.Context(), tok)
		if err != nil {
			s.refuse(w, r, "", "invalid bearer token: "+err.Error())
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

type identityKey struct{}

// refuse answers 401, audited.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, principal, reason string) {
	if s.cfg.Audit != nil {
		ev := governance.Event{Source: SourceMCP, Method: []byte(r.Method), Action: "mcp.connect", Principal: principal,
			Actor: governance.ActorAgent, Channel: governance.ChannelMCP, Decision: governance.OutcomeDeny, Reason: reason,
			Status: http.StatusUnauthorized, Remote: []byte(r.RemoteAddr)}
		s.cfg.Audit.Record(&ev)
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="duckicelake"`)
	http.Error(w, reason, http.StatusUnauthorized)
}
