package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/governance/admin"
	"github.com/duckicelake/duckicelake/governance/engine"
	"github.com/duckicelake/duckicelake/governance/govtest"
	"github.com/duckicelake/duckicelake/governance/model"
	"github.com/duckicelake/duckicelake/governance/store"
	"github.com/duckicelake/duckicelake/internal/tableindex"
)

// govBenchTables and the policies on each are scripts/bench.sh
// governance's: 100 tables, 2 masks and 8 row-access policies on each.
const (
	govBenchTables    = 100
	govBenchRowPolicy = 8
)

// fixedIndex is a key → table index that never changes.
type fixedIndex struct{ x *tableindex.Index }

func (f fixedIndex) Index() *tableindex.Index                                  { return f.x }
func (f fixedIndex) Observe(context.Context, int64)                            {}
func (f fixedIndex) Refresh(context.Context, int64) (*tableindex.Index, error) { return f.x, nil }

// BenchmarkServeGetGoverned is the gateway's 1 KiB GET on a key inside a
// governed table's directory, with governance off (no catalog: the
// credential's scope, the JSON audit line) and on (the governance engine
// over 100 governed tables and 1,000 policies in a real DuckLake catalog,
// the key → table index, and the Postgres audit trail besides the JSON
// line), side by side in one process: what scripts/bench.sh governance
// measures on the whole stack, here with -cpuprofile and -memprofile at
// hand. Needs DUCKICELAKE_TEST_PG_DSN and the venv's DuckDB extensions.
func BenchmarkServeGetGoverned(b *testing.B) {
	ctx := context.Background()
	setup := []string{"CREATE SCHEMA lake.gov_bench"}
	for i := range govBenchTables {
		setup = append(setup,
			fmt.Sprintf("CREATE TABLE lake.gov_bench.t%d (id BIGINT, email VARCHAR, country VARCHAR, mrr INTEGER, note VARCHAR)", i))
	}
	l := govtest.New(b, setup...)
	check := govtest.SQLCheck(b)
	adm := admin.New(l.Store, check)
	author := admin.Author{Principal: governance.Principal{ID: "admin"}}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	var src tableindex.Source
	for i := range govBenchTables {
		name := fmt.Sprintf("t%d", i)
		r, err := l.Store.Resolve(ctx, store.ObjectName{Kind: model.ObjectTable, Schema: "gov_bench", Table: name})
		must(err)
		src.Tables = append(src.Tables, tableindex.Table{ID: r.Ref.TableID, SchemaID: r.Ref.SchemaID, Namespace: "gov_bench",
			Name: name, Bucket: "lake", Prefix: "data/gov_bench/" + name + "/"})
		for _, col := range []string{"email", "note"} {
			p := fmt.Sprintf("mask_%s_%d", col, i)
			must(adm.PutMaskingPolicy(ctx, author, admin.MaskingPolicy{Name: p, Signature: "(val VARCHAR)",
				Body: "left(val, 2) || '***'", UnmaskedRoles: []string{"pii_reader"}}))
			must(adm.PutAttachment(ctx, author, admin.Attachment{PolicyKind: "masking", PolicyName: p, TargetKind: "column",
				Schema: "gov_bench", Object: name, Column: col}))
		}
		for k := range govBenchRowPolicy {
			p := fmt.Sprintf("rows_%d_%d", i, k)
			must(adm.PutRowAccessPolicy(ctx, author, admin.RowAccessPolicy{Name: p, Body: fmt.Sprintf("mrr >= -%d", k+1),
				Columns: []string{"mrr"}, UnmaskedRoles: []string{"auditor"}}))
			must(adm.PutAttachment(ctx, author, admin.Attachment{PolicyKind: "row-access", PolicyName: p, TargetKind: "table",
				Schema: "gov_bench", Object: name}))
		}
	}
	eng, err := engine.New(ctx, engine.Config{Store: l.Store, Index: fixedIndex{tableindex.Build(src)}})
	must(err)

	const prefix = "data/gov_bench/t0/bench/"
	jsonLine := func() governance.Sink { return governance.NewZapSink(NewLogger(io.Discard, zap.InfoLevel)) }
	b.Run("off", func(b *testing.B) {
		e := newBenchEnvDeps(b, prefix, Deps{Audit: jsonLine()})
		pg0 := postgresCPU(b, l)
		benchDo(b, e.gw, e.request(b, "GET", "gov_bench/t0/bench/small", 0), nil, 1024)
		if pg0 >= 0 {
			b.ReportMetric(float64(postgresCPU(b, l)-pg0)/float64(b.N), "pg-cpu-ns/op")
		}
	})
	b.Run("governed", func(b *testing.B) {
		var written, dropped atomic.Int64
		trail := l.Store.NewTrailWriter(store.TrailOptions{
			OnWrite: func(n int) { written.Add(int64(n)) }, OnDrop: func(n int) { dropped.Add(int64(n)) }})
		// Cleanups run last first: the gateway stops (its last requests
		// recorded) before the trail closes, and then nothing may be missing.
		b.Cleanup(func() {
			trail.Close()
			if d := dropped.Load(); d > 0 {
				b.Errorf("%d audit events dropped (%d written)", d, written.Load())
			}
		})
		e := newBenchEnvDeps(b, prefix, Deps{Audit: governance.Tee(jsonLine(), trail), Authorizer: eng})
		pg0 := postgresCPU(b, l)
		benchDo(b, e.gw, e.request(b, "GET", "gov_bench/t0/bench/small", 0), nil, 1024)
		// Postgres's share is in once every request's event is written.
		for deadline := time.Now().Add(time.Minute); written.Load() < int64(b.N) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if pg0 >= 0 {
			b.ReportMetric(float64(postgresCPU(b, l)-pg0)/float64(b.N), "pg-cpu-ns/op")
		}
	})
}

// postgresCPU is the CPU time (user and system) of the test cluster's
// processes, the audit trail's writes included, when it runs on this
// machine; -1 when it cannot be read (a remote cluster). The governed
// gateway's cost is its own CPU (cpu-ns/op) plus this.
func postgresCPU(b *testing.B, l *govtest.Lake) time.Duration {
	rows, err := l.Pool.Query(context.Background(), "SELECT pid FROM pg_stat_activity")
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return -1
		}
		// The fields after the command (which may hold spaces) in
		// parentheses; utime and stime are the 14th and 15th of the line.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 {
			return -1
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}
