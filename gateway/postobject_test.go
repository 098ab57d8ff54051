package gateway

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/sigv4"
)

// postForm is a browser-form upload as generate_presigned_post builds it:
// a policy signed with a credential, and the fields that go with it.
type postForm struct {
	bucket     string
	fields     [][2]string // in order, before the file
	conditions []any       // besides the ones sign adds
	expiration time.Time
	fileName   string
	file       []byte
	after      [][2]string // fields after the file
	noBucket   bool        // no bucket condition
}

// sign adds the policy and the authentication fields, signed by m (its
// secret; token and key id as named, unless overridden).
func (f *postForm) sign(m creds.Minted, at time.Time) {
	f.signWith(m.AccessKeyID, m.SecretAccessKey, m.SessionToken, at)
}

func (f *postForm) signWith(akid, secret, token string, at time.Time) {
	date := at.UTC().Format("20060102")
	amzDate := at.UTC().Format("20060102T150405Z")
	cred := akid + "/" + date + "/us-east-1/s3/aws4_request"
	var conds []any
	if !f.noBucket {
		conds = append(conds, map[string]string{"bucket": f.bucket})
	}
	conds = append(conds, f.conditions...)
	conds = append(conds, map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256"},
		map[string]string{"x-amz-credential": cred}, map[string]string{"x-amz-date": amzDate})
	auth := [][2]string{{"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-credential", cred}, {"x-amz-date", amzDate}}
	if token != "" {
		conds = append(conds, map[string]string{"x-amz-security-token": token})
		auth = append(auth, [2]string{"x-amz-security-token", token})
	}
	exp := f.expiration
	if exp.IsZero() {
		exp = at.Add(10 * time.Minute)
	}
	doc, err := json.Marshal(map[string]any{"expiration": exp.UTC().Format("2006-01-02T15:04:05.000Z"), "conditions": conds})
	if err != nil {
		panic(err)
	}
	policy := base64.StdEncoding.EncodeToString(doc)
	var key [32]byte
	sigv4.DeriveSigningKey(&key, []byte(secret), []byte(date), []byte("us-east-1"), []byte("s3"))
	mac := hmac.New(sha256.New, key[:])
	mac.Write([]byte(policy))
	f.fields = append(f.fields, auth...)
	f.fields = append(f.fields, [2]string{"policy", policy}, [2]string{"x-amz-signature", hex.EncodeToString(mac.Sum(nil))})
}

// set replaces (or adds) a field.
func (f *postForm) set(name, value string) {
	for i := range f.fields {
		if f.fields[i][0] == name {
			f.fields[i][1] = value
			return
		}
	}
	f.fields = append(f.fields, [2]string{name, value})
}

// keyed sets the key field and the condition that names exactly that key,
// before the conditions given.
func (f *postForm) keyed(key string, conditions ...any) {
	f.set("key", key)
	f.conditions = append([]any{map[string]string{"key": key}}, conditions...)
}

func (f *postForm) get(name string) string {
	for _, kv := range f.fields {
		if kv[0] == name {
			return kv[1]
		}
	}
	return ""
}

// body encodes the form as a browser would.
func (f *postForm) body() (contentType string, body []byte) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, kv := range f.fields {
		w.WriteField(kv[0], kv[1])
	}
	name := f.fileName
	if name == "" {
		name = "upload.bin"
	}
	fw, _ := w.CreateFormFile("file", name)
	fw.Write(f.file)
	for _, kv := range f.after {
		w.WriteField(kv[0], kv[1])
	}
	w.Close()
	return w.FormDataContentType(), b.Bytes()
}

// post sends the form to the gateway and returns the response and body;
// with truncate >= 0, only that many body bytes are sent.
func (e *env) post(t *testing.T, f *postForm, truncate int) (*http.Response, string) {
	t.Helper()
	ct, body := f.body()
	host := strings.TrimPrefix(e.endpoint, "http://")
	head := "POST /" + f.bucket + " HTTP/1.1\r\nHost: " + host +
		"\r\nContent-Type: " + ct + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	return sendTo(t, host, head, body, truncate, false)
}

// TestPostObject: a form upload signed by a minted credential stores its
// file under the form's key, answered as S3 answers forms.
func TestPostObject(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	m := e.mint(time.Hour, b+":data/:rw")
	for _, size := range []int{0, 1 << 10, 3 << 20} {
		file := make([]byte, size)
		rand.Read(file)
		key := "data/form-" + strconv.Itoa(size)
		f := &postForm{bucket: b, file: file, fields: [][2]string{{"key", key}, {"Content-Type", "image/png"}, {"x-amz-meta-owner", "alice"}},
			conditions: []any{map[string]string{"key": key}, []any{"eq", "$Content-Type", "image/png"},
				[]any{"starts-with", "$x-amz-meta-owner", ""}, []any{"content-length-range", 0, 4 << 20}}}
		f.sign(m, time.Now())
		resp, body := e.post(t, f, -1)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%d bytes: %d %s", size, resp.StatusCode, body)
		}
		checkOneRequestID(t, "post", resp, body)
		if loc := resp.Header.Get("Location"); loc != e.endpoint+"/"+b+"/"+key {
			t.Errorf("Location %q", loc)
		}
		if got, ok := e.getDirect(b, key); !ok || got != string(file) {
			t.Fatalf("%d bytes: backend holds %d bytes (%v)", size, len(got), ok)
		}
		out := headDirect(t, e, b, key)
		if out.Header.Get("Content-Type") != "image/png" || out.Header.Get("X-Amz-Meta-Owner") != "alice" {
			t.Errorf("object headers %v", out.Header)
		}
	}

	// ${filename}, and the answers a form may ask for.
	cases := []struct {
		status, redirect string
		want             int
	}{
		{"201", "", http.StatusCreated},
		{"200", "", http.StatusOK},
		{"", "https://example.com/done?x=1", http.StatusSeeOther},
		{"", "not a url", http.StatusNoContent},
	}
	for i, tc := range cases {
		f := &postForm{bucket: b, file: []byte("hello"), fileName: "photo" + strconv.Itoa(i) + ".jpg", fields: [][2]string{{"key", "data/${filename}"}},
			conditions: []any{[]any{"starts-with", "$key", "data/"}}}
		if tc.status != "" {
			f.fields = append(f.fields, [2]string{"success_action_status", tc.status})
			f.conditions = append(f.conditions, map[string]string{"success_action_status": tc.status})
		}
		if tc.redirect != "" {
			f.fields = append(f.fields, [2]string{"success_action_redirect", tc.redirect})
			f.conditions = append(f.conditions, map[string]string{"success_action_redirect": tc.redirect})
		}
		f.sign(m, time.Now())
		resp, body := e.post(t, f, -1)
		key := "data/photo" + strconv.Itoa(i) + ".jpg"
		if resp.StatusCode != tc.want {
			t.Fatalf("%+v: %d %s", tc, resp.StatusCode, body)
		}
		if got, _ := e.getDirect(b, key); got != "hello" {
			t.Fatalf("%+v: backend %s holds %q", tc, key, got)
		}
		switch tc.want {
		case http.StatusCreated:
			var doc struct {
				XMLName  xml.Name `xml:"PostResponse"`
				Location string
				Bucket   string
				Key      string
				ETag     string
			}
			if err := xml.Unmarshal([]byte(body), &doc); err != nil || doc.Bucket != b || doc.Key != key || doc.ETag == "" ||
				doc.Location != e.endpoint+"/"+b+"/"+key {
				t.Errorf("201 body %q: %+v %v", body, doc, err)
			}
		case http.StatusSeeOther:
			u, err := url.Parse(resp.Header.Get("Location"))
			if err != nil || u.Host != "example.com" || u.Query().Get("x") != "1" || u.Query().Get("bucket") != b ||
				u.Query().Get("key") != key || u.Query().Get("etag") == "" {
				t.Errorf("redirect %q", resp.Header.Get("Location"))
			}
		}
	}

	// The operator's root credential signs forms too (no session token).
	f := &postForm{bucket: b, file: []byte("root"), fields: [][2]string{{"key", "other/by-root"}},
		conditions: []any{map[string]string{"key": "other/by-root"}}}
	f.sign(creds.Minted{AccessKeyID: gwRootKey, SecretAccessKey: gwRootSecret}, time.Now())
	if resp, body := e.post(t, f, -1); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("root form: %d %s", resp.StatusCode, body)
	}
	if got, _ := e.getDirect(b, "other/by-root"); got != "root" {
		t.Fatalf("root form: backend holds %q", got)
	}

	log := e.auditLog(4 + len(cases))
	if !strings.Contains(log, `"method":"POST","op":"PutObject","bucket":"`+b+`","key":"data/form-1024"`) {
		t.Errorf("audit lacks the form upload:\n%s", log)
	}
}

// headDirect returns the backend's HEAD of an object.
func headDirect(t *testing.T, e *env, bucket, key string) *http.Response {
	t.Helper()
	r := &rawRequest{method: "HEAD", path: "/" + bucket + "/" + key, payload: sigv4.UnsignedPayload, contentLength: -1}
	host := strings.TrimPrefix(e.upstream, "http://")
	head, _ := r.sign(host, creds.Minted{AccessKeyID: backendKey, SecretAccessKey: backendSecret}, time.Now())
	resp, _ := sendTo(t, host, head, nil, -1, true)
	return resp
}

// TestPostObjectRefused: a form that does not verify, that its policy does
// not allow, that reaches outside the credential's grant or its
// governance, or whose body is not exactly the form, creates nothing.
func TestPostObjectRefused(t *testing.T) {
	e := newEnv(t, func(_ *Config, d *Deps) { d.Authorizer = denyAuthorizer{} })
	b := e.bucket()
	m := e.mint(time.Hour, b+":data/:rw")
	other := e.mint(time.Hour, b+":data/:rw")
	readOnly := e.mint(time.Hour, b+":data/:r")
	e.keyring.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	expired := e.mint(time.Hour, b+":data/:rw")
	e.keyring.Now = nil
	revoked := e.mint(time.Hour, b+":data/:rw")
	e.revoked.Revoke(revoked.VendID, revoked.Expiry)

	large := make([]byte, 2<<20)
	rand.Read(large)
	type tc struct {
		name   string
		key    string // the object that must not appear
		build  func(f *postForm)
		status int
		code   string
	}
	cases := []tc{
		{name: "key outside the grant via starts-with", key: "other/x", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.set("key", "other/x")
			f.conditions = []any{[]any{"starts-with", "$key", ""}}
			f.sign(m, time.Now())
		}},
		{name: "key outside the policy", key: "data/elsewhere/x", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.set("key", "data/elsewhere/x")
			f.conditions = []any{[]any{"starts-with", "$key", "data/uploads/"}}
			f.sign(m, time.Now())
		}},
		{name: "conditions that do not constrain the key", key: "data/free", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.set("key", "data/free")
			f.conditions = nil
			f.sign(m, time.Now())
		}},
		{name: "expired policy", key: "data/late", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.set("key", "data/late")
			f.expiration = time.Now().Add(-time.Second)
			f.sign(m, time.Now())
		}},
		{name: "tampered policy", key: "data/other/x", status: 403, code: "SignatureDoesNotMatch", build: func(f *postForm) {
			f.set("key", "data/other/x")
			f.conditions = []any{[]any{"starts-with", "$key", "data/mine/"}}
			f.sign(m, time.Now())
			doc, _ := base64.StdEncoding.DecodeString(f.get("policy"))
			f.set("policy", base64.StdEncoding.EncodeToString(bytes.Replace(doc, []byte("data/mine/"), []byte("data/"), 1)))
		}},
		{name: "signed by another credential", key: "data/forged", status: 403, code: "SignatureDoesNotMatch", build: func(f *postForm) {
			f.keyed("data/forged")
			f.signWith(m.AccessKeyID, other.SecretAccessKey, m.SessionToken, time.Now())
		}},
		{name: "token of another credential", key: "data/forged2", status: 403, code: "InvalidAccessKeyId", build: func(f *postForm) {
			f.keyed("data/forged2")
			f.signWith(m.AccessKeyID, m.SecretAccessKey, other.SessionToken, time.Now())
		}},
		{name: "read-only credential", key: "data/ro", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.keyed("data/ro")
			f.sign(readOnly, time.Now())
		}},
		{name: "expired credential", key: "data/exp", status: 400, code: "ExpiredToken", build: func(f *postForm) {
			f.keyed("data/exp")
			f.sign(expired, time.Now())
		}},
		{name: "revoked credential", key: "data/rev", status: 400, code: "InvalidToken", build: func(f *postForm) {
			f.keyed("data/rev")
			f.sign(revoked, time.Now())
		}},
		{name: "governance denies the key", key: "data/masked/t.parquet", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.set("key", "data/masked/t.parquet")
			f.conditions = []any{[]any{"starts-with", "$key", "data/"}}
			f.sign(m, time.Now())
		}},
		{name: "no bucket condition", key: "data/nb", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.keyed("data/nb")
			f.noBucket = true
			f.sign(m, time.Now())
		}},
		{name: "a field no condition names", key: "data/meta", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.keyed("data/meta")
			f.set("x-amz-meta-extra", "1")
			f.sign(m, time.Now())
		}},
		{name: "a condition that fails", key: "data/ct", status: 403, code: "AccessDenied", build: func(f *postForm) {
			f.keyed("data/ct", []any{"starts-with", "$Content-Type", "image/"})
			f.set("Content-Type", "text/html")
			f.sign(m, time.Now())
		}},
		{name: "file over content-length-range", key: "data/big", status: 400, code: "EntityTooLarge", build: func(f *postForm) {
			f.keyed("data/big", []any{"content-length-range", 0, 1 << 20})
			f.file = large
			f.sign(m, time.Now())
		}},
		{name: "field after the file", key: "data/after", status: 400, code: "MalformedPOSTRequest", build: func(f *postForm) {
			f.keyed("data/after")
			f.file = large
			f.after = [][2]string{{"submit", "Upload"}}
			f.sign(m, time.Now())
		}},
		{name: "small file, field after it", key: "data/after-small", status: 400, code: "MalformedPOSTRequest", build: func(f *postForm) {
			f.keyed("data/after-small")
			f.after = [][2]string{{"submit", "Upload"}}
			f.sign(m, time.Now())
		}},
		{name: "tagging", key: "data/tag", status: 501, code: "NotImplemented", build: func(f *postForm) {
			f.keyed("data/tag", []any{"starts-with", "$tagging", ""})
			f.set("tagging", "<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>")
			f.sign(m, time.Now())
		}},
		{name: "header injection", key: "data/inj", status: 400, code: "InvalidArgument", build: func(f *postForm) {
			f.keyed("data/inj", []any{"starts-with", "$Content-Type", ""})
			f.set("Content-Type", "text/plain\r\nx-amz-copy-source: "+b+"/data/secret")
			f.sign(m, time.Now())
		}},
		{name: "dot segments", key: "data/../x", status: 400, code: "InvalidArgument", build: func(f *postForm) {
			f.set("key", "data/../x")
			f.conditions = []any{[]any{"starts-with", "$key", "data/"}}
			f.sign(m, time.Now())
		}},
		{name: "filename with dot segments", key: "x", status: 400, code: "InvalidArgument", build: func(f *postForm) {
			f.set("key", "data/${filename}")
			f.fileName = "../../x"
			f.conditions = []any{[]any{"starts-with", "$key", "data/"}}
			f.sign(m, time.Now())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &postForm{bucket: b, file: []byte("payload"), fields: [][2]string{{"key", ""}}}
			c.build(f)
			resp, body := e.post(t, f, -1)
			if resp == nil {
				t.Fatal("no response")
			}
			if resp.StatusCode != c.status || !strings.Contains(body, "<Code>"+c.code+"</Code>") {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, c.status, c.code)
			}
			checkOneRequestID(t, c.name, resp, body)
			if strings.Contains(body, c.key) && c.key != "x" {
				t.Errorf("the refused key is in the answer: %s", body)
			}
			time.Sleep(20 * time.Millisecond)
			if _, ok := e.getDirect(b, c.key); ok {
				t.Fatalf("%s was created", c.key)
			}
		})
	}

	// A body cut short never creates the object, large or small.
	for _, size := range []int{100, 2 << 20} {
		f := &postForm{bucket: b, file: large[:size], fields: [][2]string{{"key", "data/cut-" + strconv.Itoa(size)}},
			conditions: []any{[]any{"starts-with", "$key", "data/"}}}
		f.sign(m, time.Now())
		_, body := f.body()
		e.post(t, f, len(body)-3)
		time.Sleep(50 * time.Millisecond)
		if _, ok := e.getDirect(b, "data/cut-"+strconv.Itoa(size)); ok {
			t.Fatalf("a truncated form of %d bytes created its object", size)
		}
	}

	// A form POST with request authentication, or that is no form.
	for _, r := range []struct {
		head, code string
	}{
		{"POST /" + b + " HTTP/1.1\r\nHost: gw\r\nAuthorization: AWS4-HMAC-SHA256 x\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 0\r\n\r\n", "InvalidRequest"},
		{"POST /" + b + " HTTP/1.1\r\nHost: gw\r\nContent-Type: application/xml\r\nContent-Length: 0\r\n\r\n", "PreconditionFailed"},
		{"POST /" + b + " HTTP/1.1\r\nHost: gw\r\nContent-Type: multipart/form-data\r\nContent-Length: 0\r\n\r\n", "MalformedPOSTRequest"},
	} {
		resp, body := e.send(t, r.head, nil, -1)
		if !strings.Contains(body, "<Code>"+r.code+"</Code>") {
			t.Errorf("%q: %d %s", r.head, resp.StatusCode, body)
		}
	}
}

// smallReads reads at most n bytes at a time.
type smallReads struct {
	r io.Reader
	n int
}

func (s *smallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), s.n)]) }

// TestPostFileReader: the file reader yields the file and ends only at the
// exact closing delimiter; a delimiter inside the file (a part after it)
// fails the read however the bytes are split.
func TestPostFileReader(t *testing.T) {
	boundary := []byte("bnd")
	closing := "\r\n--bnd--\r\n"
	cases := []struct {
		name, file, tail string
		ok               bool
	}{
		{"plain", "hello world", closing, true},
		{"almost a delimiter", "a\r\n--bn\r\n-bnd", closing, true},
		{"part after the file", "hello\r\n--bnd\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\ny", closing, false},
		{"delimiter at the start", "\r\n--bndabc", closing, false},
		{"wrong closing", "hello", "\r\n--bnd--\r\r", false},
		{"closing without CRLF", "hello", "\r\n--bnd--", false},
		{"more after closing", "hello", closing + "x", false},
	}
	for _, tc := range cases {
		for _, split := range []int{1, 2, 3, 5, 1 << 10} {
			for _, pending := range []int{0, 3} {
				body := tc.file + tc.tail
				pend := min(pending, len(body))
				f := &postFileReader{pending: []byte(body[:pend]), r: &smallReads{strings.NewReader(body[pend:]), split},
					left: int64(len(tc.file)), boundary: boundary}
				got, err := io.ReadAll(&smallReads{f, split})
				if tc.ok != (err == nil) {
					t.Errorf("%s (reads of %d, %d pending): %v", tc.name, split, pending, err)
				}
				if err == nil && string(got) != tc.file {
					t.Errorf("%s: read %q", tc.name, got)
				}
			}
		}
	}
}

// FuzzPostFileReader: however the body is split into reads, the file
// reader yields the file exactly when the file holds no delimiter and the
// body ends with exactly the closing one, and fails otherwise.
func FuzzPostFileReader(f *testing.F) {
	f.Add([]byte("hello"), []byte("\r\n--bnd--\r\n"), uint8(3), uint8(0))
	f.Add([]byte("a\r\n--bnd\r\nx"), []byte("\r\n--bnd--\r\n"), uint8(1), uint8(2))
	f.Add([]byte("\r\n--bn"), []byte("d--\r\n"), uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, file, tail []byte, split, pending uint8) {
		boundary := []byte("bnd")
		body := append(bytes.Clone(file), tail...)
		pend := min(int(pending), len(body))
		r := &postFileReader{pending: body[:pend], r: &smallReads{bytes.NewReader(body[pend:]), int(split%16) + 1},
			left: int64(len(file)), boundary: boundary}
		got, err := io.ReadAll(&smallReads{r, int(split/16) + 1})
		want := !bytes.Contains(file, []byte("\r\n--bnd")) && string(tail) == "\r\n--bnd--\r\n"
		if want != (err == nil) {
			t.Fatalf("file %q tail %q: %v", file, tail, err)
		}
		if err == nil && !bytes.Equal(got, file) {
			t.Fatalf("read %q, want %q", got, file)
		}
	})
}
