package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestInitBucket: with the upstream configured, init creates a missing
// bucket, leaves an existing one and its objects alone, proves the data path
// writable without leaving its marker behind, and on a bad S3 configuration
// says what to fix and creates no catalog.
func TestInitBucket(t *testing.T) {
	dsn := pgtest.Database(t)
	gw := testsupport.NewVersitygw(t, testsupport.VersitygwOptions{Buckets: []string{"lake"}})
	root := rootS3Client(&config.Upstream{Endpoint: gw.Endpoint, Region: "us-east-1", PathStyle: true,
		AccessKey: gw.AccessKey, SecretKey: config.Secret(gw.SecretKey)})
	ctx := context.Background()
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"), Key: aws.String("data/keep"),
		Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	bucketExists := func(b string) bool {
		_, err := root.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)})
		return err == nil
	}
	hasCatalog := func(schema string) bool {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`,
			pgx.Identifier{schema, "ducklake_metadata"}.Sanitize()).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	upstream := func(endpoint, secret string) map[string]string {
		return map[string]string{"DUCKICELAKE_UPSTREAM_ENDPOINT": endpoint, "DUCKICELAKE_UPSTREAM_ACCESS_KEY": gw.AccessKey,
			"DUCKICELAKE_UPSTREAM_SECRET_KEY": secret, "DUCKICELAKE_UPSTREAM_PATH_STYLE": "true"}
	}
	for _, tc := range []struct {
		name, schema, dataPath string
		env                    map[string]string
		code                   int
		out                    []string // on stdout (code 0) or stderr
	}{
		{"bucket missing", "fresh", "s3://fresh/data/", upstream(gw.Endpoint, gw.SecretKey), 0, []string{
			`created bucket "fresh" on upstream ` + gw.Endpoint,
			"data path s3://fresh/data/ is writable (put and deleted s3://fresh/data/.duckicelake-init-check)",
			`created DuckLake 1.0 catalog in schema "fresh"`}},
		{"bucket present", "lake", "s3://lake/data/", upstream(gw.Endpoint, gw.SecretKey), 0, []string{
			`bucket "lake" exists on upstream ` + gw.Endpoint, "data path s3://lake/data/ is writable",
			`created DuckLake 1.0 catalog in schema "lake"`}},
		{"existing catalog's data path", "lake", "", upstream(gw.Endpoint, gw.SecretKey), 0, []string{
			`bucket "lake" exists`, "data path s3://lake/data/ is writable", `catalog in schema "lake" exists`}},
		{"bad secret", "badsecret", "s3://other/data/", upstream(gw.Endpoint, "wrong"), 1, []string{
			"SignatureDoesNotMatch", "check upstream.secret_key"}},
		{"bad secret, bucket present", "badsecret", "s3://lake/data/", upstream(gw.Endpoint, "wrong"), 1, []string{
			"check upstream.secret_key"}},
		{"wrong endpoint", "deadend", "s3://lake/data/", upstream("http://"+testsupport.FreeAddr(t), gw.SecretKey), 1, []string{
			"cannot reach the upstream: check upstream.endpoint"}},
		{"no upstream", "noupstream", "s3://nowhere/data/", nil, 0, []string{
			"skipped the bucket check: no upstream configured", `created DuckLake 1.0 catalog in schema "noupstream"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-dsn", dsn, "-schema", tc.schema, "-timeout", "20s"}
			if tc.dataPath != "" {
				args = append(args, "-data-path", tc.dataPath)
			}
			var stdout, stderr testsupport.SyncBuffer
			code := initCatalogCmd(ctx, args, &stdout, &stderr, testsupport.LookupEnv(tc.env))
			got := stdout.String()
			if tc.code != 0 {
				got = stderr.String()
			}
			for _, want := range tc.out {
				if code != tc.code || !strings.Contains(got, want) {
					t.Fatalf("exit %d, stdout %q, stderr %q; want %d with %q", code, stdout.String(), stderr.String(), tc.code, want)
				}
			}
			if want := tc.code == 0; hasCatalog(tc.schema) != want {
				t.Errorf("catalog in schema %s: %v, want %v", tc.schema, !want, want)
			}
		})
	}
	if !bucketExists("fresh") {
		t.Error("bucket fresh was not created")
	}
	if bucketExists("other") || bucketExists("nowhere") {
		t.Error("a failed or skipped check created a bucket")
	}
	for _, key := range []string{"data/keep", "data/.duckicelake-init-check"} {
		_, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("lake"), Key: aws.String(key)})
		if exists := err == nil; exists != (key == "data/keep") {
			t.Errorf("s3://lake/%s exists: %v (%v)", key, exists, err)
		}
	}
}
