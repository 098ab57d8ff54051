package testsupport

import (
	"os"
	"strings"
	"testing"
)

// Stack is the throwaway stack scripts/test.sh starts, as the environment
// it exports describes it (the variables are listed at the top of
// scripts/test.sh). A field is empty when that part is not up; a test asks
// for the parts it needs with [RequireStack].
type Stack struct {
	S3       S3Backend
	Gateway  Gateway
	Postgres string // DUCKICELAKE_TEST_PG_DSN: the private cluster; tests make their own databases in it (pgtest)
	Catalog  Catalog
	Dir      string // DUCKICELAKE_TEST_DIR: scratch directory, removed afterwards
}

// S3Backend is the S3 backend (versitygw), reached directly with its root
// keys.
type S3Backend struct {
	Endpoint  string // DUCKICELAKE_TEST_S3_ENDPOINT: http://127.0.0.1:PORT
	AccessKey string // DUCKICELAKE_TEST_S3_ACCESS_KEY
	SecretKey string // DUCKICELAKE_TEST_S3_SECRET_KEY
	Region    string // DUCKICELAKE_TEST_S3_REGION; us-east-1 when unset
	Root      string // DUCKICELAKE_TEST_S3_ROOT: its posix directory (bucket = top directory)
	Bucket    string // DUCKICELAKE_TEST_BUCKET
}

// Gateway is `duckicelake serve` running in front of the backend.
type Gateway struct {
	URL           string // DUCKICELAKE_TEST_GATEWAY: http://127.0.0.1:PORT
	Admin         string // DUCKICELAKE_TEST_ADMIN: admin and catalog listener (/readyz, /metrics)
	Config        string // DUCKICELAKE_TEST_CONFIG: the duckicelake.toml it runs with
	MintKeys      string // DUCKICELAKE_TEST_MINT_KEYS: the minting key file, "id:hex secret"
	RootAccessKey string // DUCKICELAKE_TEST_ROOT_ACCESS_KEY: the operator root credential
	RootSecretKey string // DUCKICELAKE_TEST_ROOT_SECRET_KEY
	Bin           string // DUCKICELAKE_BIN: the binary it runs (`creds mint --config`)
}

// Catalog is the Iceberg REST catalog the gateway serves, on the stack's
// DuckLake catalog database.
type Catalog struct {
	URL        string // DUCKICELAKE_TEST_CATALOG_URL: base URL, without /v1; warehouse "lake"
	Credential string // DUCKICELAKE_TEST_CATALOG_CREDENTIAL: OAuth2 client "id:secret" with every scope
	DSN        string // DUCKICELAKE_TEST_CATALOG_DSN: libpq key=value
	DataPath   string // DUCKICELAKE_TEST_DATA_PATH: s3://lake/data/
}

// Part is a part of the stack a test may require.
type Part int

const (
	S3Part       Part = iota // the S3 backend
	GatewayPart              // the gateway (and the binary it runs)
	PostgresPart             // the Postgres cluster
	CatalogPart              // the gateway's Iceberg REST catalog
)

// vars are the variables that must be set for the part to be up.
func (p Part) vars() []string {
	switch p {
	case S3Part:
		return []string{"DUCKICELAKE_TEST_S3_ENDPOINT", "DUCKICELAKE_TEST_S3_ACCESS_KEY", "DUCKICELAKE_TEST_S3_SECRET_KEY", "DUCKICELAKE_TEST_BUCKET"}
	case GatewayPart:
		return []string{"DUCKICELAKE_TEST_GATEWAY", "DUCKICELAKE_TEST_ADMIN", "DUCKICELAKE_TEST_CONFIG", "DUCKICELAKE_TEST_MINT_KEYS",
			"DUCKICELAKE_TEST_ROOT_ACCESS_KEY", "DUCKICELAKE_TEST_ROOT_SECRET_KEY", "DUCKICELAKE_BIN"}
	case PostgresPart:
		return []string{"DUCKICELAKE_TEST_PG_DSN"}
	case CatalogPart:
		return []string{"DUCKICELAKE_TEST_CATALOG_URL", "DUCKICELAKE_TEST_CATALOG_CREDENTIAL", "DUCKICELAKE_TEST_CATALOG_DSN", "DUCKICELAKE_TEST_DATA_PATH"}
	}
	panic("testsupport: unknown stack part")
}

// LoadStack reads the stack's variables; it requires nothing.
func LoadStack() Stack {
	s := Stack{
		S3: S3Backend{
			Endpoint:  os.Getenv("DUCKICELAKE_TEST_S3_ENDPOINT"),
			AccessKey: os.Getenv("DUCKICELAKE_TEST_S3_ACCESS_KEY"),
			SecretKey: os.Getenv("DUCKICELAKE_TEST_S3_SECRET_KEY"),
			Region:    os.Getenv("DUCKICELAKE_TEST_S3_REGION"),
			Root:      os.Getenv("DUCKICELAKE_TEST_S3_ROOT"),
			Bucket:    os.Getenv("DUCKICELAKE_TEST_BUCKET"),
		},
		Gateway: Gateway{
			URL:           os.Getenv("DUCKICELAKE_TEST_GATEWAY"),
			Admin:         os.Getenv("DUCKICELAKE_TEST_ADMIN"),
			Config:        os.Getenv("DUCKICELAKE_TEST_CONFIG"),
			MintKeys:      os.Getenv("DUCKICELAKE_TEST_MINT_KEYS"),
			RootAccessKey: os.Getenv("DUCKICELAKE_TEST_ROOT_ACCESS_KEY"),
			RootSecretKey: os.Getenv("DUCKICELAKE_TEST_ROOT_SECRET_KEY"),
			Bin:           os.Getenv("DUCKICELAKE_BIN"),
		},
		Postgres: os.Getenv("DUCKICELAKE_TEST_PG_DSN"),
		Catalog: Catalog{
			URL:        os.Getenv("DUCKICELAKE_TEST_CATALOG_URL"),
			Credential: os.Getenv("DUCKICELAKE_TEST_CATALOG_CREDENTIAL"),
			DSN:        os.Getenv("DUCKICELAKE_TEST_CATALOG_DSN"),
			DataPath:   os.Getenv("DUCKICELAKE_TEST_DATA_PATH"),
		},
		Dir: os.Getenv("DUCKICELAKE_TEST_DIR"),
	}
	if s.S3.Region == "" {
		s.S3.Region = "us-east-1"
	}
	return s
}

// Unset returns the variables of the parts that are not set, in order.
func Unset(parts ...Part) []string {
	var unset []string
	for _, p := range parts {
		for _, v := range p.vars() {
			if os.Getenv(v) == "" {
				unset = append(unset, v)
			}
		}
	}
	return unset
}

// RequireStack returns the stack when every part asked for is up, and
// otherwise reports the test [Missing], naming the unset variables.
func RequireStack(t testing.TB, parts ...Part) Stack {
	t.Helper()
	if unset := Unset(parts...); len(unset) > 0 {
		Missing(t, "stack not running: %s unset (make test starts it)", strings.Join(unset, ", "))
	}
	return LoadStack()
}

// MintKey reads the gateway's minting key file: its key id and secret as
// written ("id:hex secret"; creds.ParseKeySecret decodes the secret).
func (g Gateway) MintKey(t testing.TB) (id, secret string) {
	t.Helper()
	if g.MintKeys == "" {
		Missing(t, "stack not running: DUCKICELAKE_TEST_MINT_KEYS unset (make test starts it)")
	}
	b, err := os.ReadFile(g.MintKeys)
	if err != nil {
		t.Fatal(err)
	}
	id, secret, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	if !ok {
		t.Fatalf("%s: want id:secret", g.MintKeys)
	}
	return id, secret
}
