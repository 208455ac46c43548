package otlp

import (
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Resource attributes that identify the target (OTel semantic conventions);
// they become job and instance, as in Prometheus.
const (
	attrServiceName       = "service.name"
	attrServiceNamespace  = "service.namespace"
	attrServiceInstanceID = "service.instance.id"
)

const targetInfoName = "target_info"

// targetInfoInterval spaces target_info samples: half of PromQL's default
// 5m lookback delta, as Prometheus does, so a target_info sample is in reach
// at every instant of the span.
const targetInfoInterval = 5 * time.Minute / 2

// maxTargetInfoSamples caps target_info samples per resource. Prometheus has
// no cap, so one data point at timestamp 0 beside a current one would ask
// for ~11 million samples; past the cap we keep only the newest part of the
// span, on the same grid. Real batches span seconds, far below the cap.
const maxTargetInfoSamples = 100

// resourceLabels are computed once per ResourceMetrics.
type resourceLabels struct {
	job, instance string
	promoted      labels.Labels
}

// scopeLabels are computed once per ScopeMetrics, when scope metadata is
// promoted and the scope has a name.
type scopeLabels struct {
	name, version, schemaURL string
	attrs                    labels.Labels // otel_scope_<attribute>
}

type targetInfoKey struct {
	hash uint64
	ms   int64
}

func (t *Translator) setResource(r pcommon.Resource) error {
	attrs := r.Attributes()
	t.res = resourceLabels{}
	if v, ok := attrs.Get(attrServiceName); ok {
		job := v.AsString()
		if ns, ok := attrs.Get(attrServiceNamespace); ok {
			job = ns.AsString() + "/" + job
		}
		t.res.job = job
	}
	if v, ok := attrs.Get(attrServiceInstanceID); ok {
		t.res.instance = v.AsString()
	}
	if !t.cfg.PromoteAllResourceAttributes && len(t.promote) == 0 {
		return nil
	}
	t.builder.Reset(labels.EmptyLabels())
	var err error
	attrs.Range(func(k string, v pcommon.Value) bool {
		// t.promote lists the ignored attributes when promoting all.
		if t.promote[k] == t.cfg.PromoteAllResourceAttributes {
			return true
		}
		var name string
		if name, err = t.labelName(k); err != nil {
			return false
		}
		t.builder.Set(name, v.AsString())
		return true
	})
	if err != nil {
		return err
	}
	t.res.promoted = t.builder.Labels()
	return nil
}

func (t *Translator) setScope(sm pmetric.ScopeMetrics) error {
	s := sm.Scope()
	t.scope = nil
	if !t.cfg.PromoteScopeMetadata || s.Name() == "" {
		return nil
	}
	t.builder.Reset(labels.EmptyLabels())
	var err error
	s.Attributes().Range(func(k string, v pcommon.Value) bool {
		var name string
		if name, err = t.labelName("otel_scope_" + k); err != nil {
			return false
		}
		t.builder.Set(name, v.AsString())
		return true
	})
	if err != nil {
		return err
	}
	t.scope = &scopeLabels{
		name:      s.Name(),
		version:   s.Version(),
		schemaURL: sm.SchemaUrl(),
		attrs:     t.builder.Labels(),
	}
	return nil
}

// labelName escapes an attribute name per the translation strategy.
func (t *Translator) labelName(attr string) (string, error) {
	if name, ok := t.nameCache[attr]; ok {
		return name, nil
	}
	name, err := t.labelNamer.Build(attr)
	if err != nil {
		return "", err
	}
	if len(t.nameCache) >= maxCachedNames {
		clear(t.nameCache)
	}
	t.nameCache[attr] = name
	return name, nil
}

// attributeLabels builds a series' labels the way Prometheus's
// createAttributes does, in the same order, since later steps override
// earlier ones:
//
//  1. the attributes except ignored ones, sorted by name and escaped;
//     attributes that escape to the same name join their values with ';'
//  2. promoted resource attributes, where the name is still free
//  3. job and instance, always winning
//  4. scope labels when promoted, always winning
//  5. name, when given, as __name__
//
// An empty value removes a label, as labels.Builder does in Prometheus.
func (t *Translator) attributeLabels(attrs pcommon.Map, ignore []string, promoted bool, scope *scopeLabels, name string) (labels.Labels, error) {
	t.scratch.Reset()
	attrs.Range(func(k string, v pcommon.Value) bool {
		for _, ig := range ignore {
			if k == ig {
				return true
			}
		}
		t.scratch.Add(k, v.AsString())
		return true
	})
	t.scratch.Sort()
	sorted := t.scratch.Labels()

	if t.labelNamer.UTF8Allowed {
		t.builder.Reset(sorted)
	} else {
		t.builder.Reset(labels.EmptyLabels())
		var err error
		sorted.Range(func(l labels.Label) {
			if err != nil {
				return
			}
			var key string
			if key, err = t.labelName(l.Name); err != nil {
				return
			}
			if prev := t.builder.Get(key); prev != "" {
				t.builder.Set(key, prev+";"+l.Value)
			} else {
				t.builder.Set(key, l.Value)
			}
		})
		if err != nil {
			return labels.EmptyLabels(), err
		}
	}
	if promoted {
		t.res.promoted.Range(func(l labels.Label) {
			if t.builder.Get(l.Name) == "" {
				t.builder.Set(l.Name, l.Value)
			}
		})
	}
	if t.res.job != "" {
		t.builder.Set(model.JobLabel, t.res.job)
	}
	if t.res.instance != "" {
		t.builder.Set(model.InstanceLabel, t.res.instance)
	}
	if scope != nil {
		scope.attrs.Range(func(l labels.Label) { t.builder.Set(l.Name, l.Value) })
		t.builder.Set("otel_scope_name", scope.name)
		t.builder.Set("otel_scope_version", scope.version)
		t.builder.Set("otel_scope_schema_url", scope.schemaURL)
	}
	if name != "" {
		t.builder.Set(model.MetricNameLabel, name)
	}
	return t.builder.Labels(), nil
}

// dataPointLabels is attributeLabels for a data point: __name__ attributes
// are ignored (the metric name wins) and resource promotion applies.
func (t *Translator) dataPointLabels(attrs pcommon.Map, name string) (labels.Labels, error) {
	return t.attributeLabels(attrs, ignoreForDataPoints, true, t.scope, name)
}

var ignoreForDataPoints = []string{model.MetricNameLabel}

// withName returns base plus __name__=name and the extra pairs (le,
// quantile), which are set as given, not escaped.
func (t *Translator) withName(base labels.Labels, name string, extra ...string) labels.Labels {
	t.builder.Reset(base)
	for i := 0; i+1 < len(extra); i += 2 {
		t.builder.Set(extra[i], extra[i+1])
	}
	t.builder.Set(model.MetricNameLabel, name)
	return t.builder.Labels()
}

var identifyingAttrs = []string{attrServiceNamespace, attrServiceName, attrServiceInstanceID}

// addTargetInfo writes the resource's attributes as target_info samples
// (value 1) across [earliest, latest], every targetInfoInterval plus one at
// latest, as Prometheus does. It writes nothing when disabled, when the
// resource has only identifying attributes, or when there is neither job
// nor instance to join on.
func (t *Translator) addTargetInfo(r pcommon.Resource, earliest, latest pcommon.Timestamp) {
	if !t.cfg.TargetInfo {
		return
	}
	attrs := r.Attributes()
	other := attrs.Len()
	for _, a := range identifyingAttrs {
		if _, ok := attrs.Get(a); ok {
			other--
		}
	}
	if other == 0 {
		return
	}
	ignore := identifyingAttrs
	if t.cfg.KeepIdentifyingResourceAttributes {
		ignore = nil
	}
	// No promoted attributes and no scope labels: target_info describes the
	// resource alone.
	ls, err := t.attributeLabels(attrs, ignore, false, nil, targetInfoName)
	if err != nil {
		t.reject(0, "target_info dropped: %v", err)
		return
	}
	if !ls.Has(model.JobLabel) && !ls.Has(model.InstanceLabel) {
		return
	}
	t.setMetadata(targetInfoName, targetInfoMetadata)

	hash := ls.Hash()
	emit := func(ms int64) {
		key := targetInfoKey{hash: hash, ms: ms}
		if _, dup := t.seenTargetInfo[key]; dup {
			return
		}
		t.seenTargetInfo[key] = struct{}{}
		t.appendSample(ls, ms, 0, 1)
	}
	from, to := earliest.AsTime(), latest.AsTime()
	if span := to.Sub(from); span > maxTargetInfoSamples*targetInfoInterval {
		skip := span/targetInfoInterval - maxTargetInfoSamples + 1
		from = from.Add(skip * targetInfoInterval)
	}
	// The count guards spans too long for time.Duration, which saturates.
	for ts, n := from, 0; ts.Before(to) && n < maxTargetInfoSamples; ts, n = ts.Add(targetInfoInterval), n+1 {
		emit(ts.UnixMilli())
	}
	emit(to.UnixMilli())
}
