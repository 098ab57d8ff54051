package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// vectorDir holds the aws-c-auth SigV4 test suite, copied from
// specs/sigv4/aws-c-auth-v4 so a clean clone tests it (see its SOURCE file).
const vectorDir = "testdata/aws-c-auth-v4"

type vectorContext struct {
	Credentials struct {
		AccessKeyID     string `json:"access_key_id"`
		SecretAccessKey string `json:"secret_access_key"`
		Token           string `json:"token"`
	} `json:"credentials"`
	ExpirationInSeconds int64  `json:"expiration_in_seconds"`
	Normalize           bool   `json:"normalize"`
	Region              string `json:"region"`
	Service             string `json:"service"`
	SignBody            bool   `json:"sign_body"`
	Timestamp           string `json:"timestamp"`
	OmitSessionToken    bool   `json:"omit_session_token"`
}

type vector struct {
	name  string
	ctx   vectorContext
	ts    time.Time
	files map[string]string
}

// rawHeader is one header line as received: name as sent, value untouched
// (obs-fold continuation lines kept with their line break).
type rawHeader struct{ name, value string }

// rawRequest is a parsed HTTP/1.1 request that keeps header order and
// duplicates, which net/http does not.
type rawRequest struct {
	method, path, query string
	headers             []rawHeader
	body                []byte
}

// parseRawRequest parses the vectors' request files. The request target is
// everything between the method and the last space, so a raw space in the
// path (get-space-*) survives.
func parseRawRequest(t testing.TB, raw string) *rawRequest {
	t.Helper()
	head, body, _ := strings.Cut(raw, "\n\n")
	lines := strings.Split(head, "\n")
	first := lines[0]
	sp1 := strings.IndexByte(first, ' ')
	sp2 := strings.LastIndexByte(first, ' ')
	if sp1 < 0 || sp2 <= sp1 {
		t.Fatalf("bad request line %q", first)
	}
	r := &rawRequest{method: first[:sp1], body: []byte(body)}
	r.path, r.query, _ = strings.Cut(first[sp1+1:sp2], "?")
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			if len(r.headers) == 0 {
				t.Fatalf("continuation line first: %q", l)
			}
			r.headers[len(r.headers)-1].value += "\n" + l
			continue
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("bad header line %q", l)
		}
		r.headers = append(r.headers, rawHeader{name, value})
	}
	return r
}

// testHeaders implements HeaderReader over raw headers.
type testHeaders []rawHeader

func (h testHeaders) AppendValues(dst [][]byte, name []byte) [][]byte {
	for _, x := range h {
		if strings.EqualFold(x.name, string(name)) {
			dst = append(dst, []byte(x.value))
		}
	}
	return dst
}

func (r *rawRequest) request() *Request {
	return &Request{
		Method:   []byte(r.method),
		RawPath:  []byte(r.path),
		RawQuery: []byte(r.query),
		Header:   testHeaders(r.headers),
	}
}

func (r *rawRequest) clone() *rawRequest {
	c := *r
	c.headers = append([]rawHeader(nil), r.headers...)
	return &c
}

func loadVectors(t testing.TB) []vector {
	t.Helper()
	dirs, err := os.ReadDir(vectorDir)
	if err != nil {
		t.Fatalf("vectors: %v", err)
	}
	var vs []vector
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		v := vector{name: d.Name(), files: map[string]string{}}
		files, err := os.ReadDir(filepath.Join(vectorDir, d.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(vectorDir, d.Name(), f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			v.files[f.Name()] = string(b)
		}
		if err := json.Unmarshal([]byte(v.files["context.json"]), &v.ctx); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if v.ts, err = time.Parse(time.RFC3339, v.ctx.Timestamp); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		t.Fatal("no vectors found")
	}
	return vs
}

func (v *vector) payloadHash(body []byte) string {
	if v.ctx.SignBody {
		h := sha256.Sum256(body)
		return hex.EncodeToString(h[:])
	}
	return emptySHA256Hex
}

// signer is the vector's credential; the token is left out when the vector
// adds it after signing (omit_session_token).
func (v *vector) signer() *Signer {
	s := &Signer{
		AccessKeyID:     v.ctx.Credentials.AccessKeyID,
		SecretAccessKey: v.ctx.Credentials.SecretAccessKey,
		Region:          v.ctx.Region,
		Service:         v.ctx.Service,
		NormalizePath:   v.ctx.Normalize,
	}
	if !v.ctx.OmitSessionToken {
		s.SessionToken = v.ctx.Credentials.Token
	}
	return s
}

func (v *vector) verifier(now time.Time) *Verifier {
	return &Verifier{
		Region:        v.ctx.Region,
		Service:       v.ctx.Service,
		NormalizePath: v.ctx.Normalize,
		Now:           func() time.Time { return now },
	}
}

// staticStore holds one credential and checks the session token exactly.
type staticStore struct{ akid, secret, token string }

func (s staticStore) Secret(akid, token []byte) ([]byte, error) {
	if string(akid) != s.akid {
		return nil, &Error{ErrInvalidAccessKeyID, "The AWS Access Key Id you provided does not exist in our records."}
	}
	if string(token) != s.token {
		return nil, &Error{ErrInvalidToken, "The provided token is malformed or otherwise invalid."}
	}
	return []byte(s.secret), nil
}

func (v *vector) store() staticStore {
	return staticStore{v.ctx.Credentials.AccessKeyID, v.ctx.Credentials.SecretAccessKey, v.ctx.Credentials.Token}
}

func macMessage(sc *scratch) string { return string(sc.mac) }

// TestVectorsSign checks that the signer reproduces every vector's canonical
// request, string to sign, signature and Authorization header (header
// variant) and signed URL signature (query variant).
func TestVectorsSign(t *testing.T) {
	vs := loadVectors(t)
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			req := parseRawRequest(t, v.files["request.txt"])
			s := v.signer()
			amzDate := string(appendAmzDate(nil, v.ts))
			payload := v.payloadHash(req.body)

			// Header variant.
			var hs []Header
			for _, h := range req.headers {
				hs = append(hs, Header{[]byte(h.name), []byte(h.value)})
			}
			hs = append(hs, Header{[]byte("X-Amz-Date"), []byte(amzDate)})
			if v.ctx.SignBody {
				hs = append(hs, Header{[]byte("x-amz-content-sha256"), []byte(payload)})
			}
			if s.SessionToken != "" {
				hs = append(hs, Header{[]byte("X-Amz-Security-Token"), []byte(s.SessionToken)})
			}
			sr := &SignRequest{
				Method: []byte(req.method), RawPath: []byte(req.path), RawQuery: []byte(req.query),
				Headers: hs, PayloadHash: []byte(payload),
			}
			sc := &scratch{}
			auth, sig := s.appendAuthorization(nil, sr, v.ts, sc)
			if got, want := string(sc.buf), v.files["header-canonical-request.txt"]; got != want {
				t.Errorf("header canonical request:\n%s\nwant:\n%s", got, want)
			}
			if got, want := macMessage(sc), v.files["header-string-to-sign.txt"]; got != want {
				t.Errorf("header string to sign:\n%s\nwant:\n%s", got, want)
			}
			if got, want := hex.EncodeToString(sig[:]), strings.TrimSpace(v.files["header-signature.txt"]); got != want {
				t.Errorf("header signature %s, want %s", got, want)
			}
			signed := parseRawRequest(t, v.files["header-signed-request.txt"])
			if got, want := string(auth), headerValue(signed, "authorization"); got != want {
				t.Errorf("Authorization\n%s\nwant\n%s", got, want)
			}

			// Query variant.
			var qh []Header
			for _, h := range req.headers {
				qh = append(qh, Header{[]byte(h.name), []byte(h.value)})
			}
			target := req.path
			if req.query != "" {
				target += "?" + req.query
			}
			sc = &scratch{}
			out, err := s.presign(req.method, "https://"+headerValue(req, "host")+target, qh,
				time.Duration(v.ctx.ExpirationInSeconds)*time.Second, v.ts, payload, sc)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(sc.buf), v.files["query-canonical-request.txt"]; got != want {
				t.Errorf("query canonical request:\n%s\nwant:\n%s", got, want)
			}
			if got, want := macMessage(sc), v.files["query-string-to-sign.txt"]; got != want {
				t.Errorf("query string to sign:\n%s\nwant:\n%s", got, want)
			}
			_, gotSig, _ := strings.Cut(out, "X-Amz-Signature=")
			if want := strings.TrimSpace(v.files["query-signature.txt"]); gotSig != want {
				t.Errorf("query signature %s, want %s", gotSig, want)
			}
			// The presigned URL carries the same parameters as the vector's.
			signedQ := parseRawRequest(t, v.files["query-signed-request.txt"])
			if got, want := sortedQuery(t, out[strings.IndexByte(out, '?')+1:]), sortedQuery(t, signedQ.query); got != want && !v.ctx.OmitSessionToken {
				t.Errorf("presigned query\n%s\nwant\n%s", got, want)
			}
		})
	}
	t.Logf("signed %d aws-c-auth SigV4 vectors (header and query variants)", len(vs))
}

func sortedQuery(t testing.TB, q string) string {
	sc := &scratch{}
	b, ok := appendCanonicalQuery(nil, []byte(q), false, sc)
	if !ok {
		t.Fatalf("bad query %q", q)
	}
	return string(b)
}

func headerValue(r *rawRequest, name string) string {
	for _, h := range r.headers {
		if strings.EqualFold(h.name, name) {
			return h.value
		}
	}
	return ""
}

// vectorVerify verifies a signed vector request at the vector's time.
func vectorVerify(v *vector, r *rawRequest, presigned bool, now time.Time, sc *scratch) (*Result, error) {
	req := r.request()
	if presigned && v.ctx.SignBody {
		// No header carries the body hash of a presigned non-S3 request.
		req.PayloadHash = []byte(v.payloadHash(r.body))
	}
	res := &Result{}
	if sc == nil {
		sc = &scratch{}
	}
	return res, v.verifier(now).verify(req, v.store(), res, sc)
}

// TestVectorsVerify verifies every vector's signed requests and checks that
// one-byte changes fail with the error S3 answers.
func TestVectorsVerify(t *testing.T) {
	vs := loadVectors(t)
	accepted, rejected, mutations := 0, 0, 0
	for _, v := range vs {
		for _, variant := range []string{"header", "query"} {
			presigned := variant == "query"
			t.Run(v.name+"/"+variant, func(t *testing.T) {
				signed := parseRawRequest(t, v.files[variant+"-signed-request.txt"])
				sc := &scratch{}
				res, err := vectorVerify(&v, signed, presigned, v.ts, sc)
				if v.ctx.OmitSessionToken {
					// The token was added after signing. S3 refuses an
					// unsigned token header, and a token in the query is part
					// of the canonical query, so the signature cannot match.
					want := ErrAccessDenied
					if presigned {
						want = ErrSignatureDoesNotMatch
					}
					if CodeOf(err) != want || err == nil {
						t.Fatalf("unsigned session token: got %v, want %v", err, want)
					}
					rejected++
					return
				}
				if err != nil {
					t.Fatalf("verify: %v", err)
				}
				accepted++
				if got, want := string(sc.buf), v.files[variant+"-canonical-request.txt"]; got != want {
					t.Errorf("canonical request:\n%s\nwant:\n%s", got, want)
				}
				if got, want := hex.EncodeToString(res.Signature[:]), strings.TrimSpace(v.files[variant+"-signature.txt"]); got != want {
					t.Errorf("signature %s, want %s", got, want)
				}
				if res.Presigned != presigned || string(res.AccessKeyID) != v.ctx.Credentials.AccessKeyID ||
					string(res.SessionToken) != v.ctx.Credentials.Token || !res.Time.Equal(v.ts) ||
					string(res.AmzDate()) != "20150830T123600Z" || string(res.Scope()) != "20150830/us-east-1/service/aws4_request" {
					t.Errorf("result: %+v scope %q", res, res.Scope())
				}
				for _, m := range vectorMutations(signed, presigned) {
					mutations++
					_, err := vectorVerify(&v, m.req, presigned, v.ts.Add(m.clock), nil)
					if err == nil {
						t.Errorf("%s: verified", m.name)
						continue
					}
					if got := CodeOf(err); got != m.want {
						t.Errorf("%s: got %v, want %v", m.name, err, m.want)
					}
				}
			})
		}
	}
	t.Logf("aws-c-auth SigV4 vectors: %d cases, %d signed requests verified, %d rejected as S3 would (token added after signing), %d one-byte mutations rejected",
		len(vs), accepted, rejected, mutations)
}

type mutation struct {
	name  string
	req   *rawRequest
	clock time.Duration
	want  ErrorCode
}

// bump changes one byte into another of the same class (digit, letter,
// hex digit), so the request keeps its shape and only the signature can
// tell.
func bump(c byte) byte {
	switch {
	case c == '9':
		return '0'
	case c == 'z':
		return 'a'
	case c == 'Z':
		return 'A'
	case '0' <= c && c < '9', 'a' <= c && c < 'z', 'A' <= c && c < 'Z':
		return c + 1
	case c == 'x':
		return 'y'
	}
	return 'x'
}

// bumpHex changes a lower-case hex digit into another one.
func bumpHex(s string, i int) string {
	b := []byte(s)
	const digits = "0123456789abcdef"
	b[i] = digits[(strings.IndexByte(digits, b[i])+1)%16]
	return string(b)
}

func bumpAt(s string, i int) string {
	b := []byte(s)
	b[i] = bump(b[i])
	return string(b)
}

func bumpLast(s string) string {
	if s == "" {
		return "x"
	}
	return bumpAt(s, len(s)-1)
}

// replaceParam changes the value of query parameter name with f.
func replaceParam(q, name string, f func(string) string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if n, val, ok := strings.Cut(p, "="); ok && n == name {
			parts[i] = n + "=" + f(val)
		}
	}
	return strings.Join(parts, "&")
}

func vectorMutations(r *rawRequest, presigned bool) []mutation {
	var ms []mutation
	add := func(name string, want ErrorCode, f func(*rawRequest)) {
		c := r.clone()
		f(c)
		ms = append(ms, mutation{name: name, req: c, want: want})
	}
	add("method", ErrSignatureDoesNotMatch, func(c *rawRequest) { c.method = bumpLast(c.method) })
	add("path", ErrSignatureDoesNotMatch, func(c *rawRequest) { c.path = bumpLast(c.path) })

	var signedList string
	if presigned {
		_, after, _ := strings.Cut(r.query, "X-Amz-SignedHeaders=")
		signedList, _, _ = strings.Cut(after, "&")
		signedList = strings.ReplaceAll(signedList, "%3B", ";")
	} else {
		_, after, _ := strings.Cut(headerValue(r, "authorization"), "SignedHeaders=")
		signedList, _, _ = strings.Cut(after, ",")
	}
	for i, h := range r.headers {
		name := strings.ToLower(h.name)
		if name == "authorization" || !signedHeadersContain([]byte(signedList), name) {
			continue
		}
		want := ErrSignatureDoesNotMatch
		if name == "x-amz-security-token" {
			want = ErrInvalidToken // the store checks the token before the signature
		}
		if name == "x-amz-date" {
			add("x-amz-date second", want, func(c *rawRequest) { c.headers[i].value = bumpAt(c.headers[i].value, 14) })
			// A day later no longer matches the credential date.
			add("x-amz-date day", ErrAuthorizationHeaderMalformed, func(c *rawRequest) { c.headers[i].value = bumpAt(c.headers[i].value, 7) })
			continue
		}
		add("header "+name, want, func(c *rawRequest) { c.headers[i].value = bumpLast(c.headers[i].value) })
	}

	if !presigned {
		add("query", ErrSignatureDoesNotMatch, func(c *rawRequest) { c.query = bumpLast(c.query) })
		ai := -1
		for i, h := range r.headers {
			if strings.EqualFold(h.name, "authorization") {
				ai = i
			}
		}
		auth := r.headers[ai].value
		sigAt := strings.Index(auth, "Signature=") + len("Signature=")
		credAt := strings.Index(auth, "Credential=") + len("Credential=")
		regionAt := strings.Index(auth, "us-east-1")
		add("signature", ErrSignatureDoesNotMatch, func(c *rawRequest) { c.headers[ai].value = bumpHex(auth, sigAt) })
		add("access key", ErrInvalidAccessKeyID, func(c *rawRequest) { c.headers[ai].value = bumpAt(auth, credAt) })
		add("credential date", ErrAuthorizationHeaderMalformed, func(c *rawRequest) { c.headers[ai].value = bumpAt(auth, credAt+len("AKIDEXAMPLE/2015083")) })
		add("credential region", ErrAuthorizationHeaderMalformed, func(c *rawRequest) { c.headers[ai].value = bumpAt(auth, regionAt+len("us-east-")) })
		ms = append(ms,
			mutation{name: "clock 16 min late", req: r, clock: 16 * time.Minute, want: ErrRequestTimeTooSkewed},
			mutation{name: "clock 16 min early", req: r, clock: -16 * time.Minute, want: ErrRequestTimeTooSkewed})
		return ms
	}

	if before, _, _ := strings.Cut(r.query, "X-Amz-"); before != "" {
		// A parameter of the request itself.
		add("query", ErrSignatureDoesNotMatch, func(c *rawRequest) { c.query = bumpAt(c.query, len(before)-2) })
	} else {
		add("query added", ErrSignatureDoesNotMatch, func(c *rawRequest) { c.query = "x&" + c.query })
	}
	q := func(name string, want ErrorCode, param string, f func(string) string) {
		add(name, want, func(c *rawRequest) { c.query = replaceParam(c.query, param, f) })
	}
	q("expires", ErrSignatureDoesNotMatch, "X-Amz-Expires", bumpLast)
	q("date second", ErrSignatureDoesNotMatch, "X-Amz-Date", func(s string) string { return bumpAt(s, 14) })
	q("date day", ErrAuthorizationQueryParametersError, "X-Amz-Date", func(s string) string { return bumpAt(s, 7) })
	q("signature", ErrSignatureDoesNotMatch, "X-Amz-Signature", func(s string) string { return bumpHex(s, len(s)-1) })
	q("access key", ErrInvalidAccessKeyID, "X-Amz-Credential", func(s string) string { return bumpAt(s, 0) })
	q("credential region", ErrAuthorizationQueryParametersError, "X-Amz-Credential", func(s string) string {
		return strings.Replace(s, "us-east-1", "us-east-2", 1)
	})
	q("signed headers extended", ErrSignatureDoesNotMatch, "X-Amz-SignedHeaders", func(s string) string {
		return s + "%3Bzz" // still sorted, now signs one more (absent) header
	})
	if strings.Contains(r.query, "X-Amz-Security-Token=") {
		q("token", ErrInvalidToken, "X-Amz-Security-Token", func(s string) string { return bumpAt(s, 0) })
	}
	ms = append(ms,
		mutation{name: "expired", req: r, clock: time.Hour + time.Second, want: ErrAccessDenied},
		mutation{name: "from the future", req: r, clock: -16 * time.Minute, want: ErrRequestTimeTooSkewed})
	return ms
}

// TestVectorMutationsChangeSomething makes sure no mutation leaves the
// request as it was, so a rejection always comes from a real change.
func TestVectorMutationsChangeSomething(t *testing.T) {
	for _, v := range loadVectors(t) {
		r := parseRawRequest(t, v.files["header-signed-request.txt"])
		for _, m := range vectorMutations(r, false) {
			if m.clock == 0 && equalRaw(m.req, r) {
				t.Errorf("%s/%s: mutation changed nothing", v.name, m.name)
			}
		}
		r = parseRawRequest(t, v.files["query-signed-request.txt"])
		for _, m := range vectorMutations(r, true) {
			if m.clock == 0 && equalRaw(m.req, r) {
				t.Errorf("%s/%s: mutation changed nothing", v.name, m.name)
			}
		}
	}
}

func equalRaw(a, b *rawRequest) bool {
	if a.method != b.method || a.path != b.path || a.query != b.query || !bytes.Equal(a.body, b.body) || len(a.headers) != len(b.headers) {
		return false
	}
	for i := range a.headers {
		if a.headers[i] != b.headers[i] {
			return false
		}
	}
	return true
}
