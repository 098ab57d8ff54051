package testsupport

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Python returns the interpreter of the pinned test venv: $DUCKICELAKE_PYTHON
// (scripts/test.sh sets it), else <repo>/.venv/bin/python. Without one the
// test is [Missing]: scripts/venv.sh makes the venv.
func Python(t testing.TB) string {
	t.Helper()
	p := os.Getenv("DUCKICELAKE_PYTHON")
	if p == "" {
		p = Path(t, ".venv", "bin", "python")
	}
	if _, err := os.Stat(p); err != nil {
		Missing(t, "no Python venv at %s (scripts/venv.sh makes it, or set DUCKICELAKE_PYTHON)", p)
	}
	return p
}

// PythonCommand is the venv's Python running script (a path relative to
// the package under test, or absolute) with args, for a caller that sets
// the command's environment before [RunJSON] runs it.
func PythonCommand(t testing.TB, script string, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(Python(t), append([]string{script}, args...)...)
}

// RunPython runs script with the venv's Python and decodes the JSON report
// it prints into out; see [RunJSON].
func RunPython(t testing.TB, out any, script string, args ...string) {
	t.Helper()
	RunJSON(t, PythonCommand(t, script, args...), out)
}

// RunJSON runs cmd and decodes the JSON it prints on stdout into out (with
// out nil, stdout is not read). A command that fails, or prints something
// that is not JSON, fails t with its stderr.
func RunJSON(t testing.TB, cmd *exec.Cmd, out any) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s%s", describe(cmd), err, stderr.String(), stdout.String())
	}
	if out == nil {
		return
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("%s: bad report: %v\n%s\n%s", describe(cmd), err, stdout.String(), stderr.String())
	}
}

// describe names a command in a failure message: the script (or program)
// and its arguments, each cut short.
func describe(cmd *exec.Cmd) string {
	args := cmd.Args
	name := filepath.Base(cmd.Path)
	if len(args) > 1 && strings.HasSuffix(args[1], ".py") {
		name, args = filepath.Base(args[1]), args[1:]
	}
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args[1:] {
		if len(a) > 80 {
			a = a[:77] + "..."
		}
		b.WriteString(" ")
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			a = strconv.Quote(a)
		}
		b.WriteString(a)
	}
	return b.String()
}

// DuckDB runs SQL with the venv's DuckDB attached to the DuckLake catalog
// in the Postgres database dsn, with data path dataPath
// (test/catalog/rest_duckdb.py: args are statements, or --loop N and
// statements), and decodes its report into out: one list of rows per
// statement.
func DuckDB(t testing.TB, out any, dsn, dataPath string, args ...string) {
	t.Helper()
	RunPython(t, out, Path(t, "test", "catalog", "rest_duckdb.py"), append([]string{dsn, dataPath}, args...)...)
}
