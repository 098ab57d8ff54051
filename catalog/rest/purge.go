package rest

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3Purger deletes objects with an S3 client holding the upstream's root
// credentials (the catalog's own, never vended).
type S3Purger struct {
	Client *s3.Client
}

// DeletePrefix lists every object under prefix and deletes them in batches
// of up to 1000 (DeleteObjects' limit). An empty prefix is refused: it would
// be the whole bucket.
func (p *S3Purger) DeletePrefix(ctx context.Context, bucket, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("purge s3://%s: refusing to delete a whole bucket", bucket)
	}
	pages := s3.NewListObjectsV2Paginator(p.Client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("purge s3://%s/%s: list: %w", bucket, prefix, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := p.Client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(bucket),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return fmt.Errorf("purge s3://%s/%s: delete: %w", bucket, prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("purge s3://%s/%s: %d objects not deleted, e.g. %s: %s", bucket, prefix, len(out.Errors),
				aws.ToString(e.Key), aws.ToString(e.Message))
		}
	}
	return nil
}
