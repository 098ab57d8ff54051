// Command duckicelake is the governed lakehouse gateway: an S3 proxy that
// verifies credentials it minted and an Iceberg REST catalog on DuckLake.
//
// Usage:
//
//	duckicelake <command> [flags]
//
// Commands: serve (the S3 gateway and the Iceberg REST catalog), init (the
// DuckLake catalog in Postgres), seed (the sample dataset, optionally
// governed), creds (mint, inspect, keygen, revoke) and version;
// "duckicelake help" describes them.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "duckicelake", version)
		return 0
	case "creds":
		return runCreds(args[1:], stdout, stderr)
	case "init":
		return runInit(args[1:], stdout, stderr)
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "seed":
		return runSeed(args[1:], stdout, stderr)
	case "mcp":
		return runMCP(args[1:], stdout, stderr)
	case "demo":
		return runDemo(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "duckicelake: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: duckicelake <command> [flags]

commands:
  serve     run the S3 gateway (gateway.listen) and, on catalog.listen, the admin
            endpoints (/healthz, /readyz, /metrics) and, with catalog.dsn, the
            Iceberg REST catalog (/v1/…) on the DuckLake catalog in Postgres
  init      create the DuckLake catalog in Postgres (catalog.dsn, catalog.data_path,
            catalog.schema) and apply duckicelake's sidecar migrations; idempotent
  seed      load the sample dataset (analytics.customers, analytics.orders) through
            DuckLake; -governed also authors the demo mask (bob masked, alice not)
  mcp       the governed MCP server for one agent session over stdio (agents read
            through the catalog and the gateway; /mcp on serve's admin listener
            serves it over streamable HTTP)
  demo      the seeds' 60-second walkthrough on a running stack (bob masked, alice
            clear, an agent masked over MCP, and the byte-level proof)
  creds     gateway credentials: mint, inspect (decode and verify a session token),
            keygen (a minting key), revoke (by vend id or token, in the catalog)
  version   print the version
  help      show this help

Settings come from flags, DUCKICELAKE_* environment variables and a config file
(-config or DUCKICELAKE_CONFIG; duckicelake.example.toml lists every one).
Run "duckicelake <command> -h" for a command's flags.
`)
}

// withSignals runs cmd under a context that ends on the given signals
// (os.Interrupt when none are given): what every long-running command does
// before its testable body.
func withSignals(cmd func(ctx context.Context) int, sig ...os.Signal) int {
	if len(sig) == 0 {
		sig = []os.Signal{os.Interrupt}
	}
	ctx, stop := signal.NotifyContext(context.Background(), sig...)
	defer stop()
	return cmd(ctx)
}
