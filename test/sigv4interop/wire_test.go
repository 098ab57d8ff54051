package sigv4interop

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"github.com/duckicelake/duckicelake/sigv4"
)

// wireRequest is a captured request split into the parts a mutation
// changes: the request line, the header fields in wire order and spelling,
// and the message body with the HTTP framing (Content-Length or
// Transfer-Encoding: chunked) removed — the aws-chunked encoding stays.
type wireRequest struct {
	Method, Target, Proto string
	Header                []field
	Body                  []byte
}

type field struct{ Name, Value string }

func parseWire(raw []byte) (*wireRequest, error) {
	head, rest, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		return nil, errors.New("no end of header")
	}
	lines := strings.Split(string(head), "\r\n")
	parts := strings.SplitN(lines[0], " ", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("bad request line %q", lines[0])
	}
	w := &wireRequest{Method: parts[0], Target: parts[1], Proto: parts[2]}
	chunked, length := false, -1
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("bad header line %q", l)
		}
		value = strings.Trim(value, " \t")
		w.Header = append(w.Header, field{name, value})
		switch strings.ToLower(name) {
		case "transfer-encoding":
			chunked = strings.EqualFold(value, "chunked")
		case "content-length":
			n, err := strconv.Atoi(value)
			if err != nil {
				return nil, fmt.Errorf("bad content-length %q", value)
			}
			length = n
		}
	}
	switch {
	case chunked:
		body, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(rest)))
		if err != nil {
			return nil, fmt.Errorf("HTTP chunked body: %w", err)
		}
		w.Body = body
	case length >= 0:
		if len(rest) < length {
			return nil, fmt.Errorf("body has %d of %d bytes", len(rest), length)
		}
		w.Body = rest[:length]
	}
	return w, nil
}

func (w *wireRequest) clone() *wireRequest {
	c := *w
	c.Header = append([]field(nil), w.Header...)
	c.Body = bytes.Clone(w.Body)
	return &c
}

// get returns the index of header name (case-insensitive), or -1.
func (w *wireRequest) get(name string) int {
	for i, f := range w.Header {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func (w *wireRequest) value(name string) string {
	if i := w.get(name); i >= 0 {
		return w.Header[i].Value
	}
	return ""
}

// head serialises the request line and header.
func (w *wireRequest) head() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\r\n", w.Method, w.Target, w.Proto)
	for _, f := range w.Header {
		fmt.Fprintf(&b, "%s: %s\r\n", f.Name, f.Value)
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// httpRequest parses the header the way the server did and attaches Body as
// delivered after HTTP framing: a body shorter than its Content-Length ends
// in a clean EOF, so what is tested is sigv4's length check, not net/http's.
func (w *wireRequest) httpRequest() (*http.Request, error) {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(w.head())))
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(w.Body))
	return r, nil
}

// signedHeaders lists the signed header names of a header- or query-signed request.
func (w *wireRequest) signedHeaders() []string {
	if auth := w.value("authorization"); auth != "" {
		_, rest, _ := strings.Cut(auth, "SignedHeaders=")
		list, _, _ := strings.Cut(rest, ",")
		return strings.Split(strings.TrimSpace(list), ";")
	}
	if v, ok := w.queryParam("X-Amz-SignedHeaders"); ok {
		return strings.Split(strings.ReplaceAll(v, "%3B", ";"), ";")
	}
	return nil
}

// queryParam returns the raw value of query parameter name.
func (w *wireRequest) queryParam(name string) (string, bool) {
	_, q, _ := strings.Cut(w.Target, "?")
	for _, kv := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k == name {
			return v, true
		}
	}
	return "", false
}

// signedTime is the request time the client signed, from x-amz-date or X-Amz-Date.
func (w *wireRequest) signedTime() (time.Time, error) {
	v := w.value("x-amz-date")
	if v == "" {
		v, _ = w.queryParam("X-Amz-Date")
	}
	return time.Parse("20060102T150405Z", v)
}

// replay verifies w as the capture server would, at time now.
func (w *wireRequest) replay(now time.Time) (*exchange, error) {
	r, err := w.httpRequest()
	if err != nil {
		return nil, err
	}
	v := sigv4.NewVerifier(region, "s3")
	v.Now = func() time.Time { return now }
	ex := &exchange{Method: w.Method, Target: w.Target}
	ex.Err = verifyHTTP(v, testStore(), r, ex)
	return ex, nil
}

// flip changes the byte at i to a different byte of the same kind (digit,
// hex letter, letter), so the value stays well-formed and only its meaning
// changes.
func flip(s string, i int) string {
	b := []byte(s)
	switch c := b[i]; {
	case c == '9' || c == 'f' || c == 'F' || c == 'z' || c == 'Z':
		b[i] = c - 1
	case c >= '0' && c <= '8', c >= 'a' && c < 'z', c >= 'A' && c < 'Z':
		b[i] = c + 1
	default:
		panic(fmt.Sprintf("flip: %q at %d is not alphanumeric", c, i))
	}
	return string(b)
}

// lastAlnum returns the index of the last letter or digit in s, or -1.
func lastAlnum(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return i
		}
	}
	return -1
}

// lastDigit returns the index of the last decimal digit in s, or -1.
func lastDigit(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] >= '0' && s[i] <= '9' {
			return i
		}
	}
	return -1
}

// awsChunked is the layout of an aws-chunked body: where each chunk's
// signature and data are, and where the trailer lines are.
type awsChunked struct {
	Chunks   []chunkFrame
	Trailers []trailerLine
}

type chunkFrame struct {
	Size      int
	SigStart  int // offset of the hex chunk signature, -1 if unsigned
	DataStart int
}

type trailerLine struct {
	Name       string
	ValueStart int
	ValueEnd   int
}

func parseAWSChunked(body []byte) (*awsChunked, error) {
	var c awsChunked
	pos := 0
	line := func() (string, int, error) {
		i := bytes.Index(body[pos:], []byte("\r\n"))
		if i < 0 {
			return "", 0, fmt.Errorf("no CRLF after offset %d", pos)
		}
		start := pos
		pos += i + 2
		return string(body[start : start+i]), start, nil
	}
	for {
		l, start, err := line()
		if err != nil {
			return nil, err
		}
		sizeHex, ext, _ := strings.Cut(l, ";")
		size, err := strconv.ParseInt(sizeHex, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("chunk size %q: %w", sizeHex, err)
		}
		f := chunkFrame{Size: int(size), SigStart: -1, DataStart: pos}
		if sig, ok := strings.CutPrefix(ext, "chunk-signature="); ok && len(sig) == 64 {
			f.SigStart = start + len(sizeHex) + 1 + len("chunk-signature=")
		}
		c.Chunks = append(c.Chunks, f)
		if size == 0 {
			break
		}
		pos += int(size)
		if !bytes.HasPrefix(body[pos:], []byte("\r\n")) {
			return nil, fmt.Errorf("no CRLF after chunk data at %d", pos)
		}
		pos += 2
	}
	for pos < len(body) {
		l, start, err := line()
		if err != nil {
			return nil, err
		}
		if l == "" {
			break
		}
		name, _, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("bad trailer line %q", l)
		}
		vs := start + len(name) + 1
		for vs < start+len(l) && body[vs] == ' ' {
			vs++
		}
		c.Trailers = append(c.Trailers, trailerLine{Name: strings.ToLower(name), ValueStart: vs, ValueEnd: start + len(l)})
	}
	return &c, nil
}
