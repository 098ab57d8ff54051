// Command duckicelake is the governed lakehouse gateway: an S3 proxy that
// verifies credentials it minted and an Iceberg REST catalog on DuckLake.
//
// Usage:
//
//	duckicelake <command> [flags]
//
// Commands: version (more arrive with the gateway and catalog).
package main

import (
	"fmt"
	"io"
	"os"
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
  creds     mint, inspect and generate keys for gateway credentials
  init      create the DuckLake catalog in Postgres and apply sidecar migrations
  serve     run the S3 gateway (and the admin endpoints)
  version   print the version
  help      show this help
`)
}
