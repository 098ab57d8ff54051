// Command directbench measures DuckLake-direct access (issue 11): the same
// DuckDB query over an ATTACH as a vended reader role (row-level security
// on every ducklake_* table) and over the owner's ATTACH, alternating in
// one run, and the latency of creating a reader role (the Postgres part
// of a vend).
//
//	go run ./bench/cmd/directbench -dsn "$(scripts/pg.sh dsn)" -ext .venv/duckdb-extensions
//
// It creates a scratch database on the server of -dsn (dropped at the
// end), a DuckLake catalog in it with a local data path, -tables tables
// (the catalog RLS filters) and one table of -rows rows the query reads.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/bench"
	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance/pgaccess"
	"github.com/duckicelake/duckicelake/internal/duckenv"
)

func main() {
	dsn := flag.String("dsn", os.Getenv("DUCKICELAKE_PG_DSN"), "Postgres server (a superuser, or a role with CREATEDB and CREATEROLE)")
	ext := flag.String("ext", ".venv/duckdb-extensions", "DuckDB extension directory")
	rows := flag.Int("rows", 1_000_000, "rows of the scanned table")
	tables := flag.Int("tables", 200, "further tables in the catalog")
	rounds := flag.Int("rounds", 15, "query rounds per target")
	vends := flag.Int("vends", 200, "reader roles created for the latency figures")
	flag.Parse()
	if err := run(*dsn, *ext, *rows, *tables, *rounds, *vends); err != nil {
		fmt.Fprintln(os.Stderr, "directbench:", err)
		os.Exit(1)
	}
}

func run(dsn, ext string, rows, tables, rounds, vends int) error {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	var b [4]byte
	rand.Read(b[:])
	name := "directbench_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	owner := fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable", cfg.Host, cfg.Port, cfg.User, cfg.Password, name)
	pool, err := pgxpool.New(ctx, owner)
	if err != nil {
		return err
	}
	defer pool.Close()
	data, err := os.MkdirTemp("", "directbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)
	data += "/"
	conn, err := pgx.Connect(ctx, owner)
	if err != nil {
		return err
	}
	if _, err := ducklake.Init(ctx, conn, ducklake.InitOptions{DataPath: data}); err != nil {
		return err
	}
	conn.Close(ctx)

	open := func(dsn string) (*sql.DB, error) {
		db, err := duckenv.Open(ctx, duckenv.Options{ExtensionDirectory: ext, Extensions: []string{"ducklake", "postgres"}})
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		q, err := duckenv.AttachSQL("lake", dsn, "", data, false, "DATA_INLINING_ROW_LIMIT 0")
		if err != nil {
			return nil, err
		}
		_, err = db.Exec(q)
		return db, err
	}
	ow, err := open(owner)
	if err != nil {
		return err
	}
	defer ow.Close()
	setup := []string{"CREATE SCHEMA lake.s",
		fmt.Sprintf("CREATE TABLE lake.s.facts AS SELECT i AS id, i %% 97 AS k, random() AS v FROM range(%d) t(i)", rows)}
	for i := range tables {
		setup = append(setup, fmt.Sprintf("CREATE TABLE lake.s.t%d (a INT, b VARCHAR)", i),
			fmt.Sprintf("INSERT INTO lake.s.t%d VALUES (1, 'x')", i))
	}
	fmt.Printf("setup: %d rows, %d further tables ...\n", rows, tables)
	for _, q := range setup {
		if _, err := ow.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	acc, err := pgaccess.New(ctx, pool, pgaccess.Config{})
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(must(pool.Query(ctx, `SELECT table_id FROM ducklake_table WHERE end_snapshot IS NULL`)), pgx.RowTo[int64])
	if err != nil {
		return err
	}
	grant := make([]pgaccess.TableAccess, 0, len(ids))
	for _, id := range ids[:len(ids)/2+1] { // half the catalog visible, facts among them
		grant = append(grant, pgaccess.TableAccess{TableID: id, Files: true})
	}
	var facts int64
	if err := pool.QueryRow(ctx, `SELECT table_id FROM ducklake_table WHERE table_name = 'facts'`).Scan(&facts); err != nil {
		return err
	}
	if !slices.ContainsFunc(grant, func(g pgaccess.TableAccess) bool { return g.TableID == facts }) {
		grant = append(grant, pgaccess.TableAccess{TableID: facts, Files: true})
	}

	// Vend latency: CreateRole as a vend runs it (arming checked first).
	lat := make([]float64, 0, vends)
	var roles []pgaccess.Role
	for range vends {
		t0 := time.Now()
		r, err := acc.CreateRole(ctx, pgaccess.Grant{Principal: "bench", Tables: grant, Expiry: time.Now().Add(time.Hour)})
		if err != nil {
			return err
		}
		lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
		roles = append(roles, r)
	}
	defer func() {
		for _, r := range roles {
			pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{r.Name}.Sanitize())
		}
	}()
	slices.Sort(lat)
	fmt.Printf("reader role creation (%d, %d tables granted): p50 %.1f ms, p99 %.1f ms\n", vends, len(grant),
		lat[len(lat)/2], lat[len(lat)*99/100])

	rdsn, err := pgaccess.ReaderDSN(owner, roles[0])
	if err != nil {
		return err
	}
	rd, err := open(rdsn)
	if err != nil {
		return err
	}
	defer rd.Close()
	const query = `SELECT k, count(*), sum(v) FROM lake.s.facts WHERE id % 3 = 0 GROUP BY k ORDER BY k`
	// A query in a fresh transaction reads the catalog again (snapshot,
	// tables, columns, files, stats): the part RLS filters.
	targets := []*sql.DB{ow, rd}
	times := [2][]float64{}
	for r := range rounds {
		for _, i := range bench.Order(2, r) {
			t0 := time.Now()
			rs, err := targets[i].Query(query)
			if err != nil {
				return err
			}
			n := 0
			for rs.Next() {
				n++
			}
			rs.Close()
			if n != 97 {
				return fmt.Errorf("target %d: %d groups", i, n)
			}
			times[i] = append(times[i], float64(time.Since(t0).Microseconds())/1000)
		}
	}
	o, rr := bench.SpreadOf(times[0]), bench.SpreadOf(times[1])
	fmt.Printf("query over %d rows, %d rounds: owner %.1f ms (min %.1f, max %.1f); reader role + RLS %.1f ms (min %.1f, max %.1f); reader/owner %s\n",
		rows, rounds, o.Median, o.Min, o.Max, rr.Median, rr.Min, rr.Max, bench.Ratios(times[1], times[0]).Ratio())
	return nil
}

func must(r pgx.Rows, err error) pgx.Rows {
	if err != nil {
		panic(err)
	}
	return r
}
