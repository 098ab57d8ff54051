package s3proto

import (
	"bytes"
	"unicode/utf8"

	"github.com/duckicelake/duckicelake/internal/pct"
	"github.com/duckicelake/duckicelake/sigv4"
)

// MaxKeyLength is S3's limit on an object key, in bytes.
const MaxKeyLength = 1024

// Request is a classified S3 request: the operation and every key it
// touches, decoded. Its byte slices point into buffers the Request owns and
// reuses, so they stay valid until the next Classify or Reset; callers that
// keep them longer copy them.
type Request struct {
	Op     Op
	Bucket []byte // decoded; empty only for ListBuckets
	Key    []byte // decoded object key; empty for bucket and service ops

	// CopySourceBucket and CopySourceKey are the decoded x-amz-copy-source
	// of CopyObject and UploadPartCopy; CopySourceVersion is its versionId.
	CopySourceBucket, CopySourceKey []byte
	CopySourceVersion               []byte

	// ListPrefix is the decoded prefix of a list op (empty = the whole
	// bucket). For ListBuckets it is a bucket-name prefix.
	ListPrefix []byte

	// VirtualHosted reports that Bucket came from the Host header.
	VirtualHosted bool

	buf     []byte   // backing store of the decoded fields above
	hdrVals [][]byte // scratch for HeaderReader.AppendValues
	hdrName []byte   // "x-amz-copy-source", kept to avoid an allocation per call
}

// Reset clears r for reuse, keeping its buffers.
func (r *Request) Reset() {
	buf, vals, name := r.buf[:0], r.hdrVals[:0], r.hdrName
	*r = Request{buf: buf, hdrVals: vals, hdrName: name}
}

// AppendPath appends the request's path in the canonical path-style form
// the upstream should receive: "/", "/bucket" or "/bucket/key", every key
// byte outside the unreserved set and '/' percent-encoded. Building the
// upstream request from the classified bucket and key, never from the
// client's raw path or Host, guarantees the upstream acts on exactly the
// object the scope check saw.
func (r *Request) AppendPath(dst []byte) []byte {
	dst = append(dst, '/')
	if len(r.Bucket) == 0 {
		return dst
	}
	dst = append(dst, r.Bucket...)
	if len(r.Key) == 0 {
		return dst
	}
	dst = append(dst, '/')
	return pct.AppendEncode(dst, r.Key, true)
}

// AppendCopySource appends the canonical x-amz-copy-source value for the
// upstream, "bucket/key" percent-encoded plus "?versionId=…" when the
// client named a version; nothing when the request has no copy source.
func (r *Request) AppendCopySource(dst []byte) []byte {
	if len(r.CopySourceBucket) == 0 {
		return dst
	}
	dst = append(dst, r.CopySourceBucket...)
	dst = append(dst, '/')
	dst = pct.AppendEncode(dst, r.CopySourceKey, true)
	if len(r.CopySourceVersion) > 0 {
		dst = append(dst, "?versionId="...)
		dst = pct.AppendEncode(dst, r.CopySourceVersion, false)
	}
	return dst
}

// Classifier turns a request line and headers into a Request. Its fields
// are configuration, read-only while it serves, so one Classifier is safe
// for concurrent use.
type Classifier struct {
	// VirtualHostSuffixes are the hosts (lower-case, no port) under which a
	// leading label names the bucket: with "s3.localhost",
	// "lake.s3.localhost" is bucket lake, virtual-hosted. A Host equal to a
	// suffix, or matching none, is path-style. Empty means path-style only.
	VirtualHostSuffixes [][]byte
}

// span is a field's position in Request.buf; fields are set from spans once
// all decoding is done, because appending may move buf.
type span struct{ start, end int }

func (s span) of(buf []byte) []byte {
	if s.end == s.start {
		return nil
	}
	return buf[s.start:s.end:s.end]
}

// Query parameters that select the operation ("sub-resources"). A request
// is classified by the set of these it carries.
const (
	subLocation uint32 = 1 << iota
	subListType
	subVersions
	subUploads
	subDelete
	subUploadID
	subPartNumber
	subTagging
	subAttributes
	subAdmin   // a bucket configuration sub-resource: root only
	subUnknown // a parameter the gateway does not know: root only
)

// Ordinary parameters the gateway reads or whose duplicates it refuses:
// with two copies the gateway and the upstream could each read another.
const (
	parPrefix uint32 = 1 << (iota + 16)
	parVersionID
	// parOrdinary marks every other known parameter; it may repeat
	// harmlessly, so it takes no part in the duplicate check.
	parOrdinary
)

// Classify fills dst from the request line and headers; the body is never
// read (DeleteObjects keys come from ParseDeleteObjects). method is the
// upper-case HTTP method, host the Host header (port allowed), rawPath the
// path exactly as sent (percent-encoded, without the query) and rawQuery the
// query without '?'. hdr is consulted only for x-amz-copy-source.
//
// Keys are percent-decoded exactly once ('+' is a literal plus in the path;
// in the query it is a space, as form decoding and every Go S3 server read
// it). Keys the gateway refuses for any backend are errors; see
// checkKeyPath. Errors are *Error; on error dst.Op is OpUnknown.
func (c *Classifier) Classify(dst *Request, method, host, rawPath, rawQuery []byte, hdr sigv4.HeaderReader) error {
	dst.Reset()
	var bucket, key, prefix, srcBucket, srcKey, srcVersion span
	vhost := false

	// Bucket from the Host header (virtual-hosted style).
	if b, ok := c.hostBucket(host); ok {
		start := len(dst.buf)
		for _, ch := range b {
			if 'A' <= ch && ch <= 'Z' {
				ch += 'a' - 'A'
			}
			dst.buf = append(dst.buf, ch)
		}
		bucket = span{start, len(dst.buf)}
		if !validBucketName(dst.buf[start:]) {
			return InvalidBucketName("")
		}
		vhost = true
	}

	// Path.
	if len(rawPath) == 0 {
		rawPath = []byte{'/'}
	}
	if rawPath[0] != '/' {
		return InvalidURI("")
	}
	for _, ch := range rawPath {
		if ch < 0x20 || ch == 0x7f || ch == '#' {
			return InvalidURI("")
		}
	}
	rest := rawPath[1:]
	var rawKey []byte
	if vhost {
		// The whole path is the key: a path that names another bucket is a
		// key inside the Host's bucket, as S3 reads it.
		rawKey = rest
	} else if len(rest) > 0 {
		rawBucket := rest
		if i := bytes.IndexByte(rest, '/'); i >= 0 {
			rawBucket, rawKey = rest[:i], rest[i+1:]
		}
		start := len(dst.buf)
		var ok bool
		if dst.buf, ok = pct.AppendDecode(dst.buf, rawBucket, false); !ok {
			return InvalidURI("")
		}
		bucket = span{start, len(dst.buf)}
		// Validated even when empty: "//x" must not fall back to the
		// service level.
		if !validBucketName(dst.buf[bucket.start:bucket.end]) {
			return InvalidBucketName("")
		}
	}
	if len(rawKey) > 0 {
		start := len(dst.buf)
		var ok bool
		if dst.buf, ok = pct.AppendDecode(dst.buf, rawKey, false); !ok {
			return InvalidURI("")
		}
		key = span{start, len(dst.buf)}
		if err := checkKey(dst.buf[key.start:key.end]); err != nil {
			return err
		}
	}

	// Query.
	var subs, seen uint32
	for q := rawQuery; len(q) > 0; {
		var param []byte
		param, q, _ = bytes.Cut(q, []byte{'&'})
		if len(param) == 0 {
			continue
		}
		rawName, rawValue := param, []byte(nil)
		if i := bytes.IndexByte(param, '='); i >= 0 {
			rawName, rawValue = param[:i], param[i+1:]
		}
		var nameBuf [48]byte
		name, ok := pct.AppendDecode(nameBuf[:0], rawName, true)
		if !ok {
			return InvalidURI("")
		}
		bit, isSub := paramBit(name)
		if bit == 0 {
			if len(name) > len("x-amz-") && hasPrefixFold(name, "x-amz-") {
				// Presigned auth and headers hoisted into the query. S3 honours
				// a hoisted x-amz-copy-source, so it would name a source the
				// scope check never saw: only the header form is accepted.
				if equalFold(name, "x-amz-copy-source") {
					return InvalidArgument("x-amz-copy-source is accepted only as a header")
				}
				continue
			}
			subs |= subUnknown
			continue
		}
		if bit != subAdmin && bit != parOrdinary {
			if seen&bit != 0 {
				return InvalidArgument("duplicate query parameter")
			}
			seen |= bit
		}
		if isSub {
			subs |= bit
		}
		switch bit {
		case subListType:
			if string(rawValue) != "2" {
				return InvalidArgument("list-type must be 2")
			}
		case parPrefix:
			start := len(dst.buf)
			if dst.buf, ok = pct.AppendDecode(dst.buf, rawValue, true); !ok {
				return InvalidURI("")
			}
			prefix = span{start, len(dst.buf)}
		default:
			if !pct.Valid(rawValue) {
				return InvalidURI("")
			}
		}
	}

	op := decideOp(method, bucket.end > bucket.start, key.end > key.start, subs)

	// Copy source: read only for the PUTs that can carry one, refused on
	// every other PUT so that no op reaches the upstream with a source the
	// scope check did not see.
	if string(method) == "PUT" && key.end > key.start && hdr != nil {
		if dst.hdrName == nil {
			dst.hdrName = []byte("x-amz-copy-source")
		}
		dst.hdrVals = hdr.AppendValues(dst.hdrVals[:0], dst.hdrName)
		n := len(dst.hdrVals)
		var v []byte
		if n > 0 {
			v = dst.hdrVals[0]
		}
		clear(dst.hdrVals) // do not pin the caller's header memory
		if n > 0 {
			switch op {
			case OpPutObject:
				op = OpCopyObject
			case OpUploadPart:
				op = OpUploadPartCopy
			default:
				return InvalidRequest("x-amz-copy-source is not valid for this operation")
			}
			if n > 1 {
				return InvalidArgument("more than one x-amz-copy-source header")
			}
			var err error
			srcBucket, srcKey, srcVersion, err = parseCopySource(&dst.buf, v)
			if err != nil {
				return err
			}
		}
	}

	switch {
	case op.IsList():
		if err := checkPrefix(dst.buf[prefix.start:prefix.end]); err != nil {
			return err
		}
	case op == OpListBuckets:
		// A bucket-name prefix: the server filters the listing anyway.
	default:
		prefix = span{}
	}

	dst.Op = op
	dst.VirtualHosted = vhost
	dst.Bucket = bucket.of(dst.buf)
	dst.Key = key.of(dst.buf)
	dst.ListPrefix = prefix.of(dst.buf)
	dst.CopySourceBucket = srcBucket.of(dst.buf)
	dst.CopySourceKey = srcKey.of(dst.buf)
	dst.CopySourceVersion = srcVersion.of(dst.buf)
	return nil
}

// decideOp maps method, resource level and sub-resources to the op. Every
// combination not listed is OpUnknown.
func decideOp(method []byte, hasBucket, hasKey bool, subs uint32) Op {
	if subs&subUnknown != 0 {
		return OpUnknown
	}
	m := string(method)
	switch {
	case !hasBucket:
		if m == "GET" && subs == 0 {
			return OpListBuckets
		}
	case !hasKey:
		if subs&subAdmin != 0 {
			return OpBucketAdmin
		}
		switch m {
		case "GET":
			switch subs {
			case 0:
				return OpListObjects
			case subListType:
				return OpListObjectsV2
			case subLocation:
				return OpGetBucketLocation
			case subVersions:
				return OpListObjectVersions
			case subUploads:
				return OpListMultipartUploads
			case subTagging:
				return OpBucketAdmin
			}
		case "HEAD":
			if subs == 0 {
				return OpHeadBucket
			}
		case "PUT":
			switch subs {
			case 0:
				return OpCreateBucket
			case subTagging:
				return OpBucketAdmin
			}
		case "DELETE":
			switch subs {
			case 0:
				return OpDeleteBucket
			case subTagging:
				return OpBucketAdmin
			}
		case "POST":
			switch subs {
			case subDelete:
				return OpDeleteObjects
			case 0:
				return OpPostObject
			}
		}
	default:
		switch m {
		case "GET":
			switch subs {
			case 0, subPartNumber:
				return OpGetObject
			case subUploadID:
				return OpListParts
			case subTagging:
				return OpGetObjectTagging
			case subAttributes:
				return OpGetObjectAttributes
			}
		case "HEAD":
			if subs == 0 || subs == subPartNumber {
				return OpHeadObject
			}
		case "PUT":
			switch subs {
			case 0:
				return OpPutObject
			case subUploadID | subPartNumber:
				return OpUploadPart
			case subTagging:
				return OpPutObjectTagging
			}
		case "DELETE":
			switch subs {
			case 0:
				return OpDeleteObject
			case subTagging:
				return OpDeleteObjectTagging
			case subUploadID:
				return OpAbortMultipartUpload
			}
		case "POST":
			switch subs {
			case subUploads:
				return OpCreateMultipartUpload
			case subUploadID:
				return OpCompleteMultipartUpload
			}
		}
	}
	return OpUnknown
}

// paramBit names a decoded query parameter: its bit, and whether it is a
// sub-resource (selects the op) rather than an ordinary parameter. bit 0
// means the name is not one the gateway knows (x-amz-* is handled by the
// caller).
func paramBit(name []byte) (bit uint32, sub bool) {
	switch string(name) {
	case "location":
		return subLocation, true
	case "list-type":
		return subListType, true
	case "versions":
		return subVersions, true
	case "uploads":
		return subUploads, true
	case "delete":
		return subDelete, true
	case "uploadId":
		return subUploadID, true
	case "partNumber":
		return subPartNumber, true
	case "tagging":
		return subTagging, true
	case "attributes":
		return subAttributes, true

	// Bucket configuration sub-resources (aws-sdk-go-v2's full list, and
	// "id" which its analytics, inventory and metrics calls carry).
	case "acl", "policy", "policyStatus", "cors", "lifecycle", "versioning",
		"encryption", "website", "logging", "notification", "replication",
		"requestPayment", "object-lock", "publicAccessBlock", "ownershipControls",
		"accelerate", "analytics", "metrics", "inventory", "intelligent-tiering",
		"metadataTable", "metadataConfiguration", "metadataJournalTable",
		"metadataInventoryTable", "abac", "id":
		return subAdmin, true

	case "prefix":
		return parPrefix, false
	case "versionId":
		return parVersionID, false

	// Ordinary parameters: they filter, page or shape a response and never
	// change which object or prefix the op touches.
	case "x-id", "delimiter", "max-keys", "continuation-token", "start-after",
		"encoding-type", "fetch-owner", "marker", "key-marker", "version-id-marker",
		"upload-id-marker", "part-number-marker", "max-parts", "max-uploads",
		"max-buckets", "bucket-region",
		"response-content-type", "response-content-language", "response-expires",
		"response-cache-control", "response-content-disposition",
		"response-content-encoding":
		return parOrdinary, false
	}
	return 0, false
}

// hostBucket returns the bucket label of a virtual-hosted Host.
func (c *Classifier) hostBucket(host []byte) ([]byte, bool) {
	if len(c.VirtualHostSuffixes) == 0 || len(host) == 0 || host[0] == '[' {
		return nil, false
	}
	if i := bytes.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = bytes.TrimSuffix(host, []byte{'.'})
	for _, suf := range c.VirtualHostSuffixes {
		n := len(host) - len(suf)
		if n < 2 || host[n-1] != '.' || !bytes.EqualFold(host[n:], suf) {
			continue
		}
		return host[:n-1], true
	}
	return nil, false
}

// validBucketName applies S3's naming rules, loosened to the legacy ones
// (upper case, '_', up to 255 bytes) so that existing buckets behind the
// gateway stay reachable. What matters for safety: no '/', no '.' or '..'
// name, nothing a backend could read as a path.
func validBucketName(b []byte) bool {
	if len(b) < 3 || len(b) > 255 || !isAlnum(b[0]) || !isAlnum(b[len(b)-1]) {
		return false
	}
	for i, ch := range b {
		switch {
		case isAlnum(ch), ch == '-', ch == '_':
		case ch == '.':
			if b[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func isAlnum(ch byte) bool {
	return 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9'
}

// checkKey refuses what no object key should be: over 1024 bytes, invalid
// UTF-8, NUL, and the path shapes checkKeyPath refuses.
func checkKey(key []byte) *Error {
	if len(key) > MaxKeyLength {
		return KeyTooLong()
	}
	return checkKeyPath(key)
}

// checkPrefix applies checkKey's rules to a list prefix, which may be empty
// and may start with one '/'. A prefix only filters key names: "/x" lists
// the keys that start with "/x", of which there are none the gateway let in,
// so the backend answers an empty listing as S3 does. What stays refused is
// what a backend that maps keys to files could read as a path elsewhere
// ("." and ".." segments, backslashes, "//"). The grant check compares the
// prefix as it is: "/data/" is not inside grant "data/".
func checkPrefix(prefix []byte) *Error {
	if len(prefix) > MaxKeyLength {
		return KeyTooLong()
	}
	if len(prefix) > 0 && prefix[0] == '/' {
		prefix = prefix[1:]
	}
	return checkKeyPath(prefix)
}

// errRefusedSegment is the message for the key shapes the gateway refuses.
const errRefusedSegment = "object key contains a path segment the gateway refuses"

// checkKeyPath refuses keys with a "." or ".." segment, an empty segment
// (a leading '/' or "//"; one trailing '/' is a directory marker and fine),
// or a backslash.
//
// S3 keys are literal strings: in S3 "data/x/../../secret" is a key that
// lives under "data/x/". But backends that map keys to files (versitygw
// posix, MinIO on disk, NAS gateways) resolve such segments and would store
// or serve a file outside the prefix the scope check approved; a backslash
// is a separator on Windows backends. The gateway cannot know its backend,
// so it refuses these keys everywhere (MinIO refuses the same set).
func checkKeyPath(key []byte) *Error {
	if !utf8.Valid(key) {
		return InvalidArgument("object key is not valid UTF-8")
	}
	segStart := 0
	for i := 0; i <= len(key); i++ {
		if i < len(key) {
			switch key[i] {
			case 0:
				return InvalidArgument("object key contains a NUL byte")
			case '\\':
				return InvalidArgument(errRefusedSegment)
			case '/':
			default:
				continue
			}
		}
		seg := key[segStart:i]
		last := i == len(key)
		switch {
		case len(seg) == 0:
			// Only the final segment may be empty: one trailing '/' (a
			// directory marker, or a prefix naming a folder) or an empty
			// prefix. Every earlier empty segment is "//" or a leading '/'.
			if !last {
				return InvalidArgument(errRefusedSegment)
			}
		case string(seg) == "." || string(seg) == "..":
			return InvalidArgument(errRefusedSegment)
		}
		segStart = i + 1
	}
	return nil
}

// parseCopySource decodes an x-amz-copy-source value, "bucket/key" or
// "/bucket/key" percent-encoded with an optional "?versionId=…", into buf.
func parseCopySource(buf *[]byte, v []byte) (bucket, key, version span, err error) {
	v = bytes.TrimSpace(v)
	var q []byte
	if i := bytes.IndexByte(v, '?'); i >= 0 {
		v, q = v[:i], v[i+1:]
		name, value, ok := bytes.Cut(q, []byte{'='})
		if !ok || string(name) != "versionId" || len(value) == 0 {
			return span{}, span{}, span{}, InvalidArgument("x-amz-copy-source accepts only a versionId parameter")
		}
		start := len(*buf)
		if *buf, ok = pct.AppendDecode(*buf, value, true); !ok {
			return span{}, span{}, span{}, InvalidArgument("x-amz-copy-source is not valid percent-encoding")
		}
		version = span{start, len(*buf)}
		if bytes.IndexByte((*buf)[version.start:version.end], '&') >= 0 || !utf8.Valid((*buf)[version.start:version.end]) {
			return span{}, span{}, span{}, InvalidArgument("x-amz-copy-source has an invalid versionId")
		}
	}
	start := len(*buf)
	var ok bool
	if *buf, ok = pct.AppendDecode(*buf, v, false); !ok {
		return span{}, span{}, span{}, InvalidArgument("x-amz-copy-source is not valid percent-encoding")
	}
	src := (*buf)[start:]
	off := start
	if len(src) > 0 && src[0] == '/' {
		src, off = src[1:], off+1
	}
	i := bytes.IndexByte(src, '/')
	if i <= 0 || i == len(src)-1 {
		return span{}, span{}, span{}, InvalidArgument("x-amz-copy-source must be bucket/key")
	}
	bucket = span{off, off + i}
	key = span{off + i + 1, off + len(src)}
	if !validBucketName(src[:i]) {
		return span{}, span{}, span{}, InvalidBucketName("x-amz-copy-source names an invalid bucket")
	}
	if e := checkKey(src[i+1:]); e != nil {
		return span{}, span{}, span{}, e
	}
	return bucket, key, version, nil
}

func hasPrefixFold(s []byte, prefix string) bool {
	return len(s) >= len(prefix) && equalFold(s[:len(prefix)], prefix)
}

// equalFold compares ASCII case-insensitively without allocating.
func equalFold(s []byte, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range len(s) {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
