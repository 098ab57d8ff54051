package creds

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func testKey(id string, fill byte) Key {
	return Key{ID: id, Secret: bytes.Repeat([]byte{fill}, MinKeyLen)}
}

// newTestKeyring returns a keyring whose clock is *now.
func newTestKeyring(t testing.TB, now *time.Time, active Key, others ...Key) *Keyring {
	t.Helper()
	k, err := NewKeyring(active, others...)
	if err != nil {
		t.Fatal(err)
	}
	k.Now = func() time.Time { return *now }
	return k
}

func sampleClaims() Claims {
	return Claims{
		Principal: "alice",
		Actor:     ActorHuman,
		Channel:   ChannelREST,
		Catalog:   "lake",
		Grants: []Grant{
			{Bucket: "lake", Prefix: "data/analytics/", Access: Read | Write | List},
			{Bucket: "exports", Prefix: "__masked__/abc/", Access: Read},
		},
	}
}

func TestMintVerifyRoundTrip(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	long := strings.Repeat("é", MaxNameLen/2)
	manyGrants := make([]Grant, MaxGrants)
	for i := range manyGrants {
		manyGrants[i] = Grant{Bucket: "b", Prefix: strings.Repeat("p", i) + "/", Access: Access(i%7 + 1)}
	}
	tests := []struct {
		name string
		c    Claims
	}{
		{"two grants", sampleClaims()},
		{"agent over mcp, no catalog", Claims{Principal: "bot-7", Actor: ActorAgent, Channel: ChannelMCP,
			Grants: []Grant{{Bucket: "lake", Prefix: "", Access: List}}}},
		{"smcp, no grants", Claims{Principal: "svc", Actor: ActorAgent, Channel: ChannelSMCP, Catalog: "c"}},
		{"defaults for actor and channel", Claims{Principal: "p", Grants: []Grant{{Bucket: "lake", Access: Write}}}},
		{"wildcards and unicode are literal", Claims{Principal: "ünï:cødé ✓", Actor: ActorHuman, Channel: ChannelREST,
			Grants: []Grant{{Bucket: "lake", Prefix: "a*b?c%2F/ß/:x/", Access: Read}}}},
		{"longest names", Claims{Principal: long, Catalog: long, Actor: ActorHuman, Channel: ChannelREST,
			Grants: []Grant{{Bucket: strings.Repeat("b", MaxNameLen), Prefix: long, Access: Read}}}},
		{"64 grants", Claims{Principal: "p", Actor: ActorHuman, Channel: ChannelREST, Grants: manyGrants}},
		{"bound to a table", Claims{Principal: "p", Actor: ActorHuman, Channel: ChannelREST,
			Grants: []Grant{{Bucket: "lake", Prefix: "data/ns/t/", Access: Read | List}},
			Table:  TableBinding{UUID: "0f8e6c1a-5b7d-4c2e-9a31-7d2b8e4f6a10", Namespace: "ns", Name: "t", Snapshot: 42}}},
		{"bound to a staged create at snapshot 0", Claims{Principal: "p", Actor: ActorAgent, Channel: ChannelMCP,
			Table: TableBinding{UUID: "u", Namespace: "ünï", Name: long, Staged: true}}},
		{"bound at the largest snapshot", Claims{Principal: "p", Actor: ActorHuman, Channel: ChannelREST,
			Table: TableBinding{UUID: strings.Repeat("u", MaxUUIDLen), Namespace: long, Name: "t", Snapshot: math.MaxInt64}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustMint(t, k, tt.c)
			checkShapes(t, m)
			got, secret, err := k.Verify(m.AccessKeyID, m.SessionToken, now)
			if err != nil {
				t.Fatal(err)
			}
			if secret != m.SecretAccessKey {
				t.Errorf("verified secret %q, minted %q", secret, m.SecretAccessKey)
			}
			want := tt.c
			if want.Actor == "" {
				want.Actor = ActorHuman
			}
			if want.Channel == "" {
				want.Channel = ChannelREST
			}
			want.VendID, want.IssuedAt, want.Expiry = m.VendID, t0, t0.Add(DefaultDefaultTTL)
			if len(want.Grants) == 0 {
				want.Grants = nil
				if len(got.Grants) == 0 {
					got.Grants = nil
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("claims differ\n got %+v\nwant %+v", got, want)
			}
			if m.IssuedAt != t0 || m.Expiry != t0.Add(DefaultDefaultTTL) {
				t.Errorf("minted window %s..%s", m.IssuedAt, m.Expiry)
			}
			pc, keyID, err := ParseUnverified(m.SessionToken)
			if err != nil || keyID != "k1" || !reflect.DeepEqual(pc, got) {
				t.Errorf("ParseUnverified = %+v, %q, %v", pc, keyID, err)
			}
		})
	}
}

func checkShapes(t *testing.T, m Minted) {
	t.Helper()
	if len(m.AccessKeyID) != AccessKeyIDLen || !strings.HasPrefix(m.AccessKeyID, "DIL") {
		t.Errorf("access key id %q: want DIL + 17 characters", m.AccessKeyID)
	}
	for _, c := range m.AccessKeyID[3:] {
		if !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", c) {
			t.Errorf("access key id %q: %q is not base32", m.AccessKeyID, c)
		}
	}
	if len(m.SecretAccessKey) != SecretLen {
		t.Errorf("secret is %d characters, want %d", len(m.SecretAccessKey), SecretLen)
	}
	if i := strings.IndexFunc(m.SessionToken, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}); i >= 0 {
		t.Errorf("token has %q at %d: not header and query safe", m.SessionToken[i], i)
	}
	if len(m.VendID) != 32 {
		t.Errorf("vend id %q", m.VendID)
	}
}

func TestTokenSize(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("2026-05", 1))
	m := mustMint(t, k, sampleClaims())
	// "a few hundred bytes at most" for two grants; this one is ~200.
	if n := len(m.SessionToken); n > 300 {
		t.Errorf("token with two grants is %d bytes, want ≤ 300", n)
	}
	t.Logf("token with two grants: %d bytes", len(m.SessionToken))
}

func TestMintTTL(t *testing.T) {
	now := t0.Add(500 * time.Millisecond) // Mint works in whole seconds
	k := newTestKeyring(t, &now, testKey("k1", 1))
	k.MaxTTL = 2 * time.Hour
	k.DefaultTTL = 30 * time.Minute
	tests := []struct {
		name    string
		expiry  time.Time
		want    time.Time
		wantErr bool
	}{
		{"default", time.Time{}, t0.Add(30 * time.Minute), false},
		{"requested", t0.Add(90 * time.Minute), t0.Add(90 * time.Minute), false},
		{"fraction truncated", t0.Add(90*time.Minute + 900*time.Millisecond), t0.Add(90 * time.Minute), false},
		{"capped silently", t0.Add(48 * time.Hour), t0.Add(2 * time.Hour), false},
		{"exactly the cap", t0.Add(2 * time.Hour), t0.Add(2 * time.Hour), false},
		{"now", t0, time.Time{}, true},
		{"past", t0.Add(-time.Hour), time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sampleClaims()
			c.Expiry = tt.expiry
			m, err := k.Mint(c)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidClaims) {
					t.Fatalf("err = %v, want ErrInvalidClaims", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !m.Expiry.Equal(tt.want) {
				t.Errorf("expiry %s, want %s", m.Expiry, tt.want)
			}
			got, _, err := k.Verify(m.AccessKeyID, m.SessionToken, now)
			if err != nil || !got.Expiry.Equal(tt.want) {
				t.Errorf("verified expiry %s, %v; want %s", got.Expiry, err, tt.want)
			}
		})
	}
	// A cap beyond what the format can express falls back to the format's.
	k.MaxTTL = 365 * 24 * time.Hour
	c := sampleClaims()
	c.Expiry = t0.Add(100 * 24 * time.Hour)
	m, err := k.Mint(c)
	if err != nil || m.Expiry.Sub(m.IssuedAt) != MaxLifetime {
		t.Errorf("lifetime %s, %v; want %s", m.Expiry.Sub(m.IssuedAt), err, MaxLifetime)
	}
}

func TestMintInvalidClaims(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	tooMany := make([]Grant, MaxGrants+1)
	for i := range tooMany {
		tooMany[i] = Grant{Bucket: "b", Access: Read}
	}
	bigGrants := make([]Grant, 8)
	for i := range bigGrants {
		bigGrants[i] = Grant{Bucket: "b", Prefix: strings.Repeat("x", MaxNameLen), Access: Read}
	}
	tests := []struct {
		name   string
		modify func(*Claims)
		want   string
	}{
		{"empty principal", func(c *Claims) { c.Principal = "" }, "principal is empty"},
		{"long principal", func(c *Claims) { c.Principal = strings.Repeat("a", MaxNameLen+1) }, "principal is 1025 bytes"},
		{"bad utf-8", func(c *Claims) { c.Catalog = "\xff" }, "catalog is not valid UTF-8"},
		{"unknown actor", func(c *Claims) { c.Actor = "robot" }, `actor "robot"`},
		{"unknown channel", func(c *Claims) { c.Channel = "grpc" }, `channel "grpc"`},
		{"empty bucket", func(c *Claims) { c.Grants[0].Bucket = "" }, "grant 0: bucket is empty"},
		{"slash in bucket", func(c *Claims) { c.Grants[1].Bucket = "a/b" }, "grant 1: bucket \"a/b\" contains '/'"},
		{"no access", func(c *Claims) { c.Grants[0].Access = 0 }, "grant 0: access none"},
		{"unknown access bit", func(c *Claims) { c.Grants[0].Access = 8 }, "grant 0: access"},
		{"65 grants", func(c *Claims) { c.Grants = tooMany }, "65 grants, limit 64"},
		{"token too large", func(c *Claims) { c.Grants = bigGrants }, "limit 8192"},
		{"binding without a UUID", func(c *Claims) { c.Table = TableBinding{Namespace: "ns", Name: "t"} }, "table binding without a table UUID"},
		{"staged without a UUID", func(c *Claims) { c.Table = TableBinding{Staged: true} }, "table binding without a table UUID"},
		{"binding UUID too long", func(c *Claims) {
			c.Table = TableBinding{UUID: strings.Repeat("u", MaxUUIDLen+1), Namespace: "ns", Name: "t"}
		},
			"table UUID is 65 bytes, limit 64"},
		{"binding without a namespace", func(c *Claims) { c.Table = TableBinding{UUID: "u", Name: "t"} }, "table namespace is empty"},
		{"binding without a name", func(c *Claims) { c.Table = TableBinding{UUID: "u", Namespace: "ns"} }, "table name is empty"},
		{"binding name bad utf-8", func(c *Claims) { c.Table = TableBinding{UUID: "u", Namespace: "ns", Name: "\xff"} }, "table name is not valid UTF-8"},
		{"binding negative snapshot", func(c *Claims) { c.Table = TableBinding{UUID: "u", Namespace: "ns", Name: "t", Snapshot: -1} }, "table snapshot -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sampleClaims()
			tt.modify(&c)
			_, err := k.Mint(c)
			if !errors.Is(err, ErrInvalidClaims) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrInvalidClaims mentioning %q", err, tt.want)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	a := mustMint(t, k, sampleClaims())
	b := mustMint(t, k, Claims{Principal: "mallory", Grants: []Grant{{Bucket: "lake", Access: Read}}})
	sameID := newTestKeyring(t, &now, testKey("k1", 2)) // same key id, other secret
	otherID := newTestKeyring(t, &now, testKey("k9", 1))
	foreignSame, _ := sameID.Mint(sampleClaims())
	foreignOther, _ := otherID.Mint(sampleClaims())

	tests := []struct {
		name        string
		accessKeyID string
		token       string
		want        error
	}{
		{"token paired with another access key", b.AccessKeyID, a.SessionToken, ErrKeyMismatch},
		{"access key in lower case", strings.ToLower(a.AccessKeyID), a.SessionToken, ErrKeyMismatch},
		{"empty access key", "", a.SessionToken, ErrKeyMismatch},
		{"foreign keyring, same key id", foreignSame.AccessKeyID, foreignSame.SessionToken, ErrBadMAC},
		{"foreign keyring, other key id", foreignOther.AccessKeyID, foreignOther.SessionToken, ErrUnknownKey},
		{"empty token", a.AccessKeyID, "", ErrMalformedToken},
		{"padded token", AccessKeyIDFor(a.SessionToken + "="), a.SessionToken + "=", ErrMalformedToken},
		{"newline in token", AccessKeyIDFor(a.SessionToken[:10] + "\n" + a.SessionToken[10:]), a.SessionToken[:10] + "\n" + a.SessionToken[10:], ErrMalformedToken},
		{"standard base64 alphabet", a.AccessKeyID, strings.NewReplacer("-", "+", "_", "/").Replace(a.SessionToken) + "+/", ErrMalformedToken},
		{"too long", a.AccessKeyID, strings.Repeat("A", MaxTokenLen+1), ErrMalformedToken},
		{"truncated", AccessKeyIDFor(a.SessionToken[:len(a.SessionToken)-4]), a.SessionToken[:len(a.SessionToken)-4], ErrMalformedToken},
		{"extended", AccessKeyIDFor(a.SessionToken + "AAAA"), a.SessionToken + "AAAA", ErrMalformedToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := k.Verify(tt.accessKeyID, tt.token, now)
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestTamperEveryByte changes every character of a token to every other
// base64url character, and flips every bit of the decoded token (pairing it
// with the access key id derived from the altered token, so the MAC is what
// stops it). Nothing may verify and nothing may panic.
func TestTamperEveryByte(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	m := mustMint(t, k, sampleClaims())
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	tok := []byte(m.SessionToken)
	var c Claims
	for i := range tok {
		orig := tok[i]
		for j := 0; j < len(alphabet); j++ {
			if alphabet[j] == orig {
				continue
			}
			tok[i] = alphabet[j]
			if _, err := k.VerifyInto(&c, []byte(m.AccessKeyID), tok, now); err == nil {
				t.Fatalf("token with byte %d changed to %q verified", i, alphabet[j])
			}
			if _, err := k.VerifyInto(&c, []byte(AccessKeyIDFor(string(tok))), tok, now); err == nil {
				t.Fatalf("token with byte %d changed to %q verified with its own access key id", i, alphabet[j])
			}
		}
		tok[i] = orig
	}
	raw, err := b64url.DecodeString(m.SessionToken)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for bit := range 8 {
			raw[i] ^= 1 << bit
			alt := b64url.EncodeToString(raw)
			_, _, err := k.Verify(AccessKeyIDFor(alt), alt, now)
			if !errors.Is(err, ErrBadMAC) && !errors.Is(err, ErrMalformedToken) && !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("bit %d of byte %d flipped: err = %v", bit, i, err)
			}
			raw[i] ^= 1 << bit
		}
	}
}

func TestValidityWindow(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	k.Skew = 2 * time.Minute
	m, err := k.Mint(sampleClaims()) // valid t0 .. t0+1h
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		at   time.Time
		want error
	}{
		{t0.Add(-2 * time.Minute), nil},
		{t0.Add(-2*time.Minute - time.Second), ErrNotYetValid},
		{t0.Add(-24 * time.Hour), ErrNotYetValid},
		{t0, nil},
		{t0.Add(time.Hour - time.Nanosecond), nil},
		{t0.Add(time.Hour), ErrExpired},
		{t0.Add(365 * 24 * time.Hour), ErrExpired},
	}
	for _, tt := range tests {
		_, _, err := k.Verify(m.AccessKeyID, m.SessionToken, tt.at)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("at %s: err = %v, want %v", tt.at.Sub(t0), err, tt.want)
		}
	}
}

func TestRotation(t *testing.T) {
	now := t0
	k1, k2 := testKey("2026-04", 1), testKey("2026-05", 2)
	before := newTestKeyring(t, &now, k1)
	old := mustMint(t, before, sampleClaims())
	// Rotate: the new key mints, the old one still verifies.
	during := newTestKeyring(t, &now, k2, k1)
	if during.ActiveKeyID() != "2026-05" {
		t.Errorf("active key %q", during.ActiveKeyID())
	}
	fresh := mustMint(t, during, sampleClaims())
	if _, id, _ := ParseUnverified(fresh.SessionToken); id != "2026-05" {
		t.Errorf("new token minted with key %q, want 2026-05", id)
	}
	for _, m := range []Minted{old, fresh} {
		if _, s, err := during.Verify(m.AccessKeyID, m.SessionToken, now); err != nil || s != m.SecretAccessKey {
			t.Errorf("during rotation: %v", err)
		}
	}
	if _, _, err := before.Verify(fresh.AccessKeyID, fresh.SessionToken, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("old keyring on new token: %v, want ErrUnknownKey", err)
	}
	// The old key removed: its tokens stop verifying.
	after := newTestKeyring(t, &now, k2)
	if _, _, err := after.Verify(old.AccessKeyID, old.SessionToken, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("after removal: %v, want ErrUnknownKey", err)
	}
	if _, _, err := after.Verify(fresh.AccessKeyID, fresh.SessionToken, now); err != nil {
		t.Errorf("after removal, new token: %v", err)
	}
}

func TestRevocation(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	list := RevocationList{Now: func() time.Time { return now }}
	k.Revocations = &list
	a, _ := k.Mint(sampleClaims())
	b, _ := k.Mint(sampleClaims())
	list.Revoke(a.VendID, a.Expiry)
	if _, _, err := k.Verify(a.AccessKeyID, a.SessionToken, now); !errors.Is(err, ErrRevoked) {
		t.Errorf("revoked: %v", err)
	}
	if _, _, err := k.Verify(b.AccessKeyID, b.SessionToken, now); err != nil {
		t.Errorf("other vend: %v", err)
	}
}

func TestSecrets(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	other := newTestKeyring(t, &now, testKey("k1", 2))
	a, _ := k.Mint(sampleClaims())
	b, _ := k.Mint(sampleClaims())
	if a.SecretAccessKey == b.SecretAccessKey || a.AccessKeyID == b.AccessKeyID || a.VendID == b.VendID {
		t.Error("two mints share a key id, secret or vend id")
	}
	// The secret is a function of the key and the access key id only.
	if got := k.keys["k1"].secret([]byte(a.AccessKeyID)); string(got[:]) != a.SecretAccessKey {
		t.Error("secret not derived from the access key id")
	}
	if got := other.keys["k1"].secret([]byte(a.AccessKeyID)); string(got[:]) == a.SecretAccessKey {
		t.Error("another key derives the same secret")
	}
	if bytes.Contains([]byte(a.SessionToken), []byte(a.SecretAccessKey)) {
		t.Error("token contains the secret")
	}
}

func TestAccessKeyIDFor(t *testing.T) {
	// "DIL" + the first 17 base32 characters of SHA-256("token"), computed
	// independently: base64.b32encode(hashlib.sha256(b"token").digest()[:11]).
	if id := AccessKeyIDFor("token"); id != "DILHRDJ5HLMLB25G6SD6" {
		t.Errorf("AccessKeyIDFor = %q, want DILHRDJ5HLMLB25G6SD6", id)
	}
}

func TestNewKeyring(t *testing.T) {
	tests := []struct {
		name string
		keys []Key
		want string
	}{
		{"short secret", []Key{{ID: "k", Secret: make([]byte, 31)}}, "need at least 32"},
		{"empty id", []Key{{ID: "", Secret: make([]byte, 32)}}, "key id"},
		{"bad id", []Key{{ID: "a b", Secret: make([]byte, 32)}}, "key id"},
		{"long id", []Key{{ID: strings.Repeat("k", 33), Secret: make([]byte, 32)}}, "key id"},
		{"duplicate", []Key{testKey("k", 1), testKey("k", 2)}, "twice"},
	}
	for _, tt := range tests {
		_, err := NewKeyring(tt.keys[0], tt.keys[1:]...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestParseKeySecret(t *testing.T) {
	want := bytes.Repeat([]byte{0xfb}, 32)
	tests := []struct {
		in      string
		wantErr string
	}{
		{strings.Repeat("fb", 32), ""},
		{strings.Repeat("FB", 32), ""},
		{"hex:" + strings.Repeat("fb", 32), ""},
		{"base64:" + strings.Repeat("+/v7", 10) + "+/s=", ""},
		{strings.Repeat("+/v7", 10) + "+/s=", ""},
		{strings.Repeat("-_v7", 10) + "-_s", ""},
		{"hex:" + strings.Repeat("fb", 31), "31 bytes"},
		{"hex:zz", "neither hex nor base64"},
		{"!!!", "neither hex nor base64"},
		{"", "0 bytes"},
	}
	for _, tt := range tests {
		got, err := ParseKeySecret(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseKeySecret(%q) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ParseKeySecret(%q) = %x, %v", tt.in, got, err)
		}
	}
}

func TestVerifyIntoReuse(t *testing.T) {
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	two, _ := k.Mint(sampleClaims())
	one, _ := k.Mint(Claims{Principal: "bob", Grants: []Grant{{Bucket: "x", Prefix: "y/", Access: List}}})
	var c Claims
	if _, err := k.VerifyInto(&c, []byte(two.AccessKeyID), []byte(two.SessionToken), now); err != nil {
		t.Fatal(err)
	}
	keep := c // strings stay valid after the next call reuses the scratch buffer
	if _, err := k.VerifyInto(&c, []byte(one.AccessKeyID), []byte(one.SessionToken), now); err != nil {
		t.Fatal(err)
	}
	if c.Principal != "bob" || len(c.Grants) != 1 || c.Grants[0] != (Grant{"x", "y/", List}) {
		t.Errorf("reused claims = %+v", c)
	}
	if keep.Principal != "alice" || keep.Catalog != "lake" || keep.VendID != two.VendID {
		t.Errorf("earlier claims changed: %+v", keep)
	}
}

func TestVerifyIntoAllocs(t *testing.T) {
	testsupport.SkipUnderRace(t, "counts allocations")
	now := t0
	k := newTestKeyring(t, &now, testKey("k1", 1))
	k.Revocations = new(RevocationList)
	m, _ := k.Mint(sampleClaims())
	ak, tok := []byte(m.AccessKeyID), []byte(m.SessionToken)
	var c Claims
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := k.VerifyInto(&c, ak, tok, now); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("VerifyInto: %.1f allocs, want ≤ 1 (the claim strings)", allocs)
	}
}

func BenchmarkVerifyInto(b *testing.B) {
	now := t0
	k := newTestKeyring(b, &now, testKey("k1", 1))
	k.Revocations = new(RevocationList)
	m, _ := k.Mint(sampleClaims())
	ak, tok := []byte(m.AccessKeyID), []byte(m.SessionToken)
	var c Claims
	b.ReportAllocs()
	b.SetBytes(int64(len(tok)))
	for b.Loop() {
		if _, err := k.VerifyInto(&c, ak, tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMint(b *testing.B) {
	now := t0
	k := newTestKeyring(b, &now, testKey("k1", 1))
	c := sampleClaims()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Mint(c); err != nil {
			b.Fatal(err)
		}
	}
}

// mustMint mints c with k, failing the test on an error.
func mustMint(t *testing.T, k *Keyring, c Claims) Minted {
	t.Helper()
	m, err := k.Mint(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
