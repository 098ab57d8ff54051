package s3proto

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"mime/multipart"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testBoundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW"

// form writes fields then a file part as a browser does.
func form(fields [][2]string, fileHeader string) []byte {
	var b strings.Builder
	for _, kv := range fields {
		b.WriteString("--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"" + kv[0] + "\"\r\n\r\n" + kv[1] + "\r\n")
	}
	b.WriteString("--" + testBoundary + "\r\n" + fileHeader + "\r\n\r\n")
	return []byte(b.String())
}

func TestPostFormBoundary(t *testing.T) {
	cases := []struct {
		ct, want, code string
	}{
		{"multipart/form-data; boundary=" + testBoundary, testBoundary, ""},
		{`Multipart/Form-Data; charset=utf-8; boundary="a b'c"`, "a b'c", ""},
		{"multipart/form-data;boundary=x", "x", ""},
		{"multipart/form-data", "", "MalformedPOSTRequest"},
		{"multipart/form-data; boundary=", "", "MalformedPOSTRequest"},
		{"multipart/form-data; boundary=" + strings.Repeat("a", 71), "", "MalformedPOSTRequest"},
		{"multipart/form-data; boundary=\"a \"", "", "MalformedPOSTRequest"},
		{"multipart/form-data; boundary=a; boundary=b", "", "MalformedPOSTRequest"},
		{"multipart/form-data; boundary=a\"b", "", "MalformedPOSTRequest"},
		{"multipart/mixed; boundary=a", "", "PreconditionFailed"},
		{"application/x-www-form-urlencoded", "", "PreconditionFailed"},
		{"", "", "PreconditionFailed"},
	}
	for _, tc := range cases {
		got, err := PostFormBoundary([]byte(tc.ct))
		if tc.code != "" {
			if err == nil || err.Code != tc.code {
				t.Errorf("%q: %q %v, want %s", tc.ct, got, err, tc.code)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.ct, got, err, tc.want)
		}
	}
}

func TestParsePostFormHead(t *testing.T) {
	fileHeader := `Content-Disposition: form-data; name="file"; filename="a \"b\".txt"` + "\r\nContent-Type: text/plain"
	good := form([][2]string{{"key", "data/${filename}"}, {"policy", "eyJ9"}, {"X-Amz-Meta-Note", "line1\r\nline2"}, {"empty", ""}}, fileHeader)
	var f PostForm
	start, err := ParsePostFormHead(&f, append(bytes.Clone(good), "file bytes"...), []byte(testBoundary))
	if err != nil || start != len(good) {
		t.Fatalf("start %d, err %v; want %d", start, err, len(good))
	}
	if v, _ := f.Get("KEY"); string(v) != "data/${filename}" {
		t.Errorf("key %q", v)
	}
	if v, _ := f.Get("x-amz-meta-note"); string(v) != "line1\r\nline2" {
		t.Errorf("note %q", v)
	}
	if v, ok := f.Get("empty"); !ok || len(v) != 0 {
		t.Errorf("empty %q %v", v, ok)
	}
	if string(f.FileName) != `a "b".txt` || !f.HasFile || len(f.Fields) != 4 {
		t.Errorf("filename %q, %d fields", f.FileName, len(f.Fields))
	}

	// Every prefix of a good head is incomplete, never an error.
	for i := range len(good) {
		if _, err := ParsePostFormHead(&f, good[:i], []byte(testBoundary)); !errors.Is(err, ErrPostFormIncomplete) {
			t.Fatalf("prefix of %d bytes: %v", i, err)
		}
	}

	bad := []struct {
		name string
		head string
		code string
	}{
		{"preamble", "x\r\n" + string(good), "MalformedPOSTRequest"},
		{"LF line ends", strings.ReplaceAll(string(good), "\r\n", "\n"), "MalformedPOSTRequest"},
		{"no file", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--" + testBoundary + "--\r\n", "InvalidArgument"},
		{"no disposition", "--" + testBoundary + "\r\nContent-Type: text/plain\r\n\r\nk\r\n--" + testBoundary + "\r\n", "MalformedPOSTRequest"},
		{"two dispositions", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"a\"\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n", "MalformedPOSTRequest"},
		{"not form-data", "--" + testBoundary + "\r\nContent-Disposition: attachment; name=\"file\"\r\n\r\n", "MalformedPOSTRequest"},
		{"no name", "--" + testBoundary + "\r\nContent-Disposition: form-data; filename=\"x\"\r\n\r\n", "MalformedPOSTRequest"},
		{"name twice", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"a\"; name=\"file\"\r\n\r\n", "MalformedPOSTRequest"},
		{"name not a token", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"a b\"\r\n\r\nx\r\n--" + testBoundary + "\r\n", "MalformedPOSTRequest"},
		{"duplicate field", string(form([][2]string{{"key", "a"}, {"Key", "b"}}, fileHeader)), "InvalidArgument"},
		{"header line without colon", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\"\r\nbogus\r\n\r\n", "MalformedPOSTRequest"},
		{"junk after delimiter", "--" + testBoundary + "x\r\n", "MalformedPOSTRequest"},
		{"huge part header", "--" + testBoundary + "\r\nX: " + strings.Repeat("a", maxPartHeader) + "\r\n", "MalformedPOSTRequest"},
	}
	for _, tc := range bad {
		_, err := ParsePostFormHead(&f, []byte(tc.head), []byte(testBoundary))
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}

	// A boundary followed by other bytes is content, as RFC 2046 reads it.
	inner := "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--" + testBoundary + "x\r\n--" +
		testBoundary + "\r\n" + fileHeader + "\r\n\r\n"
	if _, err := ParsePostFormHead(&f, []byte(inner), []byte(testBoundary)); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Get("a"); string(v) != "x\r\n--"+testBoundary+"x" {
		t.Errorf("a = %q", v)
	}
}

// signedPolicyForm is a form for Check.
func policyForm(fields ...[2]string) *PostForm {
	f := &PostForm{HasFile: true}
	for _, kv := range fields {
		f.Fields = append(f.Fields, PostField{Name: []byte(kv[0]), Value: []byte(kv[1])})
	}
	return f
}

func TestPostPolicy(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	auth := `{"x-amz-algorithm":"AWS4-HMAC-SHA256"},{"x-amz-credential":"AK/20261201/us-east-1/s3/aws4_request"},{"x-amz-date":"20261201T115900Z"}`
	fields := [][2]string{{"key", "data/a.txt"}, {"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-credential", "AK/20261201/us-east-1/s3/aws4_request"},
		{"x-amz-date", "20261201T115900Z"}, {"policy", "…"}, {"x-amz-signature", "…"}, {"x-ignore-me", "1"}}
	cases := []struct {
		name   string
		policy string
		extra  [][2]string
		size   int64
		code   string // "" allowed; else the parse or check error
	}{
		{"boto3", `{"expiration": "2026-12-01T12:10:00Z", "conditions": [["starts-with", "$key", "data/"], ["content-length-range", 0, 100], {"bucket": "lake"}, ` + auth + `]}`, nil, 10, ""},
		{"eq array and millis", `{"expiration":"2026-12-01T12:10:00.000Z","conditions":[["eq","$key","data/a.txt"],{"bucket":"lake"},` + auth + `]}`, nil, 10, ""},
		{"names in any case", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$Key","data/"],{"BUCKET":"lake"},["starts-with","$Content-Type","image/"],` + auth + `]}`, [][2]string{{"content-type", "image/png"}}, 10, ""},
		{"length range as strings", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["content-length-range","1","10"],["starts-with","$key",""],{"bucket":"lake"},` + auth + `]}`, nil, 10, ""},
		{"expired", `{"expiration":"2026-12-01T12:00:00Z","conditions":[["starts-with","$key",""],{"bucket":"lake"},` + auth + `]}`, nil, 10, "AccessDenied"},
		{"key not constrained", `{"expiration":"2026-12-01T12:10:00Z","conditions":[{"bucket":"lake"},` + auth + `]}`, nil, 10, "AccessDenied"},
		{"key outside", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$key","other/"],{"bucket":"lake"},` + auth + `]}`, nil, 10, "AccessDenied"},
		{"two key conditions, one failing", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$key","data/"],["starts-with","$key","data/b"],{"bucket":"lake"},` + auth + `]}`, nil, 10, "AccessDenied"},
		{"other bucket", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$key",""],{"bucket":"other"},` + auth + `]}`, nil, 10, "AccessDenied"},
		{"no bucket", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$key",""],` + auth + `]}`, nil, 10, "AccessDenied"},
		{"credential not named", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$key",""],{"bucket":"lake"},{"x-amz-algorithm":"AWS4-HMAC-SHA256"},{"x-amz-date":"20261201T115900Z"}]}`, nil, 10, "AccessDenied"},
		{"extra field", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$key",""],{"bucket":"lake"},` + auth + `]}`, [][2]string{{"x-amz-meta-a", "1"}}, 10, "AccessDenied"},
		{"absent field must equal", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$key",""],{"bucket":"lake"},{"acl":"private"},` + auth + `]}`, nil, 10, "AccessDenied"},
		{"too small", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["content-length-range",11,20],["starts-with","$key",""],{"bucket":"lake"},` + auth + `]}`, nil, 10, "EntityTooSmall"},
		{"too large", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["content-length-range",0,9],["starts-with","$key",""],{"bucket":"lake"},` + auth + `]}`, nil, 10, "EntityTooLarge"},
		{"starts-with on the bucket", `{"expiration":"2026-12-01T12:10:00Z","conditions":[{"bucket":"lake"},["starts-with","$bucket",""]]}`, nil, 10, "InvalidPolicyDocument"},
		{"starts-with on the credential", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["starts-with","$x-amz-credential",""]]}`, nil, 10, "InvalidPolicyDocument"},
		{"duplicate expiration", `{"expiration":"2026-12-01T12:10:00Z","expiration":"2030-01-01T00:00:00Z","conditions":[{"bucket":"lake"}]}`, nil, 10, "InvalidPolicyDocument"},
		{"duplicate conditions", `{"expiration":"2026-12-01T12:10:00Z","conditions":[{"bucket":"lake"}],"conditions":[]}`, nil, 10, "InvalidPolicyDocument"},
		{"unknown member", `{"expiration":"2026-12-01T12:10:00Z","conditions":[{"bucket":"lake"}],"x":1}`, nil, 10, "InvalidPolicyDocument"},
		{"no expiration", `{"conditions":[{"bucket":"lake"}]}`, nil, 10, "InvalidPolicyDocument"},
		{"local time", `{"expiration":"2026-12-01T12:10:00+01:00","conditions":[{"bucket":"lake"}]}`, nil, 10, "InvalidPolicyDocument"},
		{"no conditions", `{"expiration":"2026-12-01T12:10:00Z","conditions":[]}`, nil, 10, "InvalidPolicyDocument"},
		{"number value", `{"expiration":"2026-12-01T12:10:00Z","conditions":[{"bucket":1}]}`, nil, 10, "InvalidPolicyDocument"},
		{"short array", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["eq","$key"]]}`, nil, 10, "InvalidPolicyDocument"},
		{"long array", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["eq","$key","a","b"]]}`, nil, 10, "InvalidPolicyDocument"},
		{"field without $", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["eq","key","a"]]}`, nil, 10, "InvalidPolicyDocument"},
		{"unknown operator", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["in","$key","a"]]}`, nil, 10, "InvalidPolicyDocument"},
		{"negative length", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["content-length-range",-1,10]]}`, nil, 10, "InvalidPolicyDocument"},
		{"fractional length", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["content-length-range",0,1.5]]}`, nil, 10, "InvalidPolicyDocument"},
		{"inverted length", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["content-length-range",10,1]]}`, nil, 10, "InvalidPolicyDocument"},
		{"two length ranges", `{"expiration":"2026-12-01T12:10:00Z","conditions":[["content-length-range",0,10],["content-length-range",0,20]]}`, nil, 10, "InvalidPolicyDocument"},
		{"trailing data", `{"expiration":"2026-12-01T12:10:00Z","conditions":[{"bucket":"lake"}]} {}`, nil, 10, "InvalidPolicyDocument"},
		{"not JSON", `expiration`, nil, 10, "InvalidPolicyDocument"},
	}
	for _, tc := range cases {
		p, err := ParsePostPolicy([]byte(tc.policy))
		if err == nil {
			f := policyForm(append(append([][2]string(nil), fields...), tc.extra...)...)
			if e := p.Check(f, []byte("lake"), []byte("data/a.txt"), tc.size, now); e != nil {
				err = e
			}
		}
		var e *Error
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.code != "" && (!errors.As(err, &e) || e.Code != tc.code):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}

func TestPostFormKey(t *testing.T) {
	cases := []struct {
		key, filename, want, code string
	}{
		{"data/x", "", "data/x", ""},
		{"data/${filename}", "a.txt", "data/a.txt", ""},
		{"${filename}/${filename}", "a", "a/a", ""},
		{"data/${filename}", "", "", "InvalidArgument"},
		{"data/${filename}", "../x", "", "InvalidArgument"},
		{"data/${filename}", `a\b`, "", "InvalidArgument"},
		{"data/../x", "", "", "InvalidArgument"},
		{"", "", "", "InvalidArgument"},
		{strings.Repeat("k", 1025), "", "", "KeyTooLongError"},
	}
	for _, tc := range cases {
		f := policyForm([2]string{"key", tc.key})
		f.FileName = []byte(tc.filename)
		got, err := PostFormKey([]byte("pre:"), f)
		if tc.code != "" {
			if err == nil || err.Code != tc.code || string(got) != "pre:" {
				t.Errorf("%q/%q: %q %v, want %s", tc.key, tc.filename, got, err, tc.code)
			}
			continue
		}
		if err != nil || string(got) != "pre:"+tc.want {
			t.Errorf("%q/%q: %q %v", tc.key, tc.filename, got, err)
		}
	}
	if _, err := PostFormKey(nil, policyForm()); err == nil || err.Code != "InvalidArgument" {
		t.Errorf("no key field: %v", err)
	}
}

func TestClassifyPostField(t *testing.T) {
	cases := []struct {
		name   string
		kind   PostFieldKind
		header string
	}{
		{"Policy", PostFieldAuth, ""},
		{"X-Amz-Signature", PostFieldAuth, ""},
		{"key", PostFieldKey, ""},
		{"success_action_status", PostFieldResponse, ""},
		{"x-ignore-submit", PostFieldIgnored, ""},
		{"acl", PostFieldHeader, "x-amz-acl"},
		{"Content-Type", PostFieldHeader, "content-type"},
		{"X-Amz-Meta-Owner", PostFieldHeader, "x-amz-meta-owner"},
		{"x-amz-checksum-crc32c", PostFieldHeader, "x-amz-checksum-crc32c"},
		{"x-amz-meta-", PostFieldUnsupported, ""},
		{"x-amz-copy-source", PostFieldUnsupported, ""},
		{"x-amz-decoded-content-length", PostFieldUnsupported, ""},
		{"x-amz-content-sha256", PostFieldUnsupported, ""},
		{"tagging", PostFieldUnsupported, ""},
		{"submit", PostFieldUnsupported, ""},
		{"host", PostFieldUnsupported, ""},
	}
	for _, tc := range cases {
		kind, header := ClassifyPostField([]byte(tc.name))
		if kind != tc.kind || header != tc.header {
			t.Errorf("%s: %v %q, want %v %q", tc.name, kind, header, tc.kind, tc.header)
		}
	}
	for _, v := range []string{"a\r\nb", "a\x00", "\x7f", "\xff"} {
		if ValidHeaderValue([]byte(v)) {
			t.Errorf("%q accepted as a header value", v)
		}
	}
	if !ValidHeaderValue([]byte("image/png; q=\"1\"\tx")) {
		t.Error("a plain value refused")
	}
}

func FuzzParsePostFormHead(f *testing.F) {
	fh := `Content-Disposition: form-data; name="file"; filename="a.txt"`
	f.Add(form([][2]string{{"key", "k"}, {"policy", "p"}}, fh), []byte(testBoundary))
	f.Add(form(nil, fh), []byte("b"))
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--bx\r\n--b \t\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n"), []byte("b"))
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\\\"q\\\\\"\r\nContent-Type: x\r\n\r\n"), []byte("b"))
	f.Fuzz(func(t *testing.T, head, boundary []byte) {
		var pf PostForm
		start, err := ParsePostFormHead(&pf, head, boundary)
		if err != nil {
			var e *Error
			if !errors.Is(err, ErrPostFormIncomplete) && (!errors.As(err, &e) || e.Status != 400) {
				t.Fatalf("error %v is neither incomplete nor a 400 Error", err)
			}
			return
		}
		if start > len(head) || !pf.HasFile || len(pf.Fields) > MaxPostFormFields {
			t.Fatalf("start %d of %d, file %v, %d fields", start, len(head), pf.HasFile, len(pf.Fields))
		}
		for i, fld := range pf.Fields {
			if !isToken(fld.Name) {
				t.Fatalf("field name %q", fld.Name)
			}
			for _, other := range pf.Fields[:i] {
				if equalFold(other.Name, string(fld.Name)) {
					t.Fatalf("duplicate field %q", fld.Name)
				}
			}
		}
		// Differential: Go's mime/multipart reads the same fields and file
		// part from the head completed with a file and the closing
		// delimiter.
		body := append(bytes.Clone(head[:start]), "FILE\r\n--"...)
		body = append(append(body, boundary...), "--\r\n"...)
		r := multipart.NewReader(bytes.NewReader(body), string(boundary))
		for i := 0; ; i++ {
			part, err := r.NextRawPart()
			if err != nil {
				t.Fatalf("mime/multipart stops at part %d: %v", i, err)
			}
			data, err := io.ReadAll(part)
			if err != nil {
				t.Fatalf("mime/multipart part %d: %v", i, err)
			}
			if i == len(pf.Fields) {
				if !strings.EqualFold(part.FormName(), "file") || string(data) != "FILE" || part.FileName() != "" && part.FileName() != baseName(pf.FileName) {
					t.Fatalf("mime/multipart file part %q %q %q, parser filename %q", part.FormName(), part.FileName(), data, pf.FileName)
				}
				return
			}
			fld := pf.Fields[i]
			if part.FormName() != string(fld.Name) || !bytes.Equal(data, fld.Value) {
				t.Fatalf("part %d: mime/multipart %q=%q, parser %q=%q", i, part.FormName(), data, fld.Name, fld.Value)
			}
		}
	})
}

// baseName is what mime/multipart's FileName reports of a filename.
func baseName(b []byte) string { return filepath.Base(string(b)) }

func FuzzParsePostPolicy(f *testing.F) {
	f.Add([]byte(`{"expiration": "2026-12-01T12:10:00Z", "conditions": [["starts-with", "$key", "data/"], ["content-length-range", 0, 100], {"bucket": "lake"}]}`))
	f.Add([]byte(`{"conditions":[{"a":"b","c":"d"},["eq","$x",""],["content-length-range","1","2"]],"expiration":"2026-12-01T12:10:00.123Z"}`))
	f.Add([]byte(`{"expiration":"2026-12-01T12:10:00Z","conditions":[["STARTS-WITH","$Key","\u0000"]]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := ParsePostPolicy(doc)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != "InvalidPolicyDocument" {
				t.Fatalf("error %v is not InvalidPolicyDocument", err)
			}
			return
		}
		if p.Expiration.IsZero() || len(p.Conditions) == 0 && !p.HasLengthRange {
			t.Fatalf("accepted %+v", p)
		}
		if p.HasLengthRange && (p.MinLength < 0 || p.MinLength > p.MaxLength) {
			t.Fatalf("length range %d..%d", p.MinLength, p.MaxLength)
		}
		for _, c := range p.Conditions {
			if c.Field == "" || c.Field != strings.ToLower(c.Field) || c.Match == PostStartsWith && exactOnly(c.Field) {
				t.Fatalf("condition %+v", c)
			}
		}
		// Check never panics, and a form that meets every condition
		// passes them.
		var fields [][2]string
		var key, bucket string
		for _, c := range p.Conditions {
			switch c.Field {
			case "key":
				key = c.Value
			case "bucket":
				bucket = c.Value
			default:
				fields = append(fields, [2]string{c.Field, c.Value})
			}
		}
		_ = p.Check(policyForm(fields...), []byte(bucket), []byte(key), p.MinLength, p.Expiration.Add(-time.Second))
		_ = base64.StdEncoding.EncodeToString(doc)
	})
}
