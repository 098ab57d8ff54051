package oauth

import (
	"math"
	"sync"
	"time"
)

// failureLimiter bounds failed authentications per key (a client id, a
// source address): each key has a bucket of burst attempts that refills
// evenly over window, a failure takes one, and while a key's bucket is
// empty every attempt of it is refused, right secret or not — otherwise a
// guesser would learn the secret from the one answer that differs.
// Successes cost nothing.
type failureLimiter struct {
	burst  float64
	window time.Duration
	max    int // most keys remembered

	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newFailureLimiter(burst int, window time.Duration, max int) *failureLimiter {
	return &failureLimiter{burst: float64(burst), window: window, max: max, m: make(map[string]*bucket)}
}

// refill brings b up to now; the caller holds l.mu.
func (l *failureLimiter) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+l.burst*float64(d)/float64(l.window))
		b.at = now
	}
}

// wait is how long key must wait before its next attempt (0: it may try
// now).
func (l *failureLimiter) wait(key string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[key]
	if b == nil {
		return 0
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / l.burst * float64(l.window))
}

// fail charges key one failed attempt.
func (l *failureLimiter) fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[key]
	if b == nil {
		if len(l.m) >= l.max {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.m[key] = b
	}
	l.refill(b, now)
	b.tokens = math.Max(0, b.tokens-1)
}

// prune forgets the keys whose buckets are full again (they are as good as
// new), and when none is, a quarter of the keys at random (map order), so
// that a flood of fresh keys cannot grow the map without bound. The caller
// holds l.mu.
func (l *failureLimiter) prune(now time.Time) {
	for k, b := range l.m {
		l.refill(b, now)
		if b.tokens >= l.burst {
			delete(l.m, k)
		}
	}
	if len(l.m) < l.max {
		return
	}
	n := 0
	for k := range l.m {
		delete(l.m, k)
		if n++; n > l.max/4 {
			return
		}
	}
}
