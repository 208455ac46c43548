package main

// Shape groups: the value kinds of the generated data (gen_values.go)
// gathered as the figures name them. Each group is ingested alone
// into a fresh instance of every system, so its disk cost per sample is
// measured the same way for all of them (VictoriaMetrics and Prometheus
// share files between series; only a run of its own isolates a shape).
var shapeGroups = []struct {
	name  string
	kinds []valueKind
}{
	{"counters", []valueKind{kindCounterInt, kindCounterDec}},
	{"gauges", []valueKind{kindGaugeInt, kindGaugeDec}},
	{"float_noise", []valueKind{kindGaugeFloat, kindClock}},
	{"constants", []valueKind{kindConst, kindStartTime}},
	{"histogram_buckets", []valueKind{kindHistogram}},
}

// inGroup reports whether series i of d belongs to shape group g.
func inGroup(d *Dataset, g int, i int) bool {
	for _, k := range shapeGroups[g].kinds {
		if d.kinds[i] == k {
			return true
		}
	}
	return false
}

// groupSeries counts the series of shape group g.
func groupSeries(d *Dataset, g int) int {
	n := 0
	for i := range d.NumSeries() {
		if inGroup(d, g, i) {
			n++
		}
	}
	return n
}
