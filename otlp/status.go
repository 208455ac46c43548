package otlp

import (
	"context"
	"errors"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/admission"
)

// retryAfter is what a retryable failure asks clients to wait. The store
// sheds load by WAL and head budgets that drain within seconds; the
// Collector's exporters honour it (Retry-After on HTTP, RetryInfo on gRPC).
const retryAfter = 5 * time.Second

// errBusy: every request slot stayed taken for otlp.max_queue_wait.
var errBusy = admission.ErrBusy

// outcome is how one store error is answered.
type outcome int

const (
	outcomeOK       outcome = iota
	outcomeRejected         // the data was refused: count it in partial_success, answer 200
	outcomeRetry            // transient: 503 / UNAVAILABLE with a retry delay
	outcomeInternal         // ours: 500 / INTERNAL
)

// classifyStoreError is the one place store errors become protocol
// answers: data errors are the client's and are reported as rejected data
// points (OTLP partial success, not retried); overload, shutdown and a
// cancelled request are worth retrying; anything else is our failure.
// It returns the outcome with its OTLP/HTTP status and gRPC code.
func classifyStoreError(err error) (outcome, int, codes.Code) {
	switch {
	case err == nil:
		return outcomeOK, http.StatusOK, codes.OK
	case errors.Is(err, actastore.ErrInvalidSeries),
		errors.Is(err, actastore.ErrInvalidHistogram),
		errors.Is(err, actastore.ErrOutOfOrder),
		errors.Is(err, actastore.ErrDuplicateSample),
		errors.Is(err, actastore.ErrTooManySeries):
		return outcomeRejected, http.StatusOK, codes.OK
	case errors.Is(err, errBusy):
		// 429 is the OTLP/HTTP spec's "throttled, retry"; gRPC has no such
		// code that is retryable without conditions, so UNAVAILABLE.
		return outcomeRetry, http.StatusTooManyRequests, codes.Unavailable
	case errors.Is(err, actastore.ErrOverloaded),
		// A closing store is a restart or shutdown: the data is fine and a
		// retry later (or to another replica) succeeds.
		errors.Is(err, actastore.ErrClosed),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return outcomeRetry, http.StatusServiceUnavailable, codes.Unavailable
	default:
		return outcomeInternal, http.StatusInternalServerError, codes.Internal
	}
}
