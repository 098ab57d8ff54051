package httplimit

import "testing"

// TestLogRate: the first line of a burst is due at once, the rest within
// the second are counted, not logged.
func TestLogRate(t *testing.T) {
	var l LogRate
	if n, ok := l.Due(); !ok || n != 0 {
		t.Fatalf("first Due = %d, %v; want 0, true", n, ok)
	}
	for range 3 {
		if _, ok := l.Due(); ok {
			t.Fatal("a second line within the second was due")
		}
	}
	if got := l.skipped.Load(); got != 3 {
		t.Errorf("skipped = %d; want 3", got)
	}
}
