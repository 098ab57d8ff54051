package materialize

import (
	"context"
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

	"github.com/duckicelake/duckicelake/internal/objstore"
)

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
