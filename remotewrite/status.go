package remotewrite

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/admission"
)

// Request-level sentinels shared by the receivers (remote write, remote
// read, OTLP) so StatusOf stays the one place where errors become statuses.
var (
	// ErrBadRequest: malformed or invalid input; the sender must not retry.
	ErrBadRequest = errors.New("bad request")
	// ErrTooLarge: a size limit (body, decoded length, series count) was hit.
	ErrTooLarge = errors.New("request too large")
	// ErrUnsupportedMedia: Content-Type or Content-Encoding not supported.
	ErrUnsupportedMedia = errors.New("unsupported media type")
	// ErrBusy: every request slot of the endpoint is taken; retry later.
	ErrBusy = admission.ErrBusy
)

// RetryAfterSeconds is sent with 429 and 503 answers. One second keeps a
// Prometheus sender's own backoff in charge without hammering us.
const RetryAfterSeconds = "1"

// StatusOf maps an error to its HTTP status. It is the only place that does:
// store data errors and request errors are 4xx (Remote-Write spec: a 4xx
// means "do not retry"), overload is 429 and a closing store 503 (both
// retryable, with Retry-After), anything else is ours and 500.
func StatusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrUnsupportedMedia):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrBadRequest),
		errors.Is(err, actastore.ErrInvalidSeries),
		errors.Is(err, actastore.ErrInvalidHistogram),
		errors.Is(err, actastore.ErrOutOfOrder),
		errors.Is(err, actastore.ErrDuplicateSample),
		// Retrying cannot help until an operator raises the limit, and a
		// 429 would stall the sender's whole queue behind one series.
		errors.Is(err, actastore.ErrTooManySeries),
		errors.Is(err, actastore.ErrQueryLimit):
		return http.StatusBadRequest
	case errors.Is(err, actastore.ErrOverloaded), errors.Is(err, ErrBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, actastore.ErrClosed),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// reasonOf names an error for the rejected-samples metric's reason label.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, errLimit):
		return "limit"
	case errors.Is(err, ErrBadRequest), errors.Is(err, actastore.ErrInvalidSeries):
		return "invalid_series"
	case errors.Is(err, actastore.ErrInvalidHistogram):
		return "invalid_histogram"
	case errors.Is(err, actastore.ErrOutOfOrder):
		return "out_of_order"
	case errors.Is(err, actastore.ErrDuplicateSample):
		return "duplicate"
	case errors.Is(err, actastore.ErrTooManySeries):
		return "too_many_series"
	case errors.Is(err, actastore.ErrOverloaded), errors.Is(err, ErrBusy):
		return "overloaded"
	default:
		return "store_error"
	}
}

// WriteError answers with StatusOf(err) and the error text, adding
// Retry-After where the status invites a retry.
func WriteError(w http.ResponseWriter, err error) int {
	code := StatusOf(err)
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", RetryAfterSeconds)
	}
	http.Error(w, err.Error(), code)
	return code
}

// withConfigKey appends the config key behind a store limit to its error,
// so the answer tells the operator what to raise.
func withConfigKey(err error) error {
	switch {
	case errors.Is(err, actastore.ErrTooManySeries):
		return fmt.Errorf("%w (config storage.max_series)", err)
	case errors.Is(err, actastore.ErrOutOfOrder):
		return fmt.Errorf("%w (config storage.out_of_order_window)", err)
	case errors.Is(err, actastore.ErrOverloaded):
		return fmt.Errorf("%w (config storage.max_head_samples)", err)
	}
	return err
}
