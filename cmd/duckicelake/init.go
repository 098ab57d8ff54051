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

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/jackc/pgx/v5"
)

// runInit implements `duckicelake init`: create the DuckLake catalog in
// Postgres (as DuckDB 1.5.x would) and bring duckicelake's sidecar tables up
// to date. Safe to rerun and to run concurrently.
func runInit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("dsn", os.Getenv("DUCKICELAKE_PG_DSN"), "Postgres DSN of the catalog database (default $DUCKICELAKE_PG_DSN)")
	dataPath := fs.String("data-path", "", "where DuckDB writes Parquet files, e.g. s3://lake/data/ (required for a new catalog)")
	schema := fs.String("schema", ducklake.DefaultSchema, "Postgres schema of the catalog tables (DuckDB's METADATA_SCHEMA)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: duckicelake init [--dsn DSN] [--data-path s3://bucket/prefix/] [--schema public]

Creates a DuckLake 1.0 catalog in Postgres exactly as DuckDB 1.5.x's ducklake
extension would, so DuckDB can ATTACH 'ducklake:postgres:<dsn>' unchanged, and
applies duckicelake's sidecar migrations. Rerunning it changes nothing; a
catalog of another DuckLake version is refused.

`)
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
	if *dsn == "" {
		fmt.Fprintln(stderr, "duckicelake init: no database: pass --dsn or set DUCKICELAKE_PG_DSN (scripts/pg.sh start prints one)")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
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
