package sigv4

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// The fuzz targets start from the seeds in testdata/fuzz/<target>/, taken
// from the aws-c-auth vectors, and from the f.Add calls below.

// vanillaVerifier and vanillaStore match the get-vanilla vector, so a seed
// that is a vector's own Authorization header or query verifies and the
// fuzzer explores from a passing request.
func vanillaVerifier(normalize bool) *Verifier {
	return &Verifier{
		Region: "us-east-1", Service: "service", NormalizePath: normalize,
		Now: func() time.Time { return time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC) },
	}
}

var vanillaStore = staticStore{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""}

func checkTyped(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("untyped error %T %v", err, err)
	}
	if e.Code == 0 || e.Code >= errCodeEnd || e.Message == "" {
		t.Fatalf("bad error %#v", e)
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add([]byte("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"))
	f.Add([]byte("AWS4-HMAC-SHA256 Credential=A/1/2/3/4,SignedHeaders=host,Signature=0"))
	f.Add([]byte("AWS AKID:sig"))
	f.Add([]byte("AWS4-ECDSA-P256-SHA256 Credential=x"))
	f.Fuzz(func(t *testing.T, header []byte) {
		var a authHeader
		if err := parseAuthorization(header, &a); err != nil {
			checkTyped(t, err)
		} else {
			if !validSignedHeaders(a.signedHeaders) || !signedHeadersContain(a.signedHeaders, "host") {
				t.Fatalf("accepted signed headers %q", a.signedHeaders)
			}
			c := a.cred
			if len(c.accessKeyID) == 0 || len(c.date) != 8 || len(c.region) == 0 || len(c.service) == 0 ||
				string(c.terminal) != scopeTerminator {
				t.Fatalf("accepted credential %+v", c)
			}
			scope := string(c.date) + "/" + string(c.region) + "/" + string(c.service) + "/" + string(c.terminal)
			if string(c.scope) != scope {
				t.Fatalf("scope %q, want %q", c.scope, scope)
			}
		}
		// The whole verification of get-vanilla with this header.
		hs := headerList{
			{Name: []byte("host"), Value: []byte("example.amazonaws.com")},
			{Name: []byte("x-amz-date"), Value: []byte("20150830T123600Z")},
			{Name: []byte("authorization"), Value: header},
		}
		r := &Request{Method: []byte("GET"), RawPath: []byte("/"), Header: hs}
		var res Result
		if err := vanillaVerifier(true).Verify(r, vanillaStore, &res); err != nil {
			checkTyped(t, err)
		} else if string(res.AccessKeyID) != "AKIDEXAMPLE" || res.Presigned {
			t.Fatalf("verified as %+v", res)
		}
	})
}

func FuzzParsePresign(f *testing.F) {
	f.Add([]byte("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d"))
	f.Add([]byte("AWSAccessKeyId=A&Signature=b&Expires=1"))
	f.Add([]byte("X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256"))
	f.Fuzz(func(t *testing.T, query []byte) {
		var p presignParams
		if err := parsePresign(query, &p); err != nil {
			checkTyped(t, err)
		}
		r := &Request{Method: []byte("GET"), RawPath: []byte("/"), RawQuery: query,
			Header: headerList{{Name: []byte("host"), Value: []byte("example.amazonaws.com")}}}
		var res Result
		if err := vanillaVerifier(true).Verify(r, vanillaStore, &res); err != nil {
			checkTyped(t, err)
		} else if !res.Presigned || string(res.AccessKeyID) != "AKIDEXAMPLE" {
			t.Fatalf("verified as %+v", res)
		}
	})
}

func FuzzCanonicalQuery(f *testing.F) {
	f.Add([]byte("Param-3=Value3&Param=Value2&%E1%88%B4=Value1"))
	f.Add([]byte("a&&b=&=c&d=e=f&g+h=%2b%2F"))
	f.Fuzz(func(t *testing.T, q []byte) {
		sc := &scratch{}
		out, ok := appendCanonicalQuery(nil, q, false, sc)
		if !ok {
			return
		}
		// The canonical form is its own canonical form, and sorted.
		again, ok := appendCanonicalQuery(nil, out, false, &scratch{})
		if !ok || !bytes.Equal(out, again) {
			t.Fatalf("%q → %q → %q", q, out, again)
		}
		var prevName, prevValue []byte
		for i, p := range bytes.Split(out, []byte{'&'}) {
			if len(out) == 0 {
				break
			}
			name, value, found := bytes.Cut(p, []byte{'='})
			if !found {
				t.Fatalf("%q: parameter %q without '='", out, p)
			}
			if i > 0 {
				if c := bytes.Compare(prevName, name); c > 0 || c == 0 && bytes.Compare(prevValue, value) > 0 {
					t.Fatalf("%q: not sorted", out)
				}
			}
			prevName, prevValue = name, value
		}
	})
}

func FuzzCanonicalURI(f *testing.F) {
	f.Add([]byte("/example1/example2/../.."))
	f.Add([]byte("//a%2Fb/./c%20d/~é+"))
	f.Fuzz(func(t *testing.T, path []byte) {
		out, ok := appendCanonicalURI(nil, path, false)
		if ok {
			again, ok := appendCanonicalURI(nil, out, false)
			if !ok || !bytes.Equal(out, again) {
				t.Fatalf("%q → %q → %q", path, out, again)
			}
		}
		n, _ := appendCanonicalURI(nil, path, true)
		if len(n) == 0 || n[0] != '/' || bytes.Contains(n, []byte("//")) {
			t.Fatalf("normalized %q → %q", path, n)
		}
	})
}
