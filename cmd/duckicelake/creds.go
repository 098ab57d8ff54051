package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/revoke"
	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/internal/creds"
)

// credsCommand runs `duckicelake creds`; its environment is injectable for
// tests.
type credsCommand struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	now            func() time.Time
}

func runCreds(args []string, stdout, stderr io.Writer) int {
	c := credsCommand{stdin: os.Stdin, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv, now: time.Now}
	return c.run(args)
}

const credsUsage = `usage: duckicelake creds <command> [flags]

commands:
  mint      mint a credential for a principal and a set of grants
  inspect   decode a session token (and verify it when minting keys are configured)
  keygen    generate a minting key
  revoke    revoke a credential (by vend id or session token) in the catalog's Postgres

Run "duckicelake creds <command> -h" for a command's flags.
`

func (c credsCommand) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, credsUsage)
		return 2
	}
	switch args[0] {
	case "mint":
		return c.mint(args[1:])
	case "inspect":
		return c.inspect(args[1:])
	case "keygen":
		return c.keygen(args[1:])
	case "revoke":
		return c.revoke(args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(c.stdout, credsUsage)
		return 0
	default:
		fmt.Fprintf(c.stderr, "duckicelake creds: unknown command %q\n\n%s", args[0], credsUsage)
		return 2
	}
}

// flagSet returns a FlagSet whose errors and usage go to stderr, or to
// stdout for -h.
func (c credsCommand) flagSet(name, synopsis, help string) *flag.FlagSet {
	fs := flag.NewFlagSet("duckicelake creds "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: duckicelake creds %s %s\n\n%s\nflags:\n", name, synopsis, help)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args; it returns an exit code when the command should stop.
// -h prints the usage on stdout only; a bad flag prints the error and the
// usage on stderr.
func (c credsCommand) parse(fs *flag.FlagSet, args []string) (int, bool) {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	err := fs.Parse(args)
	fs.SetOutput(c.stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.stdout.Write(msg.Bytes())
		return 0, true
	case err != nil:
		c.stderr.Write(msg.Bytes())
		return 2, true
	}
	return 0, false
}

// usageError reports a bad invocation the flag package cannot see.
func (c credsCommand) usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return 2
}

// readToken is the session token arg, or the one read from stdin when arg
// is "-", with its claims (unverified) and minting key id.
func (c credsCommand) readToken(arg string) (token string, claims creds.Claims, keyID string, err error) {
	token = arg
	if arg == "-" {
		b, err := io.ReadAll(io.LimitReader(c.stdin, creds.MaxTokenLen+2))
		if err != nil {
			return "", claims, "", err
		}
		token = strings.TrimSpace(string(b))
	}
	claims, keyID, err = creds.ParseUnverified(token)
	return token, claims, keyID, err
}

func (c credsCommand) fail(name string, err error) int {
	fmt.Fprintf(c.stderr, "duckicelake creds %s: %v\n", name, err)
	return 1
}

const mintHelp = `Mints a credential with the active minting key (mint.keys, or
DUCKICELAKE_MINT_KEYS=id:secret) and prints it with snippets for DuckDB,
boto3 and the shell, pointing at the gateway (gateway.public_url, else
http://<gateway.listen>).

A grant is bucket:prefix:access. The prefix is a literal S3 key prefix (no
wildcards); end it with '/' ("data/a" also covers "data/ab"). Access is a set
of letters: r = read and list, w = write, l = list only; so rw = read, write
and list.

Formats: text (values and snippets), env (exactly three lines
AWS_ACCESS_KEY_ID=, AWS_SECRET_ACCESS_KEY=, AWS_SESSION_TOKEN=), json (an AWS
credential_process document, plus VendId, Endpoint and Region).
`

func (c credsCommand) mint(args []string) int {
	fs := c.flagSet("mint", "-principal NAME -grant BUCKET:PREFIX:ACCESS [-grant …] [flags]", mintHelp)
	principal := fs.String("principal", "", "principal the credential acts for (required)")
	var grants []creds.Grant
	fs.Func("grant", "bucket:prefix:access, e.g. lake:data/analytics/:rw (repeatable, at least one)", func(s string) error {
		g, err := creds.ParseGrant(s)
		if err != nil {
			return errors.New(creds.Message(err))
		}
		grants = append(grants, g)
		return nil
	})
	ttl := fs.Duration("ttl", 0, "lifetime (default mint.default_ttl; capped at mint.max_ttl)")
	actor := fs.String("actor", creds.ActorHuman, "human or agent")
	channel := fs.String("channel", creds.ChannelREST, "rest, mcp or smcp")
	catalog := fs.String("catalog", "", "catalog the credential is for")
	format := fs.String("format", "text", "output: text, env or json")
	cfgFlags := config.AddConfigFlag(fs)
	if code, stop := c.parse(fs, args); stop {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return c.usageError(fs, "unexpected argument %q", fs.Arg(0))
	case *principal == "":
		return c.usageError(fs, "-principal is required")
	case len(grants) == 0:
		return c.usageError(fs, "at least one -grant is required")
	case *ttl < 0:
		return c.usageError(fs, "-ttl must be positive, got %s", *ttl)
	case *actor != creds.ActorHuman && *actor != creds.ActorAgent:
		return c.usageError(fs, "-actor must be human or agent, got %q", *actor)
	case *channel != creds.ChannelREST && *channel != creds.ChannelMCP && *channel != creds.ChannelSMCP:
		return c.usageError(fs, "-channel must be rest, mcp or smcp, got %q", *channel)
	case *format != "text" && *format != "env" && *format != "json":
		return c.usageError(fs, "-format must be text, env or json, got %q", *format)
	}

	cfg, err := cfgFlags.Load(c.lookupEnv)
	if err != nil {
		return c.fail("mint", err)
	}
	keyring, err := cfg.Keyring()
	if err != nil {
		return c.fail("mint", err)
	}
	keyring.Now = c.now
	claims := creds.Claims{Principal: *principal, Actor: *actor, Channel: *channel, Catalog: *catalog, Grants: grants}
	now := c.now()
	if *ttl > 0 {
		claims.Expiry = now.Add(*ttl)
	}
	m, err := keyring.Mint(claims)
	if err != nil {
		return c.fail("mint", err)
	}
	if *ttl > 0 && m.Expiry.Sub(m.IssuedAt) < ttl.Truncate(time.Second) {
		fmt.Fprintf(c.stderr, "duckicelake creds mint: note: -ttl %s capped to mint.max_ttl %s; expires %s\n",
			*ttl, cfg.Mint.MaxTTL, m.Expiry.Format(time.RFC3339))
	}

	out := mintOutput{m: m, claims: claims, endpoint: cfg.GatewayURL(), region: cfg.Gateway.Region}
	w := bufio.NewWriter(c.stdout)
	switch *format {
	case "env":
		fmt.Fprintf(w, "AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nAWS_SESSION_TOKEN=%s\n", m.AccessKeyID, m.SecretAccessKey, m.SessionToken)
	case "json":
		err = out.json(w)
	default:
		out.text(w, now)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return c.fail("mint", err)
	}
	return 0
}

type mintOutput struct {
	m        creds.Minted
	claims   creds.Claims
	endpoint string // http(s)://host:port
	region   string
}

func (o *mintOutput) json(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// The field names are AWS's credential_process format, so the output
	// can serve as one.
	return enc.Encode(struct {
		Version         int
		AccessKeyID     string `json:"AccessKeyId"`
		SecretAccessKey string
		SessionToken    string
		Expiration      string
		VendID          string `json:"VendId"`
		Endpoint        string
		Region          string
	}{1, o.m.AccessKeyID, o.m.SecretAccessKey, o.m.SessionToken, o.m.Expiry.Format(time.RFC3339), o.m.VendID, o.endpoint, o.region})
}

func (o *mintOutput) text(w io.Writer, now time.Time) {
	m, c := &o.m, &o.claims
	hostPort, useSSL := o.endpoint, false
	if u, err := url.Parse(o.endpoint); err == nil && u.Host != "" {
		hostPort, useSSL = u.Host, u.Scheme == "https"
	}
	fmt.Fprintf(w, "Credential for %s (%s, %s", c.Principal, c.Actor, c.Channel)
	if c.Catalog != "" {
		fmt.Fprintf(w, ", catalog %s", c.Catalog)
	}
	fmt.Fprintf(w, "), vend id %s\nexpires %s (in %s)\ngrants:\n", m.VendID, m.Expiry.Format(time.RFC3339), m.Expiry.Sub(now).Round(time.Second))
	for _, g := range c.Grants {
		fmt.Fprintf(w, "  s3://%s/%s  %s\n", g.Bucket, g.Prefix, describeAccess(g.Access))
	}
	fmt.Fprintf(w, "\nAWS_ACCESS_KEY_ID      %s\nAWS_SECRET_ACCESS_KEY  %s\nAWS_SESSION_TOKEN      %s\n", m.AccessKeyID, m.SecretAccessKey, m.SessionToken)

	first := c.Grants[0]
	fmt.Fprintf(w, `
-- DuckDB
CREATE OR REPLACE SECRET duckicelake (
    TYPE S3,
    KEY_ID %s,
    SECRET %s,
    SESSION_TOKEN %s,
    ENDPOINT %s,
    URL_STYLE 'path',
    USE_SSL %t,
    REGION %s
);
-- e.g. SELECT * FROM read_parquet(%s) LIMIT 10;
`, sqlQuote(m.AccessKeyID), sqlQuote(m.SecretAccessKey), sqlQuote(m.SessionToken), sqlQuote(hostPort), useSSL,
		sqlQuote(o.region), sqlQuote("s3://"+first.Bucket+"/"+first.Prefix+"**/*.parquet"))

	fmt.Fprintf(w, `
# Python (boto3)
import boto3
from botocore.config import Config
s3 = boto3.client(
    "s3",
    endpoint_url=%s,
    aws_access_key_id=%s,
    aws_secret_access_key=%s,
    aws_session_token=%s,
    region_name=%s,
    config=Config(s3={"addressing_style": "path"}),
)
`, pyQuote(o.endpoint), pyQuote(m.AccessKeyID), pyQuote(m.SecretAccessKey), pyQuote(m.SessionToken), pyQuote(o.region))

	fmt.Fprintf(w, `
# Shell
export AWS_ACCESS_KEY_ID=%s
export AWS_SECRET_ACCESS_KEY=%s
export AWS_SESSION_TOKEN=%s
export AWS_DEFAULT_REGION=%s
aws --endpoint-url %s s3 ls %s
`, shQuote(m.AccessKeyID), shQuote(m.SecretAccessKey), shQuote(m.SessionToken), shQuote(o.region),
		shQuote(o.endpoint), shQuote("s3://"+first.Bucket+"/"+first.Prefix))
}

func describeAccess(a creds.Access) string {
	var parts []string
	for _, p := range []struct {
		bit  creds.Access
		name string
	}{{creds.Read, "read"}, {creds.Write, "write"}, {creds.List, "list"}} {
		if a&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, "+")
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// pyQuote relies on Go's escapes being a subset of Python's.
func pyQuote(s string) string { return strconv.Quote(s) }

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

const inspectHelp = `Decodes a session token and prints its claims (never a secret). When
minting keys are configured it also verifies the token: MAC, key, validity
window (revocations are not consulted). Exits 1 when the token does not parse
or does not verify. TOKEN "-" reads the token from standard input, which
keeps it out of the process list.
`

func (c credsCommand) inspect(args []string) int {
	fs := c.flagSet("inspect", "[flags] TOKEN|-", inspectHelp)
	format := fs.String("format", "text", "output: text or json")
	cfgFlags := config.AddConfigFlag(fs)
	if code, stop := c.parse(fs, args); stop {
		return code
	}
	switch {
	case fs.NArg() != 1:
		return c.usageError(fs, "want exactly one TOKEN argument, got %d", fs.NArg())
	case *format != "text" && *format != "json":
		return c.usageError(fs, "-format must be text or json, got %q", *format)
	}
	token, claims, keyID, err := c.readToken(fs.Arg(0))
	if err != nil {
		return c.fail("inspect", err)
	}
	cfg, err := cfgFlags.Load(c.lookupEnv)
	if err != nil {
		return c.fail("inspect", err)
	}
	now := c.now()
	status, verifyErr := "not verified: no minting keys configured", error(nil)
	if len(cfg.Mint.Keys) > 0 {
		keyring, err := cfg.Keyring()
		if err != nil {
			return c.fail("inspect", err)
		}
		if _, _, verifyErr = keyring.Verify(creds.AccessKeyIDFor(token), token, now); verifyErr == nil {
			status = "valid (revocations not checked)"
		} else {
			status = "INVALID: " + strings.TrimPrefix(verifyErr.Error(), "creds: ")
		}
	}

	ak := creds.AccessKeyIDFor(token)
	w := bufio.NewWriter(c.stdout)
	if *format == "json" {
		type grant struct {
			Bucket string `json:"bucket"`
			Prefix string `json:"prefix"`
			Access string `json:"access"`
		}
		gs := make([]grant, len(claims.Grants))
		for i, g := range claims.Grants {
			gs[i] = grant{g.Bucket, g.Prefix, g.Access.String()}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(map[string]any{
			"access_key_id": ak, "key_id": keyID, "principal": claims.Principal, "actor": claims.Actor,
			"channel": claims.Channel, "catalog": claims.Catalog, "vend_id": claims.VendID,
			"issued_at": claims.IssuedAt.Format(time.RFC3339), "expiry": claims.Expiry.Format(time.RFC3339),
			"grants": gs, "status": status,
		})
	} else {
		fmt.Fprintf(w, "access key id  %s\nminting key    %s\nprincipal      %s\nactor          %s\nchannel        %s\ncatalog        %s\nvend id        %s\nissued at      %s\n",
			ak, keyID, claims.Principal, claims.Actor, claims.Channel, claims.Catalog, claims.VendID, claims.IssuedAt.Format(time.RFC3339))
		if left := claims.Expiry.Sub(now); left > 0 {
			fmt.Fprintf(w, "expires        %s (in %s)\n", claims.Expiry.Format(time.RFC3339), left.Round(time.Second))
		} else {
			fmt.Fprintf(w, "expires        %s (%s ago)\n", claims.Expiry.Format(time.RFC3339), (-left).Round(time.Second))
		}
		for i, g := range claims.Grants {
			label := "grants        "
			if i > 0 {
				label = "              "
			}
			fmt.Fprintf(w, "%s %s\n", label, g)
		}
		if len(claims.Grants) == 0 {
			fmt.Fprintf(w, "grants         none\n")
		}
		fmt.Fprintf(w, "status         %s\n", status)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return c.fail("inspect", err)
	}
	if verifyErr != nil {
		return 1
	}
	return 0
}

const keygenHelp = `Generates a random 32-byte minting key and prints it for the environment
(DUCKICELAKE_MINT_KEYS=id:hex) or the config file ([[mint.keys]]). To rotate,
put the new key first and keep the old one until mint.max_ttl has passed.
`

func (c credsCommand) keygen(args []string) int {
	fs := c.flagSet("keygen", "[flags]", keygenHelp)
	id := fs.String("id", "", `key id (default "k" and today's date, e.g. k20260601)`)
	format := fs.String("format", "env", "output: env or toml")
	if code, stop := c.parse(fs, args); stop {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *format != "env" && *format != "toml" {
		return c.usageError(fs, "-format must be env or toml, got %q", *format)
	}
	if *id == "" {
		*id = "k" + c.now().UTC().Format("20060102")
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return c.fail("keygen", err)
	}
	// NewKeyring checks the id the way loading the configuration will.
	if _, err := creds.NewKeyring(creds.Key{ID: *id, Secret: secret[:]}); err != nil {
		return c.usageError(fs, "-id: %s", creds.Message(err))
	}
	if *format == "toml" {
		fmt.Fprintf(c.stdout, "[[mint.keys]]\nid = %q\nsecret = %q\n", *id, hex.EncodeToString(secret[:]))
	} else {
		fmt.Fprintf(c.stdout, "%s=%s:%s\n", config.EnvName("mint.keys"), *id, hex.EncodeToString(secret[:]))
	}
	return 0
}

const revokeHelp = `Revokes a credential: every credential minted with its vend id is refused
by the gateways of the catalog (catalog.dsn, DUCKICELAKE_CATALOG_DSN or
DUCKICELAKE_PG_DSN) until it expires. The revocation is a row of the
catalog's duckicelake_revocation table and a NOTIFY, so running gateways
refuse the credential (InvalidToken) as soon as the notification reaches
them.

Name the credential by -vend-id (as mint printed it) or by its session
token (TOKEN, or "-" to read it from standard input), whose vend id and
expiry are decoded. With -vend-id, the revocation lasts until -expires, or
-ttl from now, or else mint.max_ttl from now (no credential minted before
can outlive that).
`

func (c credsCommand) revoke(args []string) int {
	fs := c.flagSet("revoke", "(-vend-id ID [-expires RFC3339 | -ttl DURATION] | TOKEN|-) [flags]", revokeHelp)
	vendID := fs.String("vend-id", "", "vend id of the credential(s) to revoke")
	expires := fs.String("expires", "", "with -vend-id: when the credential expires, RFC 3339 (e.g. 2026-06-01T12:00:00Z)")
	ttl := fs.Duration("ttl", 0, "with -vend-id: revoke for this long from now")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	cfgFlags := config.AddConfigFlag(fs)
	if code, stop := c.parse(fs, args); stop {
		return code
	}
	switch {
	case *vendID == "" && fs.NArg() != 1:
		return c.usageError(fs, "name the credential: -vend-id ID or one TOKEN argument")
	case *vendID != "" && fs.NArg() > 0:
		return c.usageError(fs, "-vend-id and a TOKEN argument are exclusive")
	case *vendID == "" && (*expires != "" || *ttl != 0):
		return c.usageError(fs, "-expires and -ttl go with -vend-id; a token carries its expiry")
	case *expires != "" && *ttl != 0:
		return c.usageError(fs, "-expires and -ttl are exclusive")
	case *ttl < 0:
		return c.usageError(fs, "-ttl must be positive, got %s", *ttl)
	}
	cfg, err := cfgFlags.Load(c.lookupEnv)
	if err != nil {
		return c.fail("revoke", err)
	}
	now := c.now()
	id, until, how := *vendID, time.Time{}, ""
	switch {
	case id == "":
		_, claims, _, err := c.readToken(fs.Arg(0))
		if err != nil {
			return c.fail("revoke", err)
		}
		if claims.VendID == "" {
			return c.fail("revoke", errors.New("the token has no vend id"))
		}
		id, until, how = claims.VendID, claims.Expiry, "the token's expiry"
		if !until.After(now) {
			fmt.Fprintf(c.stdout, "vend id %s expired at %s: gateways refuse it already; nothing revoked\n", id, until.Format(time.RFC3339))
			return 0
		}
	case *expires != "":
		if until, err = time.Parse(time.RFC3339, *expires); err != nil {
			return c.usageError(fs, "-expires: %v", err)
		}
		how = "-expires"
	case *ttl > 0:
		until, how = now.Add(*ttl), "-ttl"
	default:
		until, how = now.Add(cfg.Mint.MaxTTL), "mint.max_ttl"
	}
	if cfg.Catalog.DSN == "" {
		return c.fail("revoke", fmt.Errorf("no catalog configured: revocations live in the catalog's Postgres; %w", cfg.Require("catalog.dsn")))
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	pcfg, err := pgxpool.ParseConfig(string(cfg.Catalog.DSN))
	if err != nil {
		return c.fail("revoke", &config.Error{Key: "catalog.dsn", Msg: err.Error()})
	}
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		pcfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "duckicelake creds revoke"
	where := describeDB(pcfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return c.fail("revoke", fmt.Errorf("catalog database %s: %w", where, err))
	}
	defer pool.Close()
	// Open would retry a missing table until the timeout.
	var present bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`,
		pgx.Identifier{cfg.Catalog.Schema, "duckicelake_revocation"}.Sanitize()).Scan(&present); err != nil {
		return c.fail("revoke", fmt.Errorf("catalog database %s: %w", where, err))
	}
	if !present {
		return c.fail("revoke", fmt.Errorf("catalog database %s has no revocation table in schema %q: run `duckicelake init --schema %s` first",
			where, cfg.Catalog.Schema, cfg.Catalog.Schema))
	}
	store, err := revoke.Open(ctx, pool, revoke.Options{Schema: cfg.Catalog.Schema})
	if err != nil {
		return c.fail("revoke", fmt.Errorf("catalog database %s: %w", where, err))
	}
	defer store.Close()
	if err := store.Revoke(ctx, id, until); err != nil {
		return c.fail("revoke", fmt.Errorf("catalog database %s: %w", where, err))
	}
	fmt.Fprintf(c.stdout, "revoked vend id %s until %s (%s) in schema %q of %s\n", id, until.UTC().Format(time.RFC3339), how, cfg.Catalog.Schema, where)
	fmt.Fprintln(c.stdout, "running gateways of this catalog refuse it as soon as the notification reaches them")
	return 0
}
