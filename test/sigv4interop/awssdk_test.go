package sigv4interop

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/duckicelake/duckicelake/sigv4"
)

// Payloads the clients upload. part1 spans two 64 KiB aws-chunked chunks.
var (
	small = []byte("hello from the interop tests\n")
	part1 = bytes.Repeat([]byte("0123456789abcdef"), 4096+7)
	part2 = []byte(strings.Repeat("p", 100))
)

// onlyReader hides every method but Read, so clients cannot seek or
// measure the body, as with a pipe.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func sdkClient(s *captureServer, endpoint string, cr creds, calc aws.RequestChecksumCalculation) *s3.Client {
	cfg := aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(cr.KeyID, cr.Secret, cr.Token),
		HTTPClient: &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: s.CertPool},
		}},
		RetryMaxAttempts:           1,
		RequestChecksumCalculation: calc,
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
}

// Mode column values (exchange.describe) the clients produce.
const (
	modeSHA256      = "SHA256"
	modeSHA256CRC32 = "SHA256 + x-amz-checksum-crc32"
	modeUnsigned    = "UNSIGNED-PAYLOAD"
	modePresigned   = "presigned UNSIGNED-PAYLOAD"
	modeTrailCRC32  = sigv4.StreamingUnsignedTrailer + " + trailer x-amz-checksum-crc32"
)

// sdkUploads is how one SDK configuration sends a request body: the mode of
// PutObject/UploadPart with a seekable body, with a non-seekable body of
// known length, and with one of unknown length ("" = the SDK refuses).
type sdkUploads struct{ seekable, stream, unknown string }

func TestAWSSDKGoV2(t *testing.T) {
	s := newCaptureServer(t)
	for _, v := range []struct {
		name     string
		endpoint string
		calc     aws.RequestChecksumCalculation
		creds    creds
		uploads  sdkUploads
	}{
		// The SDK sends trailing checksums only over TLS, where it also stops
		// signing the payload; over plain HTTP it signs the body's SHA-256 and
		// sends the checksum as a header, so it must be able to seek the body.
		{"https-when_supported", s.HTTPSURL, aws.RequestChecksumCalculationWhenSupported, withToken,
			sdkUploads{modeTrailCRC32, modeTrailCRC32, "rejected"}},
		{"https-when_required", s.HTTPSURL, aws.RequestChecksumCalculationWhenRequired, withToken,
			sdkUploads{modeUnsigned, modeUnsigned, modeUnsigned}},
		{"http-when_supported", s.HTTPURL, aws.RequestChecksumCalculationWhenSupported, withToken,
			sdkUploads{modeSHA256CRC32, "", ""}},
		{"http-when_required", s.HTTPURL, aws.RequestChecksumCalculationWhenRequired, withToken,
			sdkUploads{modeSHA256, "", ""}},
		{"https-when_supported-no-token", s.HTTPSURL, aws.RequestChecksumCalculationWhenSupported, noToken,
			sdkUploads{modeTrailCRC32, modeTrailCRC32, "rejected"}},
		{"http-when_required-no-token", s.HTTPURL, aws.RequestChecksumCalculationWhenRequired, noToken,
			sdkUploads{modeSHA256, "", ""}},
	} {
		t.Run(v.name, func(t *testing.T) {
			c := sdkClient(s, v.endpoint, v.creds, v.calc)
			ops := sdkOps(c)
			for i := range ops {
				op := &ops[i]
				switch op.Name {
				case "PutObject":
					op.Want = []string{v.uploads.seekable}
				case "UploadPart":
					op.Want = []string{v.uploads.seekable, v.uploads.seekable}
				case "PutObject/stream+length", "PutObject/stream-unknown-length":
					want := v.uploads.stream
					if op.Name == "PutObject/stream-unknown-length" {
						want = v.uploads.unknown
					}
					switch want {
					case "":
						op.Refused = true
					case "rejected":
						op.Rejected = sigv4.ErrMissingContentLength
					default:
						op.Want = []string{want}
					}
				case "DeleteObjects":
					op.Want = []string{modeSHA256CRC32}
				case "Presigned/PUT", "Presigned/GET":
					op.Want = []string{modePresigned}
				default:
					op.Want = []string{modeSHA256}
				}
			}
			runOps(t, s, "aws-sdk-go-v2", v.name, v.creds, ops)
		})
	}
}

func sdkOps(c *s3.Client) []opCase {
	b := aws.String(bucket)
	key := func(k string) *string { return aws.String("sdk/" + k) }
	check := func(cond bool, format string, args ...any) error {
		if !cond {
			return fmt.Errorf(format, args...)
		}
		return nil
	}
	var uploadID string
	var etags []string
	presign := s3.NewPresignClient(c)
	httpc := &http.Client{Transport: c.Options().HTTPClient.(*http.Client).Transport}
	return []opCase{
		{Name: "PutObject", Run: func(ctx context.Context) error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: key("small.txt"), Body: bytes.NewReader(small)})
			return err
		}},
		{Name: "PutObject/stream+length", Run: func(ctx context.Context) error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: key("stream.bin"),
				Body: onlyReader{bytes.NewReader(part1)}, ContentLength: aws.Int64(int64(len(part1)))})
			return err
		}},
		{Name: "PutObject/stream-unknown-length", Run: func(ctx context.Context) error {
			// Without a length the SDK sends aws-chunked in a Transfer-Encoding: chunked body
			// without x-amz-decoded-content-length over TLS (S3 answers NotImplemented or
			// MissingContentLength), and refuses to send it over plain HTTP.
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: key("unknown.bin"),
				Body: onlyReader{bytes.NewReader(part2)}})
			return err
		}},
		{Name: "GetObject/range", Run: func(ctx context.Context) error {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: key("small.txt"), Range: aws.String("bytes=6-10")})
			if err != nil {
				return err
			}
			defer out.Body.Close()
			got, err := io.ReadAll(out.Body)
			if err != nil {
				return err
			}
			return check(string(got) == string(small[6:11]), "range read %q", got)
		}},
		{Name: "HeadObject", Run: func(ctx context.Context) error {
			out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: key("small.txt")})
			if err != nil {
				return err
			}
			return check(aws.ToInt64(out.ContentLength) == int64(len(small)), "content length %d", aws.ToInt64(out.ContentLength))
		}},
		{Name: "ListObjectsV2", Run: func(ctx context.Context) error {
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("sdk/")})
			if err != nil {
				return err
			}
			return check(len(out.Contents) >= 2, "listed %d objects", len(out.Contents))
		}},
		{Name: "ListObjectsV2/delimiter", Run: func(ctx context.Context) error {
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Delimiter: aws.String("/")})
			if err != nil {
				return err
			}
			return check(len(out.CommonPrefixes) >= 1, "listed %d prefixes", len(out.CommonPrefixes))
		}},
		{Name: "CreateMultipartUpload", Run: func(ctx context.Context) error {
			out, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: key("multi.bin")})
			if err == nil {
				uploadID = aws.ToString(out.UploadId)
			}
			return err
		}},
		{Name: "UploadPart", Run: func(ctx context.Context) error {
			etags = nil
			for i, p := range [][]byte{part1, part2} {
				out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: key("multi.bin"), UploadId: &uploadID,
					PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
				if err != nil {
					return err
				}
				etags = append(etags, aws.ToString(out.ETag))
			}
			return nil
		}},
		{Name: "CompleteMultipartUpload", Run: func(ctx context.Context) error {
			var parts []types.CompletedPart
			for i, e := range etags {
				parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: aws.String(e)})
			}
			_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: key("multi.bin"),
				UploadId: &uploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
			return err
		}},
		{Name: "CopyObject", Run: func(ctx context.Context) error {
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: key("copy.txt"),
				CopySource: aws.String(bucket + "/sdk/small.txt")})
			return err
		}},
		{Name: "DeleteObject", Run: func(ctx context.Context) error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: key("copy.txt")})
			return err
		}},
		{Name: "DeleteObjects", Run: func(ctx context.Context) error {
			out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
				{Key: key("stream.bin")}, {Key: key("unknown.bin")}}}})
			if err != nil {
				return err
			}
			return check(len(out.Deleted) == 2, "deleted %d", len(out.Deleted))
		}},
		{Name: "Presigned/PUT", Run: func(ctx context.Context) error {
			req, err := presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: key("presigned.txt")},
				s3.WithPresignExpires(15*time.Minute))
			if err != nil {
				return err
			}
			_, err = sendPresigned(ctx, httpc, req.Method, req.URL, small)
			return err
		}},
		{Name: "Presigned/GET", Run: func(ctx context.Context) error {
			req, err := presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: key("presigned.txt")},
				s3.WithPresignExpires(15*time.Minute))
			if err != nil {
				return err
			}
			got, err := sendPresigned(ctx, httpc, req.Method, req.URL, nil)
			if err != nil {
				return err
			}
			return check(bytes.Equal(got, small), "presigned GET read %q", got)
		}},
	}
}
