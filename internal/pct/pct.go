package pct

const upperHex = "0123456789ABCDEF"

// Unhex decodes a hex digit of either case. A table rather than branches:
// the branches mispredict on random hex (signatures, hashes).
func Unhex(c byte) (byte, bool) {
	v := hexValue[c]
	return v, v != 0xff
}

// UnhexLower decodes a lower-case hex digit; upper case is refused
// (SigV4 signatures are lower-case hex).
func UnhexLower(c byte) (byte, bool) {
	v := lowerHexValue[c]
	return v, v != 0xff
}

// Unreserved reports whether c is an RFC 3986 unreserved byte, which
// encoding leaves as it is.
func Unreserved(c byte) bool { return unreserved[c] != 0 }

// DecodeAt decodes the byte of raw at i, a %XX escape or a plain byte ('+'
// as a space with plusSpace), and returns it with the index after it. ok is
// false on a '%' not followed by two hex digits.
func DecodeAt(raw []byte, i int, plusSpace bool) (c byte, next int, ok bool) {
	switch c = raw[i]; c {
	case '%':
		if i+2 >= len(raw) {
			return 0, i, false
		}
		hi, ok1 := Unhex(raw[i+1])
		lo, ok2 := Unhex(raw[i+2])
		if !ok1 || !ok2 {
			return 0, i, false
		}
		return hi<<4 | lo, i + 3, true
	case '+':
		if plusSpace {
			return ' ', i + 1, true
		}
	}
	return c, i + 1, true
}

// AppendDecode appends raw percent-decoded, exactly once, to dst ('+' as a
// space with plusSpace). ok is false on a malformed escape; dst then holds
// what was decoded before it.
func AppendDecode(dst, raw []byte, plusSpace bool) ([]byte, bool) {
	for i := 0; i < len(raw); {
		// Copy a run of bytes that decode to themselves in one append.
		j := i
		for j < len(raw) && raw[j] != '%' && (raw[j] != '+' || !plusSpace) {
			j++
		}
		if j > i {
			dst = append(dst, raw[i:j]...)
			if i = j; i == len(raw) {
				break
			}
		}
		c, next, ok := DecodeAt(raw, i, plusSpace)
		if !ok {
			return dst, false
		}
		dst = append(dst, c)
		i = next
	}
	return dst, true
}

// Valid reports whether every '%' of raw starts a valid escape.
func Valid(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '%' {
			continue
		}
		if _, _, ok := DecodeAt(raw, i, false); !ok {
			return false
		}
		i += 2
	}
	return true
}

// AppendEncodeByte appends c as UriEncode writes it, '/' included (%2F).
func AppendEncodeByte(dst []byte, c byte) []byte {
	if Unreserved(c) {
		return append(dst, c)
	}
	return append(dst, '%', upperHex[c>>4], upperHex[c&15])
}

// AppendEncode appends s encoded with UriEncode; keepSlash leaves '/' as
// it is (paths, keys).
func AppendEncode(dst, s []byte, keepSlash bool) []byte {
	for _, c := range s {
		if c == '/' && keepSlash {
			dst = append(dst, c)
			continue
		}
		dst = AppendEncodeByte(dst, c)
	}
	return dst
}
