package materialize

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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

// versitygw starts the repository's versitygw (scripts/versitygw.sh builds
// it into bin/) in posix mode over a temporary directory with one bucket
// and returns an S3 client for it. Without the binary the test is skipped,
// or fails under CI.
func versitygw(t *testing.T, bucket string) *s3.Client {
	t.Helper()
	bin := os.Getenv("VERSITYGW_BIN")
	if bin == "" {
		dir, _ := os.Getwd()
		bin = filepath.Join(dir, "..", "..", "bin", "versitygw")
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no versitygw at %s (scripts/versitygw.sh builds it)", bin)
		}
		t.Skipf("no versitygw at %s; run scripts/versitygw.sh", bin)
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const key, secret = "materializeroot", "materializerootsecret"
	cmd := exec.Command(bin, "--port", addr, "--region", "us-east-1", "--keep-alive", "--quiet", "posix", root)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+key, "ROOT_SECRET_ACCESS_KEY="+secret)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err := http.Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not come up on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://" + addr),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
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
