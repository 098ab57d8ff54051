package sigv4interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/sigv4"
)

// botoLine is one line of botocore_client.py's output.
type botoLine struct {
	Op     string
	OK     bool
	Error  string
	Trace  string
	Detail any
}

func TestBotocore(t *testing.T) {
	py := testsupport.Python(t)
	s := newCaptureServer(t)
	const sha256CRC32 = "SHA256 + x-amz-checksum-crc32"
	for _, v := range []struct {
		name         string
		https        bool
		whenRequired bool
		creds        creds
		// Mode of PutObject and UploadPart; everything else is SHA256 (of
		// the empty body, or DeleteObjects' XML with a CRC32 header),
		// presigned URLs UNSIGNED-PAYLOAD.
		put string
		// What becomes of a non-seekable body without and with a length:
		// "ok", "rejected" (by the verifier, as S3 does) or the client's error.
		unseekable, unseekableLength string
	}{
		// botocore sends trailing checksums only over TLS and otherwise signs
		// the body's SHA-256, for which it must seek the body. Without a
		// length its aws-chunked body has no x-amz-decoded-content-length,
		// which S3 refuses (MissingContentLength).
		{"https-when_supported", true, false, withToken, modeTrailCRC32, "rejected", "ok"},
		{"https-when_required", true, true, withToken, modeSHA256, "seek", "seek"},
		{"http-when_supported", false, false, withToken, sha256CRC32, "seek", "seek"},
		{"http-when_required", false, true, withToken, modeSHA256, "seek", "seek"},
		{"https-when_supported-no-token", true, false, noToken, modeTrailCRC32, "rejected", "ok"},
	} {
		t.Run(v.name, func(t *testing.T) {
			endpoint := s.HTTPURL
			args := []string{"botocore_client.py", endpoint, bucket}
			if v.https {
				args[1] = s.HTTPSURL
				args = append(args, "--ca-bundle", s.CAFile)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s.take()
			cmd := exec.CommandContext(ctx, py, args...)
			// The environment a user would set, and nothing from this machine's.
			cmd.Env = []string{
				"PATH=" + os.Getenv("PATH"),
				"HOME=" + t.TempDir(),
				"AWS_ACCESS_KEY_ID=" + v.creds.KeyID,
				"AWS_SECRET_ACCESS_KEY=" + v.creds.Secret,
				"AWS_CONFIG_FILE=/dev/null",
				"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
				"AWS_EC2_METADATA_DISABLED=true",
			}
			if v.creds.Token != "" {
				cmd.Env = append(cmd.Env, "AWS_SESSION_TOKEN="+v.creds.Token)
			}
			if v.whenRequired {
				cmd.Env = append(cmd.Env, "AWS_REQUEST_CHECKSUM_CALCULATION=when_required")
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			exs := s.take()
			results := map[string]botoLine{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var l botoLine
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Errorf("bad output line %q: %v", sc.Text(), err)
					continue
				}
				results[l.Op] = l
			}
			if len(results) == 0 {
				t.Fatalf("botocore_client.py: %v, no output\nstderr:\n%s", err, stderr.String())
			}
			wantFail := map[string]string{
				"PutObject/unseekable":        v.unseekable,
				"PutObject/unseekable+length": v.unseekableLength,
			}
			for op, l := range results {
				want := wantFail[op]
				switch {
				case want == "" || want == "ok":
					if !l.OK {
						t.Errorf("botocore %s failed: %s\n%s", op, l.Error, l.Trace)
					}
				case want == "rejected":
					want = sigv4.ErrMissingContentLength.String()
					fallthrough
				default:
					if l.OK || !strings.Contains(l.Error, want) {
						t.Errorf("botocore %s: got ok=%v %s, want an error with %q", op, l.OK, l.Error, want)
					}
				}
			}
			// The requests S3 too refuses must be refused with the right code.
			var verified []*exchange
			for _, e := range exs {
				if e.Method == "PUT" && strings.HasSuffix(e.Target, "/boto/stream.bin") {
					if v.unseekable != "rejected" || sigv4.CodeOf(e.Err) != sigv4.ErrMissingContentLength {
						t.Errorf("%s %s: got %v, want MissingContentLength", e.Method, e.Target, e.Err)
					}
					addRow(row{"botocore", v.name, "PutObject/unseekable", e.Method + " " + e.Target, e.describe(),
						"rejected as expected: " + firstLine(fmt.Sprint(e.Err))})
					continue
				}
				verified = append(verified, e)
			}
			exs = verified
			requireVerified(t, exs)
			requireCreds(t, exs, v.creds)
			seen := map[string]bool{}
			for _, e := range exs {
				addRow(row{"botocore", v.name, e.Op, e.Method + " " + e.Target, e.describe(), e.Result()})
				want := modeSHA256
				switch {
				case e.Presigned:
					want = modePresigned
				case e.Op == "PutObject" || e.Op == "UploadPart":
					want = v.put
				case e.Op == "DeleteObjects":
					want = sha256CRC32
				}
				if got := e.describe(); got != want && e.Err == nil {
					t.Errorf("%s %s (%s): payload mode %q, want %q", e.Method, e.Target, e.Op, got, want)
				}
				seen[e.Op] = true
			}
			for _, op := range []string{"PutObject", "UploadPart", "GetObject", "GetObject/range", "HeadObject",
				"ListObjectsV2", "CreateMultipartUpload", "CompleteMultipartUpload", "CopyObject", "DeleteObject",
				"DeleteObjects"} {
				if !seen[op] {
					t.Errorf("no %s request reached the server", op)
				}
			}
			checkReplays(t, exs)
			if *update {
				saveCaptures(t, "botocore", exs)
			}
			if t.Failed() {
				t.Logf("botocore output:\n%s", strings.TrimSpace(string(out)))
			}
		})
	}
}
