package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
)

// Metadata is a table's Iceberg metadata as of one DuckLake snapshot.
type Metadata struct {
	// Location is the metadata.json file ("s3://lake/data/s/t/metadata/…").
	Location string
	// JSON is the metadata document, exactly as written at Location.
	JSON []byte
}

// Materializer produces Iceberg metadata for a DuckLake table as of catalog
// snapshot snap. The result for a given (table, snap) never changes, and a
// table unchanged between two snapshots should yield the same Location:
// the catalog compares locations to reuse its encoded responses.
type Materializer interface {
	Materialize(ctx context.Context, table ducklake.Table, snap int64) (Metadata, error)
}

// NoMaterializer is the refusal of what needs Iceberg metadata in a
// catalog built without a Materializer.
const NoMaterializer = "this catalog has no materializer (it cannot serve Iceberg metadata)"

// TableChange is one table's part of an Iceberg commit.
type TableChange struct {
	Namespace, Name string
	Request         *commit.TableCommit
	// manifests are read before the transaction (object storage is slow,
	// and the snapshot row it inserts blocks every other writer).
	manifests *commit.Manifests
}

// CommitTables applies changes by author in one Postgres transaction, as
// one DuckLake snapshot, and returns its id: all tables change or none.
// Requirements are checked against each table's metadata at the head the
// transaction builds on; losing the race for the snapshot id to another
// writer retries against the new head (so a requirement that no longer
// holds then fails the commit, and one that does, like an append's, lets it
// through). Changes without updates only check their requirements and
// return the head. snap is the current snapshot as the caller knows it,
// where the new snapshots' manifests are looked for; governor says the
// author may set governance's own table properties.
func (c *Catalog) CommitTables(ctx context.Context, author string, governor bool, snap int64, changes []TableChange) (int64, error) {
	if c.mat == nil {
		return 0, refuse(ErrUnsupported, "%s", NoMaterializer)
	}
	updates := 0
	for _, ch := range changes {
		updates += len(ch.Request.Updates)
	}
	if updates == 0 {
		return c.checkTables(ctx, changes)
	}
	if err := c.prefetchManifests(ctx, snap, changes); err != nil {
		return 0, err
	}
	return c.Commit(ctx, author, func(ctx context.Context, tx pgx.Tx, head ducklake.Head, next int64) (ducklake.Edit, error) {
		snap := commitSnapshot(head, next)
		reader := ducklake.NewReader(tx, c.schema)
		for _, ch := range changes {
			target, err := c.commitTarget(ctx, tx, reader, head.ID, ch)
			if err != nil {
				return ducklake.Edit{}, err
			}
			target.Governor = governor
			if _, err := c.commits.Commit(ctx, tx, snap, target, ch.Request); err != nil {
				return ducklake.Edit{}, CommitError(err)
			}
		}
		ed := snapEdit(snap, head)
		ed.FileIDs, ed.DataOnly = snap.NextFileID-head.NextFileID, !snap.SchemaChanged()
		return ed, nil
	})
}

// checkTables checks the requirements of changes without updates at the
// head, making no snapshot, and returns the head.
func (c *Catalog) checkTables(ctx context.Context, changes []TableChange) (int64, error) {
	tx, err := c.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	reader := ducklake.NewReader(tx, c.schema)
	cur, err := reader.CurrentSnapshot(ctx)
	if err != nil {
		return 0, err
	}
	head := cur.ID
	for _, ch := range changes {
		target, err := c.commitTarget(ctx, tx, reader, head, ch)
		if err != nil {
			return 0, err
		}
		if err := c.commits.Check(ctx, tx, target, ch.Request); err != nil {
			return 0, CommitError(err)
		}
	}
	return head, nil
}

// commitTarget looks up a change's table at the head, with its metadata as
// the catalog serves it there.
func (c *Catalog) commitTarget(ctx context.Context, tx pgx.Tx, reader *ducklake.Reader, head int64, ch TableChange) (commit.Target, error) {
	sc, err := c.LiveSchema(ctx, tx, ch.Namespace, NoSuchTable(ch.Namespace, ch.Name))
	if err != nil {
		return commit.Target{}, err
	}
	target := commit.Target{Name: ch.Name, Manifests: ch.manifests,
		Namespace: commit.Namespace{ID: sc.ID, Name: ch.Namespace, Path: sc.Path}}
	t, err := reader.TableByName(ctx, head, ch.Namespace, ch.Name)
	if errors.Is(err, ducklake.ErrNotFound) {
		return target, nil
	}
	if err != nil {
		return target, err
	}
	md, err := c.mat.Materialize(ctx, t, head)
	if err != nil {
		return target, fmt.Errorf("materialise %s.%s at snapshot %d: %w", ch.Namespace, ch.Name, head, err)
	}
	var base iceberg.TableMetadata
	if err := json.Unmarshal(md.JSON, &base); err != nil {
		return target, fmt.Errorf("metadata of %s.%s at snapshot %d: %w", ch.Namespace, ch.Name, head, err)
	}
	target.Table, target.Base = &t, &base
	return target, nil
}

// prefetchManifests reads the manifests of every change's new snapshots,
// looking for the tables as of snapshot snap. Every location the changes
// name is checked first (commit.CommitDir): nothing is read with the
// catalog's root credentials until all of them are, so what a refused
// commit is answered never depends on what object storage holds.
func (c *Catalog) prefetchManifests(ctx context.Context, snap int64, changes []TableChange) error {
	dirs := make([]*commit.TableDir, len(changes))
	for i := range changes {
		ch := &changes[i]
		adds := false
		for _, u := range ch.Request.Updates {
			adds = adds || u.Action == commit.ActionAddSnapshot
		}
		if !adds {
			continue
		}
		target := commit.Target{Name: ch.Name}
		t, err := c.reader.TableByName(ctx, snap, ch.Namespace, ch.Name)
		switch {
		case err == nil:
			target.Table = &t
		case errors.Is(err, ducklake.ErrNotFound):
			sc, err := c.NamespaceAt(ctx, snap, ch.Namespace)
			if err != nil {
				return err
			}
			target.Namespace = commit.Namespace{ID: sc.ID, Name: ch.Namespace, Path: sc.Path}
		default:
			return err
		}
		dir, err := c.commits.CommitDir(ctx, c.db, snap, target, ch.Request)
		if err != nil {
			return CommitError(err)
		}
		dirs[i] = &dir
	}
	for i, dir := range dirs {
		if dir == nil {
			continue
		}
		var err error
		if changes[i].manifests, err = c.commits.ReadManifests(ctx, *dir, changes[i].Request); err != nil {
			return CommitError(err)
		}
	}
	return nil
}
