// Package apistatus is the one table from errors to protocol answers, for
// every receiver: remote write, remote read and OTLP (HTTP and gRPC). The
// request-level sentinels live here too, so a receiver never imports
// another receiver for them.
//
// The table (Of):
//
//	error                              remote write   remote read   OTLP HTTP / gRPC
//	nil                                2xx            200           200 OK
//	ErrUnsupportedMedia                415            415           415 / UNIMPLEMENTED
//	ErrTooLarge                        413            413           413 / RESOURCE_EXHAUSTED
//	ErrBadRequest, store data errors   400            400           partial success (200 OK)
//	actastore.ErrQueryLimit            400            422           400 / INVALID_ARGUMENT
//	ErrBusy (no request slot)          503 + RA       429 + RA      429 + RA / UNAVAILABLE + RetryInfo
//	actastore.ErrOverloaded            503 + RA       503 + RA      503 + RA / UNAVAILABLE + RetryInfo
//	actastore.ErrClosed, ctx ended     503 + RA       503 + RA      503 + RA / UNAVAILABLE + RetryInfo
//	anything else                      500            500           500 / INTERNAL
//
// (RA: Retry-After, RetryAfter seconds.) Store data errors are the
// sentinels a rejection wraps (actastore.ReasonOf names them): invalid
// series or histogram, out of order, out of bounds, duplicate, too many
// series. Retrying cannot fix them, so they are 4xx, which every sender
// treats as "drop, do not retry".
//
// Why remote write never answers 429: a Prometheus sender retries a 429
// only with queue_config.retry_on_http_429, which is off by default
// (prometheus/prometheus config.QueueConfig.RetryOnRateLimit;
// storage/remote/client.go treats 5xx as recoverable, 429 as such only
// with that flag). A 429 for a passing overload would make a default
// Prometheus drop the batch; a 503 makes it back off and resend, honouring
// Retry-After. The Remote-Write 2.0 spec allows both.
//
// OTLP answers a busy endpoint 429 and an overloaded store 503: the
// OTLP/HTTP spec lists both as retryable and asks for Retry-After; on gRPC
// both are UNAVAILABLE with RetryInfo, the code the OTLP/gRPC spec makes
// retryable without conditions (RESOURCE_EXHAUSTED is retryable only when
// the server signals it can recover).
//
// Remote read (a query, not a send queue) answers a full endpoint 429: a
// Prometheus reader does not retry, and 429 tells the operator "busy",
// not "down". A query over the read limits is 422, the status the query
// API gives an execution that selects too much.
package apistatus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/admission"
)

// Request-level sentinels, shared by the receivers.
var (
	// ErrBadRequest: malformed or invalid input; the sender must not retry.
	ErrBadRequest = errors.New("bad request")
	// ErrTooLarge: a size limit (body, decoded length, series count) was hit.
	ErrTooLarge = errors.New("request too large")
	// ErrUnsupportedMedia: Content-Type or Content-Encoding not supported.
	ErrUnsupportedMedia = errors.New("unsupported media type")
	// ErrBusy: every request slot of the endpoint stayed taken; retry later.
	ErrBusy = admission.ErrBusy
)

// RetryAfter is what every retryable answer asks the client to wait (the
// Retry-After header in whole seconds, gRPC RetryInfo). The store sheds load
// by its head budget and request slots, which drain within a second or two;
// senders add their own backoff on top.
const RetryAfter = time.Second

// Protocol is the API an answer is for.
type Protocol uint8

const (
	RemoteWrite Protocol = iota
	RemoteRead
	OTLP
)

// Outcome is how an error is answered.
type Outcome uint8

const (
	OK       Outcome = iota
	Rejected         // the client's data or request is at fault: do not retry (OTLP: partial success)
	Retry            // transient: answer with a retry delay
	Internal         // ours: 500 / INTERNAL
)

// Answer is what one error becomes in one protocol.
type Answer struct {
	Outcome Outcome
	HTTP    int        // HTTP status
	GRPC    codes.Code // gRPC code (OTLP/gRPC)
}

// Of is the table of the package doc.
func Of(p Protocol, err error) Answer {
	switch {
	case err == nil:
		return Answer{OK, http.StatusOK, codes.OK}
	case errors.Is(err, ErrUnsupportedMedia):
		return Answer{Rejected, http.StatusUnsupportedMediaType, codes.Unimplemented}
	case errors.Is(err, ErrTooLarge):
		return Answer{Rejected, http.StatusRequestEntityTooLarge, codes.ResourceExhausted}
	case errors.Is(err, actastore.ErrQueryLimit):
		if p == RemoteRead {
			return Answer{Rejected, http.StatusUnprocessableEntity, codes.InvalidArgument}
		}
		return Answer{Rejected, http.StatusBadRequest, codes.InvalidArgument}
	case errors.Is(err, ErrBadRequest), actastore.ReasonOf(err) != "":
		if p == OTLP {
			// Data errors become rejected data points of a 200 answer.
			return Answer{Rejected, http.StatusOK, codes.OK}
		}
		return Answer{Rejected, http.StatusBadRequest, codes.InvalidArgument}
	case errors.Is(err, ErrBusy):
		if p == RemoteWrite {
			return Answer{Retry, http.StatusServiceUnavailable, codes.Unavailable}
		}
		return Answer{Retry, http.StatusTooManyRequests, codes.Unavailable}
	case errors.Is(err, actastore.ErrOverloaded),
		// A closing store is a restart or shutdown: the data is fine and a
		// retry later (or to another replica) succeeds.
		errors.Is(err, actastore.ErrClosed),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return Answer{Retry, http.StatusServiceUnavailable, codes.Unavailable}
	default:
		return Answer{Internal, http.StatusInternalServerError, codes.Internal}
	}
}

// HTTP is Of(p, err).HTTP.
func HTTP(p Protocol, err error) int { return Of(p, err).HTTP }

// WriteText answers err as plain text with its status (the Remote-Write
// and Remote-Read way), adding Retry-After to retryable answers. It returns
// the status.
func WriteText(w http.ResponseWriter, p Protocol, err error) int {
	a := Of(p, err)
	if a.Outcome == Retry {
		SetRetryAfter(w)
	}
	http.Error(w, err.Error(), a.HTTP)
	return a.HTTP
}

// SetRetryAfter sets the Retry-After header to RetryAfter.
func SetRetryAfter(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
}

// WithConfigKey appends the config key behind a store limit to its error,
// so the answer tells the operator what to raise.
func WithConfigKey(err error) error {
	switch {
	case errors.Is(err, actastore.ErrTooManySeries):
		return fmt.Errorf("%w (config storage.max_series)", err)
	case errors.Is(err, actastore.ErrOutOfOrder):
		return fmt.Errorf("%w (config storage.out_of_order_window)", err)
	case errors.Is(err, actastore.ErrOverloaded):
		return fmt.Errorf("%w (config storage.max_head_samples, storage.memory_budget)", err)
	}
	return err
}
