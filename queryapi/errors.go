package queryapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/promql"

	"github.com/acta-remote/acta-remote/actastore"
)

// storeErr maps an error of the store to the kind Prometheus's API turns
// into a status (web/api/v1 returnAPIError):
//
//   - a store query limit (actastore.ErrQueryLimit) stays a plain error:
//     "execution", 422, as Prometheus answers a query over its limits;
//   - the context's deadline is the query's timeout: promql.ErrQueryTimeout,
//     "timeout", 503 (the engine itself only notices between steps);
//   - a cancelled context is promql.ErrQueryCanceled, "canceled", 499;
//   - anything else (an unreadable file, a closed store) is
//     promql.ErrStorage, "internal", 500: not the query's fault.
func storeErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, actastore.ErrQueryLimit):
		return fmt.Errorf("%s: %w (the store's per-selector limits remote_read.max_series_per_query and remote_read.max_samples_per_query)", what, err)
	case errors.Is(err, context.DeadlineExceeded):
		return promql.ErrQueryTimeout(what)
	case errors.Is(err, context.Canceled):
		return promql.ErrQueryCanceled(what)
	}
	return promql.ErrStorage{Err: fmt.Errorf("%s: %w", what, err)}
}
