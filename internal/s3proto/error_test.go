package s3proto

import (
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"testing"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/sigv4"
)

// -update rewrites the golden files (testsupport.TestdataGolden).
var _ = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestErrorXMLGolden(t *testing.T) {
	cases := []struct {
		file      string
		err       *Error
		resource  string
		requestID string
	}{
		{"error_access_denied.xml", AccessDenied(""), "/lake/data/secret.parquet", "18A2B3C4D5E6F708"},
		{"error_no_resource.xml", SlowDown(), "", "18A2B3C4D5E6F709"},
		{"error_escaping.xml", InvalidArgument(`bad <key> & "quotes" 'apos'`), "/lake/a&b<c>\"d'\te\r\nf", "id<&>"},
		{"error_invalid_bytes.xml", InvalidURI(""), "/lake/\x01\x00x\xff\xfe\xef\xbf\xbfcaf\u00e9", "1"},
		{"error_sigv4.xml", FromSigV4(&sigv4.Error{Code: sigv4.ErrSignatureDoesNotMatch, Message: "The request signature we calculated does not match the signature you provided."}), "/lake/x", "18A2B3C4D5E6F70A"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			got := AppendXML(nil, tc.err, []byte(tc.resource), []byte(tc.requestID))
			testsupport.TestdataGolden(t, tc.file, got)

			// Whatever went in, the document parses, and valid text reads
			// back unchanged.
			var doc struct {
				XMLName   xml.Name `xml:"Error"`
				Code      string
				Message   string
				Resource  string
				RequestID string `xml:"RequestId"`
			}
			if err := xml.Unmarshal(got, &doc); err != nil {
				t.Fatalf("output does not parse: %v\n%s", err, got)
			}
			if doc.Code != tc.err.Code || doc.Message != tc.err.Message || doc.RequestID != tc.requestID && tc.file != "error_invalid_bytes.xml" {
				t.Errorf("read back %+v", doc)
			}
			if tc.file == "error_escaping.xml" && doc.Resource != tc.resource {
				t.Errorf("Resource read back %q, want %q", doc.Resource, tc.resource)
			}
		})
	}
}

func TestAppendXMLAppends(t *testing.T) {
	got := AppendXML([]byte("prefix"), AccessDenied("x"), nil, []byte("r"))
	want := "prefix" + xmlHeader + "<Error><Code>AccessDenied</Code><Message>x</Message><RequestId>r</RequestId></Error>"
	if string(got) != want {
		t.Errorf("got %q", got)
	}
	if n := testing.AllocsPerRun(100, func() {
		got = AppendXML(got[:0], AccessDenied("x"), []byte("/lake/k"), []byte("r"))
	}); n > 1 { // the *Error itself
		t.Errorf("AppendXML allocates %v times", n)
	}
}

func TestErrorConstructors(t *testing.T) {
	cases := []struct {
		err    *Error
		code   string
		status int
	}{
		{AccessDenied(""), "AccessDenied", 403},
		{InvalidURI(""), "InvalidURI", 400},
		{InvalidArgument(""), "InvalidArgument", 400},
		{InvalidRequest(""), "InvalidRequest", 400},
		{InvalidBucketName(""), "InvalidBucketName", 400},
		{KeyTooLong(), "KeyTooLongError", 400},
		{MalformedXML(""), "MalformedXML", 400},
		{MaxMessageLengthExceeded(), "MaxMessageLengthExceeded", 400},
		{MethodNotAllowed(""), "MethodNotAllowed", 405},
		{NotImplemented(""), "NotImplemented", 501},
		{RequestTimeout(), "RequestTimeout", 400},
		{InternalError(""), "InternalError", 500},
		{SlowDown(), "SlowDown", 503},
		{ServiceUnavailable(""), "ServiceUnavailable", 503},
	}
	for _, tc := range cases {
		if tc.err.Code != tc.code || tc.err.Status != tc.status || tc.err.Message == "" {
			t.Errorf("%+v, want %s %d with a message", tc.err, tc.code, tc.status)
		}
	}
	if got := AccessDenied("custom").Message; got != "custom" {
		t.Errorf("message %q", got)
	}
	wrapped := fmt.Errorf("scope: %w", AccessDenied("why"))
	if !errors.Is(wrapped, &Error{Code: "AccessDenied"}) || errors.Is(wrapped, &Error{Code: "InvalidURI"}) {
		t.Error("errors.Is must match on the code")
	}
	if got := InvalidURI("").Error(); got != "InvalidURI: Couldn't parse the specified URI." {
		t.Errorf("Error() = %q", got)
	}
}

func TestFromSigV4(t *testing.T) {
	cases := []struct {
		in     error
		code   string
		status int
		msg    string
	}{
		{&sigv4.Error{Code: sigv4.ErrSignatureDoesNotMatch, Message: "m1"}, "SignatureDoesNotMatch", 403, "m1"},
		{&sigv4.Error{Code: sigv4.ErrExpiredToken, Message: "m2"}, "ExpiredToken", 400, "m2"},
		{&sigv4.Error{Code: sigv4.ErrInvalidAccessKeyID, Message: "m3"}, "InvalidAccessKeyId", 403, "m3"},
		{&sigv4.Error{Code: sigv4.ErrRequestTimeTooSkewed, Message: "m4"}, "RequestTimeTooSkewed", 403, "m4"},
		{&sigv4.Error{Code: sigv4.ErrXAmzContentSHA256Mismatch, Message: "m5"}, "XAmzContentSHA256Mismatch", 400, "m5"},
		{&sigv4.Error{Code: sigv4.ErrNotImplemented, Message: "SigV4a"}, "NotImplemented", 501, "SigV4a"},
		{fmt.Errorf("verify: %w", &sigv4.Error{Code: sigv4.ErrInvalidToken, Message: "m6"}), "InvalidToken", 400, "m6"},
		// Foreign errors fail closed and hide their text.
		{errors.New("pq: connection refused at 10.0.0.3"), "AccessDenied", 403, "Access Denied"},
		// An Error passes through.
		{fmt.Errorf("x: %w", KeyTooLong()), "KeyTooLongError", 400, "Your key is too long"},
	}
	for _, tc := range cases {
		got := FromSigV4(tc.in)
		if got.Code != tc.code || got.Status != tc.status || got.Message != tc.msg {
			t.Errorf("FromSigV4(%v) = %+v, want %s %d %q", tc.in, got, tc.code, tc.status, tc.msg)
		}
	}
	if FromSigV4(nil) != nil {
		t.Error("FromSigV4(nil) must be nil")
	}
	// Every sigv4 code maps to its own S3 code and status.
	for c := sigv4.ErrAccessDenied; c <= sigv4.ErrNotImplemented; c++ {
		got := FromSigV4(&sigv4.Error{Code: c})
		if got.Code != c.String() || got.Status != c.HTTPStatus() || got.Status == http.StatusInternalServerError {
			t.Errorf("code %d: %+v", c, got)
		}
	}
}

func TestReplaceRequestID(t *testing.T) {
	const rid = "0123456789abcdef"
	cases := []struct {
		name, doc, want string // want "" = not replaced
	}{
		{"versitygw", `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
			`<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>a/b</Key><RequestId>4B0A5U3OLKPUPLGS</RequestId><HostId>ag6q</HostId></Error>`,
			`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
				`<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>a/b</Key><RequestId>` + rid + `</RequestId><HostId>ag6q</HostId></Error>`},
		{"no declaration, namespace, white space", "\xef\xbb\xbf <Error xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n  <Code>X</Code>\n  <RequestId>old</RequestId>\n</Error>\n",
			"\xef\xbb\xbf <Error xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n  <Code>X</Code>\n  <RequestId>" + rid + "</RequestId>\n</Error>\n"},
		{"empty id", `<Error><RequestId></RequestId></Error>`, `<Error><RequestId>` + rid + `</RequestId></Error>`},
		{"comment and attribute with '>'", `<!-- c --><Error a="x>y"><!-- <RequestId>no</RequestId> --><Code/><RequestId>old</RequestId></Error>`,
			`<!-- c --><Error a="x>y"><!-- <RequestId>no</RequestId> --><Code/><RequestId>` + rid + `</RequestId></Error>`},
		{"nested RequestId is not the error's", `<Error><Details><RequestId>inner</RequestId></Details><RequestId>outer</RequestId></Error>`,
			`<Error><Details><RequestId>inner</RequestId></Details><RequestId>` + rid + `</RequestId></Error>`},
		{"two ids", `<Error><RequestId>a</RequestId><HostId>h</HostId><RequestId>b</RequestId></Error>`,
			`<Error><RequestId>` + rid + `</RequestId><HostId>h</HostId><RequestId>` + rid + `</RequestId></Error>`},
		{"no RequestId", `<Error><Code>X</Code></Error>`, ""},
		{"root never ends", `<Error><RequestId>a</RequestId>`, ""},
		{"only nested", `<Error><Details><RequestId>inner</RequestId></Details></Error>`, ""},
		{"other root", `<ListBucketResult><RequestId>x</RequestId></ListBucketResult>`, ""},
		{"CDATA", `<Error><RequestId><![CDATA[x]]></RequestId></Error>`, ""},
		{"element inside", `<Error><RequestId>a<b/>c</RequestId></Error>`, ""},
		{"DOCTYPE", `<!DOCTYPE Error><Error><RequestId>x</RequestId></Error>`, ""},
		{"not XML", `Service Unavailable`, ""},
		{"truncated", `<Error><RequestId>x`, ""},
		{"empty", ``, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ReplaceRequestID([]byte("prefix:"), []byte(tc.doc), []byte(rid))
			if tc.want == "" {
				if ok || string(got) != "prefix:" {
					t.Fatalf("replaced: %q", got)
				}
				return
			}
			if !ok || string(got) != "prefix:"+tc.want {
				t.Fatalf("got %v %q\nwant %q", ok, got, "prefix:"+tc.want)
			}
		})
	}
	doc := []byte(`<Error><Code>X</Code><RequestId>old</RequestId></Error>`)
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf, _ = ReplaceRequestID(buf[:0], doc, []byte(rid)) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
