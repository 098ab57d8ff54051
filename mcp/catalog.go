package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Catalog reaches the Iceberg REST catalog as a broker.
type Catalog struct {
	// URL is the catalog's base URL (http://host:port, without /v1).
	URL string
	// Prefix is the catalog name (the REST prefix).
	Prefix string
	// Token returns the broker's bearer token (a token with the broker
	// scope or "*"); the catalog ignores delegation from any other, which
	// the server detects and refuses (fail closed).
	Token func(ctx context.Context) (string, error)
	// HTTP is the client; nil is http.DefaultClient.
	HTTP *http.Client
}

// headerDelegated is the catalog's confirmation of an honoured delegation
// (catalog/rest.HeaderDelegated; not imported, mcp speaks HTTP only).
const headerDelegated = "X-Duckicelake-Delegated"

// maxCatalogBody bounds a catalog answer read back.
const maxCatalogBody = 64 << 20

// ErrNotFound is a catalog 404: no such namespace or table, or one the
// principal may not see (the catalog answers both alike).
var ErrNotFound = errors.New("not found")

// catalogError is a refusal by the catalog, in its words.
type catalogError struct {
	Status  int
	Message string
}

func (e *catalogError) Error() string { return fmt.Sprintf("catalog: %d: %s", e.Status, e.Message) }

// get GETs /v1/<prefix>/<path> for session id with delegation and decodes
// the JSON answer into out.
func (c *Catalog) get(ctx context.Context, id *Identity, path string, header http.Header, out any) error {
	tok, err := c.Token(ctx)
	if err != nil {
		return fmt.Errorf("catalog token: %w", err)
	}
	actor, channel := id.context()
	q := url.Values{"delegate": {"1"}, "principal": {id.Principal}, "actor": {actor}, "channel": {channel}}
	u := strings.TrimSuffix(c.URL, "/") + "/v1/" + url.PathEscape(c.Prefix) + "/" + path + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if id.RequestID != "" {
		req.Header.Set("X-Request-Id", id.RequestID)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCatalogBody))
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	// Fail closed: an answer not given to the agent session asked for
	// (delegation ignored: the token is no broker) is not used.
	want := id.Principal + "; actor=" + actor + "; channel=" + channel
	if resp.StatusCode == http.StatusOK && resp.Header.Get(headerDelegated) != want {
		return errors.New("catalog did not honour the agent session's delegation (the MCP server's token needs the broker scope)")
	}
	if resp.StatusCode == http.StatusNotFound {
		return ErrNotFound
	}
	if resp.StatusCode != http.StatusOK {
		var em struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &em)
		return &catalogError{Status: resp.StatusCode, Message: em.Error.Message}
	}
	return json.Unmarshal(body, out)
}

// namespaces lists the namespaces the session may see.
func (c *Catalog) namespaces(ctx context.Context, id *Identity) ([]string, error) {
	var out struct {
		Namespaces [][]string `json:"namespaces"`
	}
	if err := c.get(ctx, id, "namespaces", nil, &out); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(out.Namespaces))
	for _, n := range out.Namespaces {
		names = append(names, strings.Join(n, "."))
	}
	return names, nil
}

// tables lists the tables of ns the session may see.
func (c *Catalog) tables(ctx context.Context, id *Identity, ns string) ([]string, error) {
	var out struct {
		Identifiers []struct {
			Name string `json:"name"`
		} `json:"identifiers"`
	}
	if err := c.get(ctx, id, "namespaces/"+url.PathEscape(ns)+"/tables", nil, &out); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(out.Identifiers))
	for _, t := range out.Identifiers {
		names = append(names, t.Name)
	}
	return names, nil
}

// loadedTable is what LoadTable answers that the server uses.
type loadedTable struct {
	MetadataLocation string            `json:"metadata-location"`
	Config           map[string]string `json:"config"`
	Metadata         struct {
		CurrentSchemaID int `json:"current-schema-id"`
		Schemas         []struct {
			SchemaID int `json:"schema-id"`
			Fields   []struct {
				Name string          `json:"name"`
				Type json.RawMessage `json:"type"`
			} `json:"fields"`
		} `json:"schemas"`
		Properties map[string]string `json:"properties"`
	} `json:"metadata"`
	StorageCredentials []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	} `json:"storage-credentials"`
}

// loadTable loads ns.table for the session, with vended credentials when
// vend.
func (c *Catalog) loadTable(ctx context.Context, id *Identity, ns, table string, vend bool) (*loadedTable, error) {
	var h http.Header
	if vend {
		h = http.Header{"X-Iceberg-Access-Delegation": {"vended-credentials"}}
	}
	var lt loadedTable
	if err := c.get(ctx, id, "namespaces/"+url.PathEscape(ns)+"/tables/"+url.PathEscape(table), h, &lt); err != nil {
		return nil, err
	}
	return &lt, nil
}
