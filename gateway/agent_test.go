package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport/s3test"
)

// TestAgentCredentialReadOnly: a credential whose actor is agent reads what
// its grants allow and writes nothing, though its grants say rw: every
// write operation is AccessDenied, audited error_agent_readonly, and the
// backend is unchanged. The same grants minted for a human write.
func TestAgentCredentialReadOnly(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "data/t/a.parquet", "base")
	mint := func(actor, channel string) *s3.Client {
		g, err := creds.ParseGrant(b + ":data/:rw")
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.keyring.Mint(creds.Claims{Principal: "alice", Actor: actor, Channel: channel,
			Grants: []creds.Grant{g}, Expiry: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return e.clientFor(m)
	}
	agent := mint(creds.ActorAgent, creds.ChannelMCP)
	ctx := context.Background()

	out, err := agent.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/t/a.parquet")})
	if err != nil {
		t.Fatalf("agent read: %v", err)
	}
	out.Body.Close()
	if _, err := agent.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("data/")}); err != nil {
		t.Fatalf("agent list: %v", err)
	}

	writes := []struct {
		name string
		do   func() error
	}{
		{"put", func() error {
			return s3test.Err(agent.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data/t/new"), Body: strings.NewReader("x")}))
		}},
		{"overwrite", func() error {
			return s3test.Err(agent.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data/t/a.parquet"), Body: strings.NewReader("x")}))
		}},
		{"delete", func() error {
			return s3test.Err(agent.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("data/t/a.parquet")}))
		}},
		{"delete objects", func() error {
			return s3test.Err(agent.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
				{Key: aws.String("data/t/a.parquet")}}}}))
		}},
		{"copy", func() error {
			return s3test.Err(agent.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("data/t/copy"),
				CopySource: aws.String(b + "/data/t/a.parquet")}))
		}},
		{"multipart", func() error {
			return s3test.Err(agent.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("data/t/mp")}))
		}},
		{"tagging", func() error {
			return s3test.Err(agent.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &b, Key: aws.String("data/t/a.parquet"),
				Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}}))
		}},
	}
	for _, w := range writes {
		if err := w.do(); errorCode(err) != "AccessDenied" {
			t.Errorf("agent %s: %v, want AccessDenied", w.name, err)
		}
	}
	if got, ok := e.getDirect(b, "data/t/a.parquet"); !ok || got != "base" {
		t.Fatalf("backend object = %q, %v", got, ok)
	}
	for _, k := range []string{"data/t/new", "data/t/copy"} {
		if _, ok := e.getDirect(b, k); ok {
			t.Errorf("%s was written", k)
		}
	}
	log := e.auditLog(2 + len(writes))
	if n := strings.Count(log, `"reason":"error_agent_readonly: agent sessions are read-only"`); n != len(writes) {
		t.Errorf("%d audit lines say error_agent_readonly, want %d:\n%s", n, len(writes), log)
	}
	if !strings.Contains(log, `"actor":"agent"`) || !strings.Contains(log, `"channel":"mcp"`) {
		t.Errorf("audit lacks the agent's session context:\n%s", log)
	}

	// The control: the same grants for a human write.
	human := mint(creds.ActorHuman, creds.ChannelREST)
	if _, err := human.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data/t/new"), Body: strings.NewReader("x")}); err != nil {
		t.Fatalf("human put: %v", err)
	}
}
