package testsupport

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// leakTimeout is how long goroutines may take to wind down after the
// test's other cleanups ran, before they count as leaked.
const leakTimeout = 10 * time.Second

// CheckNoLeaks fails t when, once t's other cleanups have run, a goroutine
// is still running code of one of pkgs (import paths relative to [Module],
// e.g. "internal/pgnotify"), or was started by it. Call it first in the
// test, so that its check runs after every cleanup registered later.
//
// It looks only at the packages named, not at every goroutine of the
// process (as go.uber.org/goleak does): the tests deliberately leave
// goroutines of other code behind — HTTP keep-alive connections, a backend
// shared by a whole package, pools of other tests — and the property under
// test is that the packages named stop what they start.
func CheckNoLeaks(t testing.TB, pkgs ...string) {
	t.Helper()
	prefixes := make([]string, len(pkgs))
	for i, p := range pkgs {
		prefixes[i] = Module + "/" + p + "."
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(leakTimeout)
		for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
			leaked := leakedGoroutines(allStacks(), prefixes)
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d goroutines of %s leaked:\n\n%s", len(leaked), strings.Join(pkgs, ", "), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(wait)
		}
	})
}

// allStacks is runtime.Stack of every goroutine, the caller's first.
func allStacks() string {
	for n := 1 << 16; ; n *= 2 {
		buf := make([]byte, n)
		if m := runtime.Stack(buf, true); m < n {
			return string(buf[:m])
		}
	}
}

// leakedGoroutines returns the goroutines of stacks (runtime.Stack's text
// of all goroutines, the caller's first, which is left out) with a frame
// or a creator whose function name starts with one of prefixes.
func leakedGoroutines(stacks string, prefixes []string) []string {
	var leaked []string
	for i, g := range strings.Split(strings.TrimSpace(stacks), "\n\n") {
		if i == 0 {
			continue
		}
		if goroutineIn(g, prefixes) {
			leaked = append(leaked, g)
		}
	}
	return leaked
}

func goroutineIn(g string, prefixes []string) bool {
	for _, line := range strings.Split(g, "\n") {
		if line == "" || line[0] == '\t' || strings.HasPrefix(line, "goroutine ") {
			continue // file:line, or the header
		}
		fn := strings.TrimPrefix(line, "created by ")
		for _, p := range prefixes {
			if strings.HasPrefix(fn, p) {
				return true
			}
		}
	}
	return false
}
