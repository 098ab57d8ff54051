package materialize

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

func TestSplitS3(t *testing.T) {
	for in, want := range map[string][2]string{
		"s3://lake/main/t/metadata/v1.json": {"lake", "main/t/metadata/v1.json"},
		"s3a://b/k":                         {"b", "k"},
	} {
		b, k, err := SplitS3(in)
		if err != nil || b != want[0] || k != want[1] {
			t.Errorf("SplitS3(%q) = %q, %q, %v", in, b, k, err)
		}
	}
	for _, bad := range []string{"s3://bucket", "s3:///key", "/tmp/x", "gs://b/k"} {
		if _, _, err := SplitS3(bad); !errors.Is(err, ErrBadLocation) {
			t.Errorf("SplitS3(%q) = %v", bad, err)
		}
	}
}

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

func TestS3WriterOnVersitygw(t *testing.T) {
	ctx := context.Background()
	client := versitygw(t, "lake")
	w := S3Writer{Client: client}
	loc := "s3://lake/main/t/metadata/x.avro"
	if ok, err := w.Exists(ctx, loc); ok || err != nil {
		t.Fatalf("Exists before = %v, %v", ok, err)
	}
	if err := w.PutObject(ctx, loc, []byte("Obj\x01")); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.Exists(ctx, loc); !ok || err != nil {
		t.Fatalf("Exists after = %v, %v", ok, err)
	}
	// HEAD cannot tell a missing bucket from a missing key (no body), so
	// the upload that follows must be what fails.
	if err := w.PutObject(ctx, "s3://nosuchbucket/k", []byte("x")); err == nil {
		t.Error("an upload into a missing bucket succeeded")
	}

	// A whole materialisation into S3, then read back through the client.
	h := eventsHistory()
	m := NewMaterializer(Config{Source: historySource{h}, Writer: w})
	if _, err := m.Materialize(ctx, 1, 6); err != nil {
		t.Fatal(err)
	}
	for _, f := range buildEvents(t, 6).Files {
		bucket, key, _ := SplitS3(f.Location)
		out, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
		if err != nil || aws.ToInt64(out.ContentLength) != int64(len(f.Body)) {
			t.Errorf("%s: %v (%v bytes, want %d)", f.Location, err, out, len(f.Body))
		}
	}
}
