package sqlcheck

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/duckicelake/duckicelake/governance/sqltext"
)

// TableRef is a table a query reads, as <namespace>.<table>.
type TableRef struct {
	Namespace, Table string
}

// allowedTableFunctions are the table functions a query may call: they
// generate rows and reach nothing outside the query.
var allowedTableFunctions = map[string]bool{"range": true, "generate_series": true, "unnest": true}

// CheckQuery validates SQL an agent sends to a server-side executor: it
// must be exactly one SELECT (DuckDB's json_serialize_sql serialises
// nothing else, so COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA and the rest
// are refused by construction), read only tables named
// <namespace>.<table> (no catalog, no file path, no table function but
// range/generate_series/unnest) and call no function that reaches outside
// the query (files, settings, secrets, other catalogs). It returns the
// tables read, each once, sorted by namespace and name. A refusal is an *Error saying what to change.
func (c *Checker) CheckQuery(ctx context.Context, query string) ([]TableRef, error) {
	q := strings.TrimSpace(query)
	if q == "" {
		return nil, refuse("the query is empty: send one SELECT statement")
	}
	lit, err := sqltext.String(q)
	if err != nil {
		return nil, refuse("query: %v", err)
	}
	var js string
	if err := c.db.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql("+lit+") AS VARCHAR)").Scan(&js); err != nil {
		return nil, duckErr("query", err)
	}
	var tree struct {
		Error      bool              `json:"error"`
		Message    string            `json:"error_message"`
		Statements []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(js), &tree); err != nil {
		return nil, fmt.Errorf("sqlcheck: DuckDB's parse tree: %w", err)
	}
	if tree.Error {
		if strings.Contains(tree.Message, "Only SELECT") {
			return nil, refuse("only a SELECT statement may run here (no COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, DDL or DML)")
		}
		return nil, refuse("query: %s", tree.Message)
	}
	if len(tree.Statements) != 1 {
		return nil, refuse("send exactly one SELECT statement, not %d", len(tree.Statements))
	}
	var root any
	if err := json.Unmarshal(tree.Statements[0], &root); err != nil {
		return nil, fmt.Errorf("sqlcheck: DuckDB's parse tree: %w", err)
	}
	w := queryWalk{ctes: map[string]bool{}, seen: map[TableRef]bool{}}
	w.collectCTEs(root)
	if err := w.walk(root); err != nil {
		return nil, err
	}
	// The walk ranges over JSON objects (Go maps): sort, so that the same
	// query always names its tables in the same order.
	slices.SortFunc(w.tables, func(a, b TableRef) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Table, b.Table))
	})
	return w.tables, nil
}

type queryWalk struct {
	ctes   map[string]bool
	seen   map[TableRef]bool
	tables []TableRef
}

// collectCTEs names every common table expression of the query: an
// unqualified name that is one is not a table.
func (w *queryWalk) collectCTEs(n any) {
	switch v := n.(type) {
	case map[string]any:
		if cm, ok := v["cte_map"].(map[string]any); ok {
			if list, ok := cm["map"].([]any); ok {
				for _, e := range list {
					if m, ok := e.(map[string]any); ok {
						if k, ok := m["key"].(string); ok {
							w.ctes[strings.ToLower(k)] = true
						}
					}
				}
			}
		}
		for _, c := range v {
			w.collectCTEs(c)
		}
	case []any:
		for _, c := range v {
			w.collectCTEs(c)
		}
	}
}

func (w *queryWalk) walk(n any) error {
	switch v := n.(type) {
	case map[string]any:
		switch v["type"] {
		case "BASE_TABLE":
			if err := w.table(v); err != nil {
				return err
			}
		case "TABLE_FUNCTION":
			f, _ := v["function"].(map[string]any)
			name, _ := f["function_name"].(string)
			if !allowedTableFunctions[strings.ToLower(name)] {
				return refuse("the table function %s may not be called here: read tables as <namespace>.<table>", name)
			}
		}
		if v["class"] == "FUNCTION" {
			if name, ok := v["function_name"].(string); ok && deniedInQuery(name) {
				return refuse("the function %s may not be called here", name)
			}
		}
		for _, c := range v {
			if err := w.walk(c); err != nil {
				return err
			}
		}
	case []any:
		for _, c := range v {
			if err := w.walk(c); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *queryWalk) table(v map[string]any) error {
	cat, _ := v["catalog_name"].(string)
	schema, _ := v["schema_name"].(string)
	name, _ := v["table_name"].(string)
	if cat != "" {
		return refuse("table %s.%s.%s: name tables as <namespace>.<table>, without a catalog", cat, schema, name)
	}
	if schema == "" {
		if w.ctes[strings.ToLower(name)] {
			return nil
		}
		return refuse("%q is not a table here: name tables as <namespace>.<table> (list_tables shows them); files cannot be read", name)
	}
	if at := v["at_clause"]; at != nil {
		return refuse("table %s.%s: time travel (AT) is not served here", schema, name)
	}
	t := TableRef{Namespace: schema, Table: name}
	if !w.seen[t] {
		w.seen[t] = true
		w.tables = append(w.tables, t)
	}
	return nil
}

// deniedInQuery reports the scalar functions a query may not call: those a
// policy body may not (denied), except the harmless ones a query needs
// (random sampling, the date), which only read the query's own rows.
func deniedInQuery(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "random", "current_date", "current_timestamp", "gen_random_uuid", "uuid":
		return false
	}
	return denied(n)
}
