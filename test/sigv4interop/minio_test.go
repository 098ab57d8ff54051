package sigv4interop

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/duckicelake/duckicelake/sigv4"
)

// large spans two 5 MiB multipart parts (the minimum minio-go allows).
var large = bytes.Repeat([]byte("minio-go multipart payload.\n"), (5<<20)/28+10)

func minioClient(t *testing.T, s *captureServer, cr creds, secure, trailing bool) *minio.Client {
	t.Helper()
	u, _ := url.Parse(s.HTTPURL)
	if secure {
		u, _ = url.Parse(s.HTTPSURL)
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:           credentials.NewStaticV4(cr.KeyID, cr.Secret, cr.Token),
		Secure:          secure,
		Transport:       &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CertPool}},
		Region:          region,
		BucketLookup:    minio.BucketLookupPath,
		TrailingHeaders: trailing,
		MaxRetries:      1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// minioUploads is how one minio-go configuration sends bodies: single
// PutObject, the one part of an unknown-length upload, and the parts of a
// known-length multipart upload.
type minioUploads struct{ put, unknownPart, part string }

func TestMinioGo(t *testing.T) {
	s := newCaptureServer(t)
	const (
		streaming      = sigv4.StreamingPayload
		streamTrailer  = sigv4.StreamingPayloadTrailer + " + trailer x-amz-checksum-crc32c"
		unsignedTrail  = sigv4.StreamingUnsignedTrailer + " + trailer x-amz-checksum-crc32c"
		unsignedCRC32C = modeUnsigned + " + x-amz-checksum-crc32c"
	)
	for _, v := range []struct {
		name             string
		secure, trailing bool
		creds            creds
		uploads          minioUploads
	}{
		// minio-go signs chunks only over plain HTTP; over TLS it sends
		// UNSIGNED-PAYLOAD. TrailingHeaders adds a CRC32C trailer to the parts
		// of a known-length multipart upload, and the unknown-length path
		// sends the part's CRC32C as a header instead.
		{"http", false, false, withToken, minioUploads{streaming, streaming, streaming}},
		{"http-trailing", false, true, withToken, minioUploads{streaming, streaming, streamTrailer}},
		{"https", true, false, withToken, minioUploads{modeUnsigned, modeUnsigned, modeUnsigned}},
		{"https-trailing", true, true, withToken, minioUploads{modeUnsigned, unsignedCRC32C, unsignedTrail}},
		{"http-trailing-no-token", false, true, noToken, minioUploads{streaming, streaming, streamTrailer}},
	} {
		t.Run(v.name, func(t *testing.T) {
			c := minioClient(t, s, v.creds, v.secure, v.trailing)
			httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CertPool}}}
			ops := minioOps(c, httpc)
			for i := range ops {
				op := &ops[i]
				switch op.Name {
				case "PutObject", "PutObject/stream+length":
					op.Want = []string{v.uploads.put}
				case "PutObject/stream-unknown-length":
					op.Want = []string{modeUnsigned, v.uploads.unknownPart, modeSHA256, modeSHA256}
				case "PutObject/multipart":
					op.Want = []string{modeUnsigned, v.uploads.part, v.uploads.part, modeSHA256, modeSHA256}
				case "CopyObject":
					op.Want = []string{modeUnsigned}
				case "RemoveObjects":
					op.Want = []string{"SHA256 + content-md5"}
				case "Presigned/PUT", "Presigned/GET":
					op.Want = []string{modePresigned}
				default:
					op.Want = []string{modeSHA256}
				}
			}
			runOps(t, s, "minio-go", v.name, v.creds, ops)
		})
	}
}

func minioOps(c *minio.Client, httpc *http.Client) []opCase {
	check := func(cond bool, format string, args ...any) error {
		if !cond {
			return fmt.Errorf(format, args...)
		}
		return nil
	}
	get := func(ctx context.Context, key string, opts minio.GetObjectOptions) ([]byte, error) {
		obj, err := c.GetObject(ctx, bucket, key, opts)
		if err != nil {
			return nil, err
		}
		defer obj.Close()
		return io.ReadAll(obj)
	}
	return []opCase{
		{Name: "PutObject", Run: func(ctx context.Context) error {
			_, err := c.PutObject(ctx, bucket, "minio/small.txt", bytes.NewReader(small), int64(len(small)),
				minio.PutObjectOptions{})
			return err
		}},
		{Name: "PutObject/stream+length", Run: func(ctx context.Context) error {
			_, err := c.PutObject(ctx, bucket, "minio/stream.bin", onlyReader{bytes.NewReader(part1)}, int64(len(part1)),
				minio.PutObjectOptions{})
			return err
		}},
		{Name: "PutObject/stream-unknown-length", Run: func(ctx context.Context) error {
			// Unknown size: minio-go uploads it as multipart, one part here.
			_, err := c.PutObject(ctx, bucket, "minio/unknown.bin", onlyReader{bytes.NewReader(part1)}, -1,
				minio.PutObjectOptions{PartSize: 5 << 20})
			if err != nil {
				return err
			}
			got, err := get(ctx, "minio/unknown.bin", minio.GetObjectOptions{})
			if err != nil {
				return err
			}
			return check(bytes.Equal(got, part1), "read back %d bytes", len(got))
		}},
		{Name: "PutObject/multipart", Run: func(ctx context.Context) error {
			_, err := c.PutObject(ctx, bucket, "minio/big.bin", bytes.NewReader(large), int64(len(large)),
				minio.PutObjectOptions{PartSize: 5 << 20})
			if err != nil {
				return err
			}
			got, err := get(ctx, "minio/big.bin", minio.GetObjectOptions{})
			if err != nil {
				return err
			}
			return check(bytes.Equal(got, large), "read back %d of %d bytes", len(got), len(large))
		}},
		{Name: "GetObject/range", Run: func(ctx context.Context) error {
			var opts minio.GetObjectOptions
			opts.SetRange(6, 10)
			got, err := get(ctx, "minio/small.txt", opts)
			if err != nil {
				return err
			}
			return check(string(got) == string(small[6:11]), "range read %q", got)
		}},
		{Name: "StatObject", Run: func(ctx context.Context) error {
			info, err := c.StatObject(ctx, bucket, "minio/small.txt", minio.StatObjectOptions{})
			if err != nil {
				return err
			}
			return check(info.Size == int64(len(small)), "size %d", info.Size)
		}},
		{Name: "ListObjects/recursive", Run: func(ctx context.Context) error {
			n := 0
			for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "minio/", Recursive: true}) {
				if o.Err != nil {
					return o.Err
				}
				n++
			}
			return check(n >= 4, "listed %d", n)
		}},
		{Name: "ListObjects/delimiter", Run: func(ctx context.Context) error {
			var prefixes []string
			for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{}) {
				if o.Err != nil {
					return o.Err
				}
				prefixes = append(prefixes, o.Key)
			}
			return check(strings.Contains(strings.Join(prefixes, ","), "minio/"), "listed %q", prefixes)
		}},
		{Name: "CopyObject", Run: func(ctx context.Context) error {
			_, err := c.CopyObject(ctx, minio.CopyDestOptions{Bucket: bucket, Object: "minio/copy.txt"},
				minio.CopySrcOptions{Bucket: bucket, Object: "minio/small.txt"})
			return err
		}},
		{Name: "RemoveObject", Run: func(ctx context.Context) error {
			return c.RemoveObject(ctx, bucket, "minio/copy.txt", minio.RemoveObjectOptions{})
		}},
		{Name: "RemoveObjects", Run: func(ctx context.Context) error {
			objs := make(chan minio.ObjectInfo, 2)
			objs <- minio.ObjectInfo{Key: "minio/stream.bin"}
			objs <- minio.ObjectInfo{Key: "minio/big.bin"}
			close(objs)
			for e := range c.RemoveObjects(ctx, bucket, objs, minio.RemoveObjectsOptions{}) {
				return e.Err
			}
			return nil
		}},
		{Name: "Presigned/PUT", Run: func(ctx context.Context) error {
			u, err := c.PresignedPutObject(ctx, bucket, "minio/presigned.txt", 15*time.Minute)
			if err != nil {
				return err
			}
			_, err = sendPresigned(ctx, httpc, http.MethodPut, u.String(), small)
			return err
		}},
		{Name: "Presigned/GET", Run: func(ctx context.Context) error {
			u, err := c.PresignedGetObject(ctx, bucket, "minio/presigned.txt", 15*time.Minute, nil)
			if err != nil {
				return err
			}
			got, err := sendPresigned(ctx, httpc, http.MethodGet, u.String(), nil)
			if err != nil {
				return err
			}
			return check(bytes.Equal(got, small), "presigned GET read %q", got)
		}},
	}
}
