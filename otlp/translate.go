package otlp

import (
	"fmt"
	"math"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/acta-remote/acta-remote/actastore"
)

// Translation is one OTLP request turned into a store batch.
type Translation struct {
	// Series holds every sample, grouped by series in order of first
	// appearance; within a series samples keep the request's order.
	Series []actastore.SeriesSamples
	// Samples is the number of samples in Series.
	Samples int
	// Extras holds the native histograms (from exponential histograms) and
	// the exemplars of every series, grouped by series like Series;
	// Histograms and Exemplars count them.
	Extras     []actastore.SeriesExtras
	Histograms int
	Exemplars  int
	// Metadata is each translated metric family's type, unit and help, as
	// Prometheus's OTLP receiver derives them.
	Metadata []actastore.NamedMetadata
	// DataPoints counts every data point in the request, accepted or not.
	DataPoints int
	// Rejected counts data points refused by translation (no timestamp,
	// refused temporality, unusable name, dropped by the delta
	// conversion); they are not in Series.
	Rejected int
	// Reasons describes the rejections: at most maxReasons distinct
	// messages, then a count of the rest.
	Reasons []string
	// moreReasons counts rejections beyond maxReasons messages.
	moreReasons int
}

const maxReasons = 8

// Translator turns OTLP metrics into Prometheus series exactly as
// Prometheus's OTLP receiver (v0.316.0) names them. It keeps scratch space
// between requests: reuse one per goroutine (the Receiver pools them); it is
// not safe for concurrent use.
type Translator struct {
	cfg         Config
	promote     map[string]bool // attributes promoted, or ignored when PromoteAll
	metricNamer otlptranslator.MetricNamer
	labelNamer  otlptranslator.LabelNamer
	delta       *deltaConverter // the Receiver's, shared; nil unless delta_temporality is convert

	scratch   labels.ScratchBuilder
	exScratch labels.ScratchBuilder // exemplar labels
	builder   *labels.Builder
	nameCache map[string]string // attribute name -> label name; bounded

	// Per request.
	out            *Translation
	index          map[uint64]int   // labels hash -> first index into out.Series
	collisions     map[uint64][]int // further indexes for a hash shared by different labels
	hindex         map[uint64][]int // labels hash -> indexes into out.Extras
	mindex         map[string]int   // family name -> index into out.Metadata
	seenTargetInfo map[targetInfoKey]struct{}
	slab           []actastore.Sample // never reused across requests: batches keep their slices
	res            resourceLabels
	scope          *scopeLabels // nil unless scope metadata is promoted
}

// NewTranslator returns a Translator for cfg, which should be valid
// (Config.Validate). Its delta_temporality convert needs the per-stream
// state a Receiver keeps: a Translator made here alone rejects delta data
// points under it.
func NewTranslator(cfg Config) *Translator {
	attrs := cfg.PromoteResourceAttributes
	if cfg.PromoteAllResourceAttributes {
		attrs = cfg.IgnoreResourceAttributes
	}
	promote := make(map[string]bool, len(attrs))
	for _, a := range attrs {
		promote[a] = true
	}
	return &Translator{
		cfg:         cfg,
		promote:     promote,
		metricNamer: otlptranslator.NewMetricNamer("", cfg.TranslationStrategy),
		labelNamer: otlptranslator.LabelNamer{
			UTF8Allowed: !cfg.TranslationStrategy.ShouldEscape(),
			// Deprecated in otlptranslator but still the only switch for the
			// behaviour Prometheus exposes as a config key.
			UnderscoreLabelSanitization: cfg.LabelNameUnderscoreSanitization, //nolint:staticcheck
			PreserveMultipleUnderscores: cfg.LabelNamePreserveMultipleUnderscores,
		},
		scratch:        labels.NewScratchBuilder(16),
		exScratch:      labels.NewScratchBuilder(4),
		builder:        labels.NewBuilder(labels.EmptyLabels()),
		nameCache:      make(map[string]string, maxCachedNames),
		index:          make(map[uint64]int),
		collisions:     make(map[uint64][]int),
		hindex:         make(map[uint64][]int),
		mindex:         make(map[string]int),
		seenTargetInfo: make(map[targetInfoKey]struct{}),
	}
}

// maxCachedNames bounds the attribute-name cache: names come from clients,
// and a cache that grows with them is a memory leak.
const maxCachedNames = 1024

// Translate converts md, in this order: data points without a usable
// timestamp are refused (refuseBadTimestamps), delta metrics are converted
// to cumulative ones when delta_temporality is convert (convertDeltas),
// then every metric is translated. md is modified: refused and dropped
// points are removed, converted ones rewritten. The result owns its
// slices: they are never reused.
func (t *Translator) Translate(md pmetric.Metrics) *Translation {
	t.out = &Translation{}
	t.slab = nil
	clear(t.index)
	clear(t.collisions)
	clear(t.hindex)
	clear(t.mindex)
	clear(t.seenTargetInfo)
	defer func() { t.out = nil }()

	t.refuseBadTimestamps(md)
	if t.cfg.DeltaTemporality == DeltaConvert && t.delta != nil {
		t.convertDeltas(md)
	}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		t.translateResource(rms.At(i))
	}
	out := t.out
	if out.moreReasons > 0 {
		out.Reasons = append(out.Reasons, fmt.Sprintf("and %d more", out.moreReasons))
	}
	return out
}

func (t *Translator) translateResource(rm pmetric.ResourceMetrics) {
	resource := rm.Resource()
	sms := rm.ScopeMetrics()
	if err := t.setResource(resource); err != nil {
		n := 0
		for j := range sms.Len() {
			n += countScopeDataPoints(sms.At(j))
		}
		t.reject(n, "resource dropped: %v", err)
		return
	}

	// target_info spans the resource's data points, rejected ones included,
	// as in Prometheus.
	earliest := pcommon.Timestamp(math.MaxUint64)
	latest := pcommon.Timestamp(0)
	for j := range sms.Len() {
		sm := sms.At(j)
		if err := t.setScope(sm); err != nil {
			t.reject(countScopeDataPoints(sm), "scope %q dropped: %v", sm.Scope().Name(), err)
			continue
		}
		ms := sm.Metrics()
		for k := range ms.Len() {
			m := ms.At(k)
			earliest, latest = timeSpan(m, earliest, latest)
			t.translateMetric(m)
		}
	}
	if earliest != pcommon.Timestamp(math.MaxUint64) {
		t.addTargetInfo(resource, earliest, latest)
	}
}

func (t *Translator) translateMetric(m pmetric.Metric) {
	n := countDataPoints(m)
	t.out.DataPoints += n
	if n == 0 {
		return // Prometheus drops an empty metric with a warning only.
	}
	if err := t.checkTemporality(m); err != nil {
		t.reject(n, "%v", err)
		return
	}
	family, err := t.metricNamer.Build(translatorMetric(m))
	if err != nil {
		t.reject(n, "metric %q: %v", m.Name(), err)
		return
	}
	t.addMetadata(m, family)
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		t.addNumberDataPoints(m.Name(), family, m.Gauge().DataPoints(), false)
	case pmetric.MetricTypeSum:
		t.addNumberDataPoints(m.Name(), family, m.Sum().DataPoints(), true)
	case pmetric.MetricTypeHistogram:
		t.addHistogramDataPoints(m.Name(), family, m.Histogram().DataPoints())
	case pmetric.MetricTypeSummary:
		t.addSummaryDataPoints(m.Name(), family, m.Summary().DataPoints())
	case pmetric.MetricTypeExponentialHistogram:
		t.addExponentialHistogramDataPoints(m.Name(), family, m.ExponentialHistogram().DataPoints(), isDelta(m))
	}
}

// checkTemporality accepts what Prometheus accepts: cumulative sums and
// histograms, and delta ones under delta_temporality native (its
// otlp-native-delta-ingestion). Under convert no delta metric is left by
// now (convertDeltas). Unspecified temporality is always refused.
func (t *Translator) checkTemporality(m pmetric.Metric) error {
	temp, ok := temporality(m)
	if !ok {
		return nil
	}
	switch temp {
	case pmetric.AggregationTemporalityCumulative:
		return nil
	case pmetric.AggregationTemporalityDelta:
		switch {
		case t.cfg.DeltaTemporality == DeltaNative:
			return nil
		case t.cfg.DeltaTemporality == DeltaConvert:
			return fmt.Errorf("metric %q: delta temporality refused: no delta conversion state in this translator", m.Name())
		}
		return fmt.Errorf("metric %q: delta temporality refused: otlp.delta_temporality is %q (set convert or native, or send cumulative)", m.Name(), t.cfg.DeltaTemporality)
	default:
		return fmt.Errorf("metric %q: invalid temporality %s for a %s", m.Name(), temp, m.Type())
	}
}

// translatorMetric describes m to otlptranslator's namer, mapping kinds as
// Prometheus does.
func translatorMetric(m pmetric.Metric) otlptranslator.Metric {
	tm := otlptranslator.Metric{Name: m.Name(), Unit: m.Unit(), Type: otlptranslator.MetricTypeUnknown}
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		tm.Type = otlptranslator.MetricTypeGauge
	case pmetric.MetricTypeSum:
		tm.Type = otlptranslator.MetricTypeNonMonotonicCounter
		if m.Sum().IsMonotonic() {
			tm.Type = otlptranslator.MetricTypeMonotonicCounter
		}
	case pmetric.MetricTypeHistogram:
		tm.Type = otlptranslator.MetricTypeHistogram
	case pmetric.MetricTypeSummary:
		tm.Type = otlptranslator.MetricTypeSummary
	case pmetric.MetricTypeExponentialHistogram:
		tm.Type = otlptranslator.MetricTypeExponentialHistogram
	}
	return tm
}

// appendSample adds one sample to the series with labels ls, creating the
// series on first sight; st is its start timestamp (ms, from the data
// point's start_time_unix_nano; 0: none), which the store keeps with it
// (and checks). The index keeps one int per series (no slice): distinct
// label sets sharing a 64-bit hash are rare enough for a side map.
func (t *Translator) appendSample(ls labels.Labels, ts, st int64, v float64) {
	h := ls.Hash()
	if i, ok := t.index[h]; ok {
		if labels.Equal(t.out.Series[i].Labels, ls) {
			t.addTo(i, ts, st, v)
			return
		}
		for _, i := range t.collisions[h] {
			if labels.Equal(t.out.Series[i].Labels, ls) {
				t.addTo(i, ts, st, v)
				return
			}
		}
		t.collisions[h] = append(t.collisions[h], len(t.out.Series))
	} else {
		t.index[h] = len(t.out.Series)
	}
	// Most series get one sample per request: carve their slices from a
	// shared slab (capacity 1 each, so a second sample reallocates instead
	// of overwriting a neighbour).
	if len(t.slab) == 0 {
		t.slab = make([]actastore.Sample, slabSamples)
	}
	one := t.slab[:1:1]
	t.slab = t.slab[1:]
	one[0] = actastore.Sample{T: ts, V: v}
	t.out.Series = append(t.out.Series, actastore.SeriesSamples{Labels: ls, Samples: one})
	t.out.Samples++
	if st != 0 {
		t.out.Series[len(t.out.Series)-1].Starts = []actastore.StartTime{{T: ts, ST: st}}
	}
}

// slabSamples is the first-sample slab size: one allocation per this many
// new series.
const slabSamples = 256

func (t *Translator) addTo(i int, ts, st int64, v float64) {
	t.out.Series[i].Samples = append(t.out.Series[i].Samples, actastore.Sample{T: ts, V: v})
	t.out.Samples++
	if st != 0 {
		t.out.Series[i].Starts = append(t.out.Series[i].Starts, actastore.StartTime{T: ts, ST: st})
	}
}

func (t *Translator) reject(n int, format string, args ...any) {
	t.out.Rejected += n
	msg := fmt.Sprintf(format, args...)
	for _, r := range t.out.Reasons {
		if r == msg {
			return
		}
	}
	if len(t.out.Reasons) < maxReasons {
		t.out.Reasons = append(t.out.Reasons, msg)
	} else {
		t.out.moreReasons++
	}
}

// msTimestamp converts OTLP nanoseconds to Prometheus milliseconds,
// truncating as Prometheus does.
func msTimestamp(ts pcommon.Timestamp) int64 { return int64(ts) / 1_000_000 }

func countScopeDataPoints(sm pmetric.ScopeMetrics) int {
	n := 0
	ms := sm.Metrics()
	for k := range ms.Len() {
		n += countDataPoints(ms.At(k))
	}
	return n
}

func countDataPoints(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	}
	return 0
}

// timeSpan widens [lo, hi] to m's data point timestamps.
func timeSpan(m pmetric.Metric, lo, hi pcommon.Timestamp) (pcommon.Timestamp, pcommon.Timestamp) {
	see := func(ts pcommon.Timestamp) { lo, hi = min(lo, ts), max(hi, ts) }
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		dps := m.Gauge().DataPoints()
		for i := range dps.Len() {
			see(dps.At(i).Timestamp())
		}
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		for i := range dps.Len() {
			see(dps.At(i).Timestamp())
		}
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := range dps.Len() {
			see(dps.At(i).Timestamp())
		}
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		for i := range dps.Len() {
			see(dps.At(i).Timestamp())
		}
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			see(dps.At(i).Timestamp())
		}
	}
	return lo, hi
}
