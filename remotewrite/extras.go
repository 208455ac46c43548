package remotewrite

import (
	"context"
	"fmt"
	"strings"

	"github.com/acta-remote/acta-remote/apistatus"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/acta-remote/acta-remote/actastore"
)

// Native histograms, exemplars and metadata are converted from prompb /
// writev2 messages (unmarshalled by the generated code in both decoders:
// their volume is small) into the scratch's extras arenas.

// metricTypes maps the 1.0 wire enum (prompb MetricMetadata.MetricType) to
// Prometheus's names; 2.0 metadata goes through writev2's ToMetadata.
var metricTypes = [...]model.MetricType{
	model.MetricTypeUnknown, model.MetricTypeCounter, model.MetricTypeGauge, model.MetricTypeHistogram,
	model.MetricTypeGaugeHistogram, model.MetricTypeSummary, model.MetricTypeInfo, model.MetricTypeStateset,
}

func metricType(t int32) model.MetricType {
	if t < 0 || int(t) >= len(metricTypes) {
		return model.MetricTypeUnknown
	}
	return metricTypes[t]
}

// histogramSampleV1/V2 convert a decoded histogram, keeping integer
// histograms integer (count_int vs count_float decides, as in the
// Remote-Write 2.0 spec).
func histogramSampleV1(h *prompb.Histogram) actastore.HistogramSample {
	if h.IsFloatHistogram() {
		return actastore.HistogramSample{T: h.Timestamp, FH: h.ToFloatHistogram()}
	}
	return actastore.HistogramSample{T: h.Timestamp, H: h.ToIntHistogram()}
}

func histogramSampleV2(h *writev2.Histogram) actastore.HistogramSample {
	if h.IsFloatHistogram() {
		return actastore.HistogramSample{T: h.Timestamp, FH: h.ToFloatHistogram()}
	}
	return actastore.HistogramSample{T: h.Timestamp, H: h.ToIntHistogram()}
}

// metadataV1 converts a 1.0 MetricMetadata (one per metric family).
func metadataV1(m *prompb.MetricMetadata) actastore.NamedMetadata {
	return actastore.NamedMetadata{Name: m.MetricFamilyName,
		Metadata: actastore.Metadata{Type: metricType(int32(m.Type)), Unit: m.Unit, Help: m.Help}}
}

// metadataV2 resolves a 2.0 series' metadata with writev2's ToMetadata
// (help and unit references out of the symbol table are an error). It is
// nil when the series carries none: an all-default Metadata is what a
// sender without metadata sends. The strings may alias the request body:
// the store copies what it keeps (actastore.Batch).
func metadataV2(md *writev2.Metadata, symbols []string) (*actastore.Metadata, error) {
	if md.Type == writev2.Metadata_METRIC_TYPE_UNSPECIFIED && md.HelpRef == 0 && md.UnitRef == 0 {
		return nil, nil // absent (or sent all-default): nothing to resolve
	}
	m, err := (&writev2.TimeSeries{Metadata: *md}).ToMetadata(symbols)
	if err != nil {
		return nil, err
	}
	if md.Type == writev2.Metadata_METRIC_TYPE_UNSPECIFIED && m.Help == "" && m.Unit == "" {
		return nil, nil
	}
	return &actastore.Metadata{Type: m.Type, Help: m.Help, Unit: m.Unit}, nil
}

// familyOf is the metric family a 2.0 series' metadata belongs to: 1.0
// sends metadata per family (MetricFamilyName), 2.0 per series, and a
// classic histogram's or summary's series carry suffixes their family does
// not (OpenMetrics 1.0 "Suffixes"): _bucket, _sum and _count (_gsum and
// _gcount for gauge histograms; _created for all three). Other types keep
// the series name, as Prometheus names their families (qa_total stays
// qa_total).
func familyOf(name string, typ model.MetricType) string {
	var suffixes []string
	switch typ {
	case model.MetricTypeHistogram:
		suffixes = []string{"_bucket", "_sum", "_count", "_created"}
	case model.MetricTypeGaugeHistogram:
		suffixes = []string{"_bucket", "_gsum", "_gcount", "_created"}
	case model.MetricTypeSummary:
		suffixes = []string{"_sum", "_count", "_created"}
	}
	for _, sfx := range suffixes {
		if f, ok := strings.CutSuffix(name, sfx); ok && f != "" {
			return f
		}
	}
	return name
}

// commit stores the request's batch: floats, histograms, exemplars and
// metadata in one store Commit (one WAL write, one fsync). A store error
// fails the whole request (nothing was acknowledged: a retryable status
// makes the sender send it all again); per-item rejections become the
// partial-write answer.
func (h *Handler) commit(ctx context.Context, s *scratch) error {
	res, err := h.app.Commit(ctx, &s.batch)
	if err != nil {
		h.m.samplesRejected.WithLabelValues(reasonOf(err)).Add(float64(s.stats.samples))
		s.stats.rejectedSamples = s.stats.samples
		err = apistatus.WithConfigKey(err)
		h.log.Warn("remote write: store refused batch", "err", err, "series", len(s.batch.Series))
		return err
	}
	s.stats.samplesWritten = res.Samples.Written
	s.stats.histogramsWritten = res.Histograms.Written
	s.stats.exemplarsWritten = res.Exemplars.Written
	s.stats.rejectedSamples += res.Samples.Rejected
	s.stats.rejectedHistograms += res.Histograms.Rejected
	h.m.seriesAppended.Add(float64(len(s.batch.Series)))
	for reason, n := range res.Reasons {
		s.reason[reason] += n
	}
	for _, e := range res.Errors {
		s.reject(0, apistatus.WithConfigKey(e))
	}
	// Dropped exemplars (labels over 128 characters, out of bounds) are
	// counted, not refused: Prometheus's write handler logs them and answers
	// 2xx; a 2.0 sender sees them missing from Exemplars-Written.
	if n := res.Rejected() - res.Exemplars.Rejected; len(res.Errors) == 0 && n > 0 {
		s.reject(0, fmt.Errorf("%w: store rejected %d items", apistatus.ErrBadRequest, n))
	}
	return nil
}
