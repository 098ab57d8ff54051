package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/creds"
)

// storageCredential is the spec's StorageCredential: FileIO configuration
// for the objects under Prefix.
type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// wantsVending reports whether X-Iceberg-Access-Delegation lists
// vended-credentials.
func wantsVending(ctx *fasthttp.RequestCtx) bool {
	h := ctx.Request.Header.Peek("X-Iceberg-Access-Delegation")
	for len(h) > 0 {
		var item []byte
		item, h, _ = bytes.Cut(h, []byte{','})
		if string(bytes.TrimSpace(item)) == "vended-credentials" {
			return true
		}
	}
	return false
}

// vend mints a gateway credential for table t of namespace ns: read and
// list under the table's path (its data and metadata/ files), plus write
// when p may write the namespace. It returns nil when the catalog cannot
// vend for this table (no keyring, no gateway URL, or the table does not
// live on S3). The credential never outlives p's access token, and one for
// a table is bound to it (bind, see bindTo): the gateway refuses it once
// the table is dropped or renamed.
func (s *Server) vend(p *Principal, ns string, t ducklake.Table, readOnly bool, bind creds.TableBinding) (*storageCredential, error) {
	scs, err := s.vendAlso(p, ns, t, readOnly, bind, nil)
	if err != nil || len(scs) == 0 {
		return nil, err
	}
	return &scs[0], nil
}

// vendAlso is vend with read and list under the directories also as well
// (a namespace's DuckLake-direct vend: the masked copies its masking views
// read): one credential, one storageCredential per prefix, the first t's.
func (s *Server) vendAlso(p *Principal, ns string, t ducklake.Table, readOnly bool, bind creds.TableBinding, also []string) ([]storageCredential, error) {
	if s.keyring == nil || s.cfg.GatewayURL == "" {
		return nil, nil
	}
	bucket, prefix, ok := tableLocation(t.Path)
	if !ok {
		return nil, nil
	}
	// What the token may do with the namespace's keys: a write-only token
	// may put files, not read what is there; a principal that reads a
	// masked copy writes nothing.
	access := p.gov.ObjectAccess(ns)
	if readOnly || p.isAgent() {
		access &^= creds.Write
	}
	if access == 0 {
		return nil, nil
	}
	var exp time.Time
	if s.cfg.VendTTL > 0 {
		exp = s.now().Add(s.cfg.VendTTL)
	}
	if !p.Expiry.IsZero() && (exp.IsZero() || p.Expiry.Before(exp)) {
		exp = p.Expiry
	}
	claims := p.claims(s.cfg.Name)
	claims.Grants = []creds.Grant{{Bucket: bucket, Prefix: prefix, Access: access}}
	prefixes := []string{"s3://" + bucket + "/" + prefix}
	for _, dir := range also {
		b, pre, ok := tableLocation(dir)
		if !ok {
			return nil, fmt.Errorf("vend credentials for %s: %s is not on S3", ns, dir)
		}
		claims.Grants = append(claims.Grants, creds.Grant{Bucket: b, Prefix: pre, Access: access &^ creds.Write})
		prefixes = append(prefixes, "s3://"+b+"/"+pre)
	}
	claims.Expiry = exp
	claims.Table = bind
	m, err := s.keyring.Mint(claims)
	if err != nil {
		return nil, fmt.Errorf("vend credentials for %s.%s: %w", ns, t.Name, err)
	}
	cfg := s.storageConfig()
	cfg["s3.access-key-id"] = m.AccessKeyID
	cfg["s3.secret-access-key"] = m.SecretAccessKey
	cfg["s3.session-token"] = m.SessionToken
	cfg["s3.session-token-expires-at-ms"] = strconv.FormatInt(m.Expiry.UnixMilli(), 10)
	cfg["s3.remote-signing-enabled"] = "false"
	out := make([]storageCredential, len(prefixes))
	for i, pre := range prefixes {
		out[i] = storageCredential{Prefix: pre, Config: cfg}
	}
	return out, nil
}

// bindTo is the binding of a vend for table t of namespace ns as read at
// snapshot snap: its UUID (stable across renames), its name now, and the
// snapshot, so that a gateway whose index is older catches up first.
func bindTo(ns string, t ducklake.Table, snap int64) (creds.TableBinding, error) {
	if t.UUID == "" {
		// Unbound would outlive a drop: refuse instead.
		return creds.TableBinding{}, fmt.Errorf("vend credentials for %s.%s: the table has no UUID to bind them to", ns, t.Name)
	}
	return creds.TableBinding{UUID: t.UUID, Namespace: ns, Name: t.Name, Snapshot: snap}, nil
}

// vendedBody encodes e with a freshly minted credential in config and
// storage-credentials; e's own body when there is nothing to vend.
func (s *Server) vendedBody(r *request, e *loadEntry, readOnly bool) ([]byte, error) {
	bind, err := bindTo(r.ns, e.table, e.snap)
	if err != nil {
		return nil, err
	}
	sc, err := s.vend(r.p, r.ns, e.table, readOnly, bind)
	if err != nil || sc == nil {
		return e.body, err
	}
	config, err := json.Marshal(sc.Config)
	if err != nil {
		return nil, err
	}
	list, err := json.Marshal([]storageCredential{*sc})
	if err != nil {
		return nil, err
	}
	return s.appendLoadResult(make([]byte, 0, len(e.body)+2*len(config)+64), e, config, list), nil
}
