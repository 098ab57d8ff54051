package sigv4interop

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/sigv4"
)

var update = flag.Bool("update", false, "rewrite testdata/captures from the live client round trips")

// opCase is one client call. Want lists the expected mode column
// (exchange.describe) of each request it makes, in order; nil skips the check.
type opCase struct {
	Name string
	Run  func(ctx context.Context) error
	Want []string
	// Refused means the client is expected to refuse the call before sending
	// anything (a documented limitation of that client, not of sigv4).
	Refused bool
	// Rejected is the code the verifier must answer a request S3 too
	// refuses; the client then fails with it.
	Rejected sigv4.ErrorCode
}

// row is one line of the interop table.
type row struct{ Client, Variant, Op, Request, Mode, Result string }

var table struct {
	sync.Mutex
	rows []row
}

// runOps runs ops in order against s and checks that every request they
// made verified with the expected payload mode.
func runOps(t *testing.T, s *captureServer, client, variant string, cr creds, ops []opCase) []*exchange {
	t.Helper()
	s.take()
	var all []*exchange
	for _, op := range ops {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := op.Run(ctx)
		cancel()
		exs := s.take()
		all = append(all, exs...)
		switch {
		case op.Refused && err == nil:
			t.Errorf("%s: expected the client to refuse, it succeeded", op.Name)
		case op.Refused && len(exs) > 0:
			t.Errorf("%s: the client refused but sent %d requests", op.Name, len(exs))
		case op.Refused:
			t.Logf("%s: refused by the client as expected: %v", op.Name, err)
			addRow(row{client, variant, op.Name, "-", "-", "client refuses: " + firstLine(err.Error())})
			continue
		case len(exs) == 0:
			t.Errorf("%s: no request reached the server (client error: %v)", op.Name, err)
		case op.Rejected != 0:
			if err == nil {
				t.Errorf("%s: the server rejected the request but the client succeeded", op.Name)
			}
			for _, e := range exs {
				if got := sigv4.CodeOf(e.Err); e.Err == nil || got != op.Rejected {
					t.Errorf("%s: %s %s: got %v, want %s", op.Name, e.Method, e.Target, e.Err, op.Rejected)
				}
				addRow(row{client, variant, op.Name, e.Method + " " + e.Target, e.describe(), "rejected as expected: " + firstLine(e.Err.Error())})
			}
			continue
		case err != nil:
			t.Errorf("%s: client error: %v", op.Name, err)
		}
		requireVerified(t, exs)
		var got []string
		for _, e := range exs {
			got = append(got, e.describe())
			addRow(row{client, variant, op.Name, e.Method + " " + e.Op, e.describe(), e.Result()})
		}
		if op.Want != nil && strings.Join(got, " | ") != strings.Join(op.Want, " | ") {
			t.Errorf("%s: payload modes\n got  %q\n want %q", op.Name, got, op.Want)
		}
	}
	requireCreds(t, all, cr)
	checkReplays(t, all)
	if *update {
		saveCaptures(t, client, all)
	}
	return all
}

func addRow(r row) {
	table.Lock()
	table.rows = append(table.rows, r)
	table.Unlock()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// checkReplays replays every verified exchange from its recorded wire
// bytes: it must verify again to the same mode and payload, and every
// one-byte mutation must fail with its code.
func checkReplays(t *testing.T, exs []*exchange) {
	t.Helper()
	for _, e := range exs {
		if e.Err != nil {
			continue
		}
		c, err := newCapture(e.Op, e.Raw)
		if err != nil {
			t.Errorf("%s %s: parsing the capture: %v", e.Method, e.Target, err)
			continue
		}
		if c.Mode != e.Mode || c.Presigned != e.Presigned || string(c.Decoded) != string(e.Decoded) {
			t.Errorf("%s %s: replay differs: mode %s/%s presigned %v/%v payload %d/%d bytes",
				e.Method, e.Target, modeName(c.Mode), modeName(e.Mode), c.Presigned, e.Presigned,
				len(c.Decoded), len(e.Decoded))
		}
		runMutations(t, c)
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// cleared records the clients whose old captures this run has removed.
var cleared struct {
	sync.Mutex
	clients map[string]bool
}

// saveCaptures writes the verified exchanges of client as
// testdata/captures/<client>_<method>-<op>_<mode>.http: one request per
// client, operation and payload mode, whichever variant produced it.
func saveCaptures(t *testing.T, client string, exs []*exchange) {
	t.Helper()
	dir := filepath.Join("testdata", "captures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cleared.Lock()
	if !cleared.clients[client] {
		if cleared.clients == nil {
			cleared.clients = map[string]bool{}
		}
		cleared.clients[client] = true
		old, _ := filepath.Glob(filepath.Join(dir, client+"_*.http"))
		for _, f := range old {
			os.Remove(f)
		}
	}
	cleared.Unlock()
	for _, e := range exs {
		if e.Err != nil || len(e.Raw) > 128<<10 {
			continue
		}
		name := client + "_" + unsafeName.ReplaceAllString(e.Method+"-"+e.Op+"_"+e.describe(), "_") + ".http"
		if err := os.WriteFile(filepath.Join(dir, name), e.Raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMain prints the interop table after the round trips ran.
func TestMain(m *testing.M) {
	code := m.Run()
	table.Lock()
	rows := table.rows
	table.Unlock()
	if len(rows) > 0 && testing.Verbose() {
		sort.SliceStable(rows, func(i, j int) bool {
			return rows[i].Client+rows[i].Variant < rows[j].Client+rows[j].Variant
		})
		fmt.Println("| client | variant | op | request | payload mode | result |")
		fmt.Println("|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.Client, r.Variant, r.Op, r.Request, r.Mode, r.Result)
		}
	}
	os.Exit(code)
}

// sendPresigned sends a presigned request (the signature is in url) with
// body, as a browser or curl would, and returns the answer's body; an
// answer other than 2xx is an error carrying it.
func sendPresigned(ctx context.Context, httpc *http.Client, method, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: %s", resp.Status, data)
	}
	return data, err
}
