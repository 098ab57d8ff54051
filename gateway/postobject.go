package gateway

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/pct"
	"github.com/duckicelake/duckicelake/internal/s3proto"
	"github.com/duckicelake/duckicelake/sigv4"
)

// Browser-form uploads (S3 POST Object; boto3's generate_presigned_post).
// The credential, the policy and the key are form fields in the body, so
// the request is admitted once the form's head has arrived, before any of
// the file is read:
//
//  1. the form's fields, up to the file part (s3proto.ParsePostFormHead,
//     64 KiB at most);
//  2. the policy's SigV4 signature: HMAC-SHA256 of the base64 policy with
//     the signing key of the credential the form names (a minted one, its
//     session token verified as on every request, or the operator's root);
//  3. the policy (s3proto.ParsePostPolicy, Check): not expired, naming the
//     bucket, every condition holding for the form, the key and the file's
//     size, and every field named by a condition;
//  4. admission as the PutObject of the form's key (governance.AdmitS3:
//     the credential's grants, then the Authorizer).
//
// The file is then streamed upstream as a signed PutObject of that key, the
// form's object fields (Content-Type, x-amz-meta-*, …) as its headers, by
// the same path as any upload: aws-chunked, so the backend commits only
// once the gateway has sent the final chunk. The file's length is the
// request's Content-Length less the head and the closing delimiter, so the
// file must be the form's last part and the body must end with
// "\r\n--boundary--\r\n", which every form encoder writes; the gateway sends
// the final chunk only after it has read exactly that. A form with fields
// after the file (S3 ignores them) is refused.
//
// On success the client gets what S3 answers a form: 204 (or the
// success_action_status 200 or 201, the latter with a PostResponse
// document), or a 303 to success_action_redirect.

// postState is a form upload's part of the request state.
type postState struct {
	active   bool // the request is a form upload
	boundary []byte
	head     []byte // the body's head: fields, then the first bytes of the file
	form     s3proto.PostForm
	key      []byte
	file     postFileReader
	checksum bool // the form carries a checksum field
}

func (p *postState) reset() {
	head := p.head[:0]
	if cap(head) > maxPooledBody {
		head = nil
	}
	p.form.Reset()
	*p = postState{head: head, form: p.form, key: p.key[:0]}
}

// hasChecksum reports whether the request carries a checksum of its own
// for the object: a header, or for a form upload a form field.
func (st *reqState) hasChecksum() bool {
	if st.post.active {
		return st.post.checksum
	}
	return st.hdr.hasChecksum()
}

// admitPostForm runs the checks of a form upload that need no body: the
// form is authenticated by its fields, so there is neither an
// Authorization header nor a query, and the body must be
// multipart/form-data.
func (s *Server) admitPostForm(st *reqState) {
	if st.hdr.get("authorization") != nil || len(st.query) > 0 {
		st.fail(s3proto.InvalidRequest("A POST form upload is authenticated by its form fields: send it with neither an Authorization header nor a query string."),
			governance.OutcomeNone, "form upload with request authentication")
		return
	}
	boundary, err := s3proto.PostFormBoundary(st.hdr.get("content-type"))
	if err != nil {
		st.fail(err, governance.OutcomeNone, "form upload not multipart/form-data")
		return
	}
	st.post.active, st.post.boundary = true, boundary
}

// maxPostObject is S3's largest single upload.
const maxPostObject = 5 << 30

// forwardPostObject reads the form's head, authenticates and admits the
// form, and streams its file upstream as a PutObject.
func (s *Server) forwardPostObject(st *reqState) {
	ctx := st.ctx
	wireLen := int64(ctx.Request.Header.ContentLength())
	if wireLen < 0 {
		st.fail(&s3proto.Error{Code: "MissingContentLength", Status: http.StatusLengthRequired,
			Message: "You must provide the Content-Length HTTP header."}, governance.OutcomeNone, "no content length")
		return
	}
	var wire io.Reader = emptyReader{}
	if r := ctx.RequestBodyStream(); r != nil {
		wire = r
	}
	st.wire = wireReader{st: st, r: wire, timeout: s.cfg.BodyReadTimeout}
	fileStart, ok := s.readPostHead(st, wireLen)
	if !ok {
		return
	}
	p := &st.post
	t := s.now()
	if !s.verifyPostForm(st, t) {
		return
	}

	var e *s3proto.Error
	if p.key, e = s3proto.PostFormKey(p.key[:0], &p.form); e != nil {
		st.fail(e, governance.OutcomeDeny, "form key refused")
		return
	}
	st.req.Op, st.req.Key = s3proto.OpPutObject, p.key
	closing := len("\r\n--") + len(p.boundary) + len("--\r\n")
	size := wireLen - int64(fileStart) - int64(closing)
	switch {
	case size < 0:
		st.fail(s3proto.MalformedPOSTRequest(""), governance.OutcomeDeny, "form body too short")
		return
	case size > maxPostObject:
		st.fail(&s3proto.Error{Code: "EntityTooLarge", Status: http.StatusBadRequest,
			Message: "Your proposed upload exceeds the maximum allowed size"}, governance.OutcomeDeny, "form file too large")
		return
	}
	if !s.checkPostPolicy(st, size, t) {
		return
	}

	if st.cred.isRoot {
		st.decision, st.reason = governance.OutcomeAllow, "operator root credentials"
	} else {
		st.principal = governance.PrincipalOf(&st.cred.claims)
		s.authorize(st, nil)
		if st.err != nil {
			return
		}
	}

	s.setUpstreamTarget(st, methodPUT, nil)
	for _, f := range p.form.Fields {
		if kind, header := s3proto.ClassifyPostField(f.Name); kind == s3proto.PostFieldHeader {
			st.upReq.Header.Set(header, string(f.Value))
		}
	}
	p.file = postFileReader{pending: p.head[fileStart:], r: &st.wire, left: size, boundary: p.boundary}
	st.verified = verifiedReader{st: st, r: &p.file}
	st.numBuf = appendInt(st.numBuf[:0], size)
	s.sendObject(st, size, t)
}

var methodPUT = []byte(http.MethodPut)

// readPostHead reads the body until the form's head has arrived and parses
// it into st.post.form; it returns where the file's content starts in
// st.post.head.
func (s *Server) readPostHead(st *reqState, wireLen int64) (int, bool) {
	p := &st.post
	if cap(p.head) < s3proto.MaxPostFormHead {
		p.head = make([]byte, 0, s3proto.MaxPostFormHead)
	}
	buf := p.head[:0]
	for {
		// Parse once per 16 KiB at least, not once per read: a client
		// sending a byte at a time must not cost a parse per byte.
		if limit := int(min(int64(cap(buf)-len(buf)), wireLen-int64(len(buf)))); limit > 0 {
			n, err := io.ReadAtLeast(&st.wire, buf[len(buf):len(buf)+limit], min(limit, 16<<10))
			buf = buf[:len(buf)+n]
			if err != nil {
				p.head = buf
				st.bodyErr = err
				st.failBody()
				return 0, false
			}
		}
		fileStart, err := s3proto.ParsePostFormHead(&p.form, buf, p.boundary)
		p.head = buf
		switch {
		case err == nil:
			return fileStart, true
		case !errors.Is(err, s3proto.ErrPostFormIncomplete):
			st.fail(s3proto.FromSigV4(err), governance.OutcomeDeny, "form refused")
			return 0, false
		case int64(len(buf)) == wireLen:
			st.fail(s3proto.MalformedPOSTRequest("The body ended before the form's file field."), governance.OutcomeDeny, "form refused")
			return 0, false
		case len(buf) == cap(buf):
			st.fail(s3proto.MalformedPOSTRequest("The form's fields before the file field exceed 64 KiB."), governance.OutcomeDeny, "form refused")
			return 0, false
		}
	}
}

// verifyPostForm authenticates the form: its policy's SigV4 signature by
// the credential named in x-amz-credential.
func (s *Server) verifyPostForm(st *reqState, now time.Time) bool {
	f := &st.post.form
	for _, name := range []string{"policy", "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-signature"} {
		if _, ok := f.Get(name); !ok {
			if _, v2 := f.Get("awsaccesskeyid"); v2 {
				st.fail(s3proto.NotImplemented("POST forms signed with Signature Version 2 are not supported; sign them with AWS4-HMAC-SHA256."),
					governance.OutcomeDeny, "form signed with SigV2")
				return false
			}
			st.fail(s3proto.InvalidArgument("Bucket POST must contain a field named '"+name+"'.  If it is specified, please check the order of the fields."),
				governance.OutcomeDeny, "form incomplete")
			return false
		}
	}
	alg, _ := f.Get("x-amz-algorithm")
	switch string(alg) {
	case sigv4.Algorithm:
	case "AWS4-ECDSA-P256-SHA256":
		st.fail(s3proto.NotImplemented("SigV4a (AWS4-ECDSA-P256-SHA256) is not supported; sign the form with AWS4-HMAC-SHA256."),
			governance.OutcomeDeny, "form signed with SigV4a")
		return false
	default:
		st.fail(s3proto.InvalidArgument("The form's x-amz-algorithm must be AWS4-HMAC-SHA256."), governance.OutcomeDeny, "form algorithm")
		return false
	}

	// x-amz-credential is AKID/yyyymmdd/region/s3/aws4_request, its date
	// that of x-amz-date.
	cred, _ := f.Get("x-amz-credential")
	amzDate, _ := f.Get("x-amz-date")
	parts := bytes.Split(cred, []byte{'/'})
	if len(parts) != 5 || len(parts[0]) == 0 || len(parts[1]) != 8 || string(parts[3]) != "s3" ||
		string(parts[4]) != "aws4_request" || len(amzDate) != 16 || !bytes.HasPrefix(amzDate, parts[1]) {
		st.fail(s3proto.InvalidArgument("The form's x-amz-credential must be <key>/<yyyymmdd>/<region>/s3/aws4_request, dated as x-amz-date."),
			governance.OutcomeDeny, "form credential malformed")
		return false
	}
	if _, err := time.Parse("20060102T150405Z", string(amzDate)); err != nil {
		st.fail(s3proto.InvalidArgument("The form's x-amz-date must be yyyymmddThhmmssZ."), governance.OutcomeDeny, "form date malformed")
		return false
	}
	if string(parts[2]) != s.cfg.Region {
		st.fail(s3proto.InvalidArgument("The form's credential is for region '"+string(parts[2])+"'; this endpoint's region is '"+s.cfg.Region+"'."),
			governance.OutcomeDeny, "form credential region")
		return false
	}
	akid := parts[0]
	st.akid = append(st.akid[:0], akid...)
	token, _ := f.Get("x-amz-security-token")
	st.cred.reset(s.keyring, s.root, s.tokens, now)
	secret, err := st.cred.Secret(akid, token)
	if err != nil {
		st.fail(s3proto.FromSigV4(err), governance.OutcomeDeny, "authentication failed")
		return false
	}

	// The signature is HMAC-SHA256 of the base64 policy as sent, under the
	// credential's signing key for the date and region of its scope.
	policy, _ := f.Get("policy")
	sig, _ := f.Get("x-amz-signature")
	var key [32]byte
	sigv4.DeriveSigningKey(&key, secret, parts[1], parts[2], []byte("s3"))
	mac := hmac.New(sha256.New, key[:])
	mac.Write(policy)
	var want [sha256.Size]byte
	var wantHex [2 * sha256.Size]byte
	hex.Encode(wantHex[:], mac.Sum(want[:0]))
	if !hmac.Equal(wantHex[:], bytes.ToLower(sig)) {
		st.fail(s3proto.FromSigV4(&sigv4.Error{Code: sigv4.ErrSignatureDoesNotMatch,
			Message: "The request signature we calculated does not match the signature you provided. Check your key and signing method."}),
			governance.OutcomeDeny, "authentication failed")
		return false
	}
	return true
}

// checkPostPolicy applies the signed policy to the form, and refuses the
// fields the gateway cannot carry out.
func (s *Server) checkPostPolicy(st *reqState, size int64, now time.Time) bool {
	p := &st.post
	raw, _ := p.form.Get("policy")
	doc := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
	n, err := base64.StdEncoding.Decode(doc, raw)
	if err != nil {
		st.fail(s3proto.InvalidPolicyDocument("the policy is not base64."), governance.OutcomeDeny, "form policy refused")
		return false
	}
	policy, err := s3proto.ParsePostPolicy(doc[:n])
	if err != nil {
		st.fail(s3proto.FromSigV4(err), governance.OutcomeDeny, "form policy refused")
		return false
	}
	if e := policy.Check(&p.form, st.req.Bucket, p.key, size, now); e != nil {
		st.fail(e, governance.OutcomeDeny, "form policy refused")
		return false
	}
	for _, f := range p.form.Fields {
		kind, header := s3proto.ClassifyPostField(f.Name)
		switch kind {
		case s3proto.PostFieldUnsupported:
			msg := "The POST form field '" + string(f.Name) + "' is not supported by this gateway."
			if equalFoldASCII(f.Name, "tagging") {
				msg += " Tag the object with PutObjectTagging after the upload."
			}
			st.fail(s3proto.NotImplemented(msg), governance.OutcomeDeny, "form field not supported")
			return false
		case s3proto.PostFieldHeader:
			if !s3proto.ValidHeaderValue(f.Value) {
				st.fail(s3proto.InvalidArgument("The POST form field '"+string(f.Name)+"' has a value that is not a valid header value."),
					governance.OutcomeDeny, "form field refused")
				return false
			}
			if strings.HasPrefix(header, "x-amz-checksum-") {
				p.checksum = true
			}
		}
	}
	return true
}

// postFileReader is the form's file: exactly left bytes, first those read
// with the head, then the body's; then the body must end with the closing
// delimiter, read before the reader reports io.EOF, so an upload whose
// body is not exactly the form never completes upstream. A delimiter
// inside the file means the form has parts after it: refused too.
type postFileReader struct {
	pending  []byte
	r        io.Reader
	left     int64
	boundary []byte
	done     bool
	// carry is the end of the file bytes returned so far, as much as a
	// delimiter split across two reads may have begun in.
	carry [len("\r\n--") + 70]byte
	nc    int
}

func (f *postFileReader) Read(p []byte) (int, error) {
	if f.left > 0 {
		if int64(len(p)) > f.left {
			p = p[:f.left]
		}
		var n int
		var err error
		if len(f.pending) > 0 {
			n = copy(p, f.pending)
			f.pending = f.pending[n:]
		} else {
			n, err = f.r.Read(p)
		}
		f.left -= int64(n)
		if err == io.EOF {
			err = nil
			if f.left > 0 && n == 0 {
				err = io.ErrUnexpectedEOF
			}
		}
		if n > 0 && f.holdsDelimiter(p[:n]) {
			return 0, errPostPartAfterFile
		}
		return n, err
	}
	if f.done {
		return 0, io.EOF
	}
	// The closing delimiter, then the end of the body.
	var tail [len("\r\n--") + 70 + len("--\r\n") + 1]byte
	want := len("\r\n--") + len(f.boundary) + len("--\r\n")
	got := copy(tail[:want+1], f.pending)
	f.pending = f.pending[got:]
	for got < want+1 {
		n, err := f.r.Read(tail[got : want+1])
		got += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	b := tail[:got]
	if got != want || !bytes.HasPrefix(b, []byte("\r\n--")) || !bytes.Equal(b[4:4+len(f.boundary)], f.boundary) ||
		!bytes.HasSuffix(b, []byte("--\r\n")) {
		return 0, errPostPartAfterFile
	}
	f.done = true
	return 0, io.EOF
}

// errPostPartAfterFile refuses a form whose body goes on after the file.
var errPostPartAfterFile = s3proto.MalformedPOSTRequest("The file must be the form's last field, and the body must end with \"\\r\\n--<boundary>--\\r\\n\" right after it.")

// holdsDelimiter reports whether the file bytes so far, ending with b,
// contain a delimiter ("\r\n--" and the boundary), and keeps their end.
func (f *postFileReader) holdsDelimiter(b []byte) bool {
	dl := len("\r\n--") + len(f.boundary)
	// A delimiter that began in the carry ends in b's first dl-1 bytes.
	var join [2 * (len("\r\n--") + 70)]byte
	j := append(join[:0], f.carry[:f.nc]...)
	j = append(j, b[:min(len(b), dl-1)]...)
	if isDelimiterIn(j, f.boundary) || isDelimiterIn(b, f.boundary) {
		return true
	}
	// Keep the last dl-1 bytes of everything returned.
	if len(b) >= dl-1 {
		f.nc = copy(f.carry[:], b[len(b)-(dl-1):])
	} else {
		keep := min(f.nc, dl-1-len(b))
		copy(f.carry[:], f.carry[f.nc-keep:f.nc])
		f.nc = keep + copy(f.carry[keep:], b)
	}
	return false
}

// isDelimiterIn reports whether b contains "\r\n--" followed by boundary.
func isDelimiterIn(b, boundary []byte) bool {
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte("\r\n--"))
		if i < 0 {
			return false
		}
		off += i
		if bytes.HasPrefix(b[off+4:], boundary) {
			return true
		}
		off++
	}
}

// answerPostObject turns the upstream's answer to a successful PutObject
// into what S3 answers a form upload with.
func (s *Server) answerPostObject(st *reqState) {
	resp := &st.upResp
	if bs := resp.BodyStream(); bs != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(bs, maxUploadAnswer))
		_ = resp.CloseBodyStream()
	}
	out := &st.ctx.Response
	f := &st.post.form
	etag := resp.Header.Peek("ETag")
	if len(etag) == 0 {
		etag = peekFold(&resp.Header, "etag")
	}
	redirect, ok := f.Get("success_action_redirect")
	if !ok {
		redirect, ok = f.Get("redirect")
	}
	if ok {
		// S3 ignores a redirect that is not a URL, and answers as without.
		if u, err := url.Parse(string(redirect)); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			q := u.Query()
			q.Set("bucket", string(st.req.Bucket))
			q.Set("key", string(st.req.Key))
			q.Set("etag", string(etag))
			u.RawQuery = q.Encode()
			out.SetStatusCode(http.StatusSeeOther)
			out.Header.Set("Location", u.String())
			st.status = http.StatusSeeOther
			return
		}
	}
	st.out = st.appendObjectURL(st.out[:0])
	out.Header.SetBytesV("Location", st.out)
	status, _ := f.Get("success_action_status")
	switch string(status) {
	case "200":
		st.status = http.StatusOK
	case "201":
		st.status = http.StatusCreated
		loc := len(st.out)
		st.out = s3proto.AppendPostResponse(st.out, st.out[:loc], st.req.Bucket, st.req.Key, etag)
		out.Header.SetContentType("application/xml")
		out.SetBodyRaw(st.out[loc:])
		st.bytesOut += int64(len(st.out) - loc)
	default:
		st.status = http.StatusNoContent
	}
	out.SetStatusCode(st.status)
}

// appendObjectURL appends the URL of the uploaded object as the client
// reached the gateway.
func (st *reqState) appendObjectURL(dst []byte) []byte {
	scheme := "http://"
	if st.ctx.IsTLS() || st.srv.cfg.TrustForwarded && equalFoldASCII(st.hdr.get("x-forwarded-proto"), "https") {
		scheme = "https://"
	}
	dst = append(dst, scheme...)
	dst = append(dst, st.hdr.get("host")...)
	if st.req.VirtualHosted {
		dst = append(dst, '/')
		return pct.AppendEncode(dst, st.req.Key, true)
	}
	return st.req.AppendPath(dst)
}
