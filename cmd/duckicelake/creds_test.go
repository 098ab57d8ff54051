package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/internal/creds"
)

var (
	testNow    = time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	testSecret = strings.Repeat("5a", 32)
)

type credsRun struct {
	code           int
	stdout, stderr string
}

func runCredsWith(t *testing.T, env map[string]string, stdin string, args ...string) credsRun {
	t.Helper()
	var out, errOut bytes.Buffer
	c := credsCommand{
		stdin:  strings.NewReader(stdin),
		stdout: &out, stderr: &errOut,
		lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		now:       func() time.Time { return testNow },
	}
	code := c.run(args)
	return credsRun{code, out.String(), errOut.String()}
}

func keyEnv() map[string]string {
	return map[string]string{"DUCKICELAKE_MINT_KEYS": "k1:" + testSecret}
}

// verify checks a minted triple with a keyring built independently of the
// command, and returns its claims.
func verify(t *testing.T, ak, secret, token string) creds.Claims {
	t.Helper()
	key, _ := hex.DecodeString(testSecret)
	k, err := creds.NewKeyring(creds.Key{ID: "k1", Secret: key})
	if err != nil {
		t.Fatal(err)
	}
	c, s, err := k.Verify(ak, token, testNow)
	if err != nil {
		t.Fatalf("minted credential does not verify: %v", err)
	}
	if s != secret {
		t.Fatalf("printed secret %q, derived %q", secret, s)
	}
	return c
}

func TestCredsMintEnv(t *testing.T) {
	r := runCredsWith(t, keyEnv(), "", "mint", "--principal", "alice", "--grant", "lake:data/analytics/:rw",
		"--grant", "lake:exports/:r", "--ttl", "2h", "--actor", "agent", "--channel", "mcp", "--catalog", "lake", "--format", "env")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.HasSuffix(r.stdout, "\n") {
		t.Fatalf("want exactly three lines, got %q", r.stdout)
	}
	var vals []string
	for i, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		k, v, ok := strings.Cut(lines[i], "=")
		if !ok || k != name || v == "" || strings.ContainsAny(v, " '\"\t") {
			t.Fatalf("line %d = %q, want %s=<value>", i+1, lines[i], name)
		}
		vals = append(vals, v)
	}
	c := verify(t, vals[0], vals[1], vals[2])
	want := []creds.Grant{
		{Bucket: "lake", Prefix: "data/analytics/", Access: creds.Read | creds.Write | creds.List},
		{Bucket: "lake", Prefix: "exports/", Access: creds.Read | creds.List},
	}
	if c.Principal != "alice" || c.Actor != "agent" || c.Channel != "mcp" || c.Catalog != "lake" ||
		!reflect.DeepEqual(c.Grants, want) || !c.Expiry.Equal(testNow.Add(2*time.Hour)) {
		t.Errorf("claims = %+v", c)
	}
}

func TestCredsMintJSON(t *testing.T) {
	r := runCredsWith(t, keyEnv(), "", "mint", "-principal", "bob", "-grant", "lake::l", "-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Version                                   int
		AccessKeyID                               string `json:"AccessKeyId"`
		SecretAccessKey, SessionToken, Expiration string
		VendID                                    string `json:"VendId"`
		Endpoint, Region                          string
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v in %s", err, r.stdout)
	}
	c := verify(t, doc.AccessKeyID, doc.SecretAccessKey, doc.SessionToken)
	// Without -ttl the configured default (1h) applies.
	if doc.Version != 1 || doc.Expiration != "2026-06-01T11:00:00Z" || doc.VendID != c.VendID ||
		doc.Endpoint != "http://127.0.0.1:9000" || doc.Region != "us-east-1" || c.Principal != "bob" {
		t.Errorf("doc = %+v, claims %+v", doc, c)
	}
}

func TestCredsMintText(t *testing.T) {
	env := keyEnv()
	env["DUCKICELAKE_GATEWAY_PUBLIC_URL"] = "https://s3.example.com:8443"
	env["DUCKICELAKE_GATEWAY_REGION"] = "eu-central-1"
	r := runCredsWith(t, env, "", "mint", "-principal", "alice", "-grant", "lake:data/analytics/:rw", "-ttl", "1h")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Pull the triple out of the text and check it verifies.
	field := func(name string) string {
		for _, line := range strings.Split(r.stdout, "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == name {
				return f[1]
			}
		}
		t.Fatalf("no %s line in\n%s", name, r.stdout)
		return ""
	}
	ak, secret, token := field("AWS_ACCESS_KEY_ID"), field("AWS_SECRET_ACCESS_KEY"), field("AWS_SESSION_TOKEN")
	verify(t, ak, secret, token)
	for _, want := range []string{
		"Credential for alice (human, rest)",
		"expires 2026-06-01T11:00:00Z (in 1h0m0s)",
		"s3://lake/data/analytics/  read+write+list",
		"CREATE OR REPLACE SECRET duckicelake (\n    TYPE S3,\n    KEY_ID '" + ak + "',\n    SECRET '" + secret + "',\n    SESSION_TOKEN '" + token + "',\n" +
			"    ENDPOINT 's3.example.com:8443',\n    URL_STYLE 'path',\n    USE_SSL true,\n    REGION 'eu-central-1'\n);",
		`boto3.client(
    "s3",
    endpoint_url="https://s3.example.com:8443",
    aws_access_key_id="` + ak + `",
    aws_secret_access_key="` + secret + `",
    aws_session_token="` + token + `",
    region_name="eu-central-1",`,
		"export AWS_ACCESS_KEY_ID='" + ak + "'\n",
		"export AWS_SECRET_ACCESS_KEY='" + secret + "'\n",
		"export AWS_SESSION_TOKEN='" + token + "'\n",
		"aws --endpoint-url 'https://s3.example.com:8443' s3 ls 's3://lake/data/analytics/'\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text output lacks\n%s\n--- output:\n%s", want, r.stdout)
		}
	}
}

func TestCredsMintTTLCap(t *testing.T) {
	env := keyEnv()
	env["DUCKICELAKE_MINT_MAX_TTL"] = "3h"
	r := runCredsWith(t, env, "", "mint", "-principal", "a", "-grant", "b::r", "-ttl", "100h", "-format", "json")
	if r.code != 0 || !strings.Contains(r.stderr, "-ttl 100h0m0s capped to mint.max_ttl 3h0m0s") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `"Expiration": "2026-06-01T13:00:00Z"`) {
		t.Errorf("expiry not capped: %s", r.stdout)
	}
}

func TestCredsMintConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.toml")
	os.WriteFile(path, []byte("[gateway]\nlisten = \"0.0.0.0:9100\"\n[[mint.keys]]\nid = \"k1\"\nsecret = \""+testSecret+"\"\n"), 0o600)
	r := runCredsWith(t, nil, "", "mint", "-config", path, "-principal", "a", "-grant", "b::w", "-format", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"Endpoint": "http://127.0.0.1:9100"`) {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
}

func TestCredsMintFailures(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"no principal", keyEnv(), []string{"-grant", "b::r"}, 2, "-principal is required"},
		{"no grant", keyEnv(), []string{"-principal", "a"}, 2, "at least one -grant is required"},
		{"bad grant", keyEnv(), []string{"-principal", "a", "-grant", "lake"}, 2, `invalid value "lake" for flag -grant: grant "lake": want bucket:prefix:access`},
		{"bad access", keyEnv(), []string{"-principal", "a", "-grant", "lake:x/:rx"}, 2, "unknown letter 'x'"},
		{"bad format", keyEnv(), []string{"-principal", "a", "-grant", "b::r", "-format", "yaml"}, 2, `-format must be text, env or json, got "yaml"`},
		{"bad actor", keyEnv(), []string{"-principal", "a", "-grant", "b::r", "-actor", "robot"}, 2, `-actor must be human or agent`},
		{"bad channel", keyEnv(), []string{"-principal", "a", "-grant", "b::r", "-channel", "grpc"}, 2, `-channel must be rest, mcp or smcp`},
		{"bad ttl", keyEnv(), []string{"-principal", "a", "-grant", "b::r", "-ttl", "soon"}, 2, `invalid value "soon" for flag -ttl`},
		{"negative ttl", keyEnv(), []string{"-principal", "a", "-grant", "b::r", "-ttl", "-1h"}, 2, "-ttl must be positive"},
		{"unknown flag", keyEnv(), []string{"-principal", "a", "-grant", "b::r", "-bucket", "x"}, 2, "flag provided but not defined: -bucket"},
		{"positional", keyEnv(), []string{"-principal", "a", "-grant", "b::r", "extra"}, 2, `unexpected argument "extra"`},
		{"no minting key", nil, []string{"-principal", "a", "-grant", "b::r"}, 1, "config: mint.keys: required; set DUCKICELAKE_MINT_KEYS=id:secret or [[mint.keys]] in the config file"},
		{"bad config", map[string]string{"DUCKICELAKE_MINT_KEYS": "k1:abcd"}, []string{"-principal", "a", "-grant", "b::r"}, 1, "config: mint.keys[0].secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCredsWith(t, tt.env, "", append([]string{"mint"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", r.code, r.stdout, r.stderr, tt.code, tt.want)
			}
			if tt.code == 2 && !strings.Contains(r.stderr, "usage: duckicelake creds mint") {
				t.Errorf("usage missing from stderr:\n%s", r.stderr)
			}
		})
	}
}

func TestCredsInspect(t *testing.T) {
	r := runCredsWith(t, keyEnv(), "", "mint", "-principal", "alice", "-grant", "lake:data/:rw", "-grant", "x:y/:l", "-format", "env")
	token := strings.TrimPrefix(strings.Split(strings.TrimSpace(r.stdout), "\n")[2], "AWS_SESSION_TOKEN=")
	secret := strings.TrimPrefix(strings.Split(r.stdout, "\n")[1], "AWS_SECRET_ACCESS_KEY=")

	t.Run("valid", func(t *testing.T) {
		r := runCredsWith(t, keyEnv(), "", "inspect", token)
		for _, want := range []string{"principal      alice", "minting key    k1", "grants         lake:data/:rwl", "               x:y/:l",
			"expires        2026-06-01T11:00:00Z (in 1h0m0s)", "status         valid"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("lacks %q:\n%s", want, r.stdout)
			}
		}
		if r.code != 0 || strings.Contains(r.stdout, secret) {
			t.Errorf("exit %d; secret shown: %v", r.code, strings.Contains(r.stdout, secret))
		}
	})
	t.Run("stdin and json", func(t *testing.T) {
		r := runCredsWith(t, keyEnv(), token+"\n", "inspect", "-format", "json", "-")
		var doc map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
			t.Fatalf("exit %d, %v: %s", r.code, err, r.stdout)
		}
		if doc["principal"] != "alice" || doc["status"] != "valid (revocations not checked)" || doc["access_key_id"] != creds.AccessKeyIDFor(token) {
			t.Errorf("doc = %v", doc)
		}
	})
	t.Run("no keys configured", func(t *testing.T) {
		r := runCredsWith(t, nil, "", "inspect", token)
		if r.code != 0 || !strings.Contains(r.stdout, "not verified: no minting keys configured") {
			t.Errorf("exit %d:\n%s", r.code, r.stdout)
		}
	})
	t.Run("other key", func(t *testing.T) {
		env := map[string]string{"DUCKICELAKE_MINT_KEYS": "k1:" + strings.Repeat("77", 32)}
		r := runCredsWith(t, env, "", "inspect", token)
		if r.code != 1 || !strings.Contains(r.stdout, "INVALID: session token MAC does not verify") {
			t.Errorf("exit %d:\n%s", r.code, r.stdout)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		r := runCredsWith(t, keyEnv(), "", "inspect", token[:20])
		if r.code != 1 || !strings.Contains(r.stderr, "malformed session token") {
			t.Errorf("exit %d: %s", r.code, r.stderr)
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{{"inspect"}, {"inspect", "a", "b"}, {"inspect", "-format", "xml", "t"}} {
			if r := runCredsWith(t, keyEnv(), "", args...); r.code != 2 || !strings.Contains(r.stderr, "usage: duckicelake creds inspect") {
				t.Errorf("%q: exit %d: %s", args, r.code, r.stderr)
			}
		}
	})
}

func TestCredsKeygen(t *testing.T) {
	r := runCredsWith(t, nil, "", "keygen")
	name, value, _ := strings.Cut(strings.TrimSpace(r.stdout), "=")
	if r.code != 0 || name != "DUCKICELAKE_MINT_KEYS" || !strings.HasPrefix(value, "k20260601:") || len(value) != len("k20260601:")+64 {
		t.Fatalf("exit %d: %q", r.code, r.stdout)
	}
	// The key loads and mints.
	m := runCredsWith(t, map[string]string{name: value}, "", "mint", "-principal", "a", "-grant", "b::r", "-format", "env")
	if m.code != 0 {
		t.Fatalf("minting with the generated key: %s", m.stderr)
	}
	// Two runs give different keys.
	if again := runCredsWith(t, nil, "", "keygen"); again.stdout == r.stdout {
		t.Error("keygen repeated a key")
	}

	r = runCredsWith(t, nil, "", "keygen", "-id", "2026-06", "-format", "toml")
	path := filepath.Join(t.TempDir(), "k.toml")
	os.WriteFile(path, []byte(r.stdout), 0o600)
	cfg, _, err := config.Load([]string{"-config", path}, func(string) (string, bool) { return "", false })
	if err != nil || len(cfg.Mint.Keys) != 1 || cfg.Mint.Keys[0].ID != "2026-06" {
		t.Fatalf("toml output does not load: %v\n%s", err, r.stdout)
	}
	if r := runCredsWith(t, nil, "", "keygen", "-id", "bad id"); r.code != 2 || !strings.Contains(r.stderr, "key id") {
		t.Errorf("bad id: exit %d: %s", r.code, r.stderr)
	}
}
