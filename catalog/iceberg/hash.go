package iceberg

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// murmur3 is MurmurHash3 x86 32-bit with seed 0, the hash of Appendix B.
func murmur3(data []byte) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h uint32
	n := len(data)
	for len(data) >= 4 {
		k := binary.LittleEndian.Uint32(data)
		data = data[4:]
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	var k uint32
	switch len(data) {
	case 3:
		k ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(data[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

func hashLong(v int64) uint32 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	return murmur3(b[:])
}

// Hash returns the 32-bit hash of Appendix B for a value of type t, as a
// signed int like the spec's test values; ok is false for types that are not
// hashed (struct, list, map) or a value of the wrong Go type.
func Hash(t Type, v any) (h int32, ok bool) {
	switch t.ID {
	case TypeInt, TypeDate:
		// Ints hash as longs so that promoting int to long keeps buckets.
		if n, is := v.(int32); is {
			return int32(hashLong(int64(n))), true
		}
	case TypeLong, TypeTime, TypeTimestamp, TypeTimestampTZ:
		if n, is := v.(int64); is {
			return int32(hashLong(n)), true
		}
	case TypeTimestampNS, TypeTimestampTZNS:
		// Nanoseconds hash as their microseconds, floored.
		if n, is := v.(int64); is {
			return int32(hashLong(floorDiv(n, 1000))), true
		}
	case TypeBoolean:
		if b, is := v.(bool); is {
			if b {
				return int32(hashLong(1)), true
			}
			return int32(hashLong(0)), true
		}
	case TypeFloat:
		if f, is := v.(float32); is {
			return hashDouble(float64(f)), true
		}
	case TypeDouble:
		if f, is := v.(float64); is {
			return hashDouble(f), true
		}
	case TypeDecimal:
		if d, is := v.(Decimal); is && d.Unscaled != nil {
			return int32(murmur3(AppendMinBigEndian(nil, d.Unscaled))), true
		}
	case TypeString:
		if s, is := v.(string); is {
			return int32(murmur3([]byte(s))), true
		}
	case TypeUUID:
		if u, is := v.([16]byte); is {
			return int32(murmur3(u[:])), true
		}
	case TypeFixed, TypeBinary:
		if b, is := v.([]byte); is {
			return int32(murmur3(b)), true
		}
	}
	return 0, false
}

func hashDouble(f float64) int32 {
	switch {
	case f != f:
		return int32(hashLong(0x7ff8000000000000))
	case f == 0:
		f = 0 // -0.0 hashes as 0.0
	}
	return int32(hashLong(int64(math.Float64bits(f))))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
