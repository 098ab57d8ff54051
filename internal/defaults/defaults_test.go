package defaults

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	for _, c := range []struct{ v, want time.Duration }{{0, time.Second}, {-1, time.Second}, {time.Minute, time.Minute}} {
		if got := Positive(c.v, time.Second); got != c.want {
			t.Errorf("Positive(%v, 1s) = %v, want %v", c.v, got, c.want)
		}
	}
	if got := Positive(0, 7); got != 7 {
		t.Errorf("Positive(0, 7) = %d", got)
	}
}
