package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/pgtest"
)

// TestInitReadsConfig: init takes catalog.dsn, catalog.data_path and
// catalog.schema from the config file and the environment as serve does,
// and its flags override them.
func TestInitReadsConfig(t *testing.T) {
	dsn := pgtest.Database(t)
	file := filepath.Join(t.TempDir(), "duckicelake.toml")
	toml := "[catalog]\ndsn = " + strconv.Quote(dsn) + "\ndata_path = \"s3://lake/data/\"\nschema = \"fromfile\"\n"
	if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	schemaExists := func(schema string) bool {
		t.Helper()
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var ok bool
		if err := conn.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`,
			pgx.Identifier{schema, "ducklake_metadata"}.Sanitize()).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		out    string // on stdout (code 0) or stderr
		schema string // the schema that must hold a catalog afterwards
	}{
		{"config file", nil, []string{"-config", file}, 0, `created DuckLake 1.0 catalog in schema "fromfile", data path s3://lake/data/`, "fromfile"},
		{"again", nil, []string{"-config", file}, 0, `catalog in schema "fromfile" exists`, "fromfile"},
		{"env over file", map[string]string{"DUCKICELAKE_CONFIG": file, "DUCKICELAKE_CATALOG_SCHEMA": "fromenv"}, nil, 0,
			`created DuckLake 1.0 catalog in schema "fromenv"`, "fromenv"},
		{"flags over env", map[string]string{"DUCKICELAKE_CONFIG": file, "DUCKICELAKE_CATALOG_SCHEMA": "fromenv"},
			[]string{"-schema", "fromflag", "-data-path", "s3://other/x/"}, 0, `created DuckLake 1.0 catalog in schema "fromflag", data path s3://other/x/`, "fromflag"},
		{"data path differs", nil, []string{"-config", file, "-schema", "fromflag"}, 1, `not "s3://lake/data/"`, "fromflag"},
		{"pg dsn env", map[string]string{"DUCKICELAKE_PG_DSN": dsn, "DUCKICELAKE_CATALOG_DATA_PATH": "s3://lake/pg/"}, nil, 0,
			`created DuckLake 1.0 catalog in schema "public", data path s3://lake/pg/`, "public"},
		{"no database", nil, nil, 2, "no database: pass -dsn, set DUCKICELAKE_CATALOG_DSN or DUCKICELAKE_PG_DSN, or catalog.dsn in the config file", ""},
		{"bad config value", map[string]string{"DUCKICELAKE_CATALOG_DATA_PATH": "/local/dir"}, []string{"-dsn", dsn}, 2, "catalog.data_path", ""},
		{"argument", nil, []string{"extra"}, 2, `unexpected argument "extra"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr testsupport.SyncBuffer
			code := initCatalogCmd(context.Background(), tc.args, &stdout, &stderr, testsupport.LookupEnv(tc.env))
			got := stdout.String()
			if tc.code != 0 {
				got = stderr.String()
			}
			if code != tc.code || !strings.Contains(got, tc.out) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d with %q", code, stdout.String(), stderr.String(), tc.code, tc.out)
			}
			if tc.schema != "" && !schemaExists(tc.schema) {
				t.Errorf("no catalog in schema %s", tc.schema)
			}
		})
	}
}
