package sigv4interop

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/duckicelake/duckicelake/sigv4"
)

// fakeS3 answers the S3 operations the interop clients use, path-style,
// from memory: just enough that each client's call completes and reads back
// what it wrote.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string][]byte         // "bucket/key"
	uploads map[string]map[int][]byte // upload id → part number → data
	next    int
}

func newFakeS3() fakeS3 {
	return fakeS3{objects: map[string][]byte{}, uploads: map[string]map[int][]byte{}}
}

const (
	s3NS         = "http://s3.amazonaws.com/doc/2006-03-01/"
	lastModified = "Wed, 01 Jan 2026 00:00:00 GMT"
	isoModified  = "2026-01-01T00:00:00.000Z"
)

func etag(data []byte) string {
	sum := md5.Sum(data)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func writeXML(w http.ResponseWriter, status int, v any) {
	out, err := xml.Marshal(v)
	if err != nil {
		writeError(w, sigv4.ErrInvalidRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(out)))
	w.WriteHeader(status)
	w.Write([]byte(xml.Header))
	w.Write(out)
}

// serve answers r, whose body has been verified and read into body, and
// returns the S3 operation name.
func (s *fakeS3) serve(w http.ResponseWriter, r *http.Request, body []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/")
	bkt, key, _ := strings.Cut(path, "/")
	q := r.URL.Query()
	full := bkt + "/" + key
	w.Header().Set("x-amz-request-id", "interop")

	switch {
	case key == "" && r.Method == http.MethodGet && q.Has("location"):
		writeXML(w, 200, struct {
			XMLName xml.Name `xml:"LocationConstraint"`
			NS      string   `xml:"xmlns,attr"`
		}{NS: s3NS})
		return "GetBucketLocation"
	case key == "" && r.Method == http.MethodGet:
		s.list(w, bkt, q)
		return "ListObjectsV2"
	case key == "" && r.Method == http.MethodPost && q.Has("delete"):
		return s.deleteObjects(w, bkt, body)
	case key == "" && r.Method == http.MethodHead:
		w.WriteHeader(200)
		return "HeadBucket"
	case key == "":
		writeError(w, sigv4.ErrNotImplemented, r.Method+" on a bucket")
		return "(unsupported)"

	case r.Method == http.MethodPost && q.Has("uploads"):
		s.next++
		id := fmt.Sprintf("upload-%d", s.next)
		s.uploads[id] = map[int][]byte{}
		writeXML(w, 200, struct {
			XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
			NS       string   `xml:"xmlns,attr"`
			Bucket   string
			Key      string
			UploadID string `xml:"UploadId"`
		}{NS: s3NS, Bucket: bkt, Key: key, UploadID: id})
		return "CreateMultipartUpload"
	case r.Method == http.MethodPut && q.Has("uploadId"):
		parts, ok := s.uploads[q.Get("uploadId")]
		n, err := strconv.Atoi(q.Get("partNumber"))
		if !ok || err != nil {
			writeError(w, sigv4.ErrInvalidRequest, "no such upload or bad part number")
			return "UploadPart"
		}
		parts[n] = body
		w.Header().Set("ETag", etag(body))
		w.WriteHeader(200)
		return "UploadPart"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		return s.complete(w, bkt, key, q.Get("uploadId"), body)
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		delete(s.uploads, q.Get("uploadId"))
		w.WriteHeader(http.StatusNoContent)
		return "AbortMultipartUpload"
	case r.Method == http.MethodPut && r.Header.Get("x-amz-copy-source") != "":
		src, _ := url.PathUnescape(strings.TrimPrefix(r.Header.Get("x-amz-copy-source"), "/"))
		src, _, _ = strings.Cut(src, "?")
		data, ok := s.objects[src]
		if !ok {
			writeError(w, sigv4.ErrInvalidRequest, "no such copy source "+src)
			return "CopyObject"
		}
		s.objects[full] = data
		writeXML(w, 200, struct {
			XMLName      xml.Name `xml:"CopyObjectResult"`
			NS           string   `xml:"xmlns,attr"`
			LastModified string
			ETag         string
		}{NS: s3NS, LastModified: isoModified, ETag: etag(data)})
		return "CopyObject"
	case r.Method == http.MethodPut:
		s.objects[full] = body
		w.Header().Set("ETag", etag(body))
		w.WriteHeader(200)
		return "PutObject"
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		op := "GetObject"
		if r.Method == http.MethodHead {
			op = "HeadObject"
		}
		data, ok := s.objects[full]
		if !ok {
			if op == "HeadObject" {
				w.WriteHeader(http.StatusNotFound)
			} else {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprintf(w, `<Error><Code>NoSuchKey</Code><Message>%s</Message></Error>`, xmlEscape(full))
			}
			return op
		}
		h := w.Header()
		h.Set("ETag", etag(data))
		h.Set("Last-Modified", lastModified)
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Accept-Ranges", "bytes")
		status := 200
		if rg := r.Header.Get("Range"); rg != "" && op == "GetObject" {
			first, last, ok := parseRange(rg, len(data))
			if !ok {
				h.Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
				w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
				return op + "/range"
			}
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(data)))
			data = data[first : last+1]
			status = http.StatusPartialContent
			op += "/range"
		}
		h.Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(status)
		if r.Method == http.MethodGet {
			w.Write(data)
		}
		return op
	case r.Method == http.MethodDelete:
		delete(s.objects, full)
		w.WriteHeader(http.StatusNoContent)
		return "DeleteObject"
	}
	writeError(w, sigv4.ErrNotImplemented, r.Method+" "+r.URL.String())
	return "(unsupported)"
}

// parseRange parses a single "bytes=first-last", "bytes=first-" or
// "bytes=-suffix" range over n bytes.
func parseRange(h string, n int) (first, last int, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	a, b, dash := strings.Cut(spec, "-")
	if !found || !dash || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	if a == "" {
		k, err := strconv.Atoi(b)
		if err != nil || k <= 0 || n == 0 {
			return 0, 0, false
		}
		return max(n-k, 0), n - 1, true
	}
	first, err := strconv.Atoi(a)
	if err != nil || first >= n {
		return 0, 0, false
	}
	last = n - 1
	if b != "" {
		if last, err = strconv.Atoi(b); err != nil || last < first {
			return 0, 0, false
		}
		last = min(last, n-1)
	}
	return first, last, true
}

type listContents struct {
	Key          string
	LastModified string
	ETag         string
	Size         int
	StorageClass string
}

type listPrefix struct{ Prefix string }

func (s *fakeS3) list(w http.ResponseWriter, bkt string, q url.Values) {
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	var keys []string
	for k := range s.objects {
		if key, ok := strings.CutPrefix(k, bkt+"/"); ok && strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	var contents []listContents
	var prefixes []listPrefix
	seen := map[string]bool{}
	for _, k := range keys {
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				p := k[:len(prefix)+i+len(delim)]
				if !seen[p] {
					seen[p] = true
					prefixes = append(prefixes, listPrefix{p})
				}
				continue
			}
		}
		data := s.objects[bkt+"/"+k]
		contents = append(contents, listContents{k, isoModified, etag(data), len(data), "STANDARD"})
	}
	writeXML(w, 200, struct {
		XMLName        xml.Name `xml:"ListBucketResult"`
		NS             string   `xml:"xmlns,attr"`
		Name           string
		Prefix         string
		Delimiter      string `xml:",omitempty"`
		KeyCount       int
		MaxKeys        int
		IsTruncated    bool
		Contents       []listContents
		CommonPrefixes []listPrefix
	}{NS: s3NS, Name: bkt, Prefix: prefix, Delimiter: delim, KeyCount: len(contents) + len(prefixes),
		MaxKeys: 1000, Contents: contents, CommonPrefixes: prefixes})
}

func (s *fakeS3) deleteObjects(w http.ResponseWriter, bkt string, body []byte) string {
	var req struct {
		Objects []struct{ Key string } `xml:"Object"`
		Quiet   bool
	}
	if err := xml.Unmarshal(body, &req); err != nil {
		writeError(w, sigv4.ErrInvalidRequest, "malformed Delete XML: "+err.Error())
		return "DeleteObjects"
	}
	type deleted struct{ Key string }
	var out []deleted
	for _, o := range req.Objects {
		delete(s.objects, bkt+"/"+o.Key)
		if !req.Quiet {
			out = append(out, deleted{o.Key})
		}
	}
	writeXML(w, 200, struct {
		XMLName xml.Name `xml:"DeleteResult"`
		NS      string   `xml:"xmlns,attr"`
		Deleted []deleted
	}{NS: s3NS, Deleted: out})
	return "DeleteObjects"
}

func (s *fakeS3) complete(w http.ResponseWriter, bkt, key, id string, body []byte) string {
	parts, ok := s.uploads[id]
	var req struct {
		Parts []struct {
			PartNumber int
			ETag       string
		} `xml:"Part"`
	}
	if err := xml.Unmarshal(body, &req); !ok || err != nil {
		writeError(w, sigv4.ErrInvalidRequest, fmt.Sprintf("no such upload %q or malformed XML (%v)", id, err))
		return "CompleteMultipartUpload"
	}
	var data, sums []byte
	for _, p := range req.Parts {
		part, ok := parts[p.PartNumber]
		// Clients send the ETag with or without its quotes.
		if !ok || strings.Trim(etag(part), `"`) != strings.Trim(p.ETag, `"`) {
			writeError(w, sigv4.ErrInvalidRequest, fmt.Sprintf("part %d: unknown or ETag %s mismatch", p.PartNumber, p.ETag))
			return "CompleteMultipartUpload"
		}
		data = append(data, part...)
		sum := md5.Sum(part)
		sums = append(sums, sum[:]...)
	}
	delete(s.uploads, id)
	s.objects[bkt+"/"+key] = data
	sum := md5.Sum(sums)
	writeXML(w, 200, struct {
		XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
		NS       string   `xml:"xmlns,attr"`
		Location string
		Bucket   string
		Key      string
		ETag     string
	}{NS: s3NS, Location: "/" + bkt + "/" + key, Bucket: bkt, Key: key,
		ETag: fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(sum[:]), len(req.Parts))})
	return "CompleteMultipartUpload"
}
