package sigv4

import (
	"net/http"
	"strconv"
	"strings"
)

// HeaderReader gives sigv4 the request headers without tying it to an HTTP
// framework.
type HeaderReader interface {
	// AppendValues appends every value of header name (lower-case), in the
	// order received, and returns the extended slice. The appended slices
	// may alias the request's buffers; sigv4 never modifies them.
	AppendValues(dst [][]byte, name []byte) [][]byte
}

// Request is the part of an HTTP request that SigV4 covers.
type Request struct {
	Method   []byte
	RawPath  []byte // the path exactly as sent on the wire (still percent-encoded), no query
	RawQuery []byte // the query exactly as sent, without '?'
	Header   HeaderReader

	// PayloadHash is the hex SHA-256 of the body, for services other than
	// s3 that sign the body without sending x-amz-content-sha256 (the
	// presigned form of such a request has nowhere to carry it). Nil means
	// the header's value or, without one, the hash of an empty body. S3
	// requests ignore it: their payload hash always comes from the request.
	PayloadHash []byte
}

// FromHTTP adapts a net/http request. The path and query are taken from
// r.RequestURI when it holds the origin-form target as received, so the
// canonical request sees the client's own encoding; host comes from r.Host
// because net/http moves it out of r.Header.
func FromHTTP(r *http.Request) *Request {
	target := r.RequestURI
	var path, query string
	if strings.HasPrefix(target, "/") {
		path, query, _ = strings.Cut(target, "?")
	} else {
		path, query = r.URL.EscapedPath(), r.URL.RawQuery
	}
	return &Request{
		Method:   []byte(r.Method),
		RawPath:  []byte(path),
		RawQuery: []byte(query),
		Header:   httpHeader{h: r.Header, host: r.Host, contentLength: r.ContentLength},
	}
}

type httpHeader struct {
	h             http.Header
	host          string
	contentLength int64
}

func (h httpHeader) AppendValues(dst [][]byte, name []byte) [][]byte {
	n := string(name)
	if n == "host" {
		if h.host != "" {
			return append(dst, []byte(h.host))
		}
		for _, v := range h.h.Values("Host") {
			dst = append(dst, []byte(v))
		}
		return dst
	}
	vs := h.h.Values(n)
	for _, v := range vs {
		dst = append(dst, []byte(v))
	}
	// net/http may hold the length only in Request.ContentLength.
	if len(vs) == 0 && n == "content-length" && h.contentLength > 0 {
		dst = append(dst, strconv.AppendInt(nil, h.contentLength, 10))
	}
	return dst
}
