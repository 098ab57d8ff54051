// Package creds mints and verifies the S3 credentials the gateway accepts.
//
// A minted credential is the usual AWS triple — access key id, secret access
// key and session token — but nothing about it is stored:
//
//   - The session token is a compact, versioned blob that carries the claims
//     (principal, actor, channel, catalog, grants, vend id, issued-at,
//     expiry and, for a credential vended for one table, the table it is
//     bound to) and an HMAC-SHA256 under a named minting key. It is base64url
//     without padding, so it fits in an HTTP header and in a URL query as is.
//   - The access key id is derived from the token ("DIL" followed by 17
//     base32 characters of its SHA-256, 20 characters like an AWS key id), so
//     a token cannot be presented with any other access key id.
//   - The secret access key is derived from the access key id with the
//     minting key (40 characters like an AWS secret), so the gateway
//     recomputes it on every request instead of looking it up.
//
// Verification is therefore stateless: parse the token strictly, find its
// minting key by id, check the MAC, the binding to the access key id, the
// validity window and the revocation list. Minting keys rotate by id: a
// [Keyring] mints with its active key and verifies with every key it holds,
// so an old key keeps verifying the tokens it minted until it is removed.
//
// # Token format, version 1
//
// All integers are unsigned LEB128 varints in their shortest form; strings
// are a varint length followed by that many bytes of UTF-8.
//
//	version       1 byte, 0x01
//	key id        string, 1..32 bytes of [A-Za-z0-9._-]
//	issued-at     varint, Unix seconds
//	lifetime      varint, seconds from issued-at to expiry, 1..MaxLifetime
//	actor         1 byte: 1 human, 2 agent
//	channel       1 byte: 1 rest, 2 mcp, 3 smcp
//	vend id       16 random bytes (Claims.VendID is their lower-case hex)
//	principal     string, 1..1024 bytes
//	catalog       string, 0..1024 bytes
//	grant count   varint, 0..64
//	grants        bucket (string, 1..1024 bytes, no '/'), prefix (string,
//	              0..1024 bytes), access (1 byte, bits read=1 write=2 list=4)
//	mac           32 bytes, HMAC-SHA256 of everything above under a key
//	              derived from the minting key
//
// # Token format, version 2
//
// A credential bound to a table ([Claims.Table]) is a version 2 token:
// version 1's fields with the version byte 0x02, and after the grants
//
//	table uuid    string, 1..64 bytes (ducklake_table.table_uuid)
//	namespace     string, 1..1024 bytes, the table's at vend time
//	name          string, 1..1024 bytes, the table's at vend time
//	snapshot      varint, 0..2^63-1, the DuckLake snapshot the vend saw
//	flags         1 byte: bit staged=1 (a staged create's vend); no other bit
//
// then the MAC. An unbound credential is always version 1 and a version 2
// token always carries a binding, so each set of claims still has exactly
// one encoding; version 1 tokens parse as before, unbound.
//
// The encoded token is at most [MaxTokenLen] characters. The parser rejects
// anything else — unknown versions, non-minimal varints, trailing bytes,
// invalid UTF-8 — so each set of claims has exactly one encoding.
//
// # Scope
//
// A grant's prefix is a literal S3 key prefix: no wildcards, so '*', '?' and
// '%' in a prefix match only themselves. Grant "data/analytics/" allows
// "data/analytics/x" but not "data/analyticsX"; a grant "data/a" allows
// "data/ab" too, exactly as the literal prefix says, so grants should end
// with '/'. See [Claims.Allows] and [Claims.AllowsList].
package creds
