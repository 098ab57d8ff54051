package catalog_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// pyiceberg runs rest_pyiceberg.py and decodes its report into out.
func pyiceberg(t *testing.T, out any, args ...string) {
	t.Helper()
	cmd := exec.Command(venvPython(t), append([]string{filepath.Join(moduleRoot(t), "test", "catalog", "rest_pyiceberg.py")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rest_pyiceberg.py %s: %v\n%s", args[0], err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("rest_pyiceberg.py %s: bad report: %v\n%s", args[0], err, stdout.String())
	}
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
	check("multi-level namespace", got.MultiLevel == "BadRequestError", got.MultiLevel)
	check("namespaces after", slices.Equal(got.NamespacesAfter, []string{"main", "sales"}), got.NamespacesAfter)

	// DuckDB agrees.
	if tables := flat(env.duck("SELECT table_name FROM duckdb_tables() WHERE database_name = 'l' ORDER BY 1")[0]); !slices.Equal(tables, []string{"items"}) {
		t.Errorf("DuckDB tables after PyIceberg's rename and drop: %v", tables)
	}
}
