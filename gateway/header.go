package gateway

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// headerField is one request header with its name lower-cased. Values alias
// fasthttp's request buffers, which outlive the request's handling.
type headerField struct {
	name, value []byte
}

// headerIndex is a lower-cased snapshot of a fasthttp request's headers. It
// implements sigv4.HeaderReader and serves the header scans the proxy does
// (framing checks, forwarding) from one pass over fasthttp's header, with
// buffers reused across requests.
type headerIndex struct {
	fields []headerField
	names  []byte // lower-cased names, back to back
}

// reset indexes h. The names are copied (lower-cased) into ix's own buffer;
// the values alias h. With trustForwarded, a proxy's X-Forwarded-Host (its
// first entry) stands in for Host: it is the host the client signed.
func (ix *headerIndex) reset(h *fasthttp.RequestHeader, trustForwarded bool) {
	ix.fields = ix.fields[:0]
	ix.names = ix.names[:0]
	for k, v := range h.All() {
		for _, c := range k {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			ix.names = append(ix.names, c)
		}
		// Only the length is kept for now: ix.names may still move.
		ix.fields = append(ix.fields, headerField{name: ix.names[len(ix.names)-len(k):], value: v})
	}
	off := 0
	for i := range ix.fields {
		n := len(ix.fields[i].name)
		ix.fields[i].name = ix.names[off : off+n : off+n]
		off += n
	}
	if !trustForwarded {
		return
	}
	fwd := ix.get("x-forwarded-host")
	if i := bytes.IndexByte(fwd, ','); i >= 0 {
		fwd = bytes.TrimSpace(fwd[:i])
	}
	if len(fwd) == 0 {
		return
	}
	for i := range ix.fields {
		if string(ix.fields[i].name) == "host" {
			ix.fields[i].value = fwd
		}
	}
}

// clear drops the references to a finished request's buffers.
func (ix *headerIndex) clear() {
	clear(ix.fields)
	ix.fields = ix.fields[:0]
	ix.names = ix.names[:0]
}

// AppendValues implements sigv4.HeaderReader: name is lower-case.
func (ix *headerIndex) AppendValues(dst [][]byte, name []byte) [][]byte {
	for i := range ix.fields {
		if string(ix.fields[i].name) == string(name) {
			dst = append(dst, ix.fields[i].value)
		}
	}
	return dst
}

// count returns how many times the lower-case header name was sent.
func (ix *headerIndex) count(name string) int {
	n := 0
	for i := range ix.fields {
		if string(ix.fields[i].name) == name {
			n++
		}
	}
	return n
}

// get returns the first value of the lower-case header name, or nil.
func (ix *headerIndex) get(name string) []byte {
	for i := range ix.fields {
		if string(ix.fields[i].name) == name {
			return ix.fields[i].value
		}
	}
	return nil
}

// hasChecksum reports whether the request carries a checksum of its own
// (an x-amz-checksum-* header, the algorithm the SDK announces, or
// Content-MD5): the gateway then adds none.
func (ix *headerIndex) hasChecksum() bool {
	for i := range ix.fields {
		n := ix.fields[i].name
		if bytes.HasPrefix(n, []byte("x-amz-checksum-")) || string(n) == "x-amz-sdk-checksum-algorithm" ||
			string(n) == "content-md5" {
			return true
		}
	}
	return false
}
