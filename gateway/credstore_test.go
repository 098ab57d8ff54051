package gateway

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/sigv4"
)

func TestCredentialStore(t *testing.T) {
	testsupport.SkipUnderRace(t, "counts allocations")
	kr, err := creds.NewKeyring(creds.Key{ID: "k", Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	revoked := &creds.RevocationList{}
	kr.Revocations = revoked
	root, err := creds.NewRoot("OPERATOR", "operator-secret-0123456789abcdefghij")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m, err := kr.Mint(creds.Claims{Principal: "p", Grants: []creds.Grant{{Bucket: "b", Access: creds.Read}}})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := kr.Mint(creds.Claims{Principal: "q"})
	gone, _ := kr.Mint(creds.Claims{Principal: "r"})
	revoked.Revoke(gone.VendID, gone.Expiry)
	foreign, _ := creds.NewKeyring(creds.Key{ID: "k", Secret: bytes.Repeat([]byte{4}, 32)})
	forged, _ := foreign.Mint(creds.Claims{Principal: "p"})

	for _, tc := range []struct {
		name        string
		akid, token string
		at          time.Time
		want        sigv4.ErrorCode // 0: accepted
		root        bool
	}{
		{"minted", m.AccessKeyID, m.SessionToken, now, 0, false},
		{"root", "OPERATOR", "", now, 0, true},
		{"root with token", "OPERATOR", m.SessionToken, now, sigv4.ErrInvalidToken, false},
		{"minted without token", m.AccessKeyID, "", now, sigv4.ErrInvalidAccessKeyID, false},
		{"unknown key", "AKIAEXAMPLE", "", now, sigv4.ErrInvalidAccessKeyID, false},
		{"token of another key", m.AccessKeyID, other.SessionToken, now, sigv4.ErrInvalidAccessKeyID, false},
		{"expired", m.AccessKeyID, m.SessionToken, m.Expiry.Add(time.Second), sigv4.ErrExpiredToken, false},
		{"not yet valid", m.AccessKeyID, m.SessionToken, now.Add(-time.Hour), sigv4.ErrInvalidToken, false},
		{"revoked", gone.AccessKeyID, gone.SessionToken, now, sigv4.ErrInvalidToken, false},
		{"foreign minting key", forged.AccessKeyID, forged.SessionToken, now, sigv4.ErrInvalidToken, false},
		{"garbage token", m.AccessKeyID, "!!!", now, sigv4.ErrInvalidToken, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c credential
			c.reset(kr, root, nil, tc.at)
			secret, err := c.Secret([]byte(tc.akid), []byte(tc.token))
			if tc.want == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				want := m.SecretAccessKey
				if tc.root {
					want = "operator-secret-0123456789abcdefghij"
				}
				if string(secret) != want || c.isRoot != tc.root || c.verified == tc.root {
					t.Fatalf("secret %q root %v verified %v", secret, c.isRoot, c.verified)
				}
				return
			}
			if code := sigv4.CodeOf(err); code != tc.want {
				t.Fatalf("code %v (%v), want %v", code, err, tc.want)
			}
			if c.isRoot || c.verified {
				t.Fatal("a refused credential is marked usable")
			}
		})
	}
	// Steady state: resolving a minted secret allocates only the claims.
	var c credential
	akid, tok := []byte(m.AccessKeyID), []byte(m.SessionToken)
	allocs := testing.AllocsPerRun(100, func() {
		c.reset(kr, root, nil, now)
		if _, err := c.Secret(akid, tok); err != nil {
			panic(fmt.Sprint(err))
		}
	})
	if allocs > 1 {
		t.Fatalf("%v allocations per minted secret", allocs)
	}
}

// TestTokenCache: a cached token still fails once revoked or expired, and
// only with the access key id it is bound to; hits allocate nothing.
func TestTokenCache(t *testing.T) {
	kr, err := creds.NewKeyring(creds.Key{ID: "k", Secret: bytes.Repeat([]byte{5}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	revoked := &creds.RevocationList{}
	kr.Revocations = revoked
	m, _ := kr.Mint(creds.Claims{Principal: "p", Grants: []creds.Grant{{Bucket: "b", Prefix: "x/", Access: creds.Read}}})
	other, _ := kr.Mint(creds.Claims{Principal: "q"})
	cache := newTokenCache(2)
	now := time.Now()
	secret := func(akid, tok string, at time.Time) (*credential, error) {
		c := new(credential)
		c.reset(kr, nil, cache, at)
		_, err := c.Secret([]byte(akid), []byte(tok))
		return c, err
	}
	if _, err := secret(m.AccessKeyID, m.SessionToken, now); err != nil {
		t.Fatal(err)
	}
	if cache.get([]byte(m.SessionToken)) == nil {
		t.Fatal("verified token not cached")
	}
	c, err := secret(m.AccessKeyID, m.SessionToken, now)
	if err != nil || !c.shared || c.claims.Principal != "p" || !c.claims.Allows(creds.Read, []byte("b"), []byte("x/y")) {
		t.Fatalf("cache hit: %v shared=%v claims=%+v", err, c.shared, c.claims)
	}
	// A shared Grants slice is never handed to VerifyInto for reuse.
	c.reset(kr, nil, cache, now)
	if c.claims.Grants != nil {
		t.Fatal("reset kept a cached Grants slice")
	}
	if _, err := secret(other.AccessKeyID, m.SessionToken, now); sigv4.CodeOf(err) != sigv4.ErrInvalidAccessKeyID {
		t.Fatalf("cached token with another key id: %v", err)
	}
	if _, err := secret(m.AccessKeyID, m.SessionToken, m.Expiry); sigv4.CodeOf(err) != sigv4.ErrExpiredToken {
		t.Fatalf("cached token after expiry: %v", err)
	}
	revoked.Revoke(m.VendID, m.Expiry)
	if _, err := secret(m.AccessKeyID, m.SessionToken, now); sigv4.CodeOf(err) != sigv4.ErrInvalidToken {
		t.Fatalf("cached token after revocation: %v", err)
	}
	// Bounded: a third token evicts.
	third, _ := kr.Mint(creds.Claims{Principal: "r"})
	secret(other.AccessKeyID, other.SessionToken, now)
	secret(third.AccessKeyID, third.SessionToken, now)
	if n := len(cache.m); n > 2 {
		t.Fatalf("cache holds %d tokens, max 2", n)
	}
	akid, tok := []byte(third.AccessKeyID), []byte(third.SessionToken)
	var h credential
	if n := testing.AllocsPerRun(100, func() {
		h.reset(kr, nil, cache, now)
		if _, err := h.Secret(akid, tok); err != nil {
			panic(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per cache hit", n)
	}
}
