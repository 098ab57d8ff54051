package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/plan"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/defaults"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/tableindex"
)

// KeyIndex is where the engine finds the table an S3 key belongs to:
// *tableindex.Live in production.
type KeyIndex interface {
	// Index is the current index.
	Index() *tableindex.Index
	// Observe asks for the index to cover snapshot, in the background.
	Observe(ctx context.Context, snapshot int64)
	// Refresh returns once the index covers snapshot: a bound credential
	// vended at a snapshot the index has not reached yet waits for it.
	Refresh(ctx context.Context, snapshot int64) (*tableindex.Index, error)
}

// Config configures an Engine.
type Config struct {
	// Store is governance's storage (required); its reader reads the
	// catalog.
	Store *store.Store
	// ClientRoles are the roles a principal holds by configuration (its
	// OAuth client's roles); nil: none. The configuration is fixed for
	// the process's life, so the answer is cached with the grants.
	ClientRoles func(principal string) []string
	// Index maps S3 keys to tables; nil: S3 requests are decided by the
	// credential's scope alone (no catalog). A key not in the index yet
	// (a file a table references by absolute path, committed moments
	// ago) is decided by scope until the eager path has refreshed it.
	Index KeyIndex
	// ExportPrefix is where masked copies live (export.Exporter.Prefix);
	// keys under it are readable only by a principal whose own plan reads
	// that copy. Zero: no exports.
	ExportPrefix objstore.Location
	// AgentAirtight holds agent sessions to the airtight tier whenever a
	// restriction applies to them.
	AgentAirtight bool
	// SnapshotTTL is the longest the engine trusts the catalog's schema
	// version without asking Postgres (100ms), when no Observe said more.
	SnapshotTTL time.Duration
	// MaxEntries bounds each cache (65536).
	MaxEntries int
	Logger     *zap.Logger
}

// Engine is the governance Authorizer.
type Engine struct {
	cfg   Config
	log   *zap.Logger
	state atomic.Pointer[model.State]
	cat   atomic.Pointer[catalogState]
	// refreshing is 1 while a background catalog-state refresh runs.
	refreshing atomic.Int32
	reloadMu   sync.Mutex

	tables    cache[int64, *tableEntry]
	names     cache[nameKey, nameEntry]
	roles     cache[roleKey, *roleEntry]
	plans     cache[planKey, *planEntry]
	decisions cache[decisionKey, decisionEntry]
}

type catalogState struct {
	snapshot, schemaVersion int64
	at                      time.Time
}

// New builds an Engine and loads the governance state.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("governance engine: no store")
	}
	cfg.SnapshotTTL = defaults.Positive(cfg.SnapshotTTL, 100*time.Millisecond)
	cfg.MaxEntries = defaults.Positive(cfg.MaxEntries, 65536)
	e := &Engine{cfg: cfg, log: cfg.Logger}
	if e.log == nil {
		e.log = zap.NewNop()
	}
	e.tables.Max, e.names.Max, e.roles.Max, e.plans.Max, e.decisions.Max = cfg.MaxEntries, cfg.MaxEntries, cfg.MaxEntries, cfg.MaxEntries, cfg.MaxEntries
	if err := e.Reload(ctx); err != nil {
		return nil, err
	}
	if _, err := e.refreshCatalog(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// State is the governance state in force.
func (e *Engine) State() *model.State { return e.state.Load() }

// Reload reads the governance state anew (a NOTIFY said it changed).
func (e *Engine) Reload(ctx context.Context) error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	st, err := e.cfg.Store.Load(ctx)
	if err != nil {
		return err
	}
	if cur := e.state.Load(); cur != nil && cur.Version > st.Version {
		return nil
	}
	e.state.Store(st)
	return nil
}

// ObserveVersion reloads when version is newer than the state in force:
// the payload of a governance NOTIFY.
func (e *Engine) ObserveVersion(ctx context.Context, version int64) error {
	if cur := e.state.Load(); cur != nil && cur.Version >= version {
		return nil
	}
	return e.Reload(ctx)
}

// ObserveSnapshot tells the engine a catalog snapshot was committed, so
// its schema version is read again on the next decision.
func (e *Engine) ObserveSnapshot(id int64) {
	if c := e.cat.Load(); c != nil && c.snapshot < id {
		e.cat.Store(&catalogState{snapshot: c.snapshot, schemaVersion: c.schemaVersion})
	}
}

// RefreshIndex brings the key index up to snapshot before it returns: the
// catalog calls it after a drop or rename commits, so that this process's
// gateway refuses the credentials bound to the old table at once (other
// processes learn of it by the eager NOTIFY path). No index: nothing to do.
func (e *Engine) RefreshIndex(ctx context.Context, snapshot int64) error {
	e.ObserveSnapshot(snapshot)
	if e.cfg.Index == nil {
		return nil
	}
	if _, err := e.cfg.Index.Refresh(ctx, snapshot); err != nil {
		return fmt.Errorf("governance: table index at snapshot %d: %w", snapshot, err)
	}
	return nil
}

func (e *Engine) refreshCatalog(ctx context.Context) (*catalogState, error) {
	s, err := e.cfg.Store.Reader().CurrentSnapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("governance: read the catalog's snapshot: %w", err)
	}
	c := &catalogState{snapshot: s.ID, schemaVersion: s.SchemaVersion, at: time.Now()}
	if e.cfg.Index != nil {
		// Keep the key index up with the catalog even without the eager
		// path: S3 decisions look keys up in it.
		e.cfg.Index.Observe(context.Background(), s.ID)
	}
	for {
		old := e.cat.Load()
		if old != nil && old.snapshot > c.snapshot {
			return old, nil
		}
		if e.cat.CompareAndSwap(old, c) {
			return c, nil
		}
	}
}

// catalog is the catalog state, at most SnapshotTTL old: refreshed on the
// caller's goroutine when stale beyond twice the TTL (or unknown), in the
// background when stale beyond the TTL, so a hot path rarely waits.
func (e *Engine) catalog(ctx context.Context) (*catalogState, error) {
	c := e.cat.Load()
	age := time.Since(c.at)
	switch {
	case c.at.IsZero() || age > 2*e.cfg.SnapshotTTL:
		return e.refreshCatalog(ctx)
	case age > e.cfg.SnapshotTTL:
		if e.refreshing.CompareAndSwap(0, 1) {
			go func() {
				defer e.refreshing.Store(0)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if _, err := e.refreshCatalog(ctx); err != nil {
					e.log.Warn("governance: refresh the catalog state", zap.Error(err))
				}
			}()
		}
	}
	return c, nil
}

// --- roles ---

type roleKey struct{ principal, actor, channel string }

type roleEntry struct {
	version int64
	roles   model.RoleSet
	key     string
}

// Roles are p's effective roles: its client's configured roles, the role
// grants, and actor:<actor>, channel:<channel>.
func (e *Engine) Roles(p *governance.Principal) model.RoleSet {
	return e.rolesOf(e.state.Load(), p).roles
}

func (e *Engine) rolesOf(st *model.State, p *governance.Principal) *roleEntry {
	k := roleKey{p.ID, p.ActorOrDefault(), p.ChannelOrDefault()}
	if r, ok := e.roles.Get(k); ok && r.version == st.Version {
		return r
	}
	var configured []string
	if e.cfg.ClientRoles != nil {
		configured = e.cfg.ClientRoles(p.ID)
	}
	rs := model.NewRoleSet(configured, st.GrantedRoles(p.ID),
		[]string{model.ActorRolePrefix + k.actor, model.ChannelRolePrefix + k.channel})
	r := &roleEntry{version: st.Version, roles: rs, key: rs.Key()}
	e.roles.Put(k, r)
	return r
}

// --- tables ---

type tableEntry struct {
	schemaVersion int64
	table         *plan.Table // nil: the table does not exist
}

// tableByID is the planning view of table id at the current schema
// version; nil when the table does not exist.
func (e *Engine) tableByID(ctx context.Context, id int64) (*plan.Table, *catalogState, error) {
	c, err := e.catalog(ctx)
	if err != nil {
		return nil, nil, err
	}
	if t, ok := e.tables.Get(id); ok && t.schemaVersion == c.schemaVersion {
		return t.table, c, nil
	}
	r := e.cfg.Store.Reader()
	t, err := r.Table(ctx, c.snapshot, id)
	if errors.Is(err, ducklake.ErrNotFound) {
		e.tables.Put(id, &tableEntry{schemaVersion: c.schemaVersion})
		return nil, c, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("governance: read table %d: %w", id, err)
	}
	return e.loadTable(ctx, c, t)
}

func (e *Engine) loadTable(ctx context.Context, c *catalogState, t ducklake.Table) (*plan.Table, *catalogState, error) {
	r := e.cfg.Store.Reader()
	fields, err := r.Columns(ctx, c.snapshot, t.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("governance: read the columns of table %d: %w", t.ID, err)
	}
	ns, err := e.schemaName(ctx, c.snapshot, t.SchemaID)
	if err != nil {
		return nil, nil, err
	}
	tb := plan.TableOf(ns, t, fields)
	e.tables.Put(t.ID, &tableEntry{schemaVersion: c.schemaVersion, table: tb})
	return tb, c, nil
}

func (e *Engine) schemaName(ctx context.Context, snap, id int64) (string, error) {
	schemas, err := e.cfg.Store.Reader().Schemas(ctx, snap)
	if err != nil {
		return "", fmt.Errorf("governance: read schemas: %w", err)
	}
	for _, s := range schemas {
		if s.ID == id {
			return s.Name, nil
		}
	}
	return "", fmt.Errorf("governance: schema %d: %w", id, ducklake.ErrNotFound)
}

type nameKey struct{ ns, name string }

// nameEntry is a table name's id (0: no such table) at a schema version:
// every create, drop and rename moves the version.
type nameEntry struct {
	schemaVersion, id int64
}

// TableByName is the planning view of table ns.name at the current
// snapshot; nil when it does not exist.
func (e *Engine) TableByName(ctx context.Context, ns, name string) (*plan.Table, error) {
	c, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	if ne, ok := e.names.Get(nameKey{ns, name}); ok && ne.schemaVersion == c.schemaVersion {
		if ne.id == 0 {
			return nil, nil
		}
		if te, ok := e.tables.Get(ne.id); ok && te.schemaVersion == c.schemaVersion {
			return te.table, nil
		}
	}
	t, err := e.cfg.Store.Reader().TableByName(ctx, c.snapshot, ns, name)
	if errors.Is(err, ducklake.ErrNotFound) {
		e.names.Put(nameKey{ns, name}, nameEntry{schemaVersion: c.schemaVersion})
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("governance: read table %s.%s: %w", ns, name, err)
	}
	e.names.Put(nameKey{ns, name}, nameEntry{schemaVersion: c.schemaVersion, id: t.ID})
	if te, ok := e.tables.Get(t.ID); ok && te.schemaVersion == c.schemaVersion && te.table != nil && te.table.Name == name {
		return te.table, nil
	}
	tb, _, err := e.loadTable(ctx, c, t)
	return tb, err
}

// --- plans ---

type planKey struct {
	roles string
	agent bool
	table int64
}

type planEntry struct {
	version, schemaVersion int64
	plan                   plan.Plan
}

// Plan is what governance enforces for p on table t (from TableByName or
// the engine's own lookups).
func (e *Engine) Plan(p *governance.Principal, t *plan.Table, schemaVersion int64) plan.Plan {
	st := e.state.Load()
	r := e.rolesOf(st, p)
	k := planKey{roles: r.key, agent: p.IsAgent(), table: t.TableID}
	if pe, ok := e.plans.Get(k); ok && pe.version == st.Version && pe.schemaVersion == schemaVersion {
		return pe.plan
	}
	pl := plan.Build(st, plan.Principal{Roles: r.roles, Agent: p.IsAgent()}, t, plan.Options{AgentAirtight: e.cfg.AgentAirtight})
	e.plans.Put(k, &planEntry{version: st.Version, schemaVersion: schemaVersion, plan: pl})
	return pl
}

// PlanTable plans table ns.name for p; ok is false when the table does
// not exist.
func (e *Engine) PlanTable(ctx context.Context, p *governance.Principal, ns, name string) (plan.Plan, *plan.Table, bool, error) {
	t, err := e.TableByName(ctx, ns, name)
	if err != nil || t == nil {
		return plan.Plan{}, nil, false, err
	}
	c := e.cat.Load()
	return e.Plan(p, t, c.schemaVersion), t, true, nil
}
