package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

const initUsage = `usage: duckicelake init [-config file] [-dsn DSN] [-data-path s3://bucket/prefix/] [-schema public]

Creates a DuckLake 1.0 catalog in Postgres exactly as DuckDB 1.5.x's ducklake
extension would, so DuckDB can ATTACH 'ducklake:postgres:<dsn>' unchanged, and
applies duckicelake's sidecar migrations. Rerunning it changes nothing; a
catalog of another DuckLake version is refused.

The database, data path and schema are serve's catalog.dsn, catalog.data_path
and catalog.schema, read like serve reads them (config file, DUCKICELAKE_*
environment: DUCKICELAKE_CATALOG_DSN or DUCKICELAKE_PG_DSN,
DUCKICELAKE_CATALOG_DATA_PATH, DUCKICELAKE_CATALOG_SCHEMA); the flags
override them.

With the upstream configured (upstream.endpoint, upstream.access_key and
upstream.secret_key, or DUCKICELAKE_UPSTREAM_*), init first makes sure the
data path's bucket exists, creating it with those root keys if not, and that
the data path is writable, by putting and deleting the object
<data path>.duckicelake-init-check. It does so before touching Postgres, so
a wrong endpoint or bad keys change nothing. Without the upstream it skips
the bucket check.

flags:
`

// runInit implements `duckicelake init`: create the DuckLake catalog in
// Postgres (as DuckDB 1.5.x would) and bring duckicelake's sidecar tables up
// to date. Safe to rerun and to run concurrently.
func runInit(args []string, stdout, stderr io.Writer) int {
	return withSignals(func(ctx context.Context) int {
		return initCatalogCmd(ctx, args, stdout, stderr, os.LookupEnv)
	})
}

func initCatalogCmd(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := commandFlags("init", initUsage, stderr)
	cfgFlags := config.AddConfigFlag(fs)
	dsn := fs.String("dsn", "", "Postgres DSN of the catalog database (default catalog.dsn)")
	dataPath := fs.String("data-path", "", "where DuckDB writes Parquet files, e.g. s3://lake/data/ (required for a new catalog; default catalog.data_path)")
	schema := fs.String("schema", "", "Postgres schema of the catalog tables, DuckDB's METADATA_SCHEMA (default catalog.schema, public)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if code, done := parseCommand(fs, args); done {
		return code
	}
	if strayArgument(fs, stderr) {
		fs.Usage()
		return 2
	}
	cfg, ok := commandConfig(fs, cfgFlags, lookupEnv, stderr)
	if !ok {
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["dsn"] {
		*dsn = string(cfg.Catalog.DSN)
	}
	if !set["data-path"] {
		*dataPath = cfg.Catalog.DataPath
	}
	if !set["schema"] {
		*schema = cfg.Catalog.Schema
	}
	if *dsn == "" {
		fmt.Fprintln(stderr, "duckicelake init: no database: pass -dsn, set DUCKICELAKE_CATALOG_DSN or DUCKICELAKE_PG_DSN, "+
			"or catalog.dsn in the config file (scripts/pg.sh start prints one for a private cluster)")
		return 2
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake init: connect: %v\n", err)
		return 1
	}
	defer conn.Close(context.Background())

	if err := checkBucket(ctx, &cfg.Upstream, conn, *dataPath, *schema, stdout); err != nil {
		fmt.Fprintf(stderr, "duckicelake init: %v\n", err)
		return 1
	}
	res, err := ducklake.Init(ctx, conn, ducklake.InitOptions{
		DataPath:  *dataPath,
		Schema:    *schema,
		CreatedBy: "duckicelake " + version,
	})
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake: %v\n", err) // already says "ducklake init: …"
		return 1
	}
	if res.Created {
		fmt.Fprintf(stdout, "created DuckLake %s catalog in schema %q, data path %s\n", ducklake.FormatVersion, *schema, res.DataPath)
	} else {
		fmt.Fprintf(stdout, "DuckLake %s catalog in schema %q exists, data path %s\n", ducklake.FormatVersion, *schema, res.DataPath)
	}
	if len(res.Migrations) > 0 {
		fmt.Fprintf(stdout, "applied sidecar migrations %v\n", res.Migrations)
	} else {
		fmt.Fprintf(stdout, "sidecar tables up to date (version %d)\n", ducklake.SidecarVersion())
	}
	return 0
}

// initCheckObject is the marker init puts and deletes under the data path
// to prove the root keys can write there.
const initCheckObject = ".duckicelake-init-check"

// checkBucket makes sure the data path's bucket exists on the upstream
// (creating it with the root keys) and that the data path is writable. It
// runs before the catalog is created so a bad S3 configuration leaves
// Postgres untouched. dataPath empty means the existing catalog's.
func checkBucket(ctx context.Context, u *config.Upstream, conn *pgx.Conn, dataPath, schema string, stdout io.Writer) error {
	if u.Endpoint == "" || u.AccessKey == "" || u.SecretKey == "" {
		fmt.Fprintln(stdout, "skipped the bucket check: no upstream configured "+
			"(upstream.endpoint, upstream.access_key, upstream.secret_key; DUCKICELAKE_UPSTREAM_*)")
		return nil
	}
	if dataPath == "" {
		md, err := ducklake.NewReader(conn, schema).Metadata(ctx)
		if err != nil {
			// No catalog yet: ducklake.Init says that a data path is needed.
			fmt.Fprintln(stdout, "skipped the bucket check: no data path")
			return nil
		}
		dataPath = md.DataPath
	}
	marker := withSlash(dataPath) + initCheckObject
	loc, err := objstore.Parse(marker)
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "skipped the bucket check: data path %s is not an S3 location the catalog takes (%v)\n", dataPath, err)
		return nil
	case loc.Scheme() != objstore.SchemeS3:
		fmt.Fprintf(stdout, "skipped the bucket check: data path %s is not on S3\n", dataPath)
		return nil
	}
	bucket, key := loc.Bucket(), loc.Key()
	c := rootS3Client(u)
	at := fmt.Sprintf("upstream %s", u.Endpoint)

	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	switch code, status := s3Error(err); {
	case err == nil:
		fmt.Fprintf(stdout, "bucket %q exists on %s\n", bucket, at)
	case status == 404 || code == "NotFound" || code == "NoSuchBucket":
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		switch code, _ := s3Error(err); {
		case err == nil:
			fmt.Fprintf(stdout, "created bucket %q on %s\n", bucket, at)
		case code == "BucketAlreadyOwnedByYou": // created concurrently
			fmt.Fprintf(stdout, "bucket %q exists on %s\n", bucket, at)
		case code == "BucketAlreadyExists":
			return fmt.Errorf("bucket %q on %s belongs to another account: choose another bucket in catalog.data_path", bucket, at)
		default:
			return explainS3(fmt.Sprintf("create bucket %q on %s", bucket, at), err, u)
		}
	case status == 403:
		// HEAD answers carry no error code; ask again with a GET to tell
		// bad keys from a bucket these keys may not use.
		_, lerr := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), MaxKeys: aws.Int32(1)})
		if lerr == nil {
			lerr = err
		}
		return explainS3(fmt.Sprintf("bucket %q on %s", bucket, at), lerr, u)
	default:
		return explainS3(fmt.Sprintf("bucket %q on %s", bucket, at), err, u)
	}

	what := fmt.Sprintf("write s3://%s/%s on %s", bucket, key, at)
	// Written as the catalog writes its own files.
	if err := objstore.NewS3(c).Put(ctx, loc, []byte("duckicelake init\n")); err != nil {
		return explainS3(what, err, u)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		return explainS3("delete s3://"+bucket+"/"+key+" on "+at, err, u)
	}
	fmt.Fprintf(stdout, "data path %s is writable (put and deleted %s)\n", withSlash(dataPath), marker)
	return nil
}

// s3Error returns the S3 error code and HTTP status of err, if it has them.
func s3Error(err error) (code string, status int) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}

// explainS3 wraps err from the upstream with what to do about it.
func explainS3(what string, err error, u *config.Upstream) error {
	code, status := s3Error(err)
	var hint string
	switch {
	case code == "InvalidAccessKeyId":
		hint = fmt.Sprintf("the upstream does not know access key %q: check upstream.access_key", u.AccessKey)
	case code == "SignatureDoesNotMatch":
		hint = "the upstream rejected the signature: check upstream.secret_key (and upstream.region)"
	case code == "AuthorizationHeaderMalformed":
		hint = fmt.Sprintf("the upstream rejected the request's scope: check upstream.region (%q)", u.Region)
	case status == 403 || code == "AccessDenied":
		hint = "access denied: the bucket belongs to someone else or upstream.access_key may not use it; " +
			"choose another bucket in catalog.data_path or grant these keys access"
	case status == 0:
		hint = "cannot reach the upstream: check upstream.endpoint (and upstream.path_style) and that the S3 server runs"
	default:
		hint = "check the upstream's logs"
	}
	return fmt.Errorf("%s: %w; %s", what, err, hint)
}
