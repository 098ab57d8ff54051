package gateway

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// TestShutdownBeforeServe: Shutdown may come before Serve has started (a
// serve process stopped as it starts). Serve then returns nil at once and
// its listener is closed; before, fasthttp's Shutdown found no listener
// to close and Serve accepted forever.
func TestShutdownBeforeServe(t *testing.T) {
	root, err := creds.NewRoot(gwRootKey, gwRootSecret)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Upstream: UpstreamConfig{Endpoint: "http://" + testsupport.FreeAddr(t), AccessKeyID: "k", SecretAccessKey: "s"}},
		Deps{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after Shutdown = %v, want nil", err)
		}
	case <-time.After(testsupport.WaitTimeout):
		t.Fatal("Serve after Shutdown did not return")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after Shutdown")
	}
}
