package creds

import (
	"sync"
	"time"
)

// RevocationList is an in-memory Revocations, safe for concurrent use. An
// entry is kept until the revoked credential has expired (plus a minute for
// clocks that differ), after which its token fails on expiry anyway, so the
// list does not grow without bound. The zero value is ready to use.
type RevocationList struct {
	// Now is the clock that ages entries out; nil means time.Now.
	Now func() time.Time

	mu        sync.RWMutex
	until     map[string]time.Time
	nextSweep time.Time
}

// revocationGrace keeps an entry past its credential's expiry, so a
// verifier whose clock runs behind ours still sees it.
const revocationGrace = time.Minute

// Revoke adds vendID to the list until the credential's expiry. Revoking an
// id twice keeps the later expiry.
func (l *RevocationList) Revoke(vendID string, expiry time.Time) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.until == nil {
		l.until = make(map[string]time.Time)
	}
	if old, ok := l.until[vendID]; !ok || expiry.After(old) {
		l.until[vendID] = expiry
	}
	// Sweeping on writes keeps reads lock-shared; once a minute is plenty
	// because a stale entry only costs memory.
	if now.After(l.nextSweep) {
		l.sweepLocked(now)
		l.nextSweep = now.Add(time.Minute)
	}
}

// Revoked reports whether vendID is on the list.
func (l *RevocationList) Revoked(vendID string) bool {
	l.mu.RLock()
	_, ok := l.until[vendID]
	l.mu.RUnlock()
	return ok
}

// Len returns the number of entries, expired ones not yet swept included.
func (l *RevocationList) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.until)
}

// Sweep drops the entries whose credentials expired more than a minute ago.
// Revoke sweeps now and then by itself; call Sweep from a ticker when
// revocations are rare.
func (l *RevocationList) Sweep() {
	now := l.now()
	l.mu.Lock()
	l.sweepLocked(now)
	l.mu.Unlock()
}

func (l *RevocationList) sweepLocked(now time.Time) {
	for id, until := range l.until {
		if now.Sub(until) > revocationGrace {
			delete(l.until, id)
		}
	}
}

func (l *RevocationList) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
