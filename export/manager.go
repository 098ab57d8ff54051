package export

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/governance/plan"
)

// Source is what the Manager reads of the base table: when it last
// changed (materialize.Resolver) and its history (materialize.Source).
// *materialize.PGSource is one.
type Source interface {
	materialize.Source
	materialize.Resolver
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Exporter *Exporter
	Source   Source
	Store    Putter
	// Debounce is how long a refresh waits after a commit for more
	// commits to the same table (1s).
	Debounce time.Duration
	// Timeout bounds one refresh (10m).
	Timeout time.Duration
	Logger  *zap.Logger
}

// Manager keeps exports current: built lazily when a masked principal
// asks for a table whose export is missing or behind, refreshed eagerly
// (debounced) when a commit changes a table whose export it has built.
type Manager struct {
	cfg    ManagerConfig
	flight singleflight.Group

	mu      sync.Mutex
	hook    RefreshHook
	known   map[exportKey]knownExport // plans built, to refresh on commit
	pending map[int64]*time.Timer     // by table: a refresh waiting for its debounce
	closed  bool
	wg      sync.WaitGroup
}

type exportKey struct {
	table int64
	sig   string
}

type knownExport struct {
	table *plan.Table
	plan  plan.Plan
	cur   *Export
}

// NewManager returns a Manager.
func NewManager(cfg ManagerConfig) *Manager {
	if cfg.Debounce <= 0 {
		cfg.Debounce = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Manager{cfg: cfg, known: map[exportKey]knownExport{}, pending: map[int64]*time.Timer{}}
}

// RefreshHook is told of the export of table t under plan pl that an
// eager refresh left current (rebuilt, or found current already).
type RefreshHook func(ctx context.Context, t *plan.Table, pl *plan.Plan, e *Export)

// OnRefresh makes fn run after every eager refresh (Observe's), before the
// refresh counts as done: what serves the copy by its file list (a
// DuckLake-direct masking view over it) moves to the new files there.
func (m *Manager) OnRefresh(fn RefreshHook) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hook = fn
}

// Exporter is the Manager's Exporter.
func (m *Manager) Exporter() *Exporter { return m.cfg.Exporter }

// Ensure returns the export of t under pl current as of catalog snapshot
// snapshot — built now, before returning, when there is none or it is
// behind the table's last change. Its Snapshot is the snapshot the table
// last changed at, which is the base table's current snapshot id.
func (m *Manager) Ensure(ctx context.Context, t *plan.Table, pl *plan.Plan, snapshot int64) (*Export, error) {
	if pl.Signature == "" {
		return nil, fmt.Errorf("export: table %s.%s: the plan restricts nothing", t.Namespace, t.Name)
	}
	res, err := m.cfg.Source.Resolve(ctx, t.TableID, snapshot)
	if err != nil {
		return nil, fmt.Errorf("export: table %s.%s: %w", t.Namespace, t.Name, err)
	}
	k := exportKey{t.TableID, pl.Signature}
	m.mu.Lock()
	if ke, ok := m.known[k]; ok && ke.cur != nil && ke.cur.Snapshot >= res.Snapshot && ke.cur.MetadataLocation != "" {
		m.mu.Unlock()
		return ke.cur, nil
	}
	m.mu.Unlock()
	if cur, ok, err := m.cfg.Exporter.Current(ctx, t.TableID, pl.Signature); err != nil {
		return nil, err
	} else if ok && cur.Snapshot >= res.Snapshot && cur.MetadataLocation != "" {
		m.remember(k, t, pl, cur)
		return cur, nil
	}
	return m.build(ctx, k, t, pl, res.Snapshot)
}

// build builds (t, pl) at snapshot, once however many callers ask at a
// time.
func (m *Manager) build(ctx context.Context, k exportKey, t *plan.Table, pl *plan.Plan, snapshot int64) (*Export, error) {
	v, err, _ := m.flight.Do(strconv.FormatInt(k.table, 10)+"/"+k.sig+"/"+strconv.FormatInt(snapshot, 10), func() (any, error) {
		e, err := m.cfg.Exporter.Build(ctx, t, pl, snapshot)
		if err != nil {
			return nil, err
		}
		if e.Snapshot == snapshot || e.MetadataLocation == "" {
			h, err := m.cfg.Source.History(ctx, t.TableID, e.Snapshot)
			if err != nil {
				return nil, fmt.Errorf("export: history of table %d: %w", t.TableID, err)
			}
			if _, err := m.cfg.Exporter.Shadow(ctx, e, t, h, m.cfg.Store); err != nil {
				return nil, err
			}
		}
		m.remember(k, t, pl, e)
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Export), nil
}

func (m *Manager) remember(k exportKey, t *plan.Table, pl *plan.Plan, e *Export) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.known[k]; ok && old.cur != nil && old.cur.Snapshot > e.Snapshot {
		return
	}
	m.known[k] = knownExport{table: t, plan: *pl, cur: e}
}

// Active reports whether the Manager has built any export, so that a
// commit may concern it.
func (m *Manager) Active() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.known) > 0
}

// Observe schedules a refresh of the exports of every table snapshot
// changed, debounced: a table committed to again within the debounce is
// refreshed once.
func (m *Manager) Observe(snapshot int64, tables []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	for _, id := range tables {
		if !m.hasExports(id) {
			continue
		}
		if tm, ok := m.pending[id]; ok {
			tm.Reset(m.cfg.Debounce)
			continue
		}
		id := id
		m.pending[id] = time.AfterFunc(m.cfg.Debounce, func() { m.refresh(id, snapshot) })
	}
}

func (m *Manager) hasExports(table int64) bool {
	for k := range m.known {
		if k.table == table {
			return true
		}
	}
	return false
}

// refresh rebuilds every known export of table at the newest snapshot.
func (m *Manager) refresh(table, snapshot int64) {
	m.mu.Lock()
	delete(m.pending, table)
	if m.closed {
		m.mu.Unlock()
		return
	}
	var todo []knownExport
	for k, ke := range m.known {
		if k.table == table {
			todo = append(todo, ke)
		}
	}
	hook := m.hook
	m.wg.Add(1)
	m.mu.Unlock()
	defer m.wg.Done()
	for _, ke := range todo {
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Timeout)
		// Resolve moves back to the table's last change at or before the
		// snapshot; a newer commit schedules its own refresh.
		e, err := m.Ensure(ctx, ke.table, &ke.plan, snapshot)
		if err != nil {
			m.cfg.Logger.Warn("export: refresh failed; the next masked read builds it", zap.Int64("table_id", table),
				zap.String("signature", ke.plan.Signature), zap.Error(err))
		} else if hook != nil {
			hook(ctx, ke.table, &ke.plan, e)
		}
		cancel()
	}
}

// Close stops scheduling refreshes and waits for the running ones.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for _, tm := range m.pending {
		tm.Stop()
	}
	m.pending = map[int64]*time.Timer{}
	m.mu.Unlock()
	m.wg.Wait()
}
