package remotewrite

import (
	"errors"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/apistatus"
)

// Errors become statuses in package apistatus (one table for every
// receiver); this file only names them for the metrics.

// reasonOf names an error for the rejected-samples metric's reason label.
func reasonOf(err error) string {
	if r := actastore.ReasonOf(err); r != "" {
		return r
	}
	switch {
	case errors.Is(err, errLimit):
		return "limit"
	case errors.Is(err, apistatus.ErrBadRequest):
		return actastore.ReasonInvalidSeries
	case errors.Is(err, actastore.ErrOverloaded), errors.Is(err, apistatus.ErrBusy):
		return "overloaded"
	default:
		return "store_error"
	}
}
