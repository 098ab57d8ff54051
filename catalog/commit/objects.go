package commit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/duckicelake/duckicelake/catalog/materialize"
)

// ErrObjectNotFound reports an object that does not exist.
var ErrObjectNotFound = errors.New("object not found")

// ErrObjectTooLarge reports an object larger than the reader was allowed
// to return.
var ErrObjectTooLarge = errors.New("object too large")

// ObjectReader reads whole objects by location ("s3://bucket/key").
type ObjectReader interface {
	// ReadObject returns the object at location, failing with an error
	// wrapping ErrObjectNotFound when it does not exist and
	// ErrObjectTooLarge when it is longer than max bytes.
	ReadObject(ctx context.Context, location string, max int64) ([]byte, error)
}

// S3GetAPI is the part of *s3.Client S3Reader uses.
type S3GetAPI interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3Reader reads objects with an S3 client holding the upstream's root
// credentials.
type S3Reader struct {
	Client S3GetAPI
}

// ReadObject implements ObjectReader.
func (r S3Reader) ReadObject(ctx context.Context, location string, max int64) ([]byte, error) {
	bucket, key, err := materialize.SplitS3(location)
	if err != nil {
		return nil, err
	}
	out, err := r.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var re *smithyhttp.ResponseError
		var api smithy.APIError
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound ||
			errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
			return nil, fmt.Errorf("%s: %w", location, ErrObjectNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", location, err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > max {
		return nil, fmt.Errorf("%s is %d bytes, at most %d are read: %w", location, *out.ContentLength, max, ErrObjectTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", location, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is more than %d bytes: %w", location, max, ErrObjectTooLarge)
	}
	return b, nil
}

// MemObjects is an in-memory ObjectReader, for tests.
type MemObjects map[string][]byte

// ReadObject implements ObjectReader.
func (m MemObjects) ReadObject(_ context.Context, location string, max int64) ([]byte, error) {
	b, ok := m[location]
	if !ok {
		return nil, fmt.Errorf("%s: %w", location, ErrObjectNotFound)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w", location, ErrObjectTooLarge)
	}
	return b, nil
}

// under reports whether location is inside directory dir (a location
// without a trailing slash): the client may only reference its table's
// files.
func under(location, dir string) bool {
	dir = strings.TrimSuffix(dir, "/") + "/"
	return strings.HasPrefix(location, dir) && !strings.Contains(location[len(dir):], "/../") &&
		!strings.HasPrefix(location[len(dir):], "../")
}

// S3PutAPI is the part of *s3.Client S3Reader writes with, when its Client
// has it.
type S3PutAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// WriteObject implements ObjectWriter when r.Client is also an S3PutAPI
// (an *s3.Client is).
func (r S3Reader) WriteObject(ctx context.Context, location string, body []byte) error {
	put, ok := r.Client.(S3PutAPI)
	if !ok {
		return fmt.Errorf("write %s: the S3 client cannot put objects", location)
	}
	bucket, key, err := materialize.SplitS3(location)
	if err != nil {
		return err
	}
	if _, err := put.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}); err != nil {
		return fmt.Errorf("put %s: %w", location, err)
	}
	return nil
}

// WriteObject implements ObjectWriter.
func (m MemObjects) WriteObject(_ context.Context, location string, body []byte) error {
	m[location] = bytes.Clone(body)
	return nil
}
