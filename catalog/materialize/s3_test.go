package materialize

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// versitygw starts a private versitygw (testsupport.NewVersitygw) with one
// bucket and returns an S3 client for it.
func versitygw(t *testing.T, bucket string) *s3.Client {
	t.Helper()
	v := testsupport.NewVersitygw(t, testsupport.VersitygwOptions{Buckets: []string{bucket}})
	return s3.New(s3.Options{
		Region:       v.Region,
		BaseEndpoint: aws.String(v.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(v.AccessKey, v.SecretKey, ""),
	})
}

// TestMaterializeIntoS3: a whole materialisation into S3 on a real
// versitygw, each file read back through the client.
func TestMaterializeIntoS3(t *testing.T) {
	ctx := context.Background()
	client := versitygw(t, "lake")
	h := eventsHistory()
	m := NewMaterializer(Config{Source: historySource{h}, Writer: objstore.NewS3(client)})
	if _, err := m.Materialize(ctx, 1, 6); err != nil {
		t.Fatal(err)
	}
	for _, f := range buildEvents(t, 6).Files {
		l := objstore.MustParse(f.Location)
		out, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(l.Bucket()), Key: aws.String(l.Key())})
		if err != nil || aws.ToInt64(out.ContentLength) != int64(len(f.Body)) {
			t.Errorf("%s: %v (%v bytes, want %d)", f.Location, err, out, len(f.Body))
		}
	}
}
