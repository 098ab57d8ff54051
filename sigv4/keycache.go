package sigv4

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// The signing-key cache holds keyCacheSets*keyCacheWays keys at most.
const (
	keyCacheSets = 256
	keyCacheWays = 4
)

// keyEntry is immutable once published.
type keyEntry struct {
	secret  string
	date    [8]byte
	region  string
	service string
	mac     macKey
}

// keyCache memoises DeriveSigningKey per (secret, date, region, service). A
// key stays valid for a whole UTC day, so a client's requests derive it once.
// It is set-associative over atomic pointers: a hit is a few loads and
// compares without locks or allocation; a miss derives the key and publishes
// a new entry over a victim in its set.
type keyCache struct {
	once   sync.Once
	seed   maphash.Seed
	victim atomic.Uint32
	slots  [keyCacheSets * keyCacheWays]atomic.Pointer[keyEntry]
}

func (c *keyCache) init() { c.seed = maphash.MakeSeed() }

// get returns the signing key for (secret, date, region, service). date is
// yyyymmdd; the entry must not be modified.
func (c *keyCache) get(secret, date []byte, region, service string) *keyEntry {
	if len(date) != 8 {
		e := &keyEntry{}
		var key [32]byte
		DeriveSigningKey(&key, secret, date, []byte(region), []byte(service))
		e.mac = newMACKey(&key)
		return e
	}
	c.once.Do(c.init)
	h := maphash.Bytes(c.seed, secret)
	h ^= binary.LittleEndian.Uint64(date) * 0x9e3779b97f4a7c15
	h ^= h >> 29
	set := c.slots[(h%keyCacheSets)*keyCacheWays:][:keyCacheWays]
	for i := range set {
		e := set[i].Load()
		if e != nil && string(date) == string(e.date[:]) && region == e.region &&
			service == e.service && string(secret) == e.secret {
			return e
		}
	}
	e := &keyEntry{secret: string(secret), region: region, service: service}
	copy(e.date[:], date)
	var key [32]byte
	DeriveSigningKey(&key, secret, e.date[:], []byte(region), []byte(service))
	e.mac = newMACKey(&key)
	set[c.victim.Add(1)%keyCacheWays].Store(e)
	return e
}
