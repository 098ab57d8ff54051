package engine

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/internal/tableindex"
)

// Reasons the engine gives. They name no table and no value: the caller
// named whatever they are about.
const (
	reasonNotGranted     = "the table is not granted to the principal"
	reasonGoverned       = "allowed by governance"
	reasonListHidden     = "the listing would show files of a table not granted to the principal"
	reasonPlanIssue      = "a governance policy on the table cannot be applied"
	reasonBaseMasked     = "the table is masked for the principal: its base files are not served (read the masked copy the catalog vends)"
	reasonMaskedReadOnly = "the table is masked for the principal, who reads a masked copy and may not change the table"
	reasonExportForeign  = "the masked copy is not the one the principal's plan reads"
	reasonBindingStale   = "the credential was issued for a table that has since been dropped or renamed; load the table again"
)

var _ governance.Authorizer = (*Engine)(nil)

type decisionKey struct {
	principal, actor, channel string
	table                     int64
	action                    governance.Action
}

type decisionEntry struct {
	version, schemaVersion int64
	d                      governance.Decision
}

// Authorize implements governance.Authorizer.
func (e *Engine) Authorize(ctx context.Context, p *governance.Principal, a governance.Action, r *governance.Resource) (governance.Decision, error) {
	if d := governance.ScopeDecision(p, a, r); !d.Allow {
		return d, nil
	}
	if p.IsAgent() && a.IsWrite() {
		return governance.Denied(governance.ReasonAgentReadOnly), nil
	}
	if a.IsS3() {
		return e.authorizeS3(ctx, p, a, r)
	}
	if r.Table == "" && r.TableID == 0 {
		return governance.Allowed(reasonGoverned), nil
	}
	id := r.TableID
	if id == 0 {
		t, err := e.TableByName(ctx, r.Namespace, r.Table)
		if err != nil {
			return governance.Decision{}, err
		}
		if t == nil {
			// A table about to be created, or a view: nothing governs it.
			return governance.Allowed(reasonGoverned), nil
		}
		id = t.TableID
	}
	return e.decideTable(ctx, p, a, id)
}

// AuthorizeBatch implements governance.Authorizer.
func (e *Engine) AuthorizeBatch(ctx context.Context, p *governance.Principal, a governance.Action, rs []governance.Resource, out []governance.Decision) error {
	return governance.AuthorizeEach(ctx, e, p, a, rs, out)
}

func (e *Engine) authorizeS3(ctx context.Context, p *governance.Principal, a governance.Action, r *governance.Resource) (governance.Decision, error) {
	if p.Table.Bound() {
		// Before governance: a credential for a table that is gone (or
		// renamed) must not reach the files now at its path, whatever
		// the grants there would say.
		if d, err := e.checkBinding(ctx, p, a, r); err != nil || !d.Allow {
			return d, err
		}
	}
	if e.cfg.Index == nil {
		return governance.Allowed(reasonGoverned), nil
	}
	if e.cfg.ExportPrefix.Scheme() != 0 {
		if d, ok, err := e.decideExport(ctx, p, a, r); ok || err != nil {
			return d, err
		}
	}
	idx := e.cfg.Index.Index() // one snapshot for every lookup of this decision
	if a == governance.ActionListObjects {
		// A listing shows the keys of the table the prefix lies in and of
		// every table under it.
		if d, err := e.decideKey(ctx, p, a, idx, r.Bucket, r.Key); err != nil || !d.Allow {
			return d, err
		}
		var err error
		allowed := true
		idx.Under(r.Bucket, r.Key, func(t *tableindex.Table) bool {
			var td governance.Decision
			td, err = e.decideTable(ctx, p, a, t.ID)
			allowed = err == nil && td.Allow
			return allowed
		})
		if err != nil {
			return governance.Decision{}, err
		}
		if !allowed {
			return governance.Denied(reasonListHidden), nil
		}
		return governance.Allowed(reasonGoverned), nil
	}
	return e.decideKey(ctx, p, a, idx, r.Bucket, r.Key)
}

// checkBinding decides whether a bound credential's request is on its
// table: the key (or list prefix) must be claimed, in the current index,
// by the table of the binding's UUID under the binding's namespace and
// name; a masked copy's key must name that table's id. A bucket-wide
// request needs the table to still exist under that name. A staged
// create's credential may also use keys no table claims while no table of
// its UUID was ever committed (a dropped one does not count as not yet
// committed). An index older than
// the vend is refreshed first, so a table created moments ago is found.
func (e *Engine) checkBinding(ctx context.Context, p *governance.Principal, a governance.Action, r *governance.Resource) (governance.Decision, error) {
	b := &p.Table
	if e.cfg.Index == nil {
		return governance.Denied(governance.ReasonBindingUnchecked), nil
	}
	idx := e.cfg.Index.Index()
	if idx.Snapshot() < b.Snapshot {
		var err error
		if idx, err = e.cfg.Index.Refresh(ctx, b.Snapshot); err != nil {
			return governance.Decision{}, fmt.Errorf("governance: table index for a credential vended at snapshot %d: %w", b.Snapshot, err)
		}
	}
	for caughtUp := false; ; caughtUp = true {
		t, claimed, ok := e.boundKeyTable(idx, b.UUID, a, r)
		switch {
		case !ok:
			return governance.Denied(reasonBindingStale), nil
		case claimed:
			if !strings.EqualFold(t.UUID, b.UUID) || t.Namespace != b.Namespace || t.Name != b.Name {
				return governance.Denied(reasonBindingStale), nil
			}
			return governance.Allowed(reasonGoverned), nil
		case !b.Staged:
			if _, live := idx.TableByUUID(b.UUID); !live && cleanup(a) && !e.underExport(r) {
				// The table is dropped and nothing has its path yet: the
				// client that loaded it may read and delete what it left
				// — Iceberg's own purge (Spark's DROP TABLE … PURGE) drops
				// the table, then reads its metadata and deletes the
				// reachable files with the FileIO it loaded — but never
				// write there again.
				return governance.Allowed(reasonGoverned), nil
			}
			return governance.Denied(reasonBindingStale), nil
		}
		if _, live := idx.TableByUUID(b.UUID); live {
			return governance.Denied(reasonBindingStale), nil
		}
		// A staged create's key no table claims: not committed yet, or
		// committed after the index was built, or committed and dropped
		// since. Only the catalog's history tells them apart.
		st, err := e.cfg.Store.Reader().TableUUIDHistory(ctx, b.UUID)
		switch {
		case err != nil:
			return governance.Decision{}, fmt.Errorf("governance: %w", err)
		case !st.Found:
			return governance.Allowed(reasonGoverned), nil
		case !st.Live || caughtUp || idx.Snapshot() >= st.Begin:
			return governance.Denied(reasonBindingStale), nil
		}
		if idx, err = e.cfg.Index.Refresh(ctx, st.Begin); err != nil {
			return governance.Decision{}, fmt.Errorf("governance: table index at the commit of a staged table (snapshot %d): %w", st.Begin, err)
		}
	}
}

// underExport reports whether r's key is under the export prefix.
func (e *Engine) underExport(r *governance.Resource) bool {
	prefix := e.cfg.ExportPrefix
	return prefix.Scheme() != 0 && string(r.Bucket) == prefix.Bucket() && bytes.HasPrefix(r.Key, []byte(prefix.Key()))
}

// cleanup reports whether a is what cleaning up a dropped table's files
// takes: reading them, listing them, deleting them.
func cleanup(a governance.Action) bool {
	return a == governance.ActionReadObject || a == governance.ActionListObjects || a == governance.ActionDeleteObject
}

// boundKeyTable is the table r's key belongs to in idx, for the check of a
// credential bound to table uuid (a bucket-wide request: that table):
// claimed is false when no table claims it; ok is false for a key under
// the export prefix that names no table.
func (e *Engine) boundKeyTable(idx *tableindex.Index, uuid string, a governance.Action, r *governance.Resource) (t *tableindex.Table, claimed, ok bool) {
	switch prefix := e.cfg.ExportPrefix; {
	case a == governance.ActionReadBucket || a == governance.ActionListBuckets:
		t, claimed = idx.TableByUUID(uuid)
		return t, claimed, true
	case e.underExport(r):
		// A masked copy's key names its table by id; the id is stable
		// across renames, and the index says whose it is now.
		tid, _, ok := exportKeyParts(r.Key[len(prefix.Key()):])
		if !ok {
			return nil, false, false
		}
		t, claimed = idx.Table(tid)
		return t, claimed, true
	}
	m, claimed := idx.Lookup(r.Bucket, r.Key)
	return m.Table, claimed, true
}

// decideExport decides a key under the export prefix: only reads and
// listings, only of the copy the principal's own plan reads (table and
// signature), never another signature's — which could mask less. ok is
// false for a key outside the prefix.
func (e *Engine) decideExport(ctx context.Context, p *governance.Principal, a governance.Action, r *governance.Resource) (governance.Decision, bool, error) {
	prefix := e.cfg.ExportPrefix
	if !e.underExport(r) {
		// A listing above the prefix (the data path's root, which holds
		// it) is decided by the tables under it: it shows the copies'
		// names — t<table id>/<signature>/data/<hash>.parquet, no value of
		// any row — and refusing it would refuse every listing of the data
		// path. Their bytes stay the plan's alone (below).
		return governance.Decision{}, false, nil
	}
	rest := r.Key[len(prefix.Key()):] // t<id>/<sig>/…
	tid, sig, ok := exportKeyParts(rest)
	if !ok || a != governance.ActionReadObject && a != governance.ActionListObjects {
		return governance.Denied(reasonExportForeign), true, nil
	}
	t, c, err := e.tableByID(ctx, tid)
	if err != nil {
		return governance.Decision{}, true, err
	}
	if t == nil {
		return governance.Denied(reasonExportForeign), true, nil
	}
	pl := e.Plan(p, t, c.schemaVersion)
	if !pl.Visible || pl.Tier != plan.TierAirtight || pl.Signature != sig {
		return governance.Denied(reasonExportForeign), true, nil
	}
	return governance.Decision{Allow: true, Reason: reasonGoverned, PolicyIDs: pl.PolicyIDs}, true, nil
}

// exportKeyParts reads "t<table id>/<signature>/…".
func exportKeyParts(k []byte) (int64, string, bool) {
	s := string(k)
	t, rest, ok := strings.Cut(s, "/")
	if !ok || len(t) < 2 || t[0] != 't' {
		return 0, "", false
	}
	id, err := strconv.ParseInt(t[1:], 10, 64)
	if err != nil || id <= 0 {
		return 0, "", false
	}
	sig, _, ok := strings.Cut(rest, "/")
	if !ok || sig == "" {
		return 0, "", false
	}
	return id, sig, true
}

// decideKey decides the table key belongs to and, when other tables claim
// it too, each of them: every claimant must allow.
func (e *Engine) decideKey(ctx context.Context, p *governance.Principal, a governance.Action, idx *tableindex.Index, bucket, key []byte) (governance.Decision, error) {
	m, ok := idx.Lookup(bucket, key)
	if !ok {
		return governance.Allowed(reasonGoverned), nil
	}
	d, err := e.decideTable(ctx, p, a, m.Table.ID)
	if err != nil || !d.Allow || !m.Shared {
		return d, err
	}
	idx.Claimants(bucket, key, func(t *tableindex.Table) bool {
		d, err = e.decideTable(ctx, p, a, t.ID)
		return err == nil && d.Allow
	})
	return d, err
}

// decideTable decides a on table id for p, from the decision cache when
// neither the governance state nor the catalog's schema moved.
func (e *Engine) decideTable(ctx context.Context, p *governance.Principal, a governance.Action, id int64) (governance.Decision, error) {
	st := e.state.Load()
	c, err := e.catalog(ctx)
	if err != nil {
		return governance.Decision{}, err
	}
	k := decisionKey{p.ID, p.Actor, p.Channel, id, a}
	if de, ok := e.decisions.Get(k); ok && de.version == st.Version && de.schemaVersion == c.schemaVersion {
		return de.d, nil
	}
	var d governance.Decision
	if !st.MayGovernTable(id) {
		d = governance.Allowed(reasonGoverned)
	} else {
		t, c2, err := e.tableByID(ctx, id)
		if err != nil {
			return governance.Decision{}, err
		}
		c = c2
		if t == nil {
			d = governance.Allowed(reasonGoverned)
		} else {
			d = decide(e.Plan(p, t, c.schemaVersion), a)
		}
	}
	e.decisions.Put(k, decisionEntry{version: st.Version, schemaVersion: c.schemaVersion, d: d})
	return d, nil
}

// schemaGoverned reports whether any schema-level tag or grant exists: a
// table id alone then cannot tell whether it is governed.
func (e *Engine) schemaGoverned(st interface{ HasSchemaLevel() bool }) bool {
	return st.HasSchemaLevel()
}

// decide turns a plan into a decision on a. A principal the airtight tier
// holds to the masked copy never touches the base table: no base file
// read, listed or written at the gateway, no write through the catalog
// (its view of the table is the copy; a commit built on it would point the
// table at masked files). Reading through the catalog is allowed with an
// obligation: serve the masked copy.
func decide(pl plan.Plan, a governance.Action) governance.Decision {
	if !pl.Visible {
		return governance.Decision{Reason: reasonNotGranted, PolicyIDs: pl.PolicyIDs, Hidden: true}
	}
	if pl.Tier == plan.TierAirtight {
		switch {
		case a.IsS3():
			return governance.Decision{Reason: reasonBaseMasked, PolicyIDs: pl.PolicyIDs}
		case a.IsWrite():
			return governance.Decision{Reason: reasonMaskedReadOnly, PolicyIDs: pl.PolicyIDs}
		}
		return governance.Decision{Allow: true, Reason: reasonGoverned, PolicyIDs: pl.PolicyIDs,
			Obligations: []governance.Obligation{{Kind: governance.ObligationServeMasked, Location: pl.Signature}}}
	}
	return governance.Decision{Allow: true, Reason: reasonGoverned, PolicyIDs: pl.PolicyIDs}
}
