package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/admin"
	"github.com/duckicelake/duckicelake/governance/sqlcheck"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/config"
	"github.com/duckicelake/duckicelake/internal/duckenv"
)

const seedUsage = `usage: duckicelake seed [-config file] [-governed]

Loads the sample dataset into the DuckLake catalog of catalog.dsn, through
DuckLake (an embedded DuckDB 1.5.5 with the ducklake, postgres and httpfs
extensions from duckdb.extension_directory, writing Parquet to the data path
with the upstream's keys):

  analytics.customers  8 rows (id, email, country, mrr)
  analytics.orders     15 rows (id, customer_id, amount, status), in 2 snapshots

With -governed it also authors the demo mask: tag pii.email on
analytics.customers.email, masking policy mask_email (left(val, 2) || '***')
attached to the tag, bypassed by role pii_reader, which is granted to
principal alice. Rerunning changes nothing: tables that hold rows are left
alone, governance is upserted.

flags:
`

func runSeed(args []string, stdout, stderr io.Writer) int {
	return withSignals(func(ctx context.Context) int {
		return seedCmd(ctx, args, stdout, stderr, os.LookupEnv)
	})
}

func seedCmd(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := commandFlags("seed", seedUsage, stderr)
	cfgFlags := config.AddConfigFlag(fs)
	governed := fs.Bool("governed", false, "also author the demo governance (pii.email masked for everyone but pii_reader, granted to alice)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	if code, done := parseCommand(fs, args); done {
		return code
	}
	if strayArgument(fs, stderr) {
		return 2
	}
	cfg, ok := commandConfig(fs, cfgFlags, lookupEnv, stderr, "catalog.dsn", "upstream.endpoint", "upstream.access_key", "upstream.secret_key")
	if !ok {
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := seed(ctx, cfg, *governed, stdout); err != nil {
		fmt.Fprintf(stderr, "duckicelake seed: %v\n", err)
		return 1
	}
	return 0
}

// The sample: the seeds' analytics.customers and analytics.orders.
var (
	seedCustomers = `INSERT INTO lake.analytics.customers VALUES
		(1, 'alice@example.com', 'EU', 2400), (2, 'bob@personal.io', 'US', 1800),
		(3, 'carol@work.net', 'EU', 900), (4, 'dave@example.com', 'US', 3100),
		(5, 'erin@work.net', 'EU', 2600), (6, 'frank@personal.io', 'APAC', 1200),
		(7, 'grace@example.com', 'EU', 4000), (8, 'heidi@work.net', 'US', 700)`
	seedOrders = []string{
		`INSERT INTO lake.analytics.orders VALUES
		(1, 1, 120.00, 'paid'), (2, 2, 80.50, 'paid'), (3, 3, 42.00, 'refunded'), (4, 1, 310.25, 'paid'),
		(5, 4, 99.99, 'pending'), (6, 5, 15.00, 'paid'), (7, 7, 250.00, 'paid'), (8, 8, 60.00, 'paid')`,
		`INSERT INTO lake.analytics.orders VALUES
		(9, 2, 45.00, 'paid'), (10, 6, 500.00, 'paid'), (11, 7, 12.50, 'pending'), (12, 3, 88.00, 'paid'),
		(13, 5, 230.00, 'paid'), (14, 1, 19.99, 'refunded'), (15, 4, 75.00, 'paid')`,
	}
)

func seed(ctx context.Context, cfg *config.Config, governed bool, out io.Writer) error {
	pool, err := pgxpool.New(ctx, string(cfg.Catalog.DSN))
	if err != nil {
		return fmt.Errorf("catalog database: %w", err)
	}
	defer pool.Close()
	md, err := ducklake.NewReader(pool, cfg.Catalog.Schema).Metadata(ctx)
	if err != nil {
		return fmt.Errorf("read the DuckLake catalog (run duckicelake init first?): %w", err)
	}
	fmt.Fprintf(out, "seed: DuckLake catalog with data path %s\n", md.DataPath)
	db, err := duckenv.Open(ctx, duckenv.Options{
		ExtensionDirectory: cfg.DuckDB.ExtensionDirectory,
		Extensions:         []string{"httpfs", "ducklake", "postgres"},
		S3: duckenv.S3{Endpoint: cfg.Upstream.Endpoint, Region: cfg.Upstream.Region, AccessKeyID: cfg.Upstream.AccessKey,
			Secret: string(cfg.Upstream.SecretKey), PathStyle: cfg.Upstream.PathStyle},
	})
	if err != nil {
		return err
	}
	defer db.Close()
	// Parquet files rather than inlined rows: the demo shows the bytes.
	if err := duckenv.AttachDuckLake(ctx, db, "lake", string(cfg.Catalog.DSN), cfg.Catalog.Schema, md.DataPath, false,
		"DATA_INLINING_ROW_LIMIT 0"); err != nil {
		return err
	}
	for _, q := range []string{
		"CREATE SCHEMA IF NOT EXISTS lake.analytics",
		"CREATE TABLE IF NOT EXISTS lake.analytics.customers (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER)",
		"CREATE TABLE IF NOT EXISTS lake.analytics.orders (id BIGINT, customer_id BIGINT, amount DECIMAL(10,2), status VARCHAR)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if err := fillOnce(ctx, db, out, "analytics.customers", seedCustomers); err != nil {
		return err
	}
	if err := fillOnce(ctx, db, out, "analytics.orders", seedOrders...); err != nil {
		return err
	}
	if !governed {
		fmt.Fprintln(out, "seed: done")
		return nil
	}
	check, err := sqlcheck.Open()
	if err != nil {
		return err
	}
	defer check.Close()
	svc := admin.New(store.New(pool, cfg.Catalog.Schema), check)
	a := admin.Author{Principal: governance.Principal{ID: "duckicelake-seed"}}
	steps := []struct {
		what string
		do   func() error
	}{
		{"tag pii.email", func() error { return svc.PutTag(ctx, a, admin.Tag{Namespace: "pii", Name: "email"}) }},
		{"on analytics.customers.email", func() error {
			return svc.PutObjectTag(ctx, a, admin.ObjectTag{ObjectKind: "column", Schema: "analytics", Object: "customers", Column: "email",
				TagNamespace: "pii", TagName: "email"})
		}},
		{"masking policy mask_email", func() error {
			return svc.PutMaskingPolicy(ctx, a, admin.MaskingPolicy{Name: "mask_email", Signature: "(val VARCHAR)",
				Body: "left(val, 2) || '***'", UnmaskedRoles: []string{"pii_reader"}})
		}},
		{"attached to pii.email", func() error {
			return svc.PutAttachment(ctx, a, admin.Attachment{PolicyKind: "masking", PolicyName: "mask_email", TargetKind: "tag",
				TagNamespace: "pii", TagName: "email"})
		}},
		{"role pii_reader", func() error { return svc.PutRole(ctx, a, admin.Role{Name: "pii_reader"}) }},
		{"granted to alice", func() error { return svc.PutRoleGrant(ctx, a, admin.RoleGrant{Role: "pii_reader", Principal: "alice"}) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("governance: %s: %w", s.what, err)
		}
		fmt.Fprintf(out, "seed: governance: %s\n", s.what)
	}
	fmt.Fprintln(out, "seed: done (bob reads analytics.customers.email masked, alice in the clear)")
	return nil
}

// fillOnce runs inserts, one snapshot each, into a table that has no rows.
func fillOnce(ctx context.Context, db *sql.DB, out io.Writer, table string, inserts ...string) error {
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM lake."+table).Scan(&n); err != nil {
		return fmt.Errorf("count %s: %w", table, err)
	}
	if n > 0 {
		fmt.Fprintf(out, "seed: %s already holds %d rows; left alone\n", table, n)
		return nil
	}
	for i, q := range inserts {
		res, err := db.ExecContext(ctx, q)
		if err != nil {
			return fmt.Errorf("load %s: %w", table, err)
		}
		k, _ := res.RowsAffected()
		fmt.Fprintf(out, "seed: %s: %d rows (snapshot %d of %d)\n", table, k, i+1, len(inserts))
	}
	return nil
}
