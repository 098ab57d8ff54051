package materialize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3API is the part of *s3.Client the S3 writer uses.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// S3Writer stores outputs in S3 with a root client; keys are
// "s3://bucket/key" locations.
type S3Writer struct {
	Client S3API
}

// SplitS3 splits "s3://bucket/key" (s3a:// too) into bucket and key.
func SplitS3(location string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(location, "s3://")
	if !ok {
		rest, ok = strings.CutPrefix(location, "s3a://")
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", fmt.Errorf("%w: %q is not an s3:// object location", ErrBadLocation, location)
	}
	return bucket, key, nil
}

func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	case strings.HasSuffix(key, ".avro"):
		return "avro/binary"
	}
	return "application/octet-stream"
}

// PutObject uploads body to location.
func (w S3Writer) PutObject(ctx context.Context, location string, body []byte) error {
	bucket, key, err := SplitS3(location)
	if err != nil {
		return err
	}
	_, err = w.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String(contentType(key)),
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", location, err)
	}
	return nil
}

// Exists reports whether location exists (HEAD answers 200; 404 is false).
func (w S3Writer) Exists(ctx context.Context, location string) (bool, error) {
	bucket, key, err := SplitS3(location)
	if err != nil {
		return false, err
	}
	_, err = w.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err == nil {
		return true, nil
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
		return false, nil
	}
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey") {
		return false, nil
	}
	return false, fmt.Errorf("head %s: %w", location, err)
}
