package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duckicelake/duckicelake/mcp"
)

const demoUsage = `usage: duckicelake demo -catalog URL [flags]

The seeds' 60-second walkthrough on a running stack (make run; then
duckicelake seed): authors over REST the tag pii.email on
analytics.customers.email, the masking policy mask_email (left(val, 2) ||
'***', masked on the bytes, bypassed by role pii_reader) and the role
pii_reader granted to alice; then runs one query per principal — bob
(masked), alice (clear), and an agent over MCP (masked) — and the byte-level
proof: bob's vended credential gets 403 on the base Parquet and 200 on the
masked copy.

It speaks to the catalog as a broker: without a token in dev mode, else
with DUCKICELAKE_DEMO_CLIENT, an OAuth client "id:secret" with scope *.

flags:
`

func runDemo(args []string, stdout, stderr io.Writer) int {
	return withSignals(func(ctx context.Context) int { return demoCmd(ctx, args, stdout, stderr) })
}

func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("demo", demoUsage, stderr)
	catURL := fs.String("catalog", "http://127.0.0.1:8181", "the catalog's base URL")
	prefix := fs.String("warehouse", "lake", "the catalog name")
	extDir := fs.String("extension-directory", os.Getenv("DUCKICELAKE_DUCKDB_EXTENSION_DIRECTORY"), "DuckDB 1.5.5 extensions (httpfs, avro, iceberg)")
	if code, done := parseCommand(fs, args); done {
		return code
	}
	d := &demo{base: strings.TrimSuffix(*catURL, "/"), prefix: *prefix, out: stdout}
	if c := os.Getenv("DUCKICELAKE_DEMO_CLIENT"); c != "" {
		id, secret, _ := strings.Cut(c, ":")
		d.tok = &clientToken{url: d.base + "/v1/oauth/tokens", id: id, secret: secret}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := d.run(ctx, *extDir); err != nil {
		fmt.Fprintf(stderr, "duckicelake demo: %v\n", err)
		return 1
	}
	return 0
}

type demo struct {
	base, prefix string
	tok          *clientToken // nil: dev mode
	out          io.Writer
}

func (d *demo) token(ctx context.Context) (string, error) {
	if d.tok == nil {
		return "", nil
	}
	return d.tok.token(ctx)
}

// call sends one catalog request (as the broker, or delegated with q).
func (d *demo) call(ctx context.Context, method, path string, q url.Values, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	u := d.base + "/v1/" + d.prefix + "/" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
	tok, err := d.token(ctx)
	if err != nil {
		return 0, err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, err
		}
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusConflict {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	return resp.StatusCode, nil
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

func (d *demo) run(ctx context.Context, extDir string) error {
	d.say("== 1. author governance over REST (idempotent: 409 means it exists)")
	for _, a := range []struct {
		what string
		body map[string]any
	}{
		{"tags", map[string]any{"namespace": "pii", "name": "email"}},
		{"object-tags", map[string]any{"object-kind": "column", "schema": "analytics", "object": "customers", "column": "email",
			"tag-namespace": "pii", "tag-name": "email"}},
		{"masking-policies", map[string]any{"name": "mask_email", "signature": "(val VARCHAR)", "body": "left(val, 2) || '***'",
			"unmasked-roles": []string{"pii_reader"}, "file-layer-masking": true}},
		{"policy-attachments", map[string]any{"policy-kind": "masking", "policy-name": "mask_email", "target-kind": "tag",
			"tag-namespace": "pii", "tag-name": "email"}},
		{"roles", map[string]any{"name": "pii_reader"}},
		{"role-grants", map[string]any{"role": "pii_reader", "principal": "alice"}},
	} {
		status, err := d.call(ctx, http.MethodPost, "governance/"+a.what, nil, a.body, nil)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(a.body)
		d.say("POST /v1/%s/governance/%s %s -> %d", d.prefix, a.what, b, status)
	}

	srv, err := mcp.New(mcp.Config{
		Catalog:      mcp.Catalog{URL: d.base, Prefix: d.prefix, Token: d.token},
		ExtensionDir: extDir, Version: version,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	const q = "SELECT id, email FROM analytics.customers ORDER BY id LIMIT 3"
	d.say("\n== 2. the same query per principal: %s", q)
	for _, who := range []string{"bob", "alice"} {
		r, err := srv.QueryAsHuman(ctx, who, q)
		if err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
		d.say("%-6s (human, REST): %v", who, r.Rows)
	}
	cs, err := srv.Connect(ctx, mcp.Identity{Principal: "agent"})
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "query", Arguments: map[string]any{"sql": q}})
	if err != nil {
		return err
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r mcp.Result
	_ = json.Unmarshal(b, &r)
	if res.IsError {
		return fmt.Errorf("agent: %v", res.Content)
	}
	d.say("%-6s (agent, MCP):  %v", "agent", r.Rows)

	d.say("\n== 3. byte-level proof with bob's vended credential")
	return d.bytes(ctx)
}

type demoLoad struct {
	Metadata struct {
		Location string `json:"location"`
	} `json:"metadata"`
	Credentials []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	} `json:"storage-credentials"`
}

func (d *demo) bytes(ctx context.Context) error {
	path := "namespaces/analytics/tables/customers"
	var base, bob demoLoad
	if _, err := d.call(ctx, http.MethodGet, path, url.Values{"delegate": {"1"}, "principal": {"alice"}}, nil, &base); err != nil {
		return err
	}
	if _, err := d.call(ctx, http.MethodGet, path, url.Values{"delegate": {"1"}, "principal": {"bob"}}, nil, &bob); err != nil {
		return err
	}
	if len(base.Credentials) == 0 || len(bob.Credentials) == 0 {
		return errors.New("the catalog vended no credentials (mint.keys and the gateway URL must be configured)")
	}
	first := func(c map[string]string, prefix string) (*s3.Client, string, string, error) {
		cl := s3.New(s3.Options{BaseEndpoint: aws.String(c["s3.endpoint"]), Region: c["client.region"], UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(c["s3.access-key-id"], c["s3.secret-access-key"], c["s3.session-token"])})
		bucket, key, _ := strings.Cut(strings.TrimPrefix(prefix, "s3://"), "/")
		out, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &key})
		if err != nil {
			return nil, "", "", err
		}
		for _, o := range out.Contents {
			if strings.HasSuffix(*o.Key, ".parquet") {
				return cl, bucket, *o.Key, nil
			}
		}
		return nil, "", "", fmt.Errorf("no Parquet file under %s", prefix)
	}
	_, bucket, baseKey, err := first(base.Credentials[0].Config, base.Credentials[0].Prefix)
	if err != nil {
		return err
	}
	bobS3, mbucket, maskedKey, err := first(bob.Credentials[0].Config, bob.Credentials[0].Prefix)
	if err != nil {
		return err
	}
	for _, o := range []struct{ bucket, key, what string }{{bucket, baseKey, "base Parquet"}, {mbucket, maskedKey, "masked copy"}} {
		_, err := bobS3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key)})
		status := 200
		var re interface{ HTTPStatusCode() int }
		if errors.As(err, &re) {
			status = re.HTTPStatusCode()
		} else if err != nil {
			return err
		}
		d.say("bob GET s3://%s/%s (%s) -> %d", o.bucket, o.key, o.what, status)
	}
	return nil
}
