package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

type tableIdentifier struct {
	Namespace []string `json:"namespace"`
	Name      *string  `json:"name"`
}

type listTablesBody struct {
	NextPageToken *string           `json:"next-page-token"`
	Identifiers   []tableIdentifier `json:"identifiers"`
}

func (s *Server) listTables(r *request) error {
	snap, sc, err := s.schemaNow(r.ctx, r.ns)
	if err != nil {
		return err
	}
	names, err := s.svc.TableNames(r.ctx, snap, sc)
	if err != nil {
		return err
	}
	if names, err = s.visibleTables(r, sc.Name, names); err != nil {
		return err
	}
	return writeIdentifiers(r, sc.Name, names)
}

// writeIdentifiers answers a listing of tables or views: the page of
// names the request asks for, as identifiers in namespace ns. names must
// be sorted (paginate's tokens are names).
func writeIdentifiers(r *request, ns string, names []string) error {
	page, next, err := paginate(names, r.rc.QueryArgs())
	if err != nil {
		return err
	}
	out := listTablesBody{NextPageToken: next, Identifiers: make([]tableIdentifier, len(page))}
	for i := range page {
		out.Identifiers[i] = tableIdentifier{Namespace: []string{ns}, Name: &page[i]}
	}
	return writeJSON(r.rc, out)
}

// tableAt finds table ns.name visible at snap; NoSuchTable when it (or its
// namespace) does not exist then.
func (s *Server) tableAt(ctx context.Context, snap int64, ns, name string) (ducklake.Table, error) {
	return s.svc.TableAt(ctx, snap, ns, name)
}

func (s *Server) tableExists(r *request) error {
	snap, err := s.currentSnapshot(r.ctx)
	if err != nil {
		return err
	}
	if _, err := s.tableAt(r.ctx, snap, r.ns, r.table); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// The two encodings of LoadTable: every snapshot, or only those refs name.
const (
	formAll  byte = 'a'
	formRefs byte = 'r'
)

func (s *Server) loadTable(r *request) error {
	args := r.rc.QueryArgs()
	form := formAll
	switch v := args.Peek("snapshots"); string(v) {
	case "", "all":
	case "refs":
		form = formRefs
	default:
		return badRequest("snapshots must be all or refs, not %q", v)
	}
	var asOf int64
	if v := args.Peek("snapshot-id"); len(v) > 0 {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 {
			return badRequest("snapshot-id must be a snapshot id (a non-negative integer), not %q", v)
		}
		asOf = n
	}
	e, err := s.loadEntry(r, form, asOf)
	if err != nil {
		return err
	}
	e, readOnly, err := s.governedEntry(r, e, form, asOf)
	if err != nil {
		return err
	}
	// A client listing both gets vended credentials when the catalog can
	// vend: its S3 requests then need no sign round trip each.
	vend := wantsVending(r.rc)
	sign := s.signer != nil && wantsRemoteSigning(r.rc) && (!vend || s.keyring == nil || s.cfg.GatewayURL == "")
	var gz []byte
	if !vend && !sign && acceptsGzip(r.rc.Request.Header.Peek(fasthttp.HeaderAcceptEncoding)) {
		gz = e.gzipped()
	}
	h := &r.rc.Response.Header
	if gz != nil {
		// Another representation of the same answer: its ETag is weak
		// (If-None-Match compares weakly, so either form matches).
		var weak [96]byte // the header copies it
		h.SetBytesV(fasthttp.HeaderETag, append(append(weak[:0], "W/"...), e.etag...))
	} else {
		h.Set(fasthttp.HeaderETag, e.etag)
	}
	h.Set(fasthttp.HeaderVary, fasthttp.HeaderAcceptEncoding)
	if inm := r.rc.Request.Header.Peek(fasthttp.HeaderIfNoneMatch); len(inm) > 0 && etagMatches(inm, e.etag) {
		r.rc.SetStatusCode(fasthttp.StatusNotModified)
		return nil
	}
	body := e.body
	switch {
	case sign:
		if body, err = s.remoteSigningBody(e, s.remoteSigningConfig(r.rc, r.ns, r.table)); err != nil {
			return err
		}
		h.Set(fasthttp.HeaderCacheControl, "no-store")
	case vend:
		if body, err = s.vendedBody(r, e, readOnly); err != nil {
			return err
		}
		h.Set(fasthttp.HeaderCacheControl, "no-store")
	case gz != nil:
		body = gz
		h.Set(fasthttp.HeaderContentEncoding, "gzip")
	}
	// No key in the answer (remote signing's signatures are audited
	// durably each): what it discloses is the table's metadata.
	r.metadataOnly = !vend
	h.SetContentType(contentTypeJSON)
	// Cached bodies are immutable, so fasthttp may send them without a copy.
	r.rc.Response.SetBodyRaw(body)
	return nil
}

// loadEntry finds the encoded LoadTable answer: from the cache when it is
// still valid at the snapshot asked for (the current one when asOf is 0),
// else by asking the materialiser, once per key however many requests miss
// together.
func (s *Server) loadEntry(r *request, form byte, asOf int64) (*loadEntry, error) {
	st, err := s.currentState(r.ctx)
	if err != nil {
		return nil, err
	}
	snap := asOf
	if asOf == 0 {
		snap = st.id
	}
	var kb [128]byte
	key := appendLoadKey(kb[:0], form, asOf, r.ns, r.table)
	old := s.cache.get(key)
	if old != nil && old.snap == snap && old.floor == st.floor {
		return old, nil
	}
	// One build per key at a time: when the current snapshot moves,
	// thousands of LoadTables may miss at once, and they cost one
	// materialiser call, not thousands.
	v, err, _ := s.flight.Do(string(key), func() (any, error) {
		// Another caller of this flight may have just refreshed it.
		if e := s.cache.get(key); e != nil && e.snap >= snap && e.floor == st.floor {
			return e, nil
		}
		e, err := s.buildEntry(r.ctx, r.ns, r.table, form, asOf, snap, old)
		if err != nil {
			return nil, err
		}
		e.floor = st.floor
		s.cache.put(key, e)
		return e, nil
	})
	e, _ := v.(*loadEntry)
	return e, err
}

func (s *Server) buildEntry(ctx context.Context, ns, name string, form byte, asOf, snap int64, old *loadEntry) (*loadEntry, error) {
	t, md, err := s.svc.LoadTable(ctx, asOf, snap, ns, name)
	if err != nil {
		return nil, err
	}
	if old != nil && old.location == md.Location && old.table == t {
		e := *old
		e.snap = snap
		return &e, nil
	}
	meta := md.JSON
	if form == formRefs {
		if meta, err = refsOnly(meta); err != nil {
			return nil, fmt.Errorf("metadata of %s.%s at snapshot %d: %w", ns, name, snap, err)
		}
	} else {
		// The stored file may be indented; the answer need not be.
		var buf bytes.Buffer
		if err := json.Compact(&buf, meta); err != nil {
			return nil, fmt.Errorf("metadata of %s.%s at snapshot %d: %w", ns, name, snap, err)
		}
		meta = buf.Bytes()
	}
	e := &loadEntry{snap: snap, table: t, location: md.Location, metadata: meta}
	e.setBody(s.appendLoadResult(nil, e, s.tableConfig, nil))
	sum := sha256.New()
	sum.Write(s.etagSeed[:])
	sum.Write([]byte{form})
	sum.Write([]byte(md.Location))
	var d [sha256.Size]byte
	e.etag = `"` + hex.EncodeToString(sum.Sum(d[:0])[:20]) + `"`
	return e, nil
}

// appendLoadResult encodes a LoadTableResult. config is an encoded JSON
// object; creds, when not nil, an encoded storage-credentials array.
func (s *Server) appendLoadResult(dst []byte, e *loadEntry, config, creds []byte) []byte {
	loc, _ := json.Marshal(e.location)
	dst = append(dst, `{"metadata-location":`...)
	dst = append(dst, loc...)
	dst = append(dst, `,"metadata":`...)
	dst = append(dst, e.metadata...)
	dst = append(dst, `,"config":`...)
	dst = append(dst, config...)
	if creds != nil {
		dst = append(dst, `,"storage-credentials":`...)
		dst = append(dst, creds...)
	}
	if e.restrictions != nil {
		dst = append(dst, `,"read-restrictions":`...)
		dst = append(dst, e.restrictions...)
	}
	return append(dst, '}')
}

// refsOnly keeps only the snapshots that a ref (branch or tag) points at,
// as snapshots=refs asks.
func refsOnly(meta []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(meta, &doc); err != nil {
		return nil, fmt.Errorf("decode metadata: %w", err)
	}
	var refs map[string]struct {
		SnapshotID int64 `json:"snapshot-id"`
	}
	if raw, ok := doc["refs"]; ok {
		if err := json.Unmarshal(raw, &refs); err != nil {
			return nil, fmt.Errorf("decode refs: %w", err)
		}
	}
	var snaps []json.RawMessage
	if raw, ok := doc["snapshots"]; ok {
		if err := json.Unmarshal(raw, &snaps); err != nil {
			return nil, fmt.Errorf("decode snapshots: %w", err)
		}
	}
	keep := make(map[int64]bool, len(refs))
	for _, r := range refs {
		keep[r.SnapshotID] = true
	}
	kept := make([]json.RawMessage, 0, len(keep))
	for _, raw := range snaps {
		var sn struct {
			SnapshotID int64 `json:"snapshot-id"`
		}
		if err := json.Unmarshal(raw, &sn); err != nil {
			return nil, fmt.Errorf("decode snapshot: %w", err)
		}
		if keep[sn.SnapshotID] {
			kept = append(kept, raw)
		}
	}
	enc, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	doc["snapshots"] = enc
	return json.Marshal(doc)
}

// etagMatches reports whether an If-None-Match value names etag: "*", or
// a comma-separated list compared weakly (W/ ignored), as RFC 9110 says.
func etagMatches(inm []byte, etag string) bool {
	for _, part := range strings.Split(string(inm), ",") {
		part = strings.TrimSpace(part)
		if part == "*" || strings.TrimPrefix(part, "W/") == etag {
			return true
		}
	}
	return false
}

// loadCredentials serves GET …/tables/{table}/credentials.
func (s *Server) loadCredentials(r *request) error {
	if s.keyring == nil {
		return unsupported("credential vending is not configured on this catalog (no minting keys)")
	}
	snap, err := s.currentSnapshot(r.ctx)
	if err != nil {
		return err
	}
	t, err := s.tableAt(r.ctx, snap, r.ns, r.table)
	if err != nil {
		return err
	}
	t, readOnly, err := s.vendTarget(r, t, snap)
	if err != nil {
		return err
	}
	bind, err := bindTo(r.ns, t, snap)
	if err != nil {
		return err
	}
	sc, err := s.vend(r.p, r.ns, t, readOnly, bind)
	if err != nil {
		return err
	}
	list := []storageCredential{}
	if sc != nil {
		list = append(list, *sc)
	}
	r.rc.Response.Header.Set(fasthttp.HeaderCacheControl, "no-store")
	return writeJSON(r.rc, struct {
		StorageCredentials []storageCredential `json:"storage-credentials"`
	}{list})
}

// reportMetrics accepts a client's scan or commit report and discards it:
// clients send them after operations and only log a failure.
func (s *Server) reportMetrics(r *request) error {
	var report map[string]json.RawMessage
	if err := s.readJSON(r.rc, &report); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
