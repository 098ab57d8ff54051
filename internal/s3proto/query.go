package s3proto

import (
	"bytes"

	"github.com/duckicelake/duckicelake/internal/pct"
)

// AppendForwardQuery appends the client's raw query without the presigned
// URL parameters (X-Amz-*, compared after percent-decoding): the upstream
// request is authenticated by its header signature alone.
func AppendForwardQuery(dst, q []byte) []byte {
	start := len(dst)
	for len(q) > 0 {
		var p []byte
		p, q, _ = bytes.Cut(q, []byte{'&'})
		if len(p) == 0 {
			continue
		}
		name := p
		if i := bytes.IndexByte(p, '='); i >= 0 {
			name = p[:i]
		}
		if hasDecodedPrefixFold(name, "x-amz-") {
			continue
		}
		if len(dst) > start {
			dst = append(dst, '&')
		}
		dst = append(dst, p...)
	}
	return dst
}

// hasDecodedPrefixFold reports whether the percent-decoded raw starts with
// the lower-case ASCII prefix, ignoring case. A malformed escape stands for
// itself: the classifier has refused such names before this runs.
func hasDecodedPrefixFold(raw []byte, prefix string) bool {
	i := 0
	for j := 0; j < len(prefix); j++ {
		if i >= len(raw) {
			return false
		}
		c, next, ok := pct.DecodeAt(raw, i, false)
		if !ok {
			c, next = raw[i], i+1
		}
		i = next
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[j] {
			return false
		}
	}
	return true
}
