package creds

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// rawBody is a hand-built token body, field by field, so tests can break one
// field at a time.
type rawBody struct {
	version  []byte
	keyID    []byte
	iat      []byte
	life     []byte
	actor    []byte
	vend     []byte
	strs     []byte // principal, catalog
	grants   []byte // count and grants
	table    []byte // version 2: the table binding
	trailing []byte
}

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func str(s string) []byte { return append(uv(uint64(len(s))), s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func goodBody() rawBody {
	return rawBody{
		version: []byte{1},
		keyID:   str("k1"),
		iat:     uv(uint64(t0.Unix())),
		life:    uv(3600),
		actor:   []byte{1, 1},
		vend:    bytes.Repeat([]byte{0xab}, 16),
		strs:    cat(str("alice"), str("lake")),
		grants:  cat(uv(1), str("lake"), str("data/"), []byte{byte(Read | List)}),
	}
}

// goodBoundBody is a version 2 body: goodBody bound to table ns.t.
func goodBoundBody() rawBody {
	r := goodBody()
	r.version = []byte{2}
	r.table = binding("uuid-1", "ns", "t", uv(7), 1)
	return r
}

func binding(uuid, ns, name string, snap []byte, flags byte) []byte {
	return cat(str(uuid), str(ns), str(name), snap, []byte{flags})
}

func (r rawBody) token() string {
	b := cat(r.version, r.keyID, r.iat, r.life, r.actor, r.vend, r.strs, r.grants, r.table, r.trailing)
	return b64url.EncodeToString(append(b, make([]byte, macLen)...))
}

func TestParseStrict(t *testing.T) {
	good := goodBody()
	if c, id, err := ParseUnverified(good.token()); err != nil || id != "k1" || c.Principal != "alice" ||
		c.VendID != strings.Repeat("ab", 16) || !c.Expiry.Equal(t0.Add(time.Hour)) || c.Grants[0] != (Grant{"lake", "data/", Read | List}) {
		t.Fatalf("hand-built token: %+v, %q, %v", c, id, err)
	}
	tests := []struct {
		name   string
		modify func(*rawBody)
		reason string
	}{
		{"version 0", func(r *rawBody) { r.version = []byte{0} }, "unsupported version"},
		{"version 3", func(r *rawBody) { r.version = []byte{3} }, "unsupported version"},
		// A version 1 body with a binding after it: version 1 has none.
		{"version 1 with a binding", func(r *rawBody) { r.table = binding("u", "ns", "t", uv(1), 0) }, "trailing bytes"},
		{"version 2 without a binding", func(r *rawBody) { r.version = []byte{2} }, "bad table UUID"},
		{"empty key id", func(r *rawBody) { r.keyID = str("") }, "bad key id"},
		{"key id charset", func(r *rawBody) { r.keyID = str("k 1") }, "bad key id"},
		{"key id too long", func(r *rawBody) { r.keyID = str(strings.Repeat("k", 33)) }, "bad key id"},
		{"non-minimal varint", func(r *rawBody) { r.life = []byte{0x90, 0x9c, 0x00} }, "bad lifetime"},
		{"varint overflow", func(r *rawBody) { r.iat = bytes.Repeat([]byte{0xff}, 11) }, "bad issued-at"},
		{"issued after 9999", func(r *rawBody) { r.iat = uv(maxUnix + 1) }, "bad issued-at"},
		{"zero lifetime", func(r *rawBody) { r.life = uv(0) }, "bad lifetime"},
		{"lifetime over the limit", func(r *rawBody) { r.life = uv(uint64(MaxLifetime/time.Second) + 1) }, "bad lifetime"},
		{"expiry after 9999", func(r *rawBody) { r.iat = uv(maxUnix - 10); r.life = uv(11) }, "bad lifetime"},
		{"actor 0", func(r *rawBody) { r.actor = []byte{0, 1} }, "unknown actor"},
		{"actor 3", func(r *rawBody) { r.actor = []byte{3, 1} }, "unknown actor"},
		{"channel 4", func(r *rawBody) { r.actor = []byte{1, 4} }, "unknown channel"},
		{"empty principal", func(r *rawBody) { r.strs = cat(str(""), str("lake")) }, "bad principal"},
		{"principal invalid UTF-8", func(r *rawBody) { r.strs = cat(str("al\xffice"), str("lake")) }, "bad principal"},
		{"principal too long", func(r *rawBody) { r.strs = cat(str(strings.Repeat("a", 1025)), str("")) }, "bad principal"},
		{"catalog length past the end", func(r *rawBody) { r.strs = cat(str("alice"), uv(5000)); r.grants = nil }, "bad catalog"},
		{"65 grants", func(r *rawBody) { r.grants = uv(65) }, "bad grant count"},
		{"fewer grants than counted", func(r *rawBody) { r.grants = cat(uv(2), str("lake"), str("data/"), []byte{1}) }, "bad bucket"},
		{"empty bucket", func(r *rawBody) { r.grants = cat(uv(1), str(""), str("data/"), []byte{1}) }, "bad bucket"},
		{"slash in bucket", func(r *rawBody) { r.grants = cat(uv(1), str("la/ke"), str("data/"), []byte{1}) }, "bad bucket"},
		{"prefix invalid UTF-8", func(r *rawBody) { r.grants = cat(uv(1), str("lake"), str("\xc3("), []byte{1}) }, "bad prefix"},
		{"access 0", func(r *rawBody) { r.grants = cat(uv(1), str("lake"), str("data/"), []byte{0}) }, "bad access"},
		{"access 8", func(r *rawBody) { r.grants = cat(uv(1), str("lake"), str("data/"), []byte{8}) }, "bad access"},
		{"access missing", func(r *rawBody) { r.grants = cat(uv(1), str("lake"), str("data/")) }, "bad access"},
		{"trailing byte", func(r *rawBody) { r.trailing = []byte{0} }, "trailing bytes"},
		{"truncated before vend id", func(r *rawBody) { r.vend = r.vend[:3]; r.strs, r.grants = nil, nil }, "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := goodBody()
			tt.modify(&r)
			_, _, err := ParseUnverified(r.token())
			if !errors.Is(err, ErrMalformedToken) || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("err = %v, want malformed: %s", err, tt.reason)
			}
		})
	}
	boundTests := []struct {
		name   string
		modify func(*rawBody)
		reason string
	}{
		{"empty UUID", func(r *rawBody) { r.table = binding("", "ns", "t", uv(7), 0) }, "bad table UUID"},
		{"UUID too long", func(r *rawBody) { r.table = binding(strings.Repeat("u", 65), "ns", "t", uv(7), 0) }, "bad table UUID"},
		{"UUID invalid UTF-8", func(r *rawBody) { r.table = binding("u\xff", "ns", "t", uv(7), 0) }, "bad table UUID"},
		{"empty namespace", func(r *rawBody) { r.table = binding("u", "", "t", uv(7), 0) }, "bad table namespace"},
		{"namespace too long", func(r *rawBody) { r.table = binding("u", strings.Repeat("n", 1025), "t", uv(7), 0) }, "bad table namespace"},
		{"empty name", func(r *rawBody) { r.table = binding("u", "ns", "", uv(7), 0) }, "bad table name"},
		{"name invalid UTF-8", func(r *rawBody) { r.table = binding("u", "ns", "\xc3(", uv(7), 0) }, "bad table name"},
		{"snapshot non-minimal", func(r *rawBody) { r.table = binding("u", "ns", "t", []byte{0x87, 0x00}, 0) }, "bad table snapshot"},
		{"snapshot past int64", func(r *rawBody) { r.table = binding("u", "ns", "t", uv(1<<63), 0) }, "bad table snapshot"},
		{"unknown flag", func(r *rawBody) { r.table = binding("u", "ns", "t", uv(7), 2) }, "bad table flags"},
		{"flags missing", func(r *rawBody) { r.table = cat(str("u"), str("ns"), str("t"), uv(7)) }, "bad table flags"},
		{"trailing byte after the binding", func(r *rawBody) { r.trailing = []byte{0} }, "trailing bytes"},
	}
	bound := goodBoundBody()
	if c, _, err := ParseUnverified(bound.token()); err != nil ||
		c.Table != (TableBinding{UUID: "uuid-1", Namespace: "ns", Name: "t", Snapshot: 7, Staged: true}) || c.Grants[0] != (Grant{"lake", "data/", Read | List}) {
		t.Fatalf("hand-built version 2 token: %+v, %v", c, err)
	}
	for _, tt := range boundTests {
		t.Run("v2 "+tt.name, func(t *testing.T) {
			r := goodBoundBody()
			tt.modify(&r)
			_, _, err := ParseUnverified(r.token())
			if !errors.Is(err, ErrMalformedToken) || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("err = %v, want malformed: %s", err, tt.reason)
			}
		})
	}
	if _, _, err := ParseUnverified(b64url.EncodeToString(make([]byte, macLen))); !errors.Is(err, ErrMalformedToken) {
		t.Errorf("MAC only: %v", err)
	}
}

// roundTrip re-encodes a parsed token; it must give back the input exactly.
func roundTrip(text string) (string, error) {
	var buf [maxRawLen]byte
	raw, err := decodeText(buf[:], []byte(text))
	if err != nil {
		return "", err
	}
	var t token
	if err := parse(&t, raw); err != nil {
		return "", err
	}
	var c Claims
	t.fill(&c, nil)
	body, err := appendBody(nil, string(t.keyID), &c)
	if err != nil {
		return "", err
	}
	return b64url.EncodeToString(append(body, t.mac...)), nil
}

// FuzzDecodeToken feeds each input to the decoder twice: as token text, and
// base64url-encoded, so that mutations reach the binary parser instead of
// dying in base64. Nothing may panic, anything that parses must re-encode to
// the same text, and nothing but the minted seeds may verify.
func FuzzDecodeToken(f *testing.F) {
	now := t0
	k, err := NewKeyring(testKey("k1", 1))
	if err != nil {
		f.Fatal(err)
	}
	// Fuzz workers are separate processes that each run this setup: minting
	// must be deterministic for them to agree on what was minted.
	k.Now = func() time.Time { return now }
	k.Rand = rand.NewChaCha8([32]byte{})
	minted := make(map[string]bool)
	for _, c := range []Claims{sampleClaims(), {Principal: "p"}, {Principal: "ü", Actor: ActorAgent, Channel: ChannelSMCP,
		Grants: []Grant{{Bucket: "b", Prefix: "*?%", Access: Write}}},
		{Principal: "p", Grants: []Grant{{Bucket: "b", Prefix: "d/ns/t/", Access: Read}},
			Table: TableBinding{UUID: "0f8e6c1a-5b7d-4c2e-9a31-7d2b8e4f6a10", Namespace: "ns", Name: "t", Snapshot: 300, Staged: true}}} {
		m, err := k.Mint(c)
		if err != nil {
			f.Fatal(err)
		}
		minted[m.SessionToken] = true
		raw, _ := b64url.DecodeString(m.SessionToken)
		f.Add([]byte(m.SessionToken))
		f.Add(raw)
	}
	raw, _ := b64url.DecodeString(goodBody().token())
	f.Add(raw)
	raw, _ = b64url.DecodeString(goodBoundBody().token())
	f.Add(raw)
	f.Add([]byte{})
	f.Add([]byte("AQ"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, text := range []string{string(data), b64url.EncodeToString(data)} {
			var c Claims
			_, verr := k.VerifyInto(&c, []byte(AccessKeyIDFor(text)), []byte(text), now)
			if verr == nil && !minted[text] {
				t.Fatalf("verified a token that was never minted: %q", text)
			}
			got, err := roundTrip(text)
			if err != nil {
				if !errors.Is(err, ErrMalformedToken) {
					t.Fatalf("parse error %v is not ErrMalformedToken", err)
				}
				if !errors.Is(verr, ErrMalformedToken) {
					t.Fatalf("VerifyInto: %v on a token that does not parse", verr)
				}
				continue
			}
			if got != text {
				t.Fatalf("round trip changed the token\n in %q\nout %q", text, got)
			}
		}
	})
}
