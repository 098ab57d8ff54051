package creds

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestRevocationList(t *testing.T) {
	now := t0
	l := RevocationList{Now: func() time.Time { return now }}
	if l.Revoked("a") {
		t.Fatal("empty list revokes")
	}
	l.Revoke("a", t0.Add(time.Hour))
	l.Revoke("b", t0.Add(2*time.Hour))
	l.Revoke("a", t0.Add(30*time.Minute)) // an earlier expiry does not shorten the entry
	if !l.Revoked("a") || !l.Revoked("b") || l.Revoked("c") {
		t.Fatal("membership wrong")
	}
	// Entries outlive their credential by the grace period, then go.
	now = t0.Add(time.Hour + revocationGrace)
	l.Sweep()
	if !l.Revoked("a") {
		t.Error("entry dropped within the grace period")
	}
	now = now.Add(time.Second)
	l.Sweep()
	if l.Revoked("a") || !l.Revoked("b") || l.Len() != 1 {
		t.Errorf("after a's expiry: a=%v b=%v len=%d", l.Revoked("a"), l.Revoked("b"), l.Len())
	}
	// Revoke sweeps on its own (at most once a minute).
	now = t0.Add(3 * time.Hour)
	l.Revoke("c", now.Add(time.Hour))
	if l.Revoked("b") || l.Len() != 1 {
		t.Errorf("Revoke did not sweep: len=%d", l.Len())
	}
}

func TestRevocationListConcurrent(t *testing.T) {
	var l RevocationList
	var wg sync.WaitGroup
	exp := time.Now().Add(time.Hour)
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 500 {
				l.Revoke(fmt.Sprint(w, "-", i), exp)
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 500 {
				l.Revoked(fmt.Sprint(w, "-", i))
			}
		}()
	}
	wg.Wait()
	if l.Len() != 2000 {
		t.Errorf("len = %d, want 2000", l.Len())
	}
	for w := range 4 {
		if !l.Revoked(fmt.Sprint(w, "-", 499)) {
			t.Errorf("worker %d's last revocation missing", w)
		}
	}
}
