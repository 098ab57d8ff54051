package gateway

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/sigv4"
)

func TestCredentialStore(t *testing.T) {
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
			c.reset(kr, root, tc.at)
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
		c.reset(kr, root, now)
		if _, err := c.Secret(akid, tok); err != nil {
			panic(fmt.Sprint(err))
		}
	})
	if allocs > 1 {
		t.Fatalf("%v allocations per minted secret", allocs)
	}
}
