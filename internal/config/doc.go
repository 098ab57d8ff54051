// Package config loads duckicelake's configuration from a TOML file,
// DUCKICELAKE_* environment variables and command-line flags.
//
// # Precedence
//
// Each setting is taken from the first of these that sets it:
//
//  1. a flag, e.g. -gateway.listen 0.0.0.0:9000
//  2. an environment variable, e.g. DUCKICELAKE_GATEWAY_LISTEN=0.0.0.0:9000
//     (an empty variable counts as unset)
//  3. the config file named by -config or DUCKICELAKE_CONFIG (none by
//     default: no file is read implicitly)
//  4. the built-in default (see Default)
//
// A setting's flag is its TOML key with the table, "gateway.listen"; its
// environment variable is DUCKICELAKE_ followed by the key in upper case
// with '.' as '_'. Exceptions: secrets (upstream.secret_key,
// root.secret_key, mint.keys, catalog.dsn, oauth.clients, oauth.token_key)
// have no flag, since command lines are visible to every user of the
// machine; mint.keys, an array of tables in the file, is
// DUCKICELAKE_MINT_KEYS=id:secret[,id:secret…] in the environment, the first
// key being the active one; and catalog.dsn is also read from
// DUCKICELAKE_PG_DSN (below DUCKICELAKE_CATALOG_DSN), the variable
// scripts/pg.sh and `duckicelake init` use. List settings are comma-separated in
// the environment and in flags. Durations are Go durations ("90s", "12h"),
// sizes are bytes with an optional KiB, MiB or GiB suffix.
//
// duckicelake.example.toml at the repository root lists every setting with
// its default.
//
// # Validation
//
// Load rejects unknown keys in the file and every invalid value, naming the
// key: config: upstream.endpoint: must be an http(s) URL, got "foo".
// Settings a command cannot run without (the upstream for serve, minting
// keys for creds mint) are checked by the command with Config.Require, whose
// message says where to set them.
package config
