package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
	"github.com/duckicelake/duckicelake/internal/testsupport/s3test"
)

// runCredsAt runs `duckicelake creds` with the clock at now.
func runCredsAt(env map[string]string, now time.Time, stdin string, args ...string) credsRun {
	var out, errOut bytes.Buffer
	c := credsCommand{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, lookupEnv: testsupport.LookupEnv(env),
		now: func() time.Time { return now }}
	code := c.run(args)
	return credsRun{code, out.String(), errOut.String()}
}

type mintedJSON struct {
	AccessKeyID, SecretAccessKey, SessionToken, VendID string
	Expiration                                         string
}

func mintJSON(t *testing.T, env map[string]string, now time.Time) mintedJSON {
	t.Helper()
	r := runCredsAt(env, now, "", "mint", "-principal", "p", "-grant", "lake:data/:rw", "-format", "json")
	var m mintedJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil || m.VendID == "" {
		t.Fatalf("mint: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	return m
}

// s3Code is the S3 error code the gateway answers a GetObject signed with
// m's credential.
func s3Code(t *testing.T, gateway string, m mintedJSON) string {
	t.Helper()
	c := s3test.Client(gateway, "", m.AccessKeyID, m.SecretAccessKey, m.SessionToken, s3test.Timeout(10*time.Second))
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String("data/x")})
	if err == nil {
		out.Body.Close()
		return ""
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("GetObject: %v", err)
	}
	return ae.ErrorCode()
}

// TestCredsRevoke: against a running serve whose gateway keeps its
// revocation list in the catalog's Postgres, a credential revoked by vend
// id and another revoked by its session token are refused (InvalidToken)
// within a bounded wait, while a third still authenticates (its request
// reaches the dead upstream: 503).
func TestCredsRevoke(t *testing.T) {
	dsn := pgtest.Database(t)
	initCatalog(t, dsn, "s3://lake/data/")
	env := catalogEnv(t, dsn)
	rs := startServe(t, env, "-catalog.eager=false")

	now := time.Now()
	byID, byToken, kept := mintJSON(t, env, now), mintJSON(t, env, now), mintJSON(t, env, now)
	for _, m := range []mintedJSON{byID, byToken, kept} {
		if code := s3Code(t, rs.gateway, m); code != "ServiceUnavailable" {
			t.Fatalf("before any revocation: %s, want ServiceUnavailable (the dead upstream)", code)
		}
	}

	r := runCredsAt(env, now, "", "revoke", "-vend-id", byID.VendID)
	if r.code != 0 || !strings.Contains(r.stdout, "revoked vend id "+byID.VendID+" until ") || !strings.Contains(r.stdout, "(mint.max_ttl)") {
		t.Fatalf("revoke -vend-id: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCredsAt(env, now, byToken.SessionToken+"\n", "revoke", "-")
	exp, _ := time.Parse(time.RFC3339, byToken.Expiration)
	if r.code != 0 || !strings.Contains(r.stdout, "revoked vend id "+byToken.VendID+" until "+exp.UTC().Format(time.RFC3339)+" (the token's expiry)") {
		t.Fatalf("revoke TOKEN: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, m := range []mintedJSON{byID, byToken} {
		var code string
		if !testsupport.Eventually(func() bool { code = s3Code(t, rs.gateway, m); return code == "InvalidToken" }) {
			t.Fatalf("vend id %s: the gateway still answers %s %v after the revocation", m.VendID, code, testsupport.WaitTimeout)
		}
	}
	if code := s3Code(t, rs.gateway, kept); code != "ServiceUnavailable" {
		t.Errorf("a credential not revoked: %s", code)
	}

	// The rows: the token's expiry, and mint.max_ttl (12h) from now.
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for id, want := range map[string]time.Time{byID.VendID: now.Add(12 * time.Hour), byToken.VendID: exp} {
		var got time.Time
		if err := conn.QueryRow(context.Background(), `SELECT expires_at FROM duckicelake_revocation WHERE vend_id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if d := got.Sub(want); d < -time.Second || d > time.Second {
			t.Errorf("vend id %s revoked until %s, want %s", id, got, want)
		}
	}
}

// TestCredsRevokeErrors: what revoke refuses, and says, before and after
// reaching for the catalog.
func TestCredsRevokeErrors(t *testing.T) {
	now := time.Now()
	env := keyEnv()
	expired := mintJSON(t, env, now.Add(-48*time.Hour))
	fresh := mintJSON(t, env, now)
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"nothing named", "", []string{"revoke"}, 2, "name the credential"},
		{"both", "", []string{"revoke", "-vend-id", "v", fresh.SessionToken}, 2, "exclusive"},
		{"ttl with a token", "", []string{"revoke", "-ttl", "1h", fresh.SessionToken}, 2, "go with -vend-id"},
		{"expires and ttl", "", []string{"revoke", "-vend-id", "v", "-ttl", "1h", "-expires", "2030-01-01T00:00:00Z"}, 2, "exclusive"},
		{"bad expires", "", []string{"revoke", "-vend-id", "v", "-expires", "tomorrow"}, 2, "-expires"},
		{"not a token", "", []string{"revoke", "garbage"}, 1, "duckicelake creds revoke:"},
		{"no catalog", "", []string{"revoke", "-vend-id", "v"}, 1, "no catalog configured"},
		{"no catalog, token on stdin", fresh.SessionToken, []string{"revoke", "-"}, 1, "catalog.dsn: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCredsAt(env, now, tc.stdin, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d containing %q", r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
	if r := runCredsAt(env, now, "", "revoke", "-h"); r.code != 0 || !strings.HasPrefix(r.stdout, "usage: duckicelake creds revoke") || r.stderr != "" {
		t.Errorf("-h: exit %d, stdout %q, stderr %q; want the usage on stdout only", r.code, r.stdout, r.stderr)
	}
	// An expired token needs no revocation, and no catalog to say so.
	r := runCredsAt(env, now, "", "revoke", expired.SessionToken)
	if r.code != 0 || !strings.Contains(r.stdout, "expired at") || !strings.Contains(r.stdout, "nothing revoked") {
		t.Errorf("expired token: exit %d %q %q", r.code, r.stdout, r.stderr)
	}

	t.Run("not initialised", func(t *testing.T) {
		dsn := pgtest.Database(t)
		env := keyEnv()
		env["DUCKICELAKE_PG_DSN"] = dsn
		r := runCredsAt(env, now, "", "revoke", "-vend-id", "v", "-timeout", "20s")
		if r.code != 1 || !strings.Contains(r.stderr, "run `duckicelake init --schema public` first") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}
