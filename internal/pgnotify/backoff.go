package pgnotify

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff doubles a delay from min up to max; each wait is jittered into
// [d/2, d] so a fleet that lost Postgres at once does not reconnect in step.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	half := b.cur / 2
	return half + rand.N(half+1)
}

func (b *backoff) reset() { b.cur = 0 }

// sleep waits d or until ctx ends, reporting whether the full wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
