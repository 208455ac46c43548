package remotewrite

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acta-remote/acta-remote/apistatus"

	"github.com/prometheus/prometheus/model/labels"
)

// errLimit marks rejections caused by a configured limit (metrics reason).
var errLimit = errors.New("limit exceeded")

// Limits bound one remote-write request. Zero fields are not allowed; the
// config package supplies defaults.
type Limits struct {
	MaxBodyBytes        int64 // snappy-compressed body
	MaxDecodedBytes     int64 // snappy-declared decoded length
	MaxSeriesPerRequest int
	MaxLabelsPerSeries  int
	MaxLabelNameLength  int // bytes
	MaxLabelValueLength int // bytes
	MaxConcurrent       int // requests decoded at once
	// MaxQueueWait is how long a request waits for one of the
	// MaxConcurrent slots before it gets 503; 0 refuses at once.
	MaxQueueWait time.Duration
}

// beginSeries starts converting one series' labels.
func (s *scratch) beginSeries() {
	s.pairs = s.pairs[:0]
	s.npairs = 0
}

// addPair takes one label as sent. A pair with an empty value is dropped:
// in Prometheus an empty value means the label is absent. Beyond
// max_labels_per_series labels are only counted (checkLabels rejects the
// series), so a series of a million labels costs no memory.
func (h *Handler) addPair(s *scratch, name, value string) {
	if value == "" {
		return
	}
	s.npairs++
	if len(s.pairs) <= h.lim.MaxLabelsPerSeries {
		s.pairs = append(s.pairs, pair{name, value})
	}
}

// checkLabels applies the receiver's cheap rules to s.pairs, one series'
// labels in the order sent: at least one label, __name__ present, no empty
// name, the configured count and length limits. Sorting, duplicate names
// and UTF-8 are the store's to check (only for a series it does not know
// yet: a known series' label bytes were valid when it was created), as
// Remote-Write senders sort their labels and the store sorts them anyway.
func (h *Handler) checkLabels(s *scratch, series int) error {
	ps := s.pairs
	if s.npairs == 0 {
		return fmt.Errorf("%w: series %d has no labels", apistatus.ErrBadRequest, series)
	}
	if s.npairs > h.lim.MaxLabelsPerSeries {
		return fmt.Errorf("%w: series %d (%s) has %d labels, limit remote_write.max_labels_per_series=%d",
			errLimit, series, describe(ps), s.npairs, h.lim.MaxLabelsPerSeries)
	}
	hasName := false
	for i, p := range ps {
		switch {
		case p.name == "":
			return fmt.Errorf("%w: series %d (%s): label %d has an empty name", apistatus.ErrBadRequest, series, describe(ps), i)
		case len(p.name) > h.lim.MaxLabelNameLength:
			return fmt.Errorf("%w: series %d: label name %.64q... is %d bytes, limit remote_write.max_label_name_length=%d",
				errLimit, series, p.name, len(p.name), h.lim.MaxLabelNameLength)
		case len(p.value) > h.lim.MaxLabelValueLength:
			return fmt.Errorf("%w: series %d: label %q value is %d bytes, limit remote_write.max_label_value_length=%d",
				errLimit, series, p.name, len(p.value), h.lim.MaxLabelValueLength)
		}
		if p.name == labels.MetricName {
			hasName = true
		}
	}
	if !hasName {
		return fmt.Errorf("%w: series %d (%s): missing %s", apistatus.ErrBadRequest, series, describe(ps), labels.MetricName)
	}
	return nil
}

// metricName is the series' __name__ value (the first one sent).
func metricName(ps []pair) string {
	for _, p := range ps {
		if p.name == labels.MetricName {
			return p.value
		}
	}
	return ""
}

// describe renders a label set for an error message, bounded in length.
func describe(ps []pair) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", p.name, p.value)
		if b.Len() > 200 {
			b.WriteString(", ...")
			break
		}
	}
	b.WriteByte('}')
	return b.String()
}
