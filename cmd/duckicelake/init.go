package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/config"
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

flags:
`

// runInit implements `duckicelake init`: create the DuckLake catalog in
// Postgres (as DuckDB 1.5.x would) and bring duckicelake's sidecar tables up
// to date. Safe to rerun and to run concurrently.
func runInit(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return initCatalogCmd(ctx, args, stdout, stderr, os.LookupEnv)
}

func initCatalogCmd(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgFlags := config.AddConfigFlag(fs)
	dsn := fs.String("dsn", "", "Postgres DSN of the catalog database (default catalog.dsn)")
	dataPath := fs.String("data-path", "", "where DuckDB writes Parquet files, e.g. s3://lake/data/ (required for a new catalog; default catalog.data_path)")
	schema := fs.String("schema", "", "Postgres schema of the catalog tables, DuckDB's METADATA_SCHEMA (default catalog.schema, public)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), initUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "duckicelake init: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	cfg, err := cfgFlags.Load(lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "duckicelake init: %v\n", err)
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
