package testsupport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// WaitTimeout is how long [WaitFor] and [Eventually] poll before they give
// up. It bounds a wait that should end far sooner, so that a test that
// would hang fails instead; no test's outcome depends on it.
const WaitTimeout = 30 * time.Second

// WaitFor polls cond until it holds, failing t if it does not within
// [WaitTimeout]; what says what was awaited.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Eventually(cond) {
		t.Fatalf("timed out after %v waiting for %s", WaitTimeout, what)
	}
}

// Eventually polls cond until it holds and reports whether it did within
// [WaitTimeout], for a caller that reports the failure itself. It polls
// often at first and then less, as most conditions hold at once or after a
// round trip or two.
func Eventually(cond func() bool) bool {
	deadline := time.Now().Add(WaitTimeout)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(wait)
	}
	return true
}

// Start runs run in a goroutine until stop is called or t ends, whichever
// is first. stop cancels run's context and fails t unless run then returns
// context.Canceled within [WaitTimeout]; what names run in the message.
func Start(t testing.TB, what string, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s = %v, want context.Canceled", what, err)
			}
		case <-time.After(WaitTimeout):
			t.Errorf("%s did not return after cancel", what)
		}
	})
	t.Cleanup(stop)
	return stop
}
