package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func deadEndpoint(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestServeLifecycle: serve listens on both listeners, answers S3 requests
// as S3 (here: an unreachable upstream is 503 XML), serves the admin
// endpoints, and exits cleanly when its context ends.
func TestServeLifecycle(t *testing.T) {
	env := map[string]string{
		"DUCKICELAKE_UPSTREAM_ENDPOINT":   deadEndpoint(t),
		"DUCKICELAKE_UPSTREAM_ACCESS_KEY": "BACKEND",
		"DUCKICELAKE_UPSTREAM_SECRET_KEY": "backend-secret",
		"DUCKICELAKE_MINT_KEYS":           "k1:" + strings.Repeat("ab", 32),
		"DUCKICELAKE_ROOT_ACCESS_KEY":     "OPERATORROOT",
		"DUCKICELAKE_ROOT_SECRET_KEY":     strings.Repeat("s", 40),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	addrs := make(chan [2]net.Addr, 1)
	done := make(chan int, 1)
	go func() {
		done <- serve(ctx, []string{"-gateway.listen", "127.0.0.1:0", "-catalog.listen", "127.0.0.1:0",
			"-upstream.connect_timeout", "1s"}, &stdout, &stderr, envOf(env),
			func(s3, admin net.Addr) { addrs <- [2]net.Addr{s3, admin} })
	}()
	var a [2]net.Addr
	select {
	case a = <-addrs:
	case code := <-done:
		t.Fatalf("serve exited %d: %s%s", code, stdout.String(), stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, _ := get("http://" + a[1].String() + "/healthz"); st != 200 {
		t.Fatalf("/healthz %d", st)
	}
	if st, body := get("http://" + a[1].String() + "/readyz"); st != 503 {
		t.Fatalf("/readyz with a dead upstream: %d %s", st, body)
	}
	if st, body := get("http://" + a[1].String() + "/metrics"); st != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics %d", st)
	}
	// Anonymous: refused as S3 does, before the upstream is involved.
	if st, body := get("http://" + a[0].String() + "/lake/key"); st != 403 || !strings.Contains(body, "<Code>AccessDenied</Code>") {
		t.Fatalf("S3 listener: %d %s", st, body)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	out := stdout.String()
	for _, want := range []string{`"msg":"duckicelake serving"`, `"gateway":"` + a[0].String() + `"`, `"msg":"stopped"`, `"msg":"s3"`} {
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
			var stdout, stderr lockedBuffer
			code := serve(context.Background(), tc.args, &stdout, &stderr, envOf(tc.env), nil)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 naming %s", code, stderr.String(), tc.want)
			}
		})
	}
}
