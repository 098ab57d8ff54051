package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"

	"github.com/duckicelake/duckicelake/governance"
)

// Client is an OAuth2 client allowed the client-credentials grant.
type Client struct {
	ID     string
	Secret string
	// Scopes are granted to the client's tokens: "*" or
	// "ns:<namespace>:<r|w|rw|*>" (namespace "*" for all), and the
	// governance and broker scopes.
	Scopes []string
	// Roles travel in the token's roles claim, for governance.
	Roles []string
}

// SecretMatches compares in constant time, whatever the lengths.
func (c *Client) SecretMatches(secret string) bool {
	a := sha256.Sum256([]byte(c.Secret))
	b := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// ParseClients parses the client list of oauth.clients
// (DUCKICELAKE_OAUTH_CLIENTS):
//
//	id:secret|scopes[|roles][,id:secret|scopes[|roles]…]
//
// Scopes and roles are separated by spaces; a client without scopes gets
// none (its tokens authenticate but reach nothing). Example:
//
//	"etl:s3cret|ns:sales:rw ns:hr:r|writer,admin:pw|*"
func ParseClients(s string) ([]Client, error) {
	var out []Client
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		fields := strings.Split(entry, "|")
		if len(fields) > 3 {
			return nil, fmt.Errorf("OAuth client %d: %d '|'-separated fields; want id:secret|scopes[|roles]", i+1, len(fields))
		}
		id, secret, ok := strings.Cut(fields[0], ":")
		if !ok || id == "" || secret == "" {
			return nil, fmt.Errorf("OAuth client %d: want id:secret before the first '|'", i+1)
		}
		c := Client{ID: id, Secret: secret}
		if len(fields) > 1 {
			c.Scopes = strings.Fields(fields[1])
			for _, sc := range c.Scopes {
				if _, err := governance.ParseScope(sc); err != nil {
					return nil, fmt.Errorf("OAuth client %q: %w", id, err)
				}
			}
		}
		if len(fields) > 2 {
			c.Roles = strings.Fields(fields[2])
		}
		out = append(out, c)
	}
	return out, nil
}
