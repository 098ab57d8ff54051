package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/s3test"
)

// stackEnv is the running stack (testsupport.Stack) as these tests use it.
type stackEnv struct {
	Gateway    string // http://host:port
	Admin      string
	Config     string // duckicelake.toml for `creds mint --config`
	Bin        string // bin/duckicelake
	S3Endpoint string // the backend, direct
	S3Key      string // the backend's root keys
	S3Secret   string
	Region     string
	Bucket     string
}

// backendEnv is the part of the stack that does not need the gateway.
func backendEnv(t testing.TB) *stackEnv {
	t.Helper()
	s := testsupport.RequireStack(t, testsupport.S3Part).S3
	return &stackEnv{S3Endpoint: s.Endpoint, S3Key: s.AccessKey, S3Secret: s.SecretKey, Bucket: s.Bucket, Region: s.Region}
}

// gatewayEnv is the whole stack: backend and gateway.
func gatewayEnv(t testing.TB) *stackEnv {
	t.Helper()
	e := backendEnv(t)
	g := testsupport.RequireStack(t, testsupport.GatewayPart).Gateway
	e.Gateway, e.Admin, e.Config, e.Bin = g.URL, g.Admin, g.Config, g.Bin
	return e
}

// creds is an S3 credential: a minted one, or the backend's root keys.
type creds struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// mintOpts are the flags of `duckicelake creds mint`.
type mintOpts struct {
	Principal string
	Grants    []string // bucket:prefix:access
	TTL       string   // e.g. "1h"; empty = the default
	Extra     []string // more flags
}

// mint runs `duckicelake creds mint --format env` against the stack's config.
func (e *stackEnv) mint(t testing.TB, o mintOpts) creds {
	t.Helper()
	c, err := e.tryMint(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *stackEnv) tryMint(o mintOpts) (creds, error) {
	if o.Principal == "" {
		o.Principal = "interop"
	}
	args := []string{"creds", "mint", "--config", e.Config, "--principal", o.Principal, "--format", "env"}
	for _, g := range o.Grants {
		args = append(args, "--grant", g)
	}
	if o.TTL != "" {
		args = append(args, "--ttl", o.TTL)
	}
	args = append(args, o.Extra...)
	cmd := exec.Command(e.Bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return creds{}, errors.New("duckicelake " + strings.Join(args, " ") + ": " + err.Error() + ": " + stderr.String())
	}
	var c creds
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		v = strings.Trim(v, `"'`)
		switch k {
		case "AWS_ACCESS_KEY_ID":
			c.AccessKeyID = v
		case "AWS_SECRET_ACCESS_KEY":
			c.SecretAccessKey = v
		case "AWS_SESSION_TOKEN":
			c.SessionToken = v
		}
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" || c.SessionToken == "" {
		return creds{}, errors.New("creds mint --format env printed no credential: " + string(out))
	}
	return c, nil
}

// root is the backend's own root credential.
func (e *stackEnv) root() creds { return creds{AccessKeyID: e.S3Key, SecretAccessKey: e.S3Secret} }

// s3Client returns an aws-sdk-go-v2 client for endpoint, path-style.
// checksums selects the SDK's request checksum mode ("" = the SDK default,
// which adds CRC checksums to every PUT and UploadPart).
func (e *stackEnv) s3Client(endpoint string, c creds, checksums aws.RequestChecksumCalculation) *s3.Client {
	return s3test.Client(endpoint, e.Region, c.AccessKeyID, c.SecretAccessKey, c.SessionToken, s3test.WhenRequired,
		func(o *s3.Options) { o.RequestChecksumCalculation = checksums }, s3test.Timeout(2*time.Minute))
}

// backend is a root client for the backend, bypassing the gateway: the
// ground truth every test compares against.
func (e *stackEnv) backend() *s3.Client {
	return e.s3Client(e.S3Endpoint, e.root(), aws.RequestChecksumCalculationWhenRequired)
}

// backendGet reads key from the backend directly; ok is false when it does not exist.
func (e *stackEnv) backendGet(t testing.TB, key string) (data []byte, ok bool) {
	t.Helper()
	out, err := e.backend().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &e.Bucket, Key: &key})
	if err != nil {
		if httpStatus(err) == http.StatusNotFound {
			return nil, false
		}
		t.Fatalf("backend GET %s: %v", key, err)
	}
	defer out.Body.Close()
	data, err = io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("backend GET %s: %v", key, err)
	}
	return data, true
}

// backendPut writes key on the backend directly.
func (e *stackEnv) backendPut(t testing.TB, key string, data []byte) {
	t.Helper()
	_, err := e.backend().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: &e.Bucket, Key: &key, Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatalf("backend PUT %s: %v", key, err)
	}
}

// backendKeys lists every key under prefix on the backend directly.
func (e *stackEnv) backendKeys(t testing.TB, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(e.backend(), &s3.ListObjectsV2Input{Bucket: &e.Bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("backend list %s: %v", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
		}
	}
	return keys
}

// mustBackendEqual fails unless key holds exactly want on the backend.
func (e *stackEnv) mustBackendEqual(t testing.TB, key string, want []byte) {
	t.Helper()
	got, ok := e.backendGet(t, key)
	if !ok {
		t.Fatalf("backend: %s does not exist", key)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("backend: %s differs: %d bytes, want %d", key, len(got), len(want))
	}
}

// httpStatus digs the HTTP status out of an aws-sdk-go-v2 error (0 if none).
func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// uniquePrefix is a fresh key prefix under which a test works alone.
func uniquePrefix(t testing.TB, name string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "it/" + name + "-" + hex.EncodeToString(b[:]) + "/"
}

// randomBytes returns n random bytes.
func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
