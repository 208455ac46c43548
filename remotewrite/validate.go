package remotewrite

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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

// checkLabels validates s.pairs as one series' label set, in the rules of
// the Remote-Write specs: names sorted and unique, valid UTF-8, non-empty,
// __name__ present. Pairs with an empty value are dropped first: in
// Prometheus an empty value means the label is absent.
func (h *Handler) checkLabels(s *scratch, series int) error {
	ps := s.pairs[:0]
	for _, p := range s.pairs {
		if p.value != "" {
			ps = append(ps, p)
		}
	}
	s.pairs = ps
	if len(ps) == 0 {
		return fmt.Errorf("%w: series %d has no labels", apistatus.ErrBadRequest, series)
	}
	if len(ps) > h.lim.MaxLabelsPerSeries {
		return fmt.Errorf("%w: series %d (%s) has %d labels, limit remote_write.max_labels_per_series=%d",
			errLimit, series, describe(ps), len(ps), h.lim.MaxLabelsPerSeries)
	}
	hasName := false
	for i, p := range ps {
		switch {
		case p.name == "":
			return fmt.Errorf("%w: series %d (%s): label %d has an empty name", apistatus.ErrBadRequest, series, describe(ps), i)
		case !utf8.ValidString(p.name):
			return fmt.Errorf("%w: series %d: label %d name %q is not valid UTF-8", apistatus.ErrBadRequest, series, i, p.name)
		case !utf8.ValidString(p.value):
			return fmt.Errorf("%w: series %d: label %q value %q is not valid UTF-8", apistatus.ErrBadRequest, series, p.name, p.value)
		case len(p.name) > h.lim.MaxLabelNameLength:
			return fmt.Errorf("%w: series %d: label name %.64q... is %d bytes, limit remote_write.max_label_name_length=%d",
				errLimit, series, p.name, len(p.name), h.lim.MaxLabelNameLength)
		case len(p.value) > h.lim.MaxLabelValueLength:
			return fmt.Errorf("%w: series %d: label %q value is %d bytes, limit remote_write.max_label_value_length=%d",
				errLimit, series, p.name, len(p.value), h.lim.MaxLabelValueLength)
		}
		if i > 0 {
			if prev := ps[i-1].name; p.name == prev {
				return fmt.Errorf("%w: series %d (%s): duplicate label name %q", apistatus.ErrBadRequest, series, describe(ps), p.name)
			} else if p.name < prev {
				return fmt.Errorf("%w: series %d (%s): labels not sorted: %q after %q", apistatus.ErrBadRequest, series, describe(ps), p.name, prev)
			}
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

// labelsOf copies the validated pairs into a labels.Labels the store may keep.
func labelsOf(s *scratch) labels.Labels {
	s.sb.Reset()
	for _, p := range s.pairs {
		s.sb.Add(p.name, p.value)
	}
	return s.sb.Labels()
}
