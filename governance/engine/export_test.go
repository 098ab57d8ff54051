package engine

import (
	"context"
	"strconv"
	"testing"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// TestExportPrefixDecisions: under the export prefix only the copy a
// principal's own plan reads is readable, and nothing is writable; a
// listing of the data path above the prefix is decided by the tables under
// it (it shows copies' names, never bytes), so an ordinary credential can
// still list the data path.
func TestExportPrefixDecisions(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	eng, err := New(ctx, Config{Store: ev.lake.Store, Index: ev.idx, ExportPrefix: objstore.MustParse("s3://lake/data/__masked__/")})
	if err != nil {
		t.Fatal(err)
	}
	res := func(key string) governance.Resource { return governance.ObjectResource([]byte("lake"), []byte(key)) }
	tid := ev.ids["customers"].TableID
	foreign := "data/__masked__/t" + strconv.FormatInt(tid, 10) + "/0123456789abcdef/data/x.parquet"
	for _, tt := range []struct {
		a     governance.Action
		key   string
		allow bool
	}{
		{governance.ActionListObjects, "data/", true},
		{governance.ActionListObjects, "", true},
		{governance.ActionListObjects, "data/__masked__/", false},
		{governance.ActionListObjects, "data/__masked__/t" + strconv.FormatInt(tid, 10) + "/", false},
		{governance.ActionReadObject, foreign, false},
		{governance.ActionWriteObject, foreign, false},
		{governance.ActionDeleteObject, foreign, false},
		{governance.ActionReadObject, "data/__masked__/junk", false},
	} {
		r := res(tt.key)
		d, err := eng.Authorize(ctx, human("bob"), tt.a, &r)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allow != tt.allow {
			t.Errorf("bob %s %q = %+v, want allow=%v", tt.a, tt.key, d, tt.allow)
		}
	}
}
