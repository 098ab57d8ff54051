// Package mcp is duckicelake's native governed MCP server (Model Context
// Protocol, github.com/modelcontextprotocol/go-sdk): connecting is the
// agent signal, so every call it makes is an agent session (actor agent,
// channel mcp) for the principal the agent authenticated as. Its tools —
// list_namespaces, list_tables, describe_table, query — answer with
// results only: the agent never receives a DSN, a key or a token.
//
// The server is an ordinary client of our own stack. It speaks to the
// Iceberg REST catalog as a trusted broker (a broker-scope token, broker
// delegation with delegate=1 on every request, so the catalog plans and
// audits for the agent's principal and context), and query reads tables in
// an embedded DuckDB with the credentials the catalog vends for that
// session, through the gateway: an agent held to the airtight tier is
// vended credentials that reach the masked copy only, read-only, so even
// SQL that escaped its sandbox could not read base bytes. The DuckDB is
// locked down besides: the query is checked to be exactly one SELECT over
// <namespace>.<table> names (governance/sqlcheck), external access is
// limited to the vended table prefixes, its configuration is locked, and
// rows, bytes and time are bounded.
//
// mcp may import governance, governance/sqlcheck, governance/sqltext,
// internal/duckenv, internal/defaults, the go-sdk and duckdb-go; not the catalog or gateway
// packages (it reaches them over HTTP).
package mcp
