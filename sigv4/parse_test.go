package sigv4

import (
	"strings"
	"testing"
	"time"
)

const (
	goodCred = "Credential=AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request"
	goodSH   = "SignedHeaders=host;x-amz-content-sha256;x-amz-date"
	goodSig  = "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
)

func TestParseAuthorization(t *testing.T) {
	ok := ErrorCode(0)
	tests := []struct {
		name, header string
		want         ErrorCode
	}{
		{"sdk form", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH + ", " + goodSig, ok},
		{"no spaces", "AWS4-HMAC-SHA256 " + goodCred + "," + goodSH + "," + goodSig, ok},
		{"extra whitespace", "AWS4-HMAC-SHA256 \t " + goodCred + " ,  " + goodSH + ",\t" + goodSig + " ", ok},
		{"other order", "AWS4-HMAC-SHA256 " + goodSig + ", " + goodCred + ", " + goodSH, ok},
		{"missing signature", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH, ErrAuthorizationHeaderMalformed},
		{"missing everything", "AWS4-HMAC-SHA256", ErrAuthorizationHeaderMalformed},
		{"duplicate credential", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodCred + ", " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"unknown component", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH + ", " + goodSig + ", Foo=bar", ErrAuthorizationHeaderMalformed},
		{"trailing comma", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH + ", " + goodSig + ",", ErrAuthorizationHeaderMalformed},
		{"empty component", "AWS4-HMAC-SHA256 " + goodCred + ",, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"component without =", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH + ", Signature", ErrAuthorizationHeaderMalformed},
		{"lower-case key", "AWS4-HMAC-SHA256 credential=AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"short signature", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH + ", " + goodSig[:len(goodSig)-1], ErrAuthorizationHeaderMalformed},
		{"long signature", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH + ", " + goodSig + "0", ErrAuthorizationHeaderMalformed},
		{"upper-case hex", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH + ", " + strings.ToUpper(goodSig[:12]) + goodSig[12:], ErrAuthorizationHeaderMalformed},
		{"non-hex signature", "AWS4-HMAC-SHA256 " + goodCred + ", " + goodSH + ", " + goodSig[:len(goodSig)-1] + "g", ErrAuthorizationHeaderMalformed},
		{"unsorted signed headers", "AWS4-HMAC-SHA256 " + goodCred + ", SignedHeaders=x-amz-date;host, " + goodSig, ErrAuthorizationHeaderMalformed},
		{"upper-case signed header", "AWS4-HMAC-SHA256 " + goodCred + ", SignedHeaders=Host;x-amz-date, " + goodSig, ErrAuthorizationHeaderMalformed},
		{"duplicate signed header", "AWS4-HMAC-SHA256 " + goodCred + ", SignedHeaders=host;host, " + goodSig, ErrAuthorizationHeaderMalformed},
		{"host not signed", "AWS4-HMAC-SHA256 " + goodCred + ", SignedHeaders=x-amz-date, " + goodSig, ErrAuthorizationHeaderMalformed},
		{"empty signed header", "AWS4-HMAC-SHA256 " + goodCred + ", SignedHeaders=host;;x-amz-date, " + goodSig, ErrAuthorizationHeaderMalformed},
		{"trailing ; in signed headers", "AWS4-HMAC-SHA256 " + goodCred + ", SignedHeaders=host;, " + goodSig, ErrAuthorizationHeaderMalformed},
		{"empty signed headers", "AWS4-HMAC-SHA256 " + goodCred + ", SignedHeaders=, " + goodSig, ErrAuthorizationHeaderMalformed},
		{"space in signed headers", "AWS4-HMAC-SHA256 " + goodCred + ", SignedHeaders=host; x-amz-date, " + goodSig, ErrAuthorizationHeaderMalformed},
		{"credential 4 parts", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/aws4_request, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"credential 6 parts", "AWS4-HMAC-SHA256 Credential=AKID/X/20150830/us-east-1/s3/aws4_request, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"credential empty key", "AWS4-HMAC-SHA256 Credential=/20150830/us-east-1/s3/aws4_request, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"credential empty region", "AWS4-HMAC-SHA256 Credential=AKID/20150830//s3/aws4_request, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"credential short date", "AWS4-HMAC-SHA256 Credential=AKID/2015083/us-east-1/s3/aws4_request, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"credential non-digit date", "AWS4-HMAC-SHA256 Credential=AKID/2015083x/us-east-1/s3/aws4_request, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"credential terminal", "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/s3/aws4_reques, " + goodSH + ", " + goodSig, ErrAuthorizationHeaderMalformed},
		{"sigv4a", "AWS4-ECDSA-P256-SHA256 " + goodCred + ", " + goodSH + ", " + goodSig, ErrNotImplemented},
		{"sigv2", "AWS AKIDEXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1g=", ErrInvalidRequest},
		{"bearer", "Bearer abc", ErrInvalidArgument},
		{"empty", "", ErrInvalidArgument},
		{"algorithm case", "aws4-hmac-sha256 " + goodCred + ", " + goodSH + ", " + goodSig, ErrInvalidArgument},
		{"algorithm glued", "AWS4-HMAC-SHA256" + goodCred + ", " + goodSH + ", " + goodSig, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a authHeader
			err := parseAuthorization([]byte(tt.header), &a)
			if tt.want == ok {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				if string(a.cred.accessKeyID) != "AKIDEXAMPLE" || string(a.cred.date) != "20150830" ||
					string(a.cred.region) != "us-east-1" || string(a.cred.service) != "s3" ||
					string(a.cred.scope) != "20150830/us-east-1/s3/aws4_request" ||
					string(a.signedHeaders) != "host;x-amz-content-sha256;x-amz-date" || a.signature[0] != 0x5f {
					t.Fatalf("parsed %+v", a)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %v", tt.want)
			}
			if err.Code != tt.want {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Message, "5fa00fa3") {
				t.Fatalf("message echoes the signature: %s", err.Message)
			}
		})
	}
}

func TestParseAmzDate(t *testing.T) {
	for in, want := range map[string]bool{
		"20150830T123600Z":  true,
		"20240229T235959Z":  true, // leap day
		"20230229T000000Z":  false,
		"20151301T000000Z":  false,
		"20150800T000000Z":  false,
		"20150830T240000Z":  false,
		"20150830T126000Z":  false,
		"20150830T123660Z":  false,
		"20150830 123600Z":  false,
		"20150830T123600":   false,
		"20150830T123600ZZ": false,
		"2015083OT123600Z":  false,
		"":                  false,
	} {
		got, ok := parseAmzDate([]byte(in))
		if ok != want {
			t.Errorf("%q: ok=%v, want %v", in, ok, want)
			continue
		}
		if ok && string(appendAmzDate(nil, got)) != in {
			t.Errorf("%q: round trip %q", in, appendAmzDate(nil, got))
		}
	}
	at := time.Date(2015, 8, 30, 12, 36, 0, 0, time.FixedZone("CEST", 2*3600))
	if got := string(AppendAmzDate(nil, at)); got != "20150830T103600Z" {
		t.Errorf("AppendAmzDate = %s", got)
	}
}

func TestPresignKind(t *testing.T) {
	for q, want := range map[string]int{
		"":                                          0,
		"prefix=a&list-type=2":                      0,
		"X-Amz-Algorithm=AWS4-HMAC-SHA256":          1,
		"a=b&X-Amz-Credential=x":                    1,
		"X-Amz-Signature=abc":                       1,
		"X%2DAmz-Signature=abc":                     1, // names are decoded
		"x-amz-signature=abc":                       0, // and case-sensitive, as in S3
		"X-Amz-Date=20150830T123600Z":               0, // not on its own
		"AWSAccessKeyId=AKID&Signature=x&Expires=1": 2,
		"Signature=x":                               0,
	} {
		if got := presignKind([]byte(q)); got != want {
			t.Errorf("%q: %d, want %d", q, got, want)
		}
	}
}

func TestParsePresign(t *testing.T) {
	const base = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20150830%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
	ok := ErrorCode(0)
	tests := []struct {
		name, query string
		want        ErrorCode
	}{
		{"complete", base, ok},
		{"with token and other params", "prefix=x&" + base + "&X-Amz-Security-Token=abc%2B", ok},
		{"missing date", strings.Replace(base, "X-Amz-Date=20150830T123600Z&", "", 1), ErrAuthorizationQueryParametersError},
		{"missing expires", strings.Replace(base, "X-Amz-Expires=60&", "", 1), ErrAuthorizationQueryParametersError},
		{"missing algorithm", strings.Replace(base, "X-Amz-Algorithm=AWS4-HMAC-SHA256&", "", 1), ErrAuthorizationQueryParametersError},
		{"duplicate signature", base + "&X-Amz-Signature=00", ErrAuthorizationQueryParametersError},
		{"duplicate token", base + "&X-Amz-Security-Token=a&X-Amz-Security-Token=b", ErrAuthorizationQueryParametersError},
		{"sigv4a", strings.Replace(base, "AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256", 1), ErrNotImplemented},
		{"other algorithm", strings.Replace(base, "AWS4-HMAC-SHA256", "AWS4-HMAC-SHA1", 1), ErrAuthorizationQueryParametersError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p presignParams
			err := parsePresign([]byte(tt.query), &p)
			if tt.want == ok {
				if err != nil {
					t.Fatal(err)
				}
				if string(p.date) != "20150830T123600Z" || string(p.expires) != "60" || len(p.signature) != 64 {
					t.Fatalf("parsed %+v", p)
				}
				return
			}
			if err == nil || err.Code != tt.want {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCanonicalURI(t *testing.T) {
	tests := []struct {
		raw, s3, normalized string
		ok                  bool
	}{
		{"", "/", "/", true},
		{"/", "/", "/", true},
		{"/bucket/key", "/bucket/key", "/bucket/key", true},
		{"/bucket//a/./b/../c/", "/bucket//a/./b/../c/", "/bucket/a/c/", true},
		{"/bucket/a%20b", "/bucket/a%20b", "/bucket/a%2520b", true},
		{"/bucket/a b", "/bucket/a%20b", "/bucket/a%20b", true},
		{"/bucket/a+b", "/bucket/a%2Bb", "/bucket/a%2Bb", true},
		{"/bucket/a%2Bb", "/bucket/a%2Bb", "/bucket/a%252Bb", true},
		{"/bucket/a%2fb", "/bucket/a%2Fb", "/bucket/a%252fb", true}, // an encoded slash stays inside the segment
		{"/bucket/%7Etilde~", "/bucket/~tilde~", "/bucket/%257Etilde~", true},
		{"/bucket/%C3%A9t%C3%A9", "/bucket/%C3%A9t%C3%A9", "/bucket/%25C3%25A9t%25C3%25A9", true},
		{"/bucket/été", "/bucket/%C3%A9t%C3%A9", "/bucket/%C3%A9t%C3%A9", true},
		{"/bucket/100%25", "/bucket/100%25", "/bucket/100%2525", true},
		{"/bucket/100%", "", "/bucket/100%25", false},
		{"/bucket/%zz", "", "/bucket/%25zz", false},
		{"/bucket/%4", "", "/bucket/%254", false},
		{"/bucket/*!'()$,;=:@&", "/bucket/%2A%21%27%28%29%24%2C%3B%3D%3A%40%26", "/bucket/%2A%21%27%28%29%24%2C%3B%3D%3A%40%26", true},
	}
	for _, tt := range tests {
		got, ok := appendCanonicalURI(nil, []byte(tt.raw), false)
		if ok != tt.ok || ok && string(got) != tt.s3 {
			t.Errorf("S3 %q: %q %v, want %q %v", tt.raw, got, ok, tt.s3, tt.ok)
		}
		got, _ = appendCanonicalURI(nil, []byte(tt.raw), true)
		if string(got) != tt.normalized {
			t.Errorf("normalized %q: %q, want %q", tt.raw, got, tt.normalized)
		}
	}
}

func TestCanonicalQuery(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"", ""},
		{"a", "a="},
		{"a=", "a="},
		{"b=2&a=1", "a=1&b=2"},
		{"a=2&a=1&a=", "a=&a=1&a=2"},
		{"Param-3=Value3&Param=Value2", "Param=Value2&Param-3=Value3"}, // by name first
		{"a-b=1&a=1", "a=1&a-b=1"},
		{"v=a%2Fb&v=a-b", "v=a%2Fb&v=a-b"}, // sorted after encoding
		{"prefix=a b&x=%7e", "prefix=a%20b&x=~"},
		{"prefix=a+b", "prefix=a%20b"}, // '+' is a space in a query
		{"prefix=a%2Bb", "prefix=a%2Bb"},
		{"uploads&list-type=2", "list-type=2&uploads="},
		{"a&&b&", "a=&b="},
		{"%E1%88%B4=bar&%e1%88%b4=baz", "%E1%88%B4=bar&%E1%88%B4=baz"},
		{"x=1=2", "x=1%3D2"},
		{"=v", "=v"},
	}
	for _, tt := range tests {
		got, ok := appendCanonicalQuery(nil, []byte(tt.raw), false, &scratch{})
		if !ok || string(got) != tt.want {
			t.Errorf("%q: %q %v, want %q", tt.raw, got, ok, tt.want)
		}
	}
	got, ok := appendCanonicalQuery(nil, []byte("b=1&X-Amz-Signature=abc&a=2"), true, &scratch{})
	if !ok || string(got) != "a=2&b=1" {
		t.Errorf("presigned: %q", got)
	}
	for _, bad := range []string{"a=%", "a=%g0", "%2=1"} {
		if _, ok := appendCanonicalQuery(nil, []byte(bad), false, &scratch{}); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	// Many parameters take the general sort.
	var raw, want []string
	for i := 30; i > 0; i-- {
		raw = append(raw, "p"+string(rune('a'+i%26))+"="+strings.Repeat("x", i))
	}
	got, _ = appendCanonicalQuery(nil, []byte(strings.Join(raw, "&")), false, &scratch{})
	want = strings.Split(string(got), "&")
	for i := 1; i < len(want); i++ {
		a, _, _ := strings.Cut(want[i-1], "=")
		b, _, _ := strings.Cut(want[i], "=")
		if a > b || a == b && want[i-1] > want[i] {
			t.Fatalf("not sorted: %q", got)
		}
	}
}

func TestCanonicalValue(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "",
		"   ":                  "",
		"value":                "value",
		"  value  ":            "value",
		`"a   b   c"`:          `"a b c"`,
		"a\tb":                 "a b",
		"value1\n  value2\n v": "value1 value2 v",
		"a \t \r\n b":          "a b",
		"0123456789abcdef ghijklmnopqrstuvwx  yz": "0123456789abcdef ghijklmnopqrstuvwx yz",
		"é  ü": "é ü",
	} {
		if got := string(appendCanonicalValue(nil, []byte(in))); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestByteTables checks the character-class table against the definitions
// it encodes (the hex and unreserved tables are internal/pct's).
func TestByteTables(t *testing.T) {
	for i := range 256 {
		c := byte(i)
		token := 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		space := c == ' ' || c == '\t' || c == '\r' || c == '\n'
		if isTokenChar(c) != token || isSpace(c) != space {
			t.Errorf("%#x: class token %v space %v", c, isTokenChar(c), isSpace(c))
		}
	}
}
