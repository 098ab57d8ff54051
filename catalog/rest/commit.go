package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/catalog/service"
	"github.com/duckicelake/duckicelake/governance"
)

// tableChange is one table's part of a commit.
type tableChange struct {
	ns, name string
	req      *commit.TableCommit
	// manifests are read before the transaction (object storage is slow,
	// and the snapshot row it inserts blocks every other writer).
	manifests *commit.Manifests
}

// updateTable serves POST …/namespaces/{ns}/tables/{table}: a
// CommitTableRequest, answered with the table's new metadata.
func (s *Server) updateTable(r *request) error {
	if s.mat == nil {
		return unsupported("%s", offMat)
	}
	var req commit.TableCommit
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if id := req.Identifier; id != nil && (len(id.Namespace) != 1 || id.Namespace[0] != r.ns || id.Name != r.table) {
		return badRequest("the request's identifier %s.%s is not the table of the path, %s.%s",
			strings.Join(id.Namespace, "."), id.Name, r.ns, r.table)
	}
	snap, err := s.commitTables(r.ctx, r.p, []tableChange{{ns: r.ns, name: r.table, req: &req}})
	if err != nil {
		return err
	}
	return s.writeCommitResponse(r, snap)
}

// writeCommitResponse answers a CommitTableResponse: the table's metadata
// as LoadTable serves it at snapshot snap.
func (s *Server) writeCommitResponse(r *request, snap int64) error {
	e, err := s.buildEntry(r.ctx, r.ns, r.table, formAll, 0, snap, nil)
	if err != nil {
		return err
	}
	loc, _ := json.Marshal(e.location)
	body := make([]byte, 0, len(e.metadata)+len(loc)+40)
	body = append(body, `{"metadata-location":`...)
	body = append(body, loc...)
	body = append(body, `,"metadata":`...)
	body = append(body, e.metadata...)
	body = append(body, '}')
	r.rc.SetContentType(contentTypeJSON)
	r.rc.SetBody(body)
	return nil
}

// commitTables applies changes in one Postgres transaction, as one DuckLake
// snapshot, and returns its id: all tables change or none. Requirements are
// checked against each table's metadata at the head the transaction builds
// on; losing the race for the snapshot id to another writer retries
// against the new head (so a requirement that no longer holds then fails
// the commit, and one that does, like an append's, lets it through).
func (s *Server) commitTables(ctx context.Context, p *Principal, changes []tableChange) (int64, error) {
	updates := 0
	for _, c := range changes {
		updates += len(c.req.Updates)
	}
	if updates == 0 {
		return s.checkTables(ctx, changes)
	}
	if err := s.prefetchManifests(ctx, changes); err != nil {
		return 0, err
	}
	governor := s.gov != nil && s.principalAllows(p, governance.ActionAdminGovernance, "")
	return s.commitDDL(ctx, p.Subject, func(ctx context.Context, tx pgx.Tx, cur snapshotRow, next int64) (change, error) {
		snap := &commit.Snapshot{ID: next, Head: cur.ID, SchemaVersion: cur.SchemaVersion,
			NextCatalogID: cur.NextCatalogID, NextFileID: cur.NextFileID}
		reader := ducklake.NewReader(tx, strings.Trim(s.schema, `"`))
		for _, c := range changes {
			target, err := s.commitTarget(ctx, tx, reader, cur.ID, c)
			if err != nil {
				return change{}, err
			}
			target.Governor = governor
			if _, err := s.commits.Commit(ctx, tx, snap, target, c.req); err != nil {
				return change{}, commitError(err)
			}
		}
		return change{Changes: snap.Changes(), CatalogIDs: snap.NextCatalogID - cur.NextCatalogID,
			FileIDs: snap.NextFileID - cur.NextFileID, DataOnly: !snap.SchemaChanged()}, nil
	})
}

// checkTables checks the requirements of changes without updates at the
// head, making no snapshot, and returns the head.
func (s *Server) checkTables(ctx context.Context, changes []tableChange) (int64, error) {
	tx, err := s.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	reader := ducklake.NewReader(tx, strings.Trim(s.schema, `"`))
	cur, err := reader.CurrentSnapshot(ctx)
	if err != nil {
		return 0, err
	}
	head := cur.ID
	for _, c := range changes {
		target, err := s.commitTarget(ctx, tx, reader, head, c)
		if err != nil {
			return 0, err
		}
		if err := s.commits.Check(ctx, tx, target, c.req); err != nil {
			return 0, commitError(err)
		}
	}
	return head, nil
}

// commitTarget looks up a change's table at the head, with its metadata as
// the catalog serves it there.
func (s *Server) commitTarget(ctx context.Context, tx pgx.Tx, reader *ducklake.Reader, head int64, c tableChange) (commit.Target, error) {
	sc, err := s.liveSchema(ctx, tx, c.ns, noSuchTable(c.ns, c.name))
	if err != nil {
		return commit.Target{}, err
	}
	target := commit.Target{Name: c.name, Manifests: c.manifests,
		Namespace: commit.Namespace{ID: sc.ID, Name: c.ns, Path: sc.Path}}
	t, err := reader.TableByName(ctx, head, c.ns, c.name)
	if errors.Is(err, ducklake.ErrNotFound) {
		return target, nil
	}
	if err != nil {
		return target, err
	}
	md, err := s.mat.Materialize(ctx, t, head)
	if err != nil {
		return target, fmt.Errorf("materialise %s.%s at snapshot %d: %w", c.ns, c.name, head, err)
	}
	var base iceberg.TableMetadata
	if err := json.Unmarshal(md.JSON, &base); err != nil {
		return target, fmt.Errorf("metadata of %s.%s at snapshot %d: %w", c.ns, c.name, head, err)
	}
	target.Table, target.Base = &t, &base
	return target, nil
}

// prefetchManifests reads the manifests of every change's new snapshots.
// Every location the changes name is checked first (commit.CommitDir):
// nothing is read with the catalog's root credentials until all of them
// are, so what a refused commit is answered never depends on what object
// storage holds.
func (s *Server) prefetchManifests(ctx context.Context, changes []tableChange) error {
	var snap int64
	dirs := make([]*commit.TableDir, len(changes))
	for i := range changes {
		c := &changes[i]
		adds := false
		for _, u := range c.req.Updates {
			adds = adds || u.Action == commit.ActionAddSnapshot
		}
		if !adds {
			continue
		}
		if snap == 0 {
			var err error
			if snap, err = s.currentSnapshot(ctx); err != nil {
				return err
			}
		}
		target := commit.Target{Name: c.name}
		t, err := s.reader.TableByName(ctx, snap, c.ns, c.name)
		switch {
		case err == nil:
			target.Table = &t
		case errors.Is(err, ducklake.ErrNotFound):
			sc, err := s.schemaNamed(ctx, snap, c.ns)
			if err != nil {
				return err
			}
			target.Namespace = commit.Namespace{ID: sc.ID, Name: c.ns, Path: sc.Path}
		default:
			return err
		}
		dir, err := s.commits.CommitDir(ctx, s.db, snap, target, c.req)
		if err != nil {
			return commitError(err)
		}
		dirs[i] = &dir
	}
	for i, dir := range dirs {
		if dir == nil {
			continue
		}
		var err error
		if changes[i].manifests, err = s.commits.ReadManifests(ctx, *dir, changes[i].req); err != nil {
			return commitError(err)
		}
	}
	return nil
}

// commitError answers a refused commit with the ErrorModel type Iceberg
// clients map to the right exception (service.CommitError); other errors
// pass through.
func commitError(err error) error { return service.CommitError(err) }
