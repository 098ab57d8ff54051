package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/bounded"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/s3proto"
	"github.com/duckicelake/duckicelake/sigv4"
)

// Remote signing: an Iceberg client with no S3 credentials at all sends each
// S3 request it is about to make ({method, uri, headers, body?}) to
// POST …/tables/{table}/sign (or the legacy POST /v1/aws/s3/sign) and gets
// back the headers that authenticate it. The catalog admits the request
// first, exactly as the gateway admits an S3 request (s3proto.Classifier,
// then governance.AdmitS3: the grants of a credential for the table's
// prefix, then the Authorizer), and only then signs it:
//
//   - by default for the gateway, with a short-lived credential minted for
//     the table (so the gateway verifies and authorises the request once
//     more, like any other, and streams it to the upstream);
//   - with SignerConfig.Direct, for the upstream with its root key: the bytes
//     bypass the gateway, the authorisation does not.

// SignerConfig configures remote signing. Signing for the gateway needs
// Deps.Keyring and Config.GatewayURL; direct signing needs Upstream.
type SignerConfig struct {
	// CatalogURL is the catalog as clients reach it ("https://cat.example"),
	// advertised as s3.signer.uri. Empty: the scheme and Host of each
	// LoadTable request.
	CatalogURL string
	// CredentialTTL is the lifetime of the gateway credential requests are
	// signed with (10m); it never outlives the caller's access token. One
	// credential serves a principal's requests for a table until half of
	// its lifetime is gone.
	CredentialTTL time.Duration
	// Direct signs for the upstream with its root key instead of for the
	// gateway.
	Direct bool
	// Upstream is the S3 backend. Direct signing requires it; otherwise it
	// only lets sign requests name the upstream's host (they are re-targeted
	// at the gateway).
	Upstream SignerUpstream
	// VirtualHostSuffixes are further hosts under which a leading label
	// names the bucket, as the gateway's gateway.Config.VirtualHostSuffixes.
	// The gateway's and the upstream's own hosts always count.
	VirtualHostSuffixes []string
}

// SignerUpstream is the S3 backend direct signing signs for.
type SignerUpstream struct {
	// Endpoint is the backend's base URL, "https://s3.example.com".
	Endpoint string
	// Region is the backend's signing region ("us-east-1").
	Region string
	// AccessKeyID and SecretAccessKey are its root credentials.
	AccessKeyID, SecretAccessKey string
	// PathStyle addresses objects as /bucket/key; otherwise the bucket goes
	// into the host.
	PathStyle bool
}

// DefaultSignerCredentialTTL is the default SignerConfig.CredentialTTL.
const DefaultSignerCredentialTTL = 10 * time.Minute

// maxSignerCreds bounds the cached signing credentials.
const maxSignerCreds = 4096

// remoteSigner authorises and signs S3 requests. It is safe for concurrent
// use.
type remoteSigner struct {
	direct     bool
	scheme     string // of the endpoint signed for
	authority  string // its host[:port] as the Host header carries it
	pathStyle  bool
	endpoint   string // scheme://authority: the advertised s3.endpoint
	region     string
	hosts      []string // host names a request URI may name (lower-case, no port)
	classifier s3proto.Classifier
	catalogURL string

	root    *sigv4.Signer  // direct
	keyring *creds.Keyring // for the gateway
	catalog string         // Claims.Catalog of minted credentials
	ttl     time.Duration
	authz   governance.Authorizer
	log     *zap.Logger

	mu    sync.Mutex
	creds map[signerCredKey]*signerCred
}

// signerCredKey identifies what a cached credential was minted for.
type signerCredKey struct {
	subject        string
	session        session // an agent's credential is never a human's
	bucket, prefix string
	access         creds.Access
	notAfter       int64 // the caller's token expiry, Unix seconds (0: none)
}

type signerCred struct {
	signer sigv4.Signer
	expiry time.Time
	capped bool // expiry is the caller's token expiry: a new mint cannot do better
}

// newRemoteSigner returns the signer cfg and deps allow, or nil when remote
// signing is not possible (no keyring or gateway URL, and not Direct).
func newRemoteSigner(cfg *Config, keyring *creds.Keyring, authz governance.Authorizer, log *zap.Logger) (*remoteSigner, error) {
	sc := &cfg.Signer
	rs := &remoteSigner{
		direct:     sc.Direct,
		catalogURL: strings.TrimSuffix(sc.CatalogURL, "/"),
		keyring:    keyring,
		catalog:    cfg.Name,
		ttl:        sc.CredentialTTL,
		authz:      authz,
		log:        log,
		creds:      make(map[signerCredKey]*signerCred),
	}
	if rs.ttl <= 0 {
		rs.ttl = DefaultSignerCredentialTTL
	}
	if rs.authz == nil {
		rs.authz = governance.ScopeOnly{}
	}
	if rs.catalogURL != "" {
		// A path is fine: the catalog may sit behind a proxy under one.
		u, err := url.Parse(rs.catalogURL)
		if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("rest: signer catalog URL %q: want http(s)://host[:port][/path]", rs.catalogURL)
		}
	}
	var upScheme, upAuthority string
	if sc.Upstream.Endpoint != "" {
		var err error
		if upScheme, upAuthority, err = splitEndpoint(strings.TrimSuffix(sc.Upstream.Endpoint, "/")); err != nil {
			return nil, fmt.Errorf("rest: signer upstream endpoint: %w", err)
		}
		rs.hosts = append(rs.hosts, hostName(upAuthority))
	}
	if sc.Direct {
		up := &sc.Upstream
		if up.Endpoint == "" || up.AccessKeyID == "" || up.SecretAccessKey == "" {
			return nil, errors.New("rest: direct signing needs the upstream's endpoint, access key id and secret")
		}
		rs.scheme, rs.authority, rs.pathStyle = upScheme, upAuthority, up.PathStyle
		rs.region = up.Region
		if rs.region == "" {
			rs.region = DefaultRegion
		}
		rs.root = &sigv4.Signer{AccessKeyID: up.AccessKeyID, SecretAccessKey: up.SecretAccessKey, Region: rs.region, Service: "s3"}
	} else {
		if keyring == nil || cfg.GatewayURL == "" {
			return nil, nil
		}
		var err error
		if rs.scheme, rs.authority, err = splitEndpoint(cfg.GatewayURL); err != nil {
			return nil, fmt.Errorf("rest: gateway URL: %w", err)
		}
		rs.pathStyle = true // the gateway serves both styles; path style needs no DNS
		rs.region = cfg.Region
	}
	rs.endpoint = rs.scheme + "://" + rs.authority
	if gw := cfg.GatewayURL; gw != "" {
		if _, a, err := splitEndpoint(gw); err == nil {
			rs.hosts = append(rs.hosts, hostName(a))
		}
	}
	rs.hosts = append(rs.hosts, hostName(rs.authority))
	for _, h := range sc.VirtualHostSuffixes {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			rs.hosts = append(rs.hosts, h)
		}
	}
	slices.Sort(rs.hosts)
	rs.hosts = slices.Compact(rs.hosts)
	for _, h := range rs.hosts {
		rs.classifier.VirtualHostSuffixes = append(rs.classifier.VirtualHostSuffixes, []byte(h))
	}
	return rs, nil
}

// splitEndpoint splits "http(s)://host[:port]" (no path, query or user
// info) into its scheme and authority; a default port is dropped, as
// clients leave it out of the Host header.
func splitEndpoint(u string) (scheme, authority string, err error) {
	scheme, authority, ok := strings.Cut(u, "://")
	scheme = strings.ToLower(scheme)
	if !ok || scheme != "http" && scheme != "https" {
		return "", "", fmt.Errorf("%q: want http:// or https://", u)
	}
	if authority == "" || strings.ContainsAny(authority, "/?#@ \t") {
		return "", "", fmt.Errorf("%q: want scheme://host[:port] without a path", u)
	}
	return scheme, stripDefaultPort(scheme, authority), nil
}

func stripDefaultPort(scheme, authority string) string {
	switch {
	case scheme == "http" && strings.HasSuffix(authority, ":80"):
		return strings.TrimSuffix(authority, ":80")
	case scheme == "https" && strings.HasSuffix(authority, ":443"):
		return strings.TrimSuffix(authority, ":443")
	}
	return authority
}

// hostName is the lower-case host of an authority, without its port.
func hostName(authority string) string {
	h := authority
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i >= 0 {
			h = h[:i+1]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// knownHost reports whether a request URI's host is one the signer serves:
// the gateway's or the upstream's host, or a virtual host under one.
func (rs *remoteSigner) knownHost(name string) bool {
	for _, h := range rs.hosts {
		if name == h || strings.HasSuffix(name, "."+h) && !strings.HasPrefix(h, "[") {
			return true
		}
	}
	return false
}

// signInput is the spec's S3SignRequest / RemoteSignRequest.
type signInput struct {
	Region     string              `json:"region"`
	URI        string              `json:"uri"`
	Method     string              `json:"method"`
	Headers    map[string][]string `json:"headers"`
	Properties map[string]string   `json:"properties"`
	Body       *string             `json:"body"`
	Provider   string              `json:"provider"`
}

// signOutput is the spec's S3SignResponse / RemoteSignResult.
type signOutput struct {
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
}

// check refuses a sign request that does not follow the spec.
func (in *signInput) check() error {
	if in.URI == "" {
		return badRequest("malformed sign request: uri is required")
	}
	switch in.Method {
	case "GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS":
	case "":
		return badRequest("malformed sign request: method is required")
	default:
		return badRequest("malformed sign request: method %q is not one the spec allows", in.Method)
	}
	if p := in.Provider; p != "" && !strings.EqualFold(p, "s3") {
		return badRequest("this catalog signs only s3 requests, not provider %q", p)
	}
	return nil
}

// s3URI is a request URI split as it goes on the wire.
type s3URI struct {
	authority   string // host[:port]
	name        string // lower-case host without the port
	path, query []byte // raw, still percent-encoded
}

// parseS3URI splits an absolute http(s) URI without touching its encoding.
func parseS3URI(raw string) (s3URI, error) {
	var u s3URI
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f {
			return u, errors.New("the uri contains a space or control character")
		}
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if scheme = strings.ToLower(scheme); !ok || scheme != "http" && scheme != "https" {
		return u, errors.New("the uri must be an absolute http:// or https:// URL")
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return u, errors.New("the uri must not have a fragment")
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	u.authority = rest[:end]
	if u.authority == "" || strings.IndexByte(u.authority, '@') >= 0 {
		return u, errors.New("the uri must name a host (and no user info)")
	}
	u.name = hostName(u.authority)
	pathQuery := rest[end:]
	path, query, _ := strings.Cut(pathQuery, "?")
	if path == "" {
		path = "/"
	}
	u.path, u.query = []byte(path), []byte(query)
	return u, nil
}

// newSignHeaders are a sign request's headers by lower-case name; they
// answer the classifier's x-amz-copy-source lookup.
func newSignHeaders(in map[string][]string) (s3proto.Headers, error) {
	h := make(s3proto.Headers, len(in))
	for name, values := range in {
		if !validHeaderName(name) {
			return nil, badRequest("malformed sign request: header name %q", name)
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return nil, badRequest("malformed sign request: header %s has a control character", name)
			}
		}
		lower := strings.ToLower(name)
		h[lower] = append(h[lower], values...)
	}
	return h, nil
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// signedClientHeader reports whether a client header (lower-case) is signed:
// the ones S3 and the gateway care about and clients do not change after
// signing. x-amz-date, x-amz-security-token and x-amz-content-sha256 are the
// signer's own.
func signedClientHeader(name string) bool {
	switch name {
	case "x-amz-date", "x-amz-security-token", "x-amz-content-sha256":
		return false
	case "content-type", "content-md5", "content-encoding", "content-disposition", "content-language",
		"cache-control", "expires", "range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since":
		return true
	}
	return strings.HasPrefix(name, "x-amz-")
}

// tableScope is the table a sign request must stay inside.
type tableScope struct {
	ns, table      string
	bucket, prefix string // the table's files: bucket and key prefix (with '/')
}

// tableLocation splits a table path, "s3://bucket/prefix/", into the bucket
// and key prefix its credentials are scoped to. The prefix ends in '/' so
// that table t does not cover t2's files.
func tableLocation(path string) (bucket, prefix string, ok bool) {
	l, err := objstore.ParseDir(path)
	if err != nil || l.Scheme() != objstore.SchemeS3 {
		return "", "", false
	}
	return l.Bucket(), l.Key(), true
}

// resolver finds the table a classified request must stay inside.
type resolver func(req *s3proto.Request, deleteKeys [][]byte) (tableScope, error)

// sign authorises in for p and signs it.
func (rs *remoteSigner) sign(ctx context.Context, p *Principal, in *signInput, resolve resolver, now time.Time) (*signOutput, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	u, err := parseS3URI(in.URI)
	if err != nil {
		return nil, badRequest("malformed sign request: %v", err)
	}
	if !rs.knownHost(u.name) {
		return nil, forbidden("the uri's host %s is neither the gateway nor the object store of this catalog", u.name)
	}
	hdr, err := newSignHeaders(in.Headers)
	if err != nil {
		return nil, err
	}
	var req s3proto.Request
	if err := rs.classifier.Classify(&req, []byte(in.Method), []byte(u.authority), u.path, u.query, hdr); err != nil {
		return nil, s3Refusal(err)
	}
	var body []byte
	var keys [][]byte
	if in.Body != nil {
		body = []byte(*in.Body)
		if req.Op == s3proto.OpDeleteObjects {
			if keys, _, err = s3proto.ParseDeleteObjects(body, nil); err != nil {
				return nil, s3Refusal(err)
			}
		}
	}
	sc, err := resolve(&req, keys)
	if err != nil {
		return nil, err
	}
	a := p.gov.ObjectAccess(sc.ns)
	if err := rs.authorize(ctx, p, &sc, a, &req, keys, in.Body != nil); err != nil {
		return nil, err
	}
	payload, clientHash, err := rs.payloadHash(&req, hdr, body, in.Body != nil)
	if err != nil {
		return nil, err
	}

	// The target is rebuilt from the classified bucket and key, never copied
	// from the client's URI: the signature covers exactly what was checked.
	authority := rs.authority
	path := req.AppendPath(make([]byte, 0, 64+len(req.Bucket)+3*len(req.Key)))
	if !rs.pathStyle && len(req.Bucket) > 0 {
		authority = string(req.Bucket) + "." + authority
		path = path[1+len(req.Bucket):]
		if len(path) == 0 {
			path = append(path, '/')
		}
	}
	query := s3proto.AppendForwardQuery(nil, u.query)

	signer, token, err := rs.signerFor(p, &sc, a, now)
	if err != nil {
		return nil, err
	}
	amzDate := string(sigv4.AppendAmzDate(nil, now))
	hs := make([]sigv4.Header, 0, len(hdr)+4)
	hs = append(hs, sigv4.Header{Name: []byte("host"), Value: []byte(authority)})
	names := make([]string, 0, len(hdr))
	for name := range hdr {
		if signedClientHeader(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		for _, v := range hdr[name] {
			hs = append(hs, sigv4.Header{Name: []byte(name), Value: []byte(v)})
		}
	}
	hs = append(hs,
		sigv4.Header{Name: []byte("x-amz-content-sha256"), Value: []byte(payload)},
		sigv4.Header{Name: []byte("x-amz-date"), Value: []byte(amzDate)})
	if token != "" {
		hs = append(hs, sigv4.Header{Name: []byte("x-amz-security-token"), Value: []byte(token)})
	}
	auth, _ := signer.AppendAuthorization(nil, &sigv4.SignRequest{
		Method: []byte(in.Method), RawPath: path, RawQuery: query, Headers: hs, PayloadHash: []byte(payload),
	}, now)

	// Only the headers the client must add: clients merge them into their
	// request (PyIceberg appends, so echoing a header would double it).
	out := &signOutput{
		URI: rs.scheme + "://" + authority + string(path),
		Headers: map[string][]string{
			"Authorization": {string(auth)},
			"X-Amz-Date":    {amzDate},
		},
	}
	if len(query) > 0 {
		out.URI += "?" + string(query)
	}
	if token != "" {
		out.Headers["X-Amz-Security-Token"] = []string{token}
	}
	if !clientHash {
		out.Headers["x-amz-content-sha256"] = []string{payload}
	}
	return out, nil
}

// s3Refusal turns a classifier or DeleteObjects parser error into the
// ErrorModel: its status (400 or 403) and S3's words.
func s3Refusal(err error) error {
	var se *s3proto.Error
	if errors.As(err, &se) && se.Status == fasthttp.StatusForbidden {
		return forbidden("%s: %s", se.Code, se.Message)
	}
	if se != nil {
		return badRequest("the S3 request is refused: %s: %s", se.Code, se.Message)
	}
	return badRequest("the S3 request is refused: %v", err)
}

// authorize admits the request as the gateway would admit it made with a
// credential for the table (governance.AdmitS3): every key it touches
// inside the table's prefix with the access its op needs, then the
// Authorizer. Any failure denies.
func (rs *remoteSigner) authorize(ctx context.Context, p *Principal, sc *tableScope, a creds.Access, req *s3proto.Request, keys [][]byte, hasBody bool) error {
	outside := func(reason string) error {
		return forbidden("signing refused for table %s.%s: %s", sc.ns, sc.table, reason)
	}
	if a == 0 {
		return outside("no access to the namespace")
	}
	if req.Op == s3proto.OpListBuckets {
		return outside("ListBuckets names no object of the table")
	}
	if req.Op == s3proto.OpDeleteObjects && !hasBody {
		// PyIceberg (s3fs) sends no body. Signed for the gateway the request
		// is still safe: the gateway checks every key of the body against the
		// table-scoped credential and runs its Authorizer on each. Signed
		// directly, nothing would.
		if rs.direct {
			return outside("DeleteObjects must carry its body to be signed for the object store")
		}
		if a&creds.Write == 0 {
			return outside("the token may not write the namespace")
		}
		if string(req.Bucket) != sc.bucket {
			return outside("the bucket is not the table's")
		}
		return nil
	}
	claims := p.claims(rs.catalog)
	claims.Grants = []creds.Grant{{Bucket: sc.bucket, Prefix: sc.prefix, Access: a}}
	gp := p.govPrincipal(rs.catalog)
	d, err := governance.AdmitS3(ctx, rs.authz, &gp, &claims, req, keys, nil)
	if err != nil {
		rs.log.Warn("remote signing: authorizer failed; denied", zap.String("principal", p.Subject),
			zap.String("op", req.Op.String()), zap.Error(err))
		return outside(d.Reason)
	}
	if !d.Allow {
		reason := d.Reason
		if req.Op.Access()&creds.Write != 0 && a&creds.Write == 0 {
			// Only the grant check can have refused: it needs write on a
			// key before the Authorizer is asked.
			reason = "the token may only read the namespace"
		}
		return outside(reason)
	}
	return nil
}

// payloadHash decides x-amz-content-sha256: the client's own value when it
// sent one the signer can stand behind, else the body's hash when the body
// came along, else UNSIGNED-PAYLOAD. clientHash reports that the client
// sent it. A DeleteObjects signed directly for the upstream is bound to the
// body whose keys were checked.
func (rs *remoteSigner) payloadHash(req *s3proto.Request, hdr s3proto.Headers, body []byte, hasBody bool) (payload string, clientHash bool, err error) {
	var bodyHash string
	if hasBody {
		sum := sha256.Sum256(body)
		bodyHash = hex.EncodeToString(sum[:])
	}
	bindBody := rs.direct && req.Op == s3proto.OpDeleteObjects
	vals := hdr["x-amz-content-sha256"]
	switch {
	case len(vals) > 1:
		return "", false, badRequest("malformed sign request: x-amz-content-sha256 given more than once")
	case len(vals) == 0:
		if hasBody {
			return bodyHash, false, nil
		}
		return sigv4.UnsignedPayload, false, nil
	}
	v := strings.TrimSpace(vals[0])
	switch {
	case v == sigv4.UnsignedPayload || v == sigv4.StreamingUnsignedTrailer:
		if bindBody {
			return "", false, forbidden("a DeleteObjects signed for the object store must sign its body's SHA-256, not %s", v)
		}
	case isHexSHA256(v):
		if hasBody && !strings.EqualFold(v, bodyHash) {
			return "", false, badRequest("x-amz-content-sha256 does not match the body sent with the sign request")
		}
	default:
		return "", false, badRequest("x-amz-content-sha256 %q cannot be signed remotely (chunk signatures need the signing key); use UNSIGNED-PAYLOAD or the body's SHA-256", v)
	}
	return v, true, nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// signerFor returns the signer for a request in sc: the upstream's root
// signer, or a cached gateway credential for (p, table, access), minted
// when there is none with at least half its lifetime left. token is the
// credential's session token ("" for the root key).
func (rs *remoteSigner) signerFor(p *Principal, sc *tableScope, a creds.Access, now time.Time) (signer *sigv4.Signer, token string, err error) {
	if rs.direct {
		return rs.root, "", nil
	}
	key := signerCredKey{subject: p.Subject, session: p.session, bucket: sc.bucket, prefix: sc.prefix, access: a}
	if !p.Expiry.IsZero() {
		key.notAfter = p.Expiry.Unix()
	}
	rs.mu.Lock()
	c := rs.creds[key]
	rs.mu.Unlock()
	if c != nil && now.Before(c.expiry) && (c.capped || c.expiry.Sub(now) > rs.ttl/2) {
		return &c.signer, c.signer.SessionToken, nil
	}
	exp, capped := now.Add(rs.ttl), false
	if !p.Expiry.IsZero() && p.Expiry.Before(exp) {
		exp, capped = p.Expiry, true
	}
	claims := p.claims(rs.catalog)
	claims.Grants = []creds.Grant{{Bucket: sc.bucket, Prefix: sc.prefix, Access: a}}
	claims.Expiry = exp
	m, err := rs.keyring.Mint(claims)
	if err != nil {
		if capped {
			return nil, "", notAuthorized("the access token expires too soon to sign with; get a new one")
		}
		return nil, "", fmt.Errorf("mint a signing credential for %s.%s: %w", sc.ns, sc.table, err)
	}
	c = &signerCred{expiry: m.Expiry, capped: capped}
	c.signer = sigv4.Signer{AccessKeyID: m.AccessKeyID, SecretAccessKey: m.SecretAccessKey, SessionToken: m.SessionToken,
		Region: rs.region, Service: "s3"}
	rs.mu.Lock()
	if len(rs.creds) >= maxSignerCreds {
		for k, old := range rs.creds {
			if !now.Before(old.expiry) || len(rs.creds) >= maxSignerCreds {
				delete(rs.creds, k)
			}
		}
	}
	rs.creds[key] = c
	rs.mu.Unlock()
	return &c.signer, m.SessionToken, nil
}

// wantsRemoteSigning reports whether X-Iceberg-Access-Delegation lists
// remote-signing.
func wantsRemoteSigning(ctx *fasthttp.RequestCtx) bool {
	return delegationListed(ctx, "remote-signing")
}

// delegationListed reports whether X-Iceberg-Access-Delegation, a
// comma-separated list, names mode.
func delegationListed(ctx *fasthttp.RequestCtx, mode string) bool {
	h := ctx.Request.Header.Peek("X-Iceberg-Access-Delegation")
	for len(h) > 0 {
		var item []byte
		item, h, _ = bytes.Cut(h, []byte{','})
		if string(bytes.TrimSpace(item)) == mode {
			return true
		}
	}
	return false
}

// remoteSigningConfig is the LoadTableResult config of table ns.table for a
// client that asked for remote signing (X-Iceberg-Access-Delegation lists
// remote-signing), or nil when remote signing is not configured. It carries
// no credential: every S3 request goes through the table's sign endpoint.
// Answers that return a LoadTableResult for a new table (create, stage
// create) use it as LoadTable does, so that the client can write with no
// keys.
func (s *Server) remoteSigningConfig(ctx *fasthttp.RequestCtx, ns, table string) map[string]string {
	rs := s.signer
	if rs == nil {
		return nil
	}
	base := rs.catalogURL
	if base == "" {
		scheme := "http"
		if ctx.IsTLS() {
			scheme = "https"
		}
		base = scheme + "://" + string(ctx.Host())
	}
	return map[string]string{
		"s3.endpoint":               rs.endpoint,
		"s3.path-style-access":      fmt.Sprint(rs.pathStyle),
		"s3.region":                 rs.region,
		"client.region":             rs.region,
		"s3.remote-signing-enabled": "true",
		"s3.signer.uri":             base,
		"s3.signer.endpoint": "v1/" + url.PathEscape(s.cfg.Name) + "/namespaces/" + url.PathEscape(ns) +
			"/tables/" + url.PathEscape(table) + "/sign",
		// PyIceberg signs only through fsspec (s3fs); its default pyarrow
		// FileIO would look for keys.
		"s3.signer":  "S3V4RestSigner",
		"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
	}
}

// remoteSigningBody encodes e with the remote-signing config.
func (s *Server) remoteSigningBody(e *loadEntry, cfg map[string]string) ([]byte, error) {
	config, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return s.appendLoadResult(make([]byte, 0, len(e.body)+len(config)+32), e, config, nil), nil
}

var errNoSigner = errorf(fasthttp.StatusNotAcceptable, TypeUnsupported,
	"remote signing is not configured on this catalog (it needs minting keys and the gateway URL, or direct signing)")

// signTable serves POST /v1/{prefix}/namespaces/{ns}/tables/{table}/sign.
func (s *Server) signTable(r *request) error {
	if s.signer == nil {
		return errNoSigner
	}
	if r.p.gov.ObjectAccess(r.ns) == 0 {
		return forbidden("no access to namespace %s", r.ns)
	}
	var in signInput
	if err := s.readJSON(r.rc, &in); err != nil {
		return err
	}
	if err := in.check(); err != nil {
		return err
	}
	sc, err := s.tableScopeOf(r.ctx, r.p, r.ns, r.table)
	if err != nil {
		return err
	}
	if sc, err = s.maskedSignScope(r, sc); err != nil {
		return err
	}
	out, err := s.signer.sign(r.ctx, r.p, &in, func(*s3proto.Request, [][]byte) (tableScope, error) { return sc, nil }, s.now())
	if err != nil {
		return err
	}
	return writeSigned(r.rc, out)
}

// maskedSignScope is where a principal held to the airtight tier signs for
// table sc: its masked copy (the files the shadow metadata it loaded names),
// never the base table — the same rule vending follows (vendTarget), so a
// remote-signing client reads what a vended-credential client reads. Any
// other principal signs within sc.
func (s *Server) maskedSignScope(r *request, sc tableScope) (tableScope, error) {
	if s.gov == nil {
		return sc, nil
	}
	snap, err := s.currentSnapshot(r.ctx)
	if err != nil {
		return tableScope{}, err
	}
	t, masked, err := s.vendTarget(r, ducklake.Table{Name: sc.table, Path: "s3://" + sc.bucket + "/" + sc.prefix}, snap)
	if err != nil || !masked {
		return sc, err
	}
	return scopeOf(r.ns, t)
}

// signLegacy serves POST /v1/aws/s3/sign: the table is the one whose files
// the request's key (list prefix, DeleteObjects keys) lies under.
func (s *Server) signLegacy(r *request) error {
	if s.signer == nil {
		return errNoSigner
	}
	var in signInput
	if err := s.readJSON(r.rc, &in); err != nil {
		return err
	}
	if err := in.check(); err != nil {
		return err
	}
	resolve := func(req *s3proto.Request, keys [][]byte) (tableScope, error) {
		var key []byte
		switch {
		case req.Op.IsList():
			key = req.ListPrefix
		case req.Op == s3proto.OpDeleteObjects && len(keys) > 0:
			key = keys[0]
		case req.Op.IsObject():
			key = req.Key
		default:
			return tableScope{}, forbidden("the request names no object of a table (%s); sign it at the table's endpoint", req.Op)
		}
		idx, err := s.tableIndex(r.ctx)
		if err != nil {
			return tableScope{}, err
		}
		sc, ok := idx.find(req.Bucket, key)
		if !ok || r.p.gov.ObjectAccess(sc.ns) == 0 {
			return tableScope{}, forbidden("the object is outside every table this token may use")
		}
		return sc, nil
	}
	out, err := s.signer.sign(r.ctx, r.p, &in, resolve, s.now())
	if err != nil {
		return err
	}
	return writeSigned(r.rc, out)
}

func writeSigned(ctx *fasthttp.RequestCtx, out *signOutput) error {
	// Signatures carry a date and cover the request's exact headers; a
	// client cache keyed by method and URI must not reuse them.
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "no-cache")
	return writeJSON(ctx, out)
}

// tableScopeOf finds where table ns.table keeps its files, at the current
// snapshot. A table that does not exist yet is one being staged (a create
// transaction writes its data files before it commits): a principal who may
// write ns may sign for the location the catalog gives a new table of that
// name. Otherwise NoSuchTable.
func (s *Server) tableScopeOf(ctx context.Context, p *Principal, ns, table string) (tableScope, error) {
	snap, err := s.currentSnapshot(ctx)
	if err != nil {
		return tableScope{}, err
	}
	key := ns + "\x00" + table
	if e, ok := s.signScopes.Get(key); ok && e.snap == snap {
		return e.scope, nil
	}
	t, err := s.tableAt(ctx, snap, ns, table)
	if isNoSuchTable(err) && s.principalAllows(p, governance.ActionCreateTable, ns) {
		sc, serr := s.schemaNamed(ctx, snap, ns)
		if serr != nil {
			return tableScope{}, serr
		}
		// Where a create puts a table without an explicit location.
		return scopeOf(ns, ducklake.Table{Name: table, Path: strings.TrimSuffix(sc.Path, "/") + "/" + table + "/"})
	}
	if err != nil {
		return tableScope{}, err
	}
	sc, err := scopeOf(ns, t)
	if err != nil {
		return tableScope{}, err
	}
	s.signScopes.Put(key, scopeEntry{snap: snap, scope: sc})
	return sc, nil
}

func scopeOf(ns string, t ducklake.Table) (tableScope, error) {
	bucket, prefix, ok := tableLocation(t.Path)
	if !ok {
		return tableScope{}, unsupported("table %s.%s does not live on S3 (%s); there is nothing to sign", ns, t.Name, t.Path)
	}
	return tableScope{ns: ns, table: t.Name, bucket: bucket, prefix: prefix}, nil
}

// scopeCache remembers table locations by "ns\x00table", each as of the
// snapshot it was read at.
type scopeCache struct {
	bounded.Map[string, scopeEntry]
	indexMu sync.RWMutex
	index   *tableIdx // every table, for the legacy route
}

type scopeEntry struct {
	snap  int64
	scope tableScope
}

// tableIdx lists every table's location at one snapshot, longest prefix
// first, so the first match is the innermost table.
type tableIdx struct {
	snap   int64
	tables []tableScope
}

func (x *tableIdx) find(bucket, key []byte) (tableScope, bool) {
	for _, t := range x.tables {
		if t.bucket == string(bucket) && bytes.HasPrefix(key, []byte(t.prefix)) {
			return t, true
		}
	}
	return tableScope{}, false
}

// tableIndex returns the table index at the current snapshot, rebuilding it
// when the snapshot moved.
func (s *Server) tableIndex(ctx context.Context) (*tableIdx, error) {
	snap, err := s.currentSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	s.signScopes.indexMu.RLock()
	idx := s.signScopes.index
	s.signScopes.indexMu.RUnlock()
	if idx != nil && idx.snap == snap {
		return idx, nil
	}
	scs, err := s.schemas(ctx, snap)
	if err != nil {
		return nil, err
	}
	names := make(map[int64]string, len(scs))
	for _, sc := range scs {
		names[sc.ID] = sc.Name
	}
	ts, err := s.reader.Tables(ctx, snap)
	if err != nil {
		return nil, err
	}
	idx = &tableIdx{snap: snap, tables: make([]tableScope, 0, len(ts))}
	for _, t := range ts {
		if sc, err := scopeOf(names[t.SchemaID], t); err == nil {
			idx.tables = append(idx.tables, sc)
		}
	}
	slices.SortStableFunc(idx.tables, func(a, b tableScope) int { return len(b.prefix) - len(a.prefix) })
	s.signScopes.indexMu.Lock()
	if cur := s.signScopes.index; cur == nil || cur.snap <= snap {
		s.signScopes.index = idx
	}
	s.signScopes.indexMu.Unlock()
	return idx, nil
}
