package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// serveEnv is the least configuration serve starts with: an upstream that
// refuses connections and a minting key.
func serveEnv(t *testing.T) map[string]string {
	return map[string]string{
		"DUCKICELAKE_UPSTREAM_ENDPOINT":   "http://" + testsupport.FreeAddr(t),
		"DUCKICELAKE_UPSTREAM_ACCESS_KEY": "BACKEND",
		"DUCKICELAKE_UPSTREAM_SECRET_KEY": "backend-secret",
		"DUCKICELAKE_MINT_KEYS":           "k1:" + strings.Repeat("ab", 32),
	}
}

// TestServeLifecycle: serve listens on both listeners, answers S3 requests
// as S3 (here: an unreachable upstream is 503 XML), serves the admin
// endpoints, and exits cleanly when its context ends.
func TestServeLifecycle(t *testing.T) {
	env := serveEnv(t)
	env["DUCKICELAKE_ROOT_ACCESS_KEY"] = "OPERATORROOT"
	env["DUCKICELAKE_ROOT_SECRET_KEY"] = strings.Repeat("s", 40)
	rs := startServe(t, env, "-upstream.connect_timeout", "1s")
	gw, admin := strings.TrimPrefix(rs.gateway, "http://"), strings.TrimPrefix(rs.admin, "http://")

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, _ := get("http://" + admin + "/healthz"); st != 200 {
		t.Fatalf("/healthz %d", st)
	}
	if st, body := get("http://" + admin + "/readyz"); st != 503 {
		t.Fatalf("/readyz with a dead upstream: %d %s", st, body)
	}
	if st, body := get("http://" + admin + "/metrics"); st != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics %d", st)
	}
	// Anonymous: refused as S3 does, before the upstream is involved.
	if st, body := get("http://" + gw + "/lake/key"); st != 403 || !strings.Contains(body, "<Code>AccessDenied</Code>") {
		t.Fatalf("S3 listener: %d %s", st, body)
	}

	rs.stop()
	out := rs.stdout.String()
	for _, want := range []string{`"msg":"duckicelake serving"`, `"gateway":"` + gw + `"`, `"msg":"stopped"`, `"msg":"s3"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{"backend-secret", strings.Repeat("s", 40), strings.Repeat("ab", 32)} {
		if strings.Contains(out, secret) {
			t.Fatal("the log contains a secret")
		}
	}
}

func TestServeConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no upstream", map[string]string{}, nil, "upstream.endpoint"},
		{"no credentials", map[string]string{
			"DUCKICELAKE_UPSTREAM_ENDPOINT": "http://127.0.0.1:1", "DUCKICELAKE_UPSTREAM_ACCESS_KEY": "a",
			"DUCKICELAKE_UPSTREAM_SECRET_KEY": "b"}, nil, "mint.keys"},
		{"bad flag value", map[string]string{}, []string{"-gateway.idle_timeout", "soon"}, "idle_timeout"},
		{"stray argument", map[string]string{}, []string{"extra"}, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr testsupport.SyncBuffer
			code := serve(context.Background(), tc.args, &stdout, &stderr, testsupport.LookupEnv(tc.env), nil)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 naming %s", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestServeStoppedAtOnce: a serve whose context ends as soon as it listens
// still exits 0 and leaves neither listener open. fasthttp's Shutdown
// closes only the listeners its Serve has registered; the gateway's and
// the admin listener's goroutines may not have got that far.
func TestServeStoppedAtOnce(t *testing.T) {
	env := serveEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var addrs []net.Addr
	var stdout, stderr testsupport.SyncBuffer
	code := serve(ctx, []string{"-gateway.listen", "127.0.0.1:0", "-catalog.listen", "127.0.0.1:0"}, &stdout, &stderr,
		testsupport.LookupEnv(env), func(s3, admin net.Addr) { addrs = []net.Addr{s3, admin}; cancel() })
	if code != 0 || len(addrs) != 2 {
		t.Fatalf("exit %d, listened on %v: %s", code, addrs, stderr.String())
	}
	for _, a := range addrs {
		if c, err := net.Dial("tcp", a.String()); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after serve returned", a)
		}
	}
}
