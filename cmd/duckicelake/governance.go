package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/maskview"
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/export"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/engine"
	"github.com/duckicelake/duckicelake/governance/pgaccess"
	"github.com/duckicelake/duckicelake/governance/sqlcheck"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/internal/duckenv"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/tableindex"
)

// openGovernance builds what governance runs on in this process: the key
// → table index, the Authorizer (engine) over the governance store, the
// policy-body checker, and the Postgres audit trail; it starts the watcher
// that reloads governance on every change (NOTIFY) and the sweeps (rows of
// dropped objects, audit retention).
func (c *catalogService) openGovernance(ctx context.Context, cfg *config.Config, clients []rest.Client) error {
	roles := make(map[string][]string, len(clients))
	for _, cl := range clients {
		roles[cl.ID] = cl.Roles
	}
	c.index = &tableindex.Live{Load: c.reader.TableIndexSource, OnError: func(snap int64, err error) {
		c.log.Warn("table index: rebuild failed; S3 decisions use the previous index", zap.Int64("snapshot", snap), zap.Error(err))
	}}
	cur, err := c.reader.CurrentSnapshot(ctx)
	if err != nil {
		return err
	}
	if _, err := c.index.Refresh(ctx, cur.ID); err != nil {
		return fmt.Errorf("build the table index: %w", err)
	}
	c.gov = store.New(c.pool, c.schema)
	if c.check, err = sqlcheck.Open(); err != nil {
		return err
	}
	var exportPrefix objstore.Location
	if err := c.openExports(ctx, cfg); err != nil {
		// The airtight tier then refuses what it would serve masked.
		c.log.Warn("governance: no masked copies (tables masked on the bytes are not served to masked principals)", zap.Error(err))
	} else {
		exportPrefix = c.exports.Exporter().Prefix()
	}
	c.authz, err = engine.New(ctx, engine.Config{
		Store:         c.gov,
		ClientRoles:   func(id string) []string { return roles[id] },
		Index:         c.index,
		ExportPrefix:  exportPrefix,
		AgentAirtight: cfg.Governance.AgentAirtight,
		SnapshotTTL:   cfg.Catalog.SnapshotTTL,
		Logger:        c.log,
	})
	if err != nil {
		return err
	}
	c.trail = c.gov.NewTrailWriter(store.TrailOptions{Buffer: cfg.Governance.AuditBuffer, Logger: c.log,
		OnWrite: func(n int) { c.auditWritten.Add(int64(n)) }, OnDrop: func(n int) { c.auditDropped.Add(int64(n)) },
		OnRefuse: func(n int) { c.auditRefused.Add(int64(n)) }})
	if c.direct, err = pgaccess.New(ctx, c.pool, pgaccess.Config{Schema: c.schema, Logger: c.log}); err != nil {
		return err
	}
	if c.masks, err = maskview.Open(ctx, c.pool, c.schema, c.log); err != nil {
		return err
	}
	// Every process arms at start; one that cannot (its role does not own
	// the catalog tables) still serves, and its vends fail closed.
	if err := c.direct.Arm(ctx); err != nil {
		c.log.Warn("DuckLake-direct: row-level security not armed; vends are refused until it is", zap.Error(err))
	}

	gctx, cancel := context.WithCancel(context.Background())
	c.govCancel = cancel
	c.wg.Add(3)
	go func() {
		defer c.wg.Done()
		if err := c.authz.Watch(gctx, pgnotify.FromPool(c.pool), c.schema); err != nil && gctx.Err() == nil {
			c.log.Error("governance: watcher stopped; changes reach this process only by restart", zap.Error(err))
		}
	}()
	go func() {
		defer c.wg.Done()
		c.sweep(gctx, cfg)
	}()
	go func() {
		defer c.wg.Done()
		c.sweepReaders(gctx, time.Minute)
	}()
	return nil
}

// openExports starts the embedded DuckDB that writes masked copies: the
// catalog attached read-only, the upstream's keys for the base files and
// the export prefix.
func (c *catalogService) openExports(ctx context.Context, cfg *config.Config) error {
	db, err := duckenv.Open(ctx, duckenv.Options{
		ExtensionDirectory: cfg.DuckDB.ExtensionDirectory,
		Extensions:         []string{"httpfs", "ducklake", "postgres"},
		MemoryLimit:        cfg.DuckDB.MemoryLimit,
		Threads:            cfg.DuckDB.Threads,
		S3: duckenv.S3{Endpoint: cfg.Upstream.Endpoint, Region: cfg.Upstream.Region, AccessKeyID: cfg.Upstream.AccessKey,
			Secret: string(cfg.Upstream.SecretKey), PathStyle: cfg.Upstream.PathStyle},
	})
	if err != nil {
		return err
	}
	if err := duckenv.AttachDuckLake(ctx, db, "lake", string(cfg.Catalog.DSN), c.schema, c.dataPath, true); err != nil {
		db.Close()
		return err
	}
	x, err := export.New(export.Config{DuckDB: db, Alias: "lake", PG: c.pool, Schema: c.schema, DataPath: c.dataPath,
		// A retired copy outlives every credential that could read it.
		Grace: max(cfg.Catalog.VendTTL, cfg.Mint.MaxTTL) + time.Hour, Logger: c.log})
	if err != nil {
		db.Close()
		return err
	}
	c.duck = db
	c.exports = export.NewManager(export.ManagerConfig{Exporter: x, Source: materialize.NewPGSource(c.pool, c.schema),
		Store: objstore.NewS3(rootS3Client(&cfg.Upstream)), Logger: c.log})
	return nil
}

// sweep collects retired masked copies every minute and purges, every
// five, governance rows that name dropped objects and audit rows past
// retention. Every process sweeps; the deletes
// are idempotent.
func (c *catalogService) sweep(ctx context.Context, cfg *config.Config) {
	retention := cfg.Governance.AuditRetention
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	var objects *objstore.S3Store
	if c.exports != nil {
		objects = objstore.NewS3(rootS3Client(&cfg.Upstream))
	}
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if objects != nil {
			// Masked copies no export uses, and the exports of dropped
			// tables, once no credential that could read them is valid.
			if got, err := c.exports.Exporter().Collect(ctx, objects); err != nil {
				c.log.Warn("export: collect retired masked copies", zap.Error(err))
			} else if got.Dropped > 0 || got.Deleted > 0 {
				c.log.Info("export: collected", zap.Int("dropped_tables_exports", got.Dropped), zap.Int("deleted", got.Deleted))
			}
		}
		if n%5 != 0 {
			continue
		}
		if n, err := c.gov.Purge(ctx, store.Change{Author: governance.Principal{ID: "duckicelake"}}); err != nil {
			c.log.Warn("governance: purge of dropped objects' rows", zap.Error(err))
		} else if n > 0 {
			c.log.Info("governance: purged rows of dropped objects", zap.Int64("rows", n))
		}
		if n, err := c.gov.PurgeAudit(ctx, time.Now().Add(-retention)); err != nil {
			c.log.Warn("governance: audit retention", zap.Error(err))
		} else if n > 0 {
			c.log.Info("governance: audit rows past retention deleted", zap.Int64("rows", n))
		}
	}
}

// sweepReaders drops expired DuckLake-direct reader roles, and masking
// schemas whose leases ended, every interval.
// Every process sweeps; a role another dropped first is skipped.
func (c *catalogService) sweepReaders(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func(ctx context.Context) {
		if n, err := c.direct.Sweep(ctx); err != nil {
			c.log.Warn("DuckLake-direct: sweep of expired reader roles", zap.Error(err))
		} else if n > 0 {
			c.log.Info("DuckLake-direct: expired reader roles dropped", zap.Int("roles", n))
		}
		// A ducklake_* table DuckDB made since (an inlined-deletion table
		// of the first small DELETE) is armed now, not at the next vend,
		// so open reader sessions keep reading.
		if err := c.direct.Ensure(ctx); err != nil {
			c.log.Warn("DuckLake-direct: row-level security check", zap.Error(err))
		}
		// Masking schemas whose every credential has expired.
		if _, err := c.masks.Sweep(ctx, time.Now()); err != nil {
			c.log.Warn("masking views: sweep of expired masking schemas", zap.Error(err))
		}
	})
}

// every runs fn every interval until ctx ends, each run under a deadline
// of one interval, so a stuck run cannot pile up behind the next.
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, interval)
		fn(rctx)
		cancel()
	}
}
