package bench

import (
	"slices"
	"testing"
)

func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Spread
	}{
		{nil, Spread{}},
		{[]float64{3}, Spread{3, 3, 3}},
		{[]float64{5, 1, 3}, Spread{1, 3, 5}},
		{[]float64{4, 1, 2, 8}, Spread{1, 3, 8}},
	} {
		in := append([]float64(nil), tc.in...)
		if got := SpreadOf(tc.in); got != tc.want {
			t.Errorf("SpreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("SpreadOf reordered its input: %v", tc.in)
			}
		}
	}
}

func TestOrder(t *testing.T) {
	for _, tc := range []struct {
		n, r int
		want []int
	}{
		{3, 0, []int{0, 1, 2}},
		{3, 1, []int{2, 1, 0}},
		{3, 2, []int{0, 1, 2}},
		{1, 1, []int{0}},
		{0, 0, []int{}},
	} {
		if got := Order(tc.n, tc.r); !slices.Equal(got, tc.want) {
			t.Errorf("Order(%d, %d) = %v, want %v", tc.n, tc.r, got, tc.want)
		}
	}
}

func TestRatios(t *testing.T) {
	got := Ratios([]float64{2, 3, 8, 5}, []float64{1, 3, 4, 0})
	if want := (Spread{1, 2, 2}); got != want {
		t.Errorf("Ratios = %+v, want %+v", got, want)
	}
	if s := got.Ratio(); s != "2.00× (1.00–2.00)" {
		t.Errorf("Ratio() = %q", s)
	}
}

func TestReferences(t *testing.T) {
	names := []string{"direct", "relay", "gateway"}
	if got, err := References(names, "direct, gateway"); err != nil || !slices.Equal(got, []int{0, 2}) {
		t.Errorf("References = %v, %v", got, err)
	}
	if got, err := References(names, ""); err != nil || got != nil {
		t.Errorf("References of nothing = %v, %v", got, err)
	}
	if _, err := References(names, "direct,proxy"); err == nil {
		t.Error("an unknown target was accepted")
	}
}

func TestRatioColumns(t *testing.T) {
	head, align := RatioColumns([]string{"direct", "relay"}, []int{1, 0})
	if head != " vs relay: median (min–max) | vs direct: median (min–max) |" || align != "---:|---:|" {
		t.Errorf("RatioColumns = %q, %q", head, align)
	}
}
