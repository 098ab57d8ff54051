package s3proto

import (
	"bytes"
	"encoding/xml"
	"errors"
	"testing"
)

func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases {
		var src string
		if vals := tc.hdr["x-amz-copy-source"]; len(vals) > 0 {
			src = vals[0]
		}
		f.Add(tc.method, tc.host, tc.path, tc.query, src)
		if vt, ok := virtualTwin(tc); ok {
			f.Add(vt.method, vt.host, vt.path, vt.query, src)
		}
	}
	f.Add("GET", "lake.s3.localhost", "/other/x", "", "")
	f.Add("PUT", "", "/lake/%2e%2E/x", "uploadId=1&partNumber=1", "lake/%2e%2e%2fx?versionId=%")
	f.Fuzz(func(t *testing.T, method, host, path, query, src string) {
		hdr := Headers{}
		if src != "" {
			hdr = copySource(src)
		}
		var r Request
		err := testClassifier.Classify(&r, []byte(method), []byte(host), []byte(path), []byte(query), hdr)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("error %v is not a 400 Error", err)
			}
			if r.Op != OpUnknown || r.Bucket != nil || r.Key != nil {
				t.Fatalf("fields set on error: %+v", r)
			}
			return
		}
		if r.Op == OpListBuckets {
			if r.Bucket != nil || r.Key != nil {
				t.Fatalf("ListBuckets with bucket %q key %q", r.Bucket, r.Key)
			}
		} else if len(r.Bucket) == 0 && (r.Op != OpUnknown || r.Key != nil) {
			t.Fatalf("%v without a bucket, key %q", r.Op, r.Key)
		}
		if len(r.Bucket) > 0 && !validBucketName(r.Bucket) {
			t.Fatalf("invalid bucket %q accepted", r.Bucket)
		}
		if r.Op.IsObject() && len(r.Key) == 0 {
			t.Fatalf("%v without a key", r.Op)
		}
		if !r.Op.IsObject() && r.Op != OpUnknown && len(r.Key) > 0 {
			t.Fatalf("%v with key %q", r.Op, r.Key)
		}
		if len(r.Key) > 0 && checkKey(r.Key) != nil {
			t.Fatalf("refused key %q accepted", r.Key)
		}
		if r.Op.IsList() && checkPrefix(r.ListPrefix) != nil {
			t.Fatalf("refused prefix %q accepted", r.ListPrefix)
		}
		if r.Op.HasCopySource() != (r.CopySourceBucket != nil) {
			t.Fatalf("%v with copy source %q", r.Op, r.CopySourceBucket)
		}
		if r.Op.HasCopySource() && (!validBucketName(r.CopySourceBucket) || checkKey(r.CopySourceKey) != nil || len(r.CopySourceKey) == 0) {
			t.Fatalf("bad copy source %q/%q accepted", r.CopySourceBucket, r.CopySourceKey)
		}

		// What the server sends upstream classifies to the same thing.
		if len(r.Bucket) == 0 {
			return
		}
		path2 := r.AppendPath(nil)
		hdr2 := Headers{}
		if r.Op.HasCopySource() {
			hdr2 = copySource(string(r.AppendCopySource(nil)))
		}
		var r2 Request
		if err := testClassifier.Classify(&r2, []byte(method), nil, path2, []byte(query), hdr2); err != nil {
			t.Fatalf("upstream form %s does not classify: %v", path2, err)
		}
		if r2.Op != r.Op || !bytes.Equal(r2.Bucket, r.Bucket) || !bytes.Equal(r2.Key, r.Key) ||
			!bytes.Equal(r2.CopySourceBucket, r.CopySourceBucket) || !bytes.Equal(r2.CopySourceKey, r.CopySourceKey) ||
			!bytes.Equal(r2.CopySourceVersion, r.CopySourceVersion) || !bytes.Equal(r2.ListPrefix, r.ListPrefix) {
			t.Fatalf("upstream form %s classifies differently:\n%+v\n%+v", path2, r, r2)
		}
	})
}

// refDelete is how a Go S3 server behind the gateway reads the body.
type refDelete struct {
	XMLName xml.Name `xml:"Delete"`
	Quiet   bool     `xml:"Quiet"`
	Objects []struct {
		Key string `xml:"Key"`
	} `xml:"Object"`
}

func FuzzParseDeleteObjects(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a&amp;b</Key><VersionId>v</VersionId></Object><Quiet>true</Quiet></Delete>`))
	f.Add([]byte(`<Delete><Object><Key>x</Key></Object><Object><Key> y&#x9; </Key></Object></Delete>`))
	f.Add([]byte(`<s3:Delete xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:Object><s3:Key>k</s3:Key></s3:Object></s3:Delete>`))
	f.Add([]byte(`<!DOCTYPE d [<!ENTITY x "y">]><Delete><Object><Key>&x;</Key></Object></Delete>`))
	f.Add([]byte(`<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		keys, quiet, err := ParseDeleteObjects(body, nil)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != 400 {
				t.Fatalf("error %v is not a 400 Error", err)
			}
			return
		}
		if len(keys) == 0 || len(keys) > MaxDeleteObjects {
			t.Fatalf("%d keys accepted", len(keys))
		}
		for _, k := range keys {
			if len(k) == 0 || checkKey(k) != nil {
				t.Fatalf("refused key %q accepted", k)
			}
		}
		// Differential: the upstream must read exactly the keys checked.
		var ref refDelete
		if err := xml.Unmarshal(body, &ref); err != nil {
			t.Fatalf("accepted a body encoding/xml refuses: %v", err)
		}
		if ref.Quiet != quiet || len(ref.Objects) != len(keys) {
			t.Fatalf("upstream reads quiet=%v %d objects, gateway quiet=%v %q", ref.Quiet, len(ref.Objects), quiet, keys)
		}
		for i := range keys {
			if ref.Objects[i].Key != string(keys[i]) {
				t.Fatalf("key %d: upstream reads %q, gateway checked %q", i, ref.Objects[i].Key, keys[i])
			}
		}
	})
}

// refErrorID is how an S3 client reads an error document's request id.
type refErrorID struct {
	XMLName   xml.Name `xml:"Error"`
	RequestID string   `xml:"RequestId"`
}

func FuzzReplaceRequestID(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Error><Code>NoSuchKey</Code><RequestId>4B0A5U3OLKPUPLGS</RequestId><HostId>x</HostId></Error>`))
	f.Add([]byte(`<Error xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Details><RequestId>a</RequestId></Details><RequestId>b</RequestId></Error>`))
	f.Add([]byte(`<!-- x --><Error a='>'><!-- <RequestId> --><RequestId/><RequestId>c</RequestId></Error>`))
	f.Add([]byte(`<Error><RequestId><![CDATA[x]]></RequestId></Error>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		const rid = "0123456789abcdef"
		out, ok := ReplaceRequestID(nil, doc, []byte(rid))
		if !ok {
			if out != nil {
				t.Fatalf("not replaced, but %q appended", out)
			}
			return
		}
		// The spans of doc replaced by the id are the texts of RequestId
		// elements.
		var spans [maxRequestIDs]span
		n, _ := requestIDTexts(doc, &spans)
		var want []byte
		prev := 0
		for _, sp := range spans[:n] {
			if !bytes.HasSuffix(doc[:sp.start], []byte(">")) || !bytes.HasPrefix(doc[sp.end:], []byte("</RequestId>")) {
				t.Fatalf("replaced %q, not the text of a RequestId element", doc[sp.start:sp.end])
			}
			want = append(append(want, doc[prev:sp.start]...), rid...)
			prev = sp.end
		}
		if want = append(want, doc[prev:]...); !bytes.Equal(out, want) {
			t.Fatalf("output %q is not the document with its ids replaced (%q)", out, want)
		}
		// Where encoding/xml reads the input as an error document, it reads
		// the replaced id from the output.
		var in refErrorID
		if err := xml.Unmarshal(doc, &in); err != nil {
			return
		}
		var got refErrorID
		if err := xml.Unmarshal(out, &got); err != nil || got.RequestID != rid {
			t.Fatalf("clients read RequestId %q (%v) from %q", got.RequestID, err, out)
		}
	})
}
