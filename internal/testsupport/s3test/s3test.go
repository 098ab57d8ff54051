// Package s3test gives tests an aws-sdk-go-v2 S3 client configured the one
// way tests want it: path-style, a static credential, no retries (a test
// judges the first answer, not one the SDK retried into success).
//
// It is for tests only, like its parent testsupport: it may import the AWS
// SDK and the standard library, nothing else of this module,
// and no production package may import it.
package s3test

import (
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Client returns a client for the S3 endpoint signing with key, secret and
// the session token (none when ""), in region (us-east-1 when ""); opts
// adjust its options further.
func Client(endpoint, region, key, secret, token string, opts ...func(*s3.Options)) *s3.Client {
	if region == "" {
		region = "us-east-1"
	}
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, token),
		Retryer:      aws.NopRetryer{},
	}, opts...)
}

// Timeout bounds each request of the client, its body included.
func Timeout(d time.Duration) func(*s3.Options) {
	return func(o *s3.Options) { o.HTTPClient = &http.Client{Timeout: d} }
}

// WhenRequired makes the client add and check checksums only where S3
// requires them (the SDK's default adds CRCs to every upload).
func WhenRequired(o *s3.Options) {
	o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
}

// Err drops an S3 call's output and keeps its error, for tables of calls
// judged by their error alone: func() error { return s3test.Err(c.GetObject(ctx, in)) }.
func Err[T any](_ T, err error) error { return err }
