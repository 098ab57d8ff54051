// Command benchcmp sets `go test -bench` outputs of two builds side by side:
// for every benchmark and metric (ns/op, cpu-ns/op, B/op, allocs/op, MB/s…)
// the median of each build's runs, and the ratio new/old of the runs paired
// in order (run i of one build with run i of the other: scripts/bench.sh
// compare runs them interleaved, so a pair shares the machine's state) as
// median (min–max).
//
// Usage:
//
//	benchcmp old.txt new.txt
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/duckicelake/duckicelake/bench"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: benchcmp OLD NEW (go test -bench outputs)")
		os.Exit(2)
	}
	old, err := parse(os.Args[1])
	if err == nil {
		var cur results
		if cur, err = parse(os.Args[2]); err == nil {
			report(old, cur)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "benchcmp:", err)
	os.Exit(1)
}

// results holds, per benchmark and metric, the values of every run in
// order; names keeps the benchmarks in the order first seen.
type results struct {
	names   []string
	metrics map[string][]string // benchmark → its metrics in order
	values  map[[2]string][]float64
}

// A result line: name, iterations, then value-unit pairs.
var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

func parse(path string) (results, error) {
	r := results{metrics: map[string][]string{}, values: map[[2]string][]float64{}}
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name, fields := m[1], strings.Fields(m[2])
		if _, seen := r.metrics[name]; !seen {
			r.names = append(r.names, name)
			r.metrics[name] = nil
		}
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			k := [2]string{name, fields[i+1]}
			if _, seen := r.values[k]; !seen {
				r.metrics[name] = append(r.metrics[name], fields[i+1])
			}
			r.values[k] = append(r.values[k], v)
		}
	}
	return r, sc.Err()
}

func report(old, cur results) {
	fmt.Println("| benchmark | metric | old median | new median | new/old: median (min–max) | runs |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	for _, name := range cur.names {
		for _, unit := range cur.metrics[name] {
			k := [2]string{name, unit}
			o, n := old.values[k], cur.values[k]
			if len(o) == 0 {
				fmt.Printf("| %s | %s | – | %s | – | %d |\n", name, unit, num(bench.SpreadOf(n).Median), len(n))
				continue
			}
			// Zero before (allocs/op at 0) has no ratio: equal, or more.
			ratio := "= (0)"
			if bench.SpreadOf(o).Max > 0 {
				ratio = bench.Ratios(n, o).Ratio()
			} else if bench.SpreadOf(n).Max > 0 {
				ratio = "**was 0**"
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %d |\n", name, unit,
				num(bench.SpreadOf(o).Median), num(bench.SpreadOf(n).Median), ratio, min(len(o), len(n)))
		}
	}
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
