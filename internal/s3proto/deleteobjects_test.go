package s3proto

import (
	"errors"
	"strings"
	"testing"
)

func TestParseDeleteObjects(t *testing.T) {
	const ns = `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`
	cases := []struct {
		name  string
		body  string
		keys  []string
		quiet bool
		err   string // S3 error code
	}{
		{
			name: "aws-sdk-go-v2",
			body: `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + ns + `<Object><Key>data/a.parquet</Key></Object><Object><Key>data/b.parquet</Key><VersionId>3/L4kq</VersionId></Object><Quiet>true</Quiet></Delete>`,
			keys: []string{"data/a.parquet", "data/b.parquet"}, quiet: true,
		},
		{
			name: "minio-go no namespace",
			body: `<Delete><Quiet>false</Quiet><Object><Key>x</Key></Object></Delete>`,
			keys: []string{"x"},
		},
		{
			name: "boto3 pretty",
			body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + ns + "\n  <Object>\n    <Key>a b</Key>\n  </Object>\n  <Quiet> 1 </Quiet>\n</Delete>\n",
			keys: []string{"a b"}, quiet: true,
		},
		{
			name: "conditional delete fields",
			body: ns + `<Object><Key>k</Key><ETag>"abc"</ETag><LastModifiedTime>2026-01-01T00:00:00Z</LastModifiedTime><Size>10</Size></Object></Delete>`,
			keys: []string{"k"},
		},
		{
			name: "entities",
			body: ns + `<Object><Key>a&amp;b&lt;c&gt;&quot;&apos;&#x41;&#66;&#xD;&#x1F600;</Key></Object></Delete>`,
			keys: []string{"a&b<c>\"'AB\r\U0001F600"},
		},
		{
			name: "prefixed namespace",
			body: `<s3:Delete xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:Object><s3:Key>k</s3:Key></s3:Object></s3:Delete>`,
			keys: []string{"k"},
		},
		{
			name: "whitespace kept in keys",
			body: ns + `<Object><Key> k </Key></Object></Delete>`,
			keys: []string{" k "},
		},
		{
			name: "literal keys stay literal",
			body: ns + `<Object><Key>a%2Fb+c</Key></Object><Object><Key>dir/</Key></Object></Delete>`,
			keys: []string{"a%2Fb+c", "dir/"},
		},

		{name: "DOCTYPE", body: `<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x "secret/">]><Delete><Object><Key>&x;k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "external entity", body: `<!DOCTYPE d SYSTEM "file:///etc/passwd"><Delete><Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "undefined entity", body: ns + `<Object><Key>&x;</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "comment in key", body: ns + `<Object><Key>data/a<!-- -->b</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "CDATA", body: ns + `<Object><Key><![CDATA[data/a]]></Key></Object></Delete>`, err: "MalformedXML"},
		{name: "processing instruction", body: ns + `<?foo bar?><Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "late XML declaration", body: " \n" + `<?xml version="1.0"?><Delete><Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "other encoding", body: `<?xml version="1.0" encoding="ISO-8859-1"?><Delete><Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "two keys in one object", body: ns + `<Object><Key>data/ok</Key><Key>secret</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "nested object", body: ns + `<Object><Key>k</Key><Object><Key>secret</Key></Object></Object></Delete>`, err: "MalformedXML"},
		{name: "element in key", body: ns + `<Object><Key>a<b/>c</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "unknown element", body: ns + `<Object><Key>k</Key><Foo/></Object></Delete>`, err: "MalformedXML"},
		{name: "unknown top element", body: ns + `<Object><Key>k</Key></Object><Bucket>x</Bucket></Delete>`, err: "MalformedXML"},
		{name: "foreign namespace", body: `<Delete xmlns="urn:evil"><Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "foreign namespace child", body: ns + `<Object><Key xmlns="urn:evil">k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "unbound prefix", body: ns + `<Object><x:Key>k</x:Key></Object></Delete>`, err: "MalformedXML"},
		{name: "attribute", body: ns + `<Object><Key id="1">k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "wrong root", body: `<DeleteObjects><Object><Key>k</Key></Object></DeleteObjects>`, err: "MalformedXML"},
		{name: "object without key", body: ns + `<Object><VersionId>v</VersionId></Object></Delete>`, err: "MalformedXML"},
		{name: "no objects", body: ns + `<Quiet>true</Quiet></Delete>`, err: "MalformedXML"},
		{name: "quiet twice", body: ns + `<Quiet>true</Quiet><Quiet>false</Quiet><Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "quiet garbage", body: ns + `<Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "text in object", body: ns + `<Object>x<Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "text in delete", body: ns + `x<Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "trailing element", body: ns + `<Object><Key>k</Key></Object></Delete><Delete/>`, err: "MalformedXML"},
		{name: "trailing text", body: ns + `<Object><Key>k</Key></Object></Delete>x`, err: "MalformedXML"},
		{name: "truncated", body: ns + `<Object><Key>k</Key></Object>`, err: "MalformedXML"},
		{name: "truncated in key", body: ns + `<Object><Key>k`, err: "MalformedXML"},
		{name: "mismatched tags", body: ns + `<Object><Key>k</Object></Key></Delete>`, err: "MalformedXML"},
		{name: "empty body", body: ``, err: "MalformedXML"},
		{name: "not xml", body: `{"Objects":[{"Key":"k"}]}`, err: "MalformedXML"},
		{name: "invalid UTF-8", body: ns + "<Object><Key>a\xffb</Key></Object></Delete>", err: "MalformedXML"},
		{name: "NUL reference", body: ns + `<Object><Key>a&#0;b</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "control reference", body: ns + `<Object><Key>a&#x1;b</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "BOM", body: "\ufeff" + ns + `<Object><Key>k</Key></Object></Delete>`, err: "MalformedXML"},
		{name: "empty key", body: ns + `<Object><Key></Key></Object></Delete>`, err: "InvalidArgument"},
		{name: "dotdot key", body: ns + `<Object><Key>data/ok</Key></Object><Object><Key>data/../secret</Key></Object></Delete>`, err: "InvalidArgument"},
		{name: "leading slash key", body: ns + `<Object><Key>/secret</Key></Object></Delete>`, err: "InvalidArgument"},
		{name: "backslash key", body: ns + `<Object><Key>a\b</Key></Object></Delete>`, err: "InvalidArgument"},
		{name: "long key", body: ns + `<Object><Key>` + strings.Repeat("k", 1025) + `</Key></Object></Delete>`, err: "KeyTooLongError"},
		{name: "too many objects", body: ns + strings.Repeat(`<Object><Key>k</Key></Object>`, 1001) + `</Delete>`, err: "MalformedXML"},
		{name: "body too large", body: ns + strings.Repeat(" ", MaxDeleteObjectsBody) + `</Delete>`, err: "MaxMessageLengthExceeded"},
	}
	reuse := make([][]byte, 0, 4)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			keys, quiet, err := ParseDeleteObjects([]byte(tc.body), reuse)
			if tc.err != "" {
				var e *Error
				if !errors.As(err, &e) || e.Code != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				if len(keys) != 0 {
					t.Errorf("keys returned with an error: %q", keys)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if quiet != tc.quiet {
				t.Errorf("quiet = %v", quiet)
			}
			if len(keys) != len(tc.keys) {
				t.Fatalf("keys = %q, want %q", keys, tc.keys)
			}
			for i := range keys {
				if string(keys[i]) != tc.keys[i] {
					t.Errorf("key %d = %q, want %q", i, keys[i], tc.keys[i])
				}
			}
		})
	}
}

func TestParseDeleteObjectsLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<Delete>`)
	for range MaxDeleteObjects {
		b.WriteString(`<Object><Key>`)
		b.WriteString(strings.Repeat("k", MaxKeyLength))
		b.WriteString(`</Key></Object>`)
	}
	b.WriteString(`</Delete>`)
	if b.Len() > MaxDeleteObjectsBody {
		t.Fatalf("a maximal body (%d bytes) exceeds MaxDeleteObjectsBody", b.Len())
	}
	keys, _, err := ParseDeleteObjects([]byte(b.String()), nil)
	if err != nil || len(keys) != MaxDeleteObjects {
		t.Fatalf("%d keys, %v", len(keys), err)
	}
	// Keys do not alias each other: appending to one leaves the next intact.
	_ = append(keys[0], 'x')
	if keys[1][0] != 'k' {
		t.Fatal("keys alias each other")
	}
}

func BenchmarkParseDeleteObjects(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet>`)
	for i := range 100 {
		sb.WriteString(`<Object><Key>data/analytics/part-`)
		sb.WriteString(strings.Repeat("0", i%7))
		sb.WriteString(`.parquet</Key></Object>`)
	}
	sb.WriteString(`</Delete>`)
	body := []byte(sb.String())
	var keys [][]byte
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var err error
		if keys, _, err = ParseDeleteObjects(body, keys); err != nil {
			b.Fatal(err)
		}
	}
}
