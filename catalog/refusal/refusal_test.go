package refusal_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/duckicelake/duckicelake/catalog/refusal"
)

var errGone = errors.New("gone")

func TestRefusal(t *testing.T) {
	err := fmt.Errorf("while committing: %w", refusal.New(errGone, "table %s.%s is gone", "ns", "t"))
	if !errors.Is(err, errGone) {
		t.Error("the kind does not match through a wrap")
	}
	var r *refusal.Error
	if !errors.As(err, &r) || r.Message != "table ns.t is gone" || r.Error() != r.Message {
		t.Errorf("refusal = %+v", r)
	}
}

func ExampleNew() {
	errNoSuchTable := errors.New("no such table")
	err := refusal.New(errNoSuchTable, "Table does not exist: %s.%s", "sales", "orders")
	fmt.Println(err, errors.Is(err, errNoSuchTable))
	// Output: Table does not exist: sales.orders true
}
