package httplimit

import (
	"sync/atomic"
	"time"
)

// LogRate keeps a flood of refusals from also being a flood of log lines:
// the first of a burst is logged at once, the rest at most once a second
// with the number left out since. The zero value is ready; it is safe for
// concurrent use.
type LogRate struct {
	last    atomic.Int64 // unix nanoseconds of the last line logged
	skipped atomic.Int64
}

// Due reports whether a line may be logged now and, if so, how many were
// left out since the last; if not, it counts this one left out.
func (l *LogRate) Due() (skipped int64, ok bool) {
	now := time.Now().UnixNano()
	last := l.last.Load()
	if now-last < int64(time.Second) || !l.last.CompareAndSwap(last, now) {
		l.skipped.Add(1)
		return 0, false
	}
	return l.skipped.Swap(0), true
}
