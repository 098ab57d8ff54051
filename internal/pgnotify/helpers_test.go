package pgnotify_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// connectAs connects to dsn directly, or through via when it is set, with
// application_name set to app, so the test can find the backend.
func connectAs(t *testing.T, dsn, app string, via *testsupport.Relay) pgnotify.ConnectFunc {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	if via != nil {
		host, port, _ := net.SplitHostPort(via.Addr)
		p, _ := strconv.Atoi(port)
		cfg.Host, cfg.Port = host, uint16(p)
	}
	return pgnotify.FromConfig(cfg)
}

// terminate ends every backend of application app and returns how many.
func terminate(t *testing.T, admin *pgx.Conn, app string) int {
	t.Helper()
	var n int
	err := admin.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func backends(t *testing.T, admin *pgx.Conn, app string) int {
	t.Helper()
	var n int
	if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func notify(t *testing.T, conn *pgx.Conn, channel, payload string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), "SELECT pg_notify($1, $2)", channel, payload); err != nil {
		t.Fatal(err)
	}
}

// relayTo is a testsupport.Relay in front of the Postgres of dsn.
func relayTo(t *testing.T, dsn string) *testsupport.Relay {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return testsupport.NewRelay(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
}

func pgDSN(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.Database(t)
	return dsn, pgtest.Connect(t, dsn)
}
