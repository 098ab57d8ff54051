// Package pgtest gives tests a fresh, empty Postgres database on the server
// named by DUCKICELAKE_TEST_PG_DSN (the stack of scripts/test.sh runs one;
// scripts/pg.sh start prints one). Without that variable a test is skipped,
// or fails under CI=true (testsupport.Missing), so a CI run can never pass
// by skipping its Postgres tests.
//
// It is for tests only, like its parent testsupport: it may import pgx,
// testsupport and the standard library, nothing else of this module (so
// that the tests of every package, catalog/ducklake's included, can use
// it), and no production package may import it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// EnvDSN names the environment variable holding the test server's DSN.
const EnvDSN = "DUCKICELAKE_TEST_PG_DSN"

// DSN returns the server DSN; without one the test is testsupport.Missing.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		testsupport.Missing(t, "%s not set: make test runs Postgres, or run scripts/pg.sh start and export %s=$(scripts/pg.sh dsn)", EnvDSN, EnvDSN)
	}
	return dsn
}

// Database creates an empty database for t, drops it when t ends, and
// returns its DSN in libpq keyword=value form (which pgx, psql, pg_dump and
// DuckDB's postgres extension all accept).
func Database(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvDSN, err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "dl_test_" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to test Postgres: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})

	kv := []string{
		"host=" + quote(cfg.Host),
		fmt.Sprintf("port=%d", cfg.Port),
		"user=" + quote(cfg.User),
		"dbname=" + name,
	}
	if cfg.Password != "" {
		kv = append(kv, "password="+quote(cfg.Password))
	}
	if cfg.TLSConfig == nil {
		kv = append(kv, "sslmode=disable")
	}
	return strings.Join(kv, " ")
}

func quote(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// Connect opens a connection to dsn, closed when t ends.
func Connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Pool opens a pool on dsn, closed when t ends.
func Pool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// RelayedPool opens a pool configured by cfg (which it changes) that
// reaches Postgres through a [testsupport.Relay], for a test that plays an
// outage with the relay's Cut; connecting times out in 2s, so a cut
// Postgres is an error soon. The pool is closed when t ends, before the
// relay.
func RelayedPool(t testing.TB, cfg *pgxpool.Config) (*pgxpool.Pool, *testsupport.Relay) {
	t.Helper()
	relay := testsupport.NewRelay(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	host, port, _ := net.SplitHostPort(relay.Addr)
	p, _ := strconv.Atoi(port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("relayed pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, relay
}

// Tool finds a PostgreSQL client program (pg_dump, psql): on PATH, else in
// the newest /usr/lib/postgresql/*/bin.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testsupport.Missing(t, "%s not found on PATH or in /usr/lib/postgresql/*/bin", name)
	return ""
}

// Dump runs pg_dump with args on dsn and returns its output.
func Dump(t testing.TB, dsn string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Tool(t, "pg_dump"), append(args, dsn)...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("pg_dump %v: %v\n%s", args, err, msg)
	}
	return string(out)
}
