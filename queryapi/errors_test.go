package queryapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/prometheus/prometheus/promql"

	"github.com/acta-remote/acta-remote/actastore"
)

// Store errors become the engine error kinds that Prometheus's API maps to
// statuses: timeout 503, canceled 499, internal 500, and execution 422 for
// everything else (a store limit among them).
func TestStoreErr(t *testing.T) {
	f := func(in error, check func(error) bool, want string) {
		t.Helper()
		got := storeErr(in, "selecting series")
		if !check(got) || got.Error() != want {
			t.Errorf("storeErr(%v) = %T %q, want %q", in, got, got, want)
		}
	}
	is := func(target error) func(error) bool { return func(e error) bool { return errors.Is(e, target) } }
	as := func(e error) bool { var es promql.ErrStorage; return errors.As(e, &es) }
	if err := storeErr(nil, "x"); err != nil {
		t.Errorf("storeErr(nil) = %v", err)
	}
	f(fmt.Errorf("wrapped: %w", context.DeadlineExceeded), is(promql.ErrQueryTimeout("selecting series")), "query timed out in selecting series")
	f(context.Canceled, is(promql.ErrQueryCanceled("selecting series")), "query was canceled in selecting series")
	f(fmt.Errorf("%w: 9 series match, limit 5", actastore.ErrQueryLimit), func(e error) bool { return errors.Is(e, actastore.ErrQueryLimit) && !as(e) },
		"selecting series: actastore: query limit exceeded: 9 series match, limit 5 (the store's per-selector limits remote_read.max_series_per_query and remote_read.max_samples_per_query)")
	f(os.ErrPermission, as, "selecting series: permission denied")
	f(actastore.ErrClosed, as, "selecting series: actastore: store closed")
}
