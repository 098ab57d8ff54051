package rest

import (
	"bytes"
	"compress/gzip"
	"sync"
)

// LoadTable answers from the cache are sent gzip-compressed to clients that
// accept it (PyIceberg's requests, the Java client's HttpClient, Go's
// net/http all do, and decode it transparently): table metadata is JSON
// that compresses several times over, so the answer costs the client and
// the network a fraction of the bytes, and the server a fraction of the
// socket writes. Each cached body is compressed once, when first asked
// for, and kept beside it. Answers built per request (vended credentials,
// remote signing) are sent as they are.

// gzipMinBody is the smallest body worth compressing.
const gzipMinBody = 1 << 10

// gzBody is the compressed form of one cached body, made on first use.
// It names the body it was made for: an entry copied with another body
// (a governed stamp) and this slot would not match, and the answer would
// go uncompressed rather than be another entry's bytes.
type gzBody struct {
	src  []byte
	once sync.Once
	gz   []byte // nil: compression failed or did not pay
}

// setBody sets e's body and gives it an empty compression slot of its own.
func (e *loadEntry) setBody(body []byte) {
	e.body, e.gz = body, &gzBody{src: body}
}

// gzipped is e's body compressed, or nil.
func (e *loadEntry) gzipped() []byte {
	z := e.gz
	if z == nil || len(e.body) < gzipMinBody || len(z.src) != len(e.body) || &z.src[0] != &e.body[0] {
		return nil
	}
	z.once.Do(func() {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
		if _, err := w.Write(z.src); err != nil {
			return
		}
		if err := w.Close(); err != nil || b.Len() >= len(z.src) {
			return
		}
		z.gz = b.Bytes()
	})
	return z.gz
}

// acceptsGzip reports whether an Accept-Encoding value accepts gzip
// (RFC 9110 §12.5.3): gzip or x-gzip, or "*", with a q-value that is not
// zero; an explicit gzip;q=0 refuses it even beside "*".
func acceptsGzip(h []byte) bool {
	star := false
	for len(h) > 0 {
		var item []byte
		item, h, _ = bytes.Cut(h, []byte(","))
		name, params, _ := bytes.Cut(item, []byte(";"))
		name = bytes.TrimSpace(name)
		isGzip := bytes.EqualFold(name, []byte("gzip")) || bytes.EqualFold(name, []byte("x-gzip"))
		if !isGzip && !bytes.Equal(name, []byte("*")) {
			continue
		}
		ok := !qZero(params)
		if isGzip {
			return ok
		}
		star = ok
	}
	return star
}

// qZero reports whether an Accept-Encoding item's parameters give it q=0
// (written 0, 0., 0.0, 0.00 or 0.000).
func qZero(params []byte) bool {
	for len(params) > 0 {
		var p []byte
		p, params, _ = bytes.Cut(params, []byte(";"))
		k, v, ok := bytes.Cut(bytes.TrimSpace(p), []byte("="))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(k), []byte("q")) {
			continue
		}
		v = bytes.TrimSpace(v)
		if len(v) == 0 || v[0] != '0' {
			return false
		}
		v = bytes.TrimLeft(bytes.TrimPrefix(v[1:], []byte(".")), "0")
		return len(v) == 0
	}
	return false
}
