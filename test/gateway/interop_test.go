package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// target is where a client sends its requests: the gateway with a minted
// credential scoped to prefix, or the backend direct with its root keys (the
// baseline: a scenario that fails there is a broken test, not a broken gateway).
type target struct {
	name     string
	endpoint string
	creds    creds
	prefix   string
}

// targets returns the baseline and the gateway for a scenario called name.
// The gateway credential may do everything under its own fresh prefix and
// nothing else. Without a gateway the baseline still runs, and the test fails
// under CI=true (where the gateway must be there) or logs why otherwise.
func targets(t *testing.T, name string) (*stackEnv, []target) {
	t.Helper()
	e := backendEnv(t)
	ts := []target{{name: "direct", endpoint: e.S3Endpoint, creds: e.root(), prefix: uniquePrefix(t, name+"-direct")}}
	if unset := testsupport.Unset(testsupport.GatewayPart); len(unset) > 0 {
		msg := "gateway not running (" + strings.Join(unset, ", ") + " unset): only the direct baseline runs"
		if testsupport.InCI() {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
		return e, ts
	}
	g := gatewayEnv(t)
	p := uniquePrefix(t, name)
	ts = append(ts, target{
		name:     "gateway",
		endpoint: g.Gateway,
		creds:    g.mint(t, mintOpts{Principal: "interop-" + name, Grants: []string{g.Bucket + ":" + p + ":rw"}, TTL: "1h"}),
		prefix:   p,
	})
	return g, ts
}

// Keys every scenario writes; one needs percent-encoding in the path and in
// the canonical request (space, plus, equals, non-ASCII).
var scenarioKeys = []string{"a.bin", "dir/b.bin", "dir/c d+e=é.bin"}

const mib = 1 << 20

func TestInteropAWSSDK(t *testing.T) {
	e, ts := targets(t, "awssdk")
	modes := []struct {
		name string
		calc aws.RequestChecksumCalculation
	}{
		{"default", 0}, // the SDK's default: CRC checksums on every PUT and UploadPart
		{"when_required", aws.RequestChecksumCalculationWhenRequired},
	}
	for _, tg := range ts {
		for _, m := range modes {
			t.Run(tg.name+"/"+m.name, func(t *testing.T) {
				cl := e.s3Client(tg.endpoint, tg.creds, m.calc)
				awsScenario(t, e, cl, tg.prefix+m.name+"/")
			})
		}
	}
}

// awsScenario does put, get, range get, head, list with and without a
// delimiter, copy, multipart, delete and batch delete with one client, and
// checks every object it wrote byte for byte on the backend directly.
func awsScenario(t *testing.T, e *stackEnv, cl *s3.Client, prefix string) {
	ctx := context.Background()
	bucket := aws.String(e.Bucket)
	objs := map[string][]byte{}
	for i, k := range scenarioKeys {
		key := prefix + k
		objs[key] = randomBytes(t, 1024+i*333)
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: bytes.NewReader(objs[key])})
		if err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
	}
	a := prefix + "a.bin"

	get := func(key, rng string) []byte {
		t.Helper()
		in := &s3.GetObjectInput{Bucket: bucket, Key: aws.String(key)}
		if rng != "" {
			in.Range = aws.String(rng)
		}
		out, err := cl.GetObject(ctx, in)
		if err != nil {
			t.Fatalf("GetObject %s %s: %v", key, rng, err)
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatalf("GetObject %s: read: %v", key, err)
		}
		return b
	}
	for key, want := range objs {
		if got := get(key, ""); !bytes.Equal(got, want) {
			t.Errorf("GetObject %s: %d bytes differ from the %d written", key, len(got), len(want))
		}
	}
	if got := get(a, "bytes=100-199"); !bytes.Equal(got, objs[a][100:200]) {
		t.Errorf("range GET bytes=100-199: got %d bytes, not the written slice", len(got))
	}
	if got := get(a, "bytes=-10"); !bytes.Equal(got, objs[a][len(objs[a])-10:]) {
		t.Errorf("suffix range GET bytes=-10: got %d bytes, not the last 10", len(got))
	}

	head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String(a)})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if aws.ToInt64(head.ContentLength) != int64(len(objs[a])) || aws.ToString(head.ETag) == "" {
		t.Errorf("HeadObject: length %d etag %q, want length %d and an etag", aws.ToInt64(head.ContentLength), aws.ToString(head.ETag), len(objs[a]))
	}

	list := func(delim string) ([]string, []string) {
		t.Helper()
		in := &s3.ListObjectsV2Input{Bucket: bucket, Prefix: aws.String(prefix)}
		if delim != "" {
			in.Delimiter = aws.String(delim)
		}
		out, err := cl.ListObjectsV2(ctx, in)
		if err != nil {
			t.Fatalf("ListObjectsV2 delimiter %q: %v", delim, err)
		}
		var keys, prefixes []string
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		for _, p := range out.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(p.Prefix))
		}
		return keys, prefixes
	}
	keys, _ := list("")
	if want := sortedKeys(objs); !slices.Equal(keys, want) {
		t.Errorf("ListObjectsV2: %q, want %q", keys, want)
	}
	keys, prefixes := list("/")
	if !slices.Equal(keys, []string{a}) || !slices.Equal(prefixes, []string{prefix + "dir/"}) {
		t.Errorf("ListObjectsV2 delimiter /: keys %q prefixes %q, want [%s] [%sdir/]", keys, prefixes, a, prefix)
	}

	cp := prefix + "copy.bin"
	if _, err := cl.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: bucket, Key: aws.String(cp), CopySource: aws.String(e.Bucket + "/" + url.PathEscape(a)),
	}); err != nil {
		t.Fatalf("CopyObject: %v", err)
	}
	objs[cp] = objs[a]

	mp := prefix + "multi part.bin"
	objs[mp] = awsMultipart(t, cl, e.Bucket, mp, cl.Options().RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired)
	if got := get(mp, ""); !bytes.Equal(got, objs[mp]) {
		t.Errorf("GetObject of the multipart object: %d bytes differ from the %d written", len(got), len(objs[mp]))
	}
	if got := get(mp, "bytes=5242870-5242889"); !bytes.Equal(got, objs[mp][5242870:5242890]) {
		t.Errorf("range GET across the part boundary differs")
	}

	for key, want := range objs {
		e.mustBackendEqual(t, key, want)
	}

	if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(a)}); err != nil {
		t.Fatalf("DeleteObject: %v", err)
	}
	if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bucket, Key: aws.String(a)}); httpStatus(err) != http.StatusNotFound {
		t.Errorf("HeadObject after delete: %v, want 404", err)
	}
	if _, ok := e.backendGet(t, a); ok {
		t.Errorf("backend still has %s after DeleteObject", a)
	}
	delete(objs, a)

	var ids []types.ObjectIdentifier
	for _, k := range sortedKeys(objs) {
		ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
	}
	out, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: bucket, Delete: &types.Delete{Objects: ids}})
	if err != nil {
		t.Fatalf("DeleteObjects: %v", err)
	}
	if len(out.Errors) > 0 || len(out.Deleted) != len(ids) {
		t.Errorf("DeleteObjects: %d deleted, errors %+v; want %d deleted", len(out.Deleted), out.Errors, len(ids))
	}
	if left := e.backendKeys(t, prefix); len(left) != 0 {
		t.Errorf("backend keeps %q after DeleteObjects", left)
	}
}

// awsMultipart uploads a 5 MiB + 1 MiB object in two parts and returns its
// bytes. With checksums, the upload is created with the algorithm its parts
// carry, as the SDK's upload manager does.
func awsMultipart(t *testing.T, cl *s3.Client, bucket, key string, checksums bool) []byte {
	ctx := context.Background()
	data := randomBytes(t, 6*mib+3)
	in := &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key}
	if checksums {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
	cr, err := cl.CreateMultipartUpload(ctx, in)
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	var parts []types.CompletedPart
	for i, chunk := range [][]byte{data[:5*mib], data[5*mib:]} {
		n := int32(i + 1)
		upIn := &s3.UploadPartInput{
			Bucket: &bucket, Key: &key, UploadId: cr.UploadId, PartNumber: &n, Body: bytes.NewReader(chunk),
		}
		if checksums {
			upIn.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
		}
		up, err := cl.UploadPart(ctx, upIn)
		if err != nil {
			t.Fatalf("UploadPart %d: %v", n, err)
		}
		parts = append(parts, types.CompletedPart{
			PartNumber: &n, ETag: up.ETag,
			ChecksumCRC32: up.ChecksumCRC32, ChecksumCRC32C: up.ChecksumCRC32C,
			ChecksumCRC64NVME: up.ChecksumCRC64NVME, ChecksumSHA1: up.ChecksumSHA1, ChecksumSHA256: up.ChecksumSHA256,
		})
	}
	lp, err := cl.ListParts(ctx, &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: cr.UploadId})
	if err != nil {
		t.Fatalf("ListParts: %v", err)
	}
	if len(lp.Parts) != 2 {
		t.Errorf("ListParts: %d parts, want 2", len(lp.Parts))
	}
	if _, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &bucket, Key: &key, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	return data
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestInteropMinio(t *testing.T) {
	e, ts := targets(t, "minio")
	for _, tg := range ts {
		for _, trailing := range []bool{false, true} {
			name := tg.name + "/default"
			if trailing {
				name = tg.name + "/trailing-crc32c"
			}
			t.Run(name, func(t *testing.T) {
				if trailing && tg.name == "direct" {
					// minio-go ends the trailing checksum line with "\n" before the
					// "\r\n" (x-amz-checksum-crc32c:mnG7TA==\n\r\nx-amz-trailer-signature:…);
					// versitygw v1.8.0 then rejects the (correct) checksum as a
					// mismatch. The gateway decodes it itself, so it must pass there.
					t.Skip("versitygw v1.8.0 rejects minio-go's signed trailer framing; only the gateway is tested")
				}
				u, err := url.Parse(tg.endpoint)
				if err != nil {
					t.Fatal(err)
				}
				cl, err := minio.New(u.Host, &minio.Options{
					Creds:           miniocreds.NewStaticV4(tg.creds.AccessKeyID, tg.creds.SecretAccessKey, tg.creds.SessionToken),
					Region:          e.Region,
					BucketLookup:    minio.BucketLookupPath,
					TrailingHeaders: trailing,
					MaxRetries:      1,
				})
				if err != nil {
					t.Fatal(err)
				}
				p := tg.prefix + "default/"
				var opts minio.PutObjectOptions
				if trailing {
					p = tg.prefix + "trailing/"
					opts.Checksum = minio.ChecksumCRC32C
				}
				minioScenario(t, e, cl, p, opts)
			})
		}
	}
}

// minioScenario is awsScenario with minio-go: its own PUT (streaming signed
// chunks over plain http), multipart by part size, and ComposeObject
// (UploadPartCopy).
func minioScenario(t *testing.T, e *stackEnv, cl *minio.Client, prefix string, putOpts minio.PutObjectOptions) {
	ctx := context.Background()
	objs := map[string][]byte{}
	put := func(key string, data []byte, o minio.PutObjectOptions) {
		t.Helper()
		if _, err := cl.PutObject(ctx, e.Bucket, key, bytes.NewReader(data), int64(len(data)), o); err != nil {
			t.Fatalf("PutObject %s (%d bytes): %v", key, len(data), err)
		}
		objs[key] = data
	}
	for i, k := range scenarioKeys {
		put(prefix+k, randomBytes(t, 1024+i*333), putOpts)
	}
	a := prefix + "a.bin"

	get := func(key string, from, to int64) []byte {
		t.Helper()
		var o minio.GetObjectOptions
		if to > 0 {
			if err := o.SetRange(from, to); err != nil {
				t.Fatal(err)
			}
		}
		obj, err := cl.GetObject(ctx, e.Bucket, key, o)
		if err != nil {
			t.Fatalf("GetObject %s: %v", key, err)
		}
		defer obj.Close()
		b, err := io.ReadAll(obj)
		if err != nil {
			t.Fatalf("GetObject %s: read: %v", key, err)
		}
		return b
	}
	for key, want := range objs {
		if got := get(key, 0, 0); !bytes.Equal(got, want) {
			t.Errorf("GetObject %s: %d bytes differ from the %d written", key, len(got), len(want))
		}
	}
	if got := get(a, 100, 199); !bytes.Equal(got, objs[a][100:200]) {
		t.Errorf("range GET 100-199: got %d bytes, not the written slice", len(got))
	}
	st, err := cl.StatObject(ctx, e.Bucket, a, minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("StatObject: %v", err)
	}
	if st.Size != int64(len(objs[a])) || st.ETag == "" {
		t.Errorf("StatObject: size %d etag %q, want %d and an etag", st.Size, st.ETag, len(objs[a]))
	}

	list := func(recursive bool) (keys, prefixes []string) {
		t.Helper()
		for o := range cl.ListObjects(ctx, e.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: recursive}) {
			if o.Err != nil {
				t.Fatalf("ListObjects: %v", o.Err)
			}
			if strings.HasSuffix(o.Key, "/") {
				prefixes = append(prefixes, o.Key)
			} else {
				keys = append(keys, o.Key)
			}
		}
		return keys, prefixes
	}
	if keys, _ := list(true); !slices.Equal(keys, sortedKeys(objs)) {
		t.Errorf("ListObjects recursive: %q, want %q", keys, sortedKeys(objs))
	}
	if keys, prefixes := list(false); !slices.Equal(keys, []string{a}) || !slices.Equal(prefixes, []string{prefix + "dir/"}) {
		t.Errorf("ListObjects with delimiter: keys %q prefixes %q", keys, prefixes)
	}

	cp := prefix + "copy.bin"
	if _, err := cl.CopyObject(ctx, minio.CopyDestOptions{Bucket: e.Bucket, Object: cp},
		minio.CopySrcOptions{Bucket: e.Bucket, Object: a}); err != nil {
		t.Fatalf("CopyObject: %v", err)
	}
	objs[cp] = objs[a]

	// Multipart by part size: 11 MiB in 5 MiB parts.
	mo := putOpts
	mo.PartSize = 5 * mib
	mp := prefix + "multi.bin"
	put(mp, randomBytes(t, 11*mib+7), mo)
	if got := get(mp, 0, 0); !bytes.Equal(got, objs[mp]) {
		t.Errorf("GetObject of the multipart object differs")
	}

	// ComposeObject from a >= 5 MiB source and a small one: UploadPartCopy.
	cmp := prefix + "composed.bin"
	if _, err := cl.ComposeObject(ctx, minio.CopyDestOptions{Bucket: e.Bucket, Object: cmp},
		minio.CopySrcOptions{Bucket: e.Bucket, Object: mp},
		minio.CopySrcOptions{Bucket: e.Bucket, Object: a}); err != nil {
		t.Fatalf("ComposeObject: %v", err)
	}
	objs[cmp] = append(slices.Clone(objs[mp]), objs[a]...)

	for key, want := range objs {
		e.mustBackendEqual(t, key, want)
	}

	if err := cl.RemoveObject(ctx, e.Bucket, a, minio.RemoveObjectOptions{}); err != nil {
		t.Fatalf("RemoveObject: %v", err)
	}
	if _, err := cl.StatObject(ctx, e.Bucket, a, minio.StatObjectOptions{}); minio.ToErrorResponse(err).StatusCode != http.StatusNotFound {
		t.Errorf("StatObject after remove: %v, want 404", err)
	}
	delete(objs, a)
	ch := make(chan minio.ObjectInfo, len(objs))
	for k := range objs {
		ch <- minio.ObjectInfo{Key: k}
	}
	close(ch)
	for r := range cl.RemoveObjects(ctx, e.Bucket, ch, minio.RemoveObjectsOptions{}) {
		t.Errorf("RemoveObjects %s: %v", r.ObjectName, r.Err)
	}
	if left := e.backendKeys(t, prefix); len(left) != 0 {
		t.Errorf("backend keeps %q after RemoveObjects", left)
	}
}

func TestInteropPresigned(t *testing.T) {
	e, ts := targets(t, "presign")
	for _, tg := range ts {
		t.Run(tg.name, func(t *testing.T) {
			cl := e.s3Client(tg.endpoint, tg.creds, aws.RequestChecksumCalculationWhenRequired)
			ps := s3.NewPresignClient(cl, s3.WithPresignExpires(10*time.Minute))
			ctx := context.Background()
			key := tg.prefix + "presigned/x y.bin"
			data := randomBytes(t, 4096)

			put, err := ps.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &e.Bucket, Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(put.Method, put.URL, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for k, vs := range put.SignedHeader {
				if !strings.EqualFold(k, "host") {
					req.Header[k] = vs
				}
			}
			doOK(t, req)
			e.mustBackendEqual(t, key, data)

			get, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &e.Bucket, Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			req, err = http.NewRequest(http.MethodGet, get.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := doOK(t, req); !bytes.Equal(got, data) {
				t.Errorf("presigned GET: %d bytes differ from the %d written", len(got), len(data))
			}

			// minio-go's presigned URLs, the other common signer.
			u, _ := url.Parse(tg.endpoint)
			mc, err := minio.New(u.Host, &minio.Options{
				Creds:        miniocreds.NewStaticV4(tg.creds.AccessKeyID, tg.creds.SecretAccessKey, tg.creds.SessionToken),
				Region:       e.Region,
				BucketLookup: minio.BucketLookupPath,
			})
			if err != nil {
				t.Fatal(err)
			}
			key2 := tg.prefix + "presigned/minio.bin"
			pu, err := mc.PresignedPutObject(ctx, e.Bucket, key2, 10*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			req, _ = http.NewRequest(http.MethodPut, pu.String(), bytes.NewReader(data))
			doOK(t, req)
			e.mustBackendEqual(t, key2, data)
			pg, err := mc.PresignedGetObject(ctx, e.Bucket, key2, 10*time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			req, _ = http.NewRequest(http.MethodGet, pg.String(), nil)
			if got := doOK(t, req); !bytes.Equal(got, data) {
				t.Errorf("minio presigned GET differs")
			}
		})
	}
}

// doOK sends req and fails unless it answers 200; returns the body.
func doOK(t *testing.T, req *http.Request) []byte {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, body)
	}
	return body
}
