package pgnotify_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/pgnotify"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// connectAs connects to dsn directly, or through via when it is set, with
// application_name set to app, so the test can find the backend.
func connectAs(t *testing.T, dsn, app string, via *proxy) pgnotify.ConnectFunc {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	if via != nil {
		host, port, _ := net.SplitHostPort(via.addr())
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

// proxy forwards TCP connections to Postgres and can cut the existing ones
// off silently — dropping their bytes without closing anything — as a
// network partition does.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []*proxied
	wg     sync.WaitGroup
}

type proxied struct {
	client, server net.Conn
	frozen         atomic.Bool
}

func newProxy(t *testing.T, dsn string) *proxy {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxied{client: c, server: s}
		p.mu.Lock()
		p.conns = append(p.conns, pc)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(pc, s, c)
		go p.pipe(pc, c, s)
	}
}

func (p *proxy) pipe(pc *proxied, dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pc.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			// A frozen connection's other side stays open, as across a
			// partition: the server learns nothing of a client that left.
			src.Close()
			if !pc.frozen.Load() {
				dst.Close()
			}
			return
		}
	}
}

// freeze silently drops all traffic of the connections made so far.
func (p *proxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.conns {
		pc.frozen.Store(true)
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, pc := range p.conns {
		pc.client.Close()
		pc.server.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func pgDSN(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.Database(t)
	return dsn, pgtest.Connect(t, dsn)
}
