package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Spread is the smallest, median and largest of a set of measurements
// (rounds of one benchmark, or the per-round ratios of two): every figure
// the load tools print says how often it is reached, not only its best.
type Spread struct{ Min, Median, Max float64 }

// SpreadOf is the Spread of xs (the zero Spread when xs is empty); an even
// count's median is the mean of the middle two.
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{s[0], m, s[len(s)-1]}
}

// Order is the order in which round r visits n targets: as given in even
// rounds, reversed in odd ones (A B, B A, A B, …), so that a drift of the
// machine over a run favours no target's position in the round.
func Order(n, r int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if r%2 == 1 {
			out[i] = n - 1 - i
		}
	}
	return out
}

// Ratios is the Spread of the per-round ratios xs[r] / base[r] of two
// targets measured in the same rounds (rounds where base is 0 are left
// out): drift between rounds cancels out of each.
func Ratios(xs, base []float64) Spread {
	var r []float64
	for i := range min(len(xs), len(base)) {
		if base[i] > 0 {
			r = append(r, xs[i]/base[i])
		}
	}
	return SpreadOf(r)
}

// Ratio spells a Spread of ratios as its median and range: "0.93× (0.86–1.02)".
func (s Spread) Ratio() string {
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

// References resolves a comma-separated list of target names (a tool's -vs
// flag) to their indexes in names.
func References(names []string, vs string) ([]int, error) {
	var out []int
	for _, name := range strings.Split(vs, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		i := slices.Index(names, name)
		if i < 0 {
			return nil, fmt.Errorf("-vs %s: no such target", name)
		}
		out = append(out, i)
	}
	return out, nil
}

// RatioColumns is the Markdown header cells of the ratio columns against
// the targets refs (indexes into names), and their alignment cells.
func RatioColumns(names []string, refs []int) (head, align string) {
	for _, ri := range refs {
		head += " vs " + names[ri] + ": median (min–max) |"
		align += "---:|"
	}
	return head, align
}
