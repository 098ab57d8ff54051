package testsupport

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// Serve runs serve(ln) in a goroutine until t ends, then stops it:
// shutdown (with a deadline), ln closed, and serve waited for. An error
// from either fails t. Closing ln matters for fasthttp: its Shutdown
// closes only the listeners its Serve has registered, and a Serve whose
// goroutine had not got that far would accept forever.
func Serve(t testing.TB, ln net.Listener, serve func(net.Listener) error, shutdown func(context.Context) error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		ln.Close()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, net.ErrClosed) {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(WaitTimeout):
			t.Error("serve did not return after shutdown")
		}
	})
}

// ServeLocal is [Serve] on a fresh loopback listener; it returns the
// listener's host:port.
func ServeLocal(t testing.TB, serve func(net.Listener) error, shutdown func(context.Context) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	Serve(t, ln, serve, shutdown)
	return ln.Addr().String()
}
