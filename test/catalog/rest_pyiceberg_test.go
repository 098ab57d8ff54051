package catalog_test

import (
	"slices"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/rest"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// pyiceberg runs rest_pyiceberg.py and decodes its report into out.
func pyiceberg(t *testing.T, out any, args ...string) {
	t.Helper()
	testsupport.RunPython(t, out, "rest_pyiceberg.py", args...)
}

// TestPyIcebergCatalogOperations: PyIceberg 0.12's RestCatalog, logging in
// with client credentials, runs every catalog operation this server
// supports and gets the exceptions it expects for bad input.
func TestPyIcebergCatalogOperations(t *testing.T) {
	env := newRestEnv(t)
	env.duck("CREATE SCHEMA l.sales", "CREATE TABLE l.sales.orders (id INTEGER)", "CREATE TABLE l.sales.items (id INTEGER)")

	var got struct {
		Namespaces       []string          `json:"namespaces"`
		Tables           []string          `json:"tables"`
		Properties       map[string]string `json:"properties"`
		NamespaceExists  []bool            `json:"namespace_exists"`
		TableExists      []bool            `json:"table_exists"`
		CreateAgain      string            `json:"create_again"`
		Update           map[string][]string
		PyNSProperties   map[string]string `json:"py_ns_properties"`
		AfterRename      []string          `json:"after_rename"`
		RenameMissing    string            `json:"rename_missing"`
		RenameOnto       string            `json:"rename_onto_existing"`
		DropNonEmpty     string            `json:"drop_non_empty_namespace"`
		AfterDrop        []string          `json:"after_drop"`
		DropMissingTable string            `json:"drop_missing_table"`
		ListMissingNS    string            `json:"list_missing_namespace"`
		LoadMissingTable string            `json:"load_missing_table"`
		MultiLevel       string            `json:"multi_level"`
		NamespacesAfter  []string          `json:"namespaces_after"`
	}
	pyiceberg(t, &got, "catalog", env.url, "admin:admin-pw", "sales", "orders")

	check := func(name string, ok bool, v any) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %v", name, v)
		}
	}
	check("namespaces", slices.Equal(got.Namespaces, []string{"main", "sales"}), got.Namespaces)
	check("tables", slices.Equal(got.Tables, []string{"sales.items", "sales.orders"}), got.Tables)
	check("properties", got.Properties["location"] == "s3://lake/data/sales/", got.Properties)
	check("namespace_exists", slices.Equal(got.NamespaceExists, []bool{true, false}), got.NamespaceExists)
	check("table_exists", slices.Equal(got.TableExists, []bool{true, false}), got.TableExists)
	check("create again", got.CreateAgain == "NamespaceAlreadyExistsError", got.CreateAgain)
	check("update", slices.Equal(got.Update["updated"], []string{"k"}) && slices.Equal(got.Update["removed"], []string{"owner"}) &&
		slices.Equal(got.Update["missing"], []string{"missing"}), got.Update)
	check("py_ns properties", got.PyNSProperties["k"] == "v" && got.PyNSProperties["owner"] == "" && got.PyNSProperties["location"] == "s3://lake/data/py_ns/", got.PyNSProperties)
	check("after rename", slices.Equal(got.AfterRename, []string{"sales.items", "sales.orders_renamed"}), got.AfterRename)
	check("rename missing", got.RenameMissing == "NoSuchTableError", got.RenameMissing)
	check("rename onto existing", got.RenameOnto == "TableAlreadyExistsError", got.RenameOnto)
	check("drop non-empty namespace", got.DropNonEmpty == "NamespaceNotEmptyError", got.DropNonEmpty)
	check("after drop", slices.Equal(got.AfterDrop, []string{"sales.items"}), got.AfterDrop)
	check("drop missing table", got.DropMissingTable == "NoSuchTableError", got.DropMissingTable)
	check("list missing namespace", got.ListMissingNS == "NoSuchNamespaceError", got.ListMissingNS)
	check("load missing table", got.LoadMissingTable == "NoSuchTableError", got.LoadMissingTable)
	// No namespace has two levels here, so a.b does not exist.
	check("multi-level namespace", got.MultiLevel == "NoSuchNamespaceError", got.MultiLevel)
	check("namespaces after", slices.Equal(got.NamespacesAfter, []string{"main", "sales"}), got.NamespacesAfter)

	// DuckDB agrees.
	if tables := flat(env.duck("SELECT table_name FROM duckdb_tables() WHERE database_name = 'l' ORDER BY 1")[0]); !slices.Equal(tables, []string{"items"}) {
		t.Errorf("DuckDB tables after PyIceberg's rename and drop: %v", tables)
	}
}

// TestPyIcebergReadsDuckDBTables is the read path end to end: DuckDB writes
// through the gateway (with a minted credential) into the DuckLake catalog
// over several snapshots — inserts into Parquet and inlined, update,
// delete, a partitioned table — and PyIceberg, logged in to the REST
// catalog, loads each table with vended credentials and reads every
// snapshot of its history through the gateway with exactly the rows DuckDB
// reads at that snapshot. DuckDB's iceberg extension reads the current rows
// through the same catalog.
func TestPyIcebergReadsDuckDBTables(t *testing.T) {
	st := requireStack(t, true)
	ns := "e" + randomHex(4)
	env := newRestEnv(t, withS3Materializer(st), withOwnGateway(t, st, false), func(c *rest.Config, _ *rest.Deps) {
		c.Clients = append(slices.Clone(c.Clients), rest.Client{ID: "reader-" + ns, Secret: "pw", Scopes: []string{"ns:" + ns + ":r"}})
	})

	duckDBThroughGateway(t, env, st, "duckdb-writer", ns, creds.Read|creds.Write|creds.List)
	q := "l." + ns
	env.duck(
		"CREATE SCHEMA "+q,
		"CREATE TABLE "+q+".t (id INTEGER, name VARCHAR, amount DOUBLE)",
		"INSERT INTO "+q+".t SELECT i, 'n' || i, i * 1.5 FROM range(2000) r(i)",
		"INSERT INTO "+q+".t VALUES (5000, 'small', 1.0), (5001, NULL, NULL)",
		"UPDATE "+q+".t SET name = 'updated' WHERE id % 500 = 0",
		"DELETE FROM "+q+".t WHERE id BETWEEN 100 AND 199 OR id = 5000",
		"INSERT INTO "+q+".t SELECT i, 'late', 0 FROM range(3000, 3100) r(i)",
		"CREATE TABLE "+q+".p (id INTEGER, cat VARCHAR)",
		"ALTER TABLE "+q+".p SET PARTITIONED BY (cat)",
		"INSERT INTO "+q+".p SELECT i, 'c' || (i % 3) FROM range(300) r(i)",
		"DELETE FROM "+q+".p WHERE cat = 'c1' AND id < 100",
	)

	for _, table := range []string{"t", "p"} {
		t.Run(table, func(t *testing.T) {
			var truth, got struct {
				Current   []string            `json:"current"`
				Snapshots map[string][]string `json:"snapshots"`
				Endpoint  string              `json:"endpoint"`
				Vended    bool                `json:"vended"`
				Location  string              `json:"metadata_location"`
			}
			pyiceberg(t, &truth, "truth", env.dsn, restDataPath, ns, table)
			pyiceberg(t, &got, "read", env.url, "reader-"+ns+":pw", ns, table)
			if !got.Vended || got.Endpoint != env.gateway {
				t.Errorf("PyIceberg's FileIO: vended=%v endpoint=%s", got.Vended, got.Endpoint)
			}
			if len(got.Current) == 0 || !slices.Equal(got.Current, truth.Current) {
				t.Errorf("current rows: PyIceberg read %d, DuckDB %d", len(got.Current), len(truth.Current))
			}
			if len(got.Snapshots) == 0 {
				t.Fatal("no Iceberg snapshots")
			}
			for id, rows := range got.Snapshots {
				want, ok := truth.Snapshots[id]
				if !ok {
					t.Errorf("Iceberg snapshot %s is no DuckLake snapshot of the table", id)
					continue
				}
				if !slices.Equal(rows, want) {
					t.Errorf("snapshot %s: PyIceberg read %d rows, DuckDB %d", id, len(rows), len(want))
				}
			}
			t.Logf("%s: %d Iceberg snapshots, %d current rows, %s", table, len(got.Snapshots), len(got.Current), got.Location)

			var ice struct {
				Current []string `json:"current"`
			}
			pyiceberg(t, &ice, "duckdb-iceberg", env.url, "reader-"+ns+":pw", ns, table)
			if !slices.Equal(ice.Current, truth.Current) {
				t.Errorf("DuckDB iceberg read %d rows, DuckDB ducklake %d", len(ice.Current), len(truth.Current))
			}
		})
	}
}
