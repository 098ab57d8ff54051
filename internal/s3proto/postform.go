package s3proto

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"
)

// A browser-form upload (S3's POST Object, what boto3's
// generate_presigned_post signs) is a POST to the bucket whose body is
// multipart/form-data: the fields first (key, policy, x-amz-credential,
// x-amz-signature, …), the file last. The server needs the fields before it
// may read the file, and must never hold the file whole, so the parser reads
// only the head of the body, up to where the file's content begins; the
// caller streams the rest.

// Limits of a form's head.
const (
	// MaxPostFormHead bounds the bytes before the file's content: S3 caps
	// the policy at 20 KB, and a session token is 8 KiB at most.
	MaxPostFormHead = 64 << 10
	// MaxPostFormFields bounds the fields before the file.
	MaxPostFormFields = 100
	// maxPartHeader bounds one part's header block.
	maxPartHeader = 4 << 10
	// maxDispositionParams bounds a part's Content-Disposition parameters.
	maxDispositionParams = 8
)

// ErrPostFormIncomplete is ParsePostFormHead's answer when head ends before
// the file part's headers do: read more of the body and parse again.
var ErrPostFormIncomplete = errors.New("s3proto: the form's file part has not begun yet")

// PostForm is the head of a form upload: the fields before the file part,
// in order, and the file part's filename parameter. Field names and values
// alias the head ParsePostFormHead read, except where a quoted name or
// filename had to be unescaped.
type PostForm struct {
	Fields   []PostField
	FileName []byte
	HasFile  bool // the file part was found (ParsePostFormHead succeeded)

	buf []byte // unescaped names and filenames
}

// PostField is one form field.
type PostField struct{ Name, Value []byte }

// Reset clears f for reuse, keeping its buffers.
func (f *PostForm) Reset() {
	clear(f.Fields)
	*f = PostForm{Fields: f.Fields[:0], buf: f.buf[:0]}
}

// Get returns the value of the field called name (ASCII case-insensitive)
// and whether the form has it.
func (f *PostForm) Get(name string) ([]byte, bool) {
	for i := range f.Fields {
		if equalFold(f.Fields[i].Name, name) {
			return f.Fields[i].Value, true
		}
	}
	return nil, false
}

// MalformedPOSTRequest answers a form upload whose body is not the
// multipart/form-data S3 reads (400).
func MalformedPOSTRequest(msg string) *Error {
	return newError("MalformedPOSTRequest", http.StatusBadRequest,
		or(msg, "The body of your POST request is not well-formed multipart/form-data."))
}

// PostFormBoundary returns the boundary of a multipart/form-data Content-Type
// (RFC 2046: 1 to 70 characters of a restricted set, quoted or not).
// Anything else is not a form upload: S3 answers PreconditionFailed.
func PostFormBoundary(contentType []byte) ([]byte, *Error) {
	notForm := newError("PreconditionFailed", http.StatusPreconditionFailed,
		"Bucket POST must be of the enclosure-type multipart/form-data")
	typ, params, _ := bytes.Cut(contentType, []byte{';'})
	if !equalFold(bytes.TrimSpace(typ), "multipart/form-data") {
		return nil, notForm
	}
	var boundary []byte
	found := false
	for len(params) > 0 {
		var attr, value []byte
		var err *Error
		attr, value, params, err = nextParam(params, nil)
		if err != nil {
			return nil, MalformedPOSTRequest("The Content-Type header of the form is malformed.")
		}
		if !equalFold(attr, "boundary") {
			continue
		}
		if found {
			return nil, MalformedPOSTRequest("The Content-Type header names two boundaries.")
		}
		boundary, found = value, true
	}
	if !found || !validBoundary(boundary) {
		return nil, MalformedPOSTRequest("The Content-Type header of the form has no valid boundary.")
	}
	return boundary, nil
}

// validBoundary applies RFC 2046's boundary syntax.
func validBoundary(b []byte) bool {
	if len(b) == 0 || len(b) > 70 || b[len(b)-1] == ' ' {
		return false
	}
	for _, c := range b {
		switch {
		case isAlnum(c), bytes.IndexByte([]byte("'()+_,-./:=? "), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ParsePostFormHead reads the head of a multipart/form-data body: the parts
// before the one named "file", as fields, and the file part's headers. It
// returns the offset in head where the file's content begins. When head
// ends before that, the error is ErrPostFormIncomplete; every other error is
// an *Error (MalformedPOSTRequest, or InvalidArgument for a field the form
// may not carry twice). dst is reset first.
//
// It accepts what browsers, curl and the SDKs' form encoders write and
// refuses the rest: the body must start with the first delimiter (no
// preamble), lines end in CRLF, each part has one Content-Disposition of
// type form-data with a name, names are HTTP tokens and unique
// (case-insensitively, as S3 reads them).
func ParsePostFormHead(dst *PostForm, head, boundary []byte) (fileStart int, err error) {
	dst.Reset()
	if !validBoundary(boundary) {
		return 0, MalformedPOSTRequest("")
	}
	// The delimiter is "--boundary"; between parts it follows a CRLF.
	delimLen := 2 + len(boundary)
	if !hasDelimiter(head, boundary) {
		if len(head) < delimLen && isPrefixOfDelimiter(head, boundary) {
			return 0, ErrPostFormIncomplete
		}
		return 0, MalformedPOSTRequest("")
	}
	i := delimLen
	for {
		// After a delimiter: "--" closes the body, else optional white space
		// and CRLF start a part.
		for i < len(head) && (head[i] == ' ' || head[i] == '\t') {
			i++
		}
		if len(head)-i < 2 {
			return 0, ErrPostFormIncomplete
		}
		if head[i] == '-' && head[i+1] == '-' {
			return 0, InvalidArgument("POST requires exactly one file upload per request.")
		}
		if head[i] != '\r' || head[i+1] != '\n' {
			return 0, MalformedPOSTRequest("")
		}
		i += 2

		// The part's header block.
		end := bytes.Index(head[i:], []byte("\r\n\r\n"))
		if end < 0 {
			if len(head)-i > maxPartHeader {
				return 0, MalformedPOSTRequest("A part's header block is too large.")
			}
			return 0, ErrPostFormIncomplete
		}
		if end > maxPartHeader {
			return 0, MalformedPOSTRequest("A part's header block is too large.")
		}
		name, filename, hasFilename, perr := dst.partHeader(head[i : i+end])
		if perr != nil {
			return 0, perr
		}
		content := i + end + 4
		if equalFold(name, "file") {
			if hasFilename {
				dst.FileName = filename
			}
			dst.HasFile = true
			return content, nil
		}

		// A field: its value runs up to the next delimiter.
		k := indexDelimiter(head[content:], boundary)
		if k < 0 {
			return 0, ErrPostFormIncomplete
		}
		if _, dup := dst.Get(string(name)); dup {
			return 0, InvalidArgument("The POST form has the field " + printable(name) + " more than once.")
		}
		if len(dst.Fields) == MaxPostFormFields {
			return 0, MalformedPOSTRequest("The POST form has too many fields.")
		}
		dst.Fields = append(dst.Fields, PostField{Name: name, Value: head[content : content+k : content+k]})
		i = content + k + 2 + delimLen
	}
}

// hasDelimiter reports whether b starts with "--" + boundary.
func hasDelimiter(b, boundary []byte) bool {
	return len(b) >= 2+len(boundary) && b[0] == '-' && b[1] == '-' && bytes.Equal(b[2:2+len(boundary)], boundary)
}

// isPrefixOfDelimiter reports whether b could still become "--" + boundary.
func isPrefixOfDelimiter(b, boundary []byte) bool {
	for i, c := range b {
		want := byte('-')
		if i >= 2 {
			want = boundary[i-2]
		}
		if c != want {
			return false
		}
	}
	return true
}

// indexDelimiter returns the offset of the first delimiter in b: CRLF,
// "--", the boundary, then "--", white space or a line end (a boundary
// followed by anything else is content, as Go's mime/multipart reads it).
// It returns -1 when b holds none, or ends before the byte that decides.
func indexDelimiter(b, boundary []byte) int {
	for off := 0; ; {
		j := bytes.Index(b[off:], []byte("\r\n--"))
		if j < 0 {
			return -1
		}
		j += off
		after := j + 4 + len(boundary)
		if bytes.HasPrefix(b[j+4:], boundary) {
			if after >= len(b) {
				return -1
			}
			switch b[after] {
			case ' ', '\t', '\r', '\n':
				return j
			case '-':
				if after+1 >= len(b) {
					return -1
				}
				if b[after+1] == '-' {
					return j
				}
			}
		} else if len(b)-(j+4) < len(boundary) && bytes.HasPrefix(boundary, b[j+4:]) {
			return -1
		}
		off = j + 1
	}
}

// partHeader reads a part's header lines (without the blank line ending
// them): exactly one Content-Disposition: form-data with a name; other
// headers (the file's Content-Type) are allowed and ignored.
func (f *PostForm) partHeader(block []byte) (name, filename []byte, hasFilename bool, err *Error) {
	var disposition []byte
	found := false
	for len(block) > 0 {
		line := block
		if j := bytes.Index(block, []byte("\r\n")); j >= 0 {
			line, block = block[:j], block[j+2:]
		} else {
			block = nil
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return nil, nil, false, MalformedPOSTRequest("")
		}
		// White space around a value is spaces and tabs (RFC 9110); other
		// control characters are not in a header at all.
		value := bytes.Trim(line[colon+1:], " \t")
		for _, c := range value {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return nil, nil, false, MalformedPOSTRequest("")
			}
		}
		if !equalFold(line[:colon], "content-disposition") {
			continue
		}
		if found {
			return nil, nil, false, MalformedPOSTRequest("A part has two Content-Disposition headers.")
		}
		disposition, found = value, true
	}
	if !found {
		return nil, nil, false, MalformedPOSTRequest("A part has no Content-Disposition header.")
	}
	typ, params, _ := bytes.Cut(disposition, []byte{';'})
	if !equalFold(bytes.Trim(typ, " \t"), "form-data") {
		return nil, nil, false, MalformedPOSTRequest("A part is not form-data.")
	}
	hasName := false
	// A parameter given twice is refused, as mime.ParseMediaType does.
	var seen [maxDispositionParams][]byte
	n := 0
	for len(params) > 0 {
		var attr, value []byte
		attr, value, params, err = nextParam(params, &f.buf)
		if err != nil {
			return nil, nil, false, err
		}
		if n == len(seen) {
			return nil, nil, false, MalformedPOSTRequest("A part's Content-Disposition has too many parameters.")
		}
		for _, a := range seen[:n] {
			if equalFold(a, string(attr)) {
				return nil, nil, false, MalformedPOSTRequest("A part's Content-Disposition repeats a parameter.")
			}
		}
		seen[n] = attr
		n++
		switch {
		case equalFold(attr, "name"):
			name, hasName = value, true
		case equalFold(attr, "filename"):
			filename, hasFilename = value, true
		}
	}
	if !hasName || !isToken(name) {
		return nil, nil, false, MalformedPOSTRequest("A part has no valid field name.")
	}
	return name, filename, hasFilename, nil
}

// nextParam reads one "; attr=value" parameter (RFC 2045: value a token or
// a quoted string) from s, returning the rest. A quoted value with escapes
// is unescaped into *buf (nil: escapes are refused).
func nextParam(s []byte, buf *[]byte) (attr, value, rest []byte, err *Error) {
	s = bytes.TrimLeft(s, " \t")
	eq := bytes.IndexByte(s, '=')
	if eq <= 0 {
		return nil, nil, nil, MalformedPOSTRequest("")
	}
	attr = bytes.TrimRight(s[:eq], " \t")
	if !isToken(attr) {
		return nil, nil, nil, MalformedPOSTRequest("")
	}
	s = bytes.TrimLeft(s[eq+1:], " \t")
	if len(s) > 0 && s[0] == '"' {
		// A backslash escapes a special character (RFC 2045's tspecials,
		// as mime.ParseMediaType reads it); before any other it is itself.
		j := 1
		escaped := false
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] == '\\' && j+1 < len(s) && isTSpecial(s[j+1]) {
				escaped = true
				j++
			}
		}
		if j >= len(s) {
			return nil, nil, nil, MalformedPOSTRequest("")
		}
		value = s[1:j]
		if escaped {
			if buf == nil {
				return nil, nil, nil, MalformedPOSTRequest("")
			}
			start := len(*buf)
			for k := 0; k < len(value); k++ {
				if value[k] == '\\' && k+1 < len(value) && isTSpecial(value[k+1]) {
					k++
				}
				*buf = append(*buf, value[k])
			}
			value = (*buf)[start:len(*buf):len(*buf)]
		}
		s = bytes.TrimLeft(s[j+1:], " \t")
	} else {
		j := bytes.IndexByte(s, ';')
		if j < 0 {
			j = len(s)
		}
		value = bytes.TrimRight(s[:j], " \t")
		if !isToken(value) {
			return nil, nil, nil, MalformedPOSTRequest("")
		}
		s = s[j:]
	}
	switch {
	case len(s) == 0:
	case s[0] == ';':
		s = s[1:]
	default:
		return nil, nil, nil, MalformedPOSTRequest("")
	}
	return attr, value, s, nil
}

// isTSpecial reports whether c is one of RFC 2045's tspecials.
func isTSpecial(c byte) bool { return bytes.IndexByte([]byte(`()<>@,;:\"/[]?=`), c) >= 0 }

// isToken reports whether b is a non-empty HTTP token (RFC 9110 tchar).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isAlnum(c) && bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) < 0 {
			return false
		}
	}
	return true
}

// printable quotes a field name for a message: names are tokens, so only
// the quotes are added.
func printable(name []byte) string { return `"` + string(name) + `"` }

// PostFieldKind says what a form field is for.
type PostFieldKind uint8

const (
	// PostFieldUnsupported is a field the gateway does not carry out; the
	// form is refused rather than have it ignored.
	PostFieldUnsupported PostFieldKind = iota
	PostFieldAuth                      // policy, x-amz-algorithm, x-amz-credential, x-amz-date, x-amz-signature, x-amz-security-token
	PostFieldKey                       // key
	PostFieldResponse                  // success_action_status, success_action_redirect, redirect
	PostFieldIgnored                   // x-ignore-*
	PostFieldHeader                    // becomes a header of the PutObject (the header name is returned)
)

// ClassifyPostField says what the form field name (any case) does and, for
// a PostFieldHeader, the lower-case header of the PutObject that carries
// it. The headers are the object's own (Content-Type, Cache-Control, …,
// x-amz-meta-*, the storage class, server-side encryption, checksums) and
// the ACL; never one that changes what the request does, such as
// x-amz-copy-source, or how its body is framed.
func ClassifyPostField(name []byte) (PostFieldKind, string) {
	lower := make([]byte, 0, 64)
	for _, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower = append(lower, c)
	}
	n := string(lower)
	switch n {
	case "policy", "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature", "x-amz-security-token":
		return PostFieldAuth, ""
	case "key":
		return PostFieldKey, ""
	case "success_action_status", "success_action_redirect", "redirect":
		return PostFieldResponse, ""
	case "acl":
		return PostFieldHeader, "x-amz-acl"
	case "content-type", "cache-control", "content-disposition", "content-encoding", "content-language", "expires",
		"x-amz-storage-class", "x-amz-website-redirect-location",
		"x-amz-checksum-crc32", "x-amz-checksum-crc32c", "x-amz-checksum-crc64nvme", "x-amz-checksum-sha1", "x-amz-checksum-sha256",
		"x-amz-server-side-encryption", "x-amz-server-side-encryption-aws-kms-key-id", "x-amz-server-side-encryption-context",
		"x-amz-server-side-encryption-bucket-key-enabled", "x-amz-server-side-encryption-customer-algorithm",
		"x-amz-server-side-encryption-customer-key", "x-amz-server-side-encryption-customer-key-md5":
		return PostFieldHeader, n
	}
	switch {
	case strings.HasPrefix(n, "x-ignore-"):
		return PostFieldIgnored, ""
	case strings.HasPrefix(n, "x-amz-meta-") && len(n) > len("x-amz-meta-"):
		return PostFieldHeader, n
	}
	return PostFieldUnsupported, ""
}

// ValidHeaderValue reports whether a form field's value can be sent as a
// header value as it is: no control characters but tab, valid UTF-8.
func ValidHeaderValue(v []byte) bool {
	for _, c := range v {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(v)
}

// AppendPostResponse appends the document S3 answers a form upload with
// when the form asks for status 201:
//
//	<?xml version="1.0" encoding="UTF-8"?>
//	<PostResponse xmlns="…"><Location>…</Location><Bucket>…</Bucket><Key>…</Key><ETag>…</ETag></PostResponse>
func AppendPostResponse(dst, location, bucket, key, etag []byte) []byte {
	dst = append(dst, xmlHeader...)
	dst = append(dst, `<PostResponse xmlns="`+s3Namespace+`"><Location>`...)
	dst = appendEscaped(dst, location)
	dst = append(dst, "</Location><Bucket>"...)
	dst = appendEscaped(dst, bucket)
	dst = append(dst, "</Bucket><Key>"...)
	dst = appendEscaped(dst, key)
	dst = append(dst, "</Key><ETag>"...)
	dst = appendEscaped(dst, etag)
	return append(dst, "</ETag></PostResponse>"...)
}
