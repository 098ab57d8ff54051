package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3API is the part of *s3.Client an S3Store uses.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// S3Store is a Store over S3 locations, with a client holding the
// upstream's root keys: the catalog's own, never a client's. Whoever hands
// it a location decides first, with Within, that the location is one the
// request may reach.
type S3Store struct {
	client S3API
}

// NewS3 returns an S3Store that works with client.
func NewS3(client S3API) *S3Store { return &S3Store{client: client} }

// deleteBatch is DeleteObjects' limit of keys per request.
const deleteBatch = 1000

// isNotFound reports an S3 answer that says the object (or its bucket)
// does not exist: a 404 status, which HEAD answers carry without a code, or
// a NoSuchKey/NotFound code.
func isNotFound(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound")
}

// Get implements Store.
func (s *S3Store) Get(ctx context.Context, loc Location, max int64) ([]byte, error) {
	if err := objectOf(loc, SchemeS3); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(loc.Bucket()), Key: aws.String(loc.Key())})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("%s: %w", loc, ErrNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", loc, err)
	}
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength > max {
		return nil, fmt.Errorf("%s is %d bytes, at most %d are read: %w", loc, *out.ContentLength, max, ErrTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", loc, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is more than %d bytes: %w", loc, max, ErrTooLarge)
	}
	return b, nil
}

// Put implements Store, with the content type of the object's name.
func (s *S3Store) Put(ctx context.Context, loc Location, body []byte) error {
	if err := objectOf(loc, SchemeS3); err != nil {
		return err
	}
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(loc.Bucket()),
		Key:           aws.String(loc.Key()),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String(contentType(loc)),
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", loc, err)
	}
	return nil
}

// Exists implements Store with a HEAD request. HEAD cannot tell a missing
// bucket from a missing key (its answers have no body): both are false.
func (s *S3Store) Exists(ctx context.Context, loc Location) (bool, error) {
	if err := objectOf(loc, SchemeS3); err != nil {
		return false, err
	}
	_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(loc.Bucket()), Key: aws.String(loc.Key())})
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("head %s: %w", loc, err)
}

// Delete implements Store.
func (s *S3Store) Delete(ctx context.Context, loc Location) error {
	if err := objectOf(loc, SchemeS3); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(loc.Bucket()), Key: aws.String(loc.Key())})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete %s: %w", loc, err)
	}
	return nil
}

// List implements Store with ListObjectsV2, page after page.
func (s *S3Store) List(ctx context.Context, dir Location, fn func(Object) error) error {
	dir, err := prefixOf(dir, SchemeS3, false)
	if err != nil {
		return err
	}
	return s.pages(ctx, dir, func(objs []types.Object) error {
		for _, o := range objs {
			l, err := S3(dir.Bucket(), aws.ToString(o.Key))
			if err != nil || !l.Within(dir) {
				continue
			}
			if err := fn(Object{Location: l, Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
		return nil
	})
}

// pages calls fn with each page of the listing of dir's keys.
func (s *S3Store) pages(ctx context.Context, dir Location, fn func([]types.Object) error) error {
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(dir.Bucket()), Prefix: aws.String(dir.Key())})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		if err := fn(page.Contents); err != nil {
			return err
		}
	}
	return nil
}

// DeletePrefix implements Store: it lists dir and deletes what it lists in
// DeleteObjects batches of up to 1000 keys. Only keys that are Locations
// within dir are deleted; a listed key Parse refuses (a backend's literal
// "a/../b") is left, and reported once the rest is gone.
func (s *S3Store) DeletePrefix(ctx context.Context, dir Location) error {
	dir, err := prefixOf(dir, SchemeS3, true)
	if err != nil {
		return err
	}
	var (
		batch   []types.ObjectIdentifier
		skipped int
		example string
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(dir.Bucket()),
			Delete: &types.Delete{Objects: batch, Quiet: aws.Bool(true)},
		})
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("delete under %s: %w", dir, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete under %s: %d objects not deleted, e.g. %s: %s", dir, len(out.Errors),
				aws.ToString(e.Key), aws.ToString(e.Message))
		}
		return nil
	}
	err = s.pages(ctx, dir, func(objs []types.Object) error {
		for _, o := range objs {
			key := aws.ToString(o.Key)
			// The directory's own marker object ("t/") goes with it.
			if l, err := S3(dir.Bucket(), key); key != dir.Key() && (err != nil || !l.Within(dir)) {
				skipped++
				example = key
				continue
			}
			batch = append(batch, types.ObjectIdentifier{Key: o.Key})
			if len(batch) == deleteBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil && skipped > 0 {
		err = fmt.Errorf("delete under %s: %d keys are no location and were left, e.g. %q", dir, skipped, example)
	}
	return err
}
