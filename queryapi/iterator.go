package queryapi

import (
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/actastore"
)

// A series' samples reach the engine through Prometheus's own iterator
// over points in memory (promql.StorageSeries): the store's float samples
// and native histograms, each sorted by timestamp, merged by it. (Writing
// our own chunkenc.Iterator is not an option: its Seek(int64) method
// trips go vet's io.Seeker check.)
//
// Values keep their exact bits, stale markers included: the engine
// recognises a stale float (value.IsStaleNaN) or a histogram with a stale
// sum itself, as it does over its own TSDB. Integer histograms are handed
// over converted to float histograms, which is what the engine reads them
// as (AtFloatHistogram) from Prometheus's chunks too. Prometheus keeps one
// sample per timestamp; should the store hold a float and a histogram at
// the same timestamp, the float is kept (the order remote read sends them
// in, float first).

// points reads s's samples into the engine's point form. dst's slices are
// reused.
func points(dst *promql.Series, s actastore.Series) error {
	dst.Metric = s.Labels()
	dst.Floats, dst.Histograms = dst.Floats[:0], dst.Histograms[:0]
	it := s.Iterator()
	for it.Next() {
		t, v := it.At()
		dst.Floats = append(dst.Floats, promql.FPoint{T: t, F: v})
	}
	if err := it.Err(); err != nil {
		return storeErr(err, "reading series "+s.Labels().String())
	}
	hs, ok := s.(actastore.HistogramSeries)
	if !ok {
		return nil
	}
	hit := hs.HistogramIterator()
	fl := dst.Floats
	for hit.Next() {
		x := hit.At()
		for len(fl) > 0 && fl[0].T < x.T {
			fl = fl[1:]
		}
		if len(fl) > 0 && fl[0].T == x.T {
			continue // a float at this timestamp: it wins
		}
		p := promql.HPoint{T: x.T, H: x.FH}
		if x.H != nil {
			p.H = x.H.ToFloat(nil)
		}
		dst.Histograms = append(dst.Histograms, p)
	}
	if err := hit.Err(); err != nil {
		return storeErr(err, "reading the histograms of series "+s.Labels().String())
	}
	return nil
}

// pointsIterator is Prometheus's iterator over a series' points plus the
// point slices it iterates, which the next series handed this iterator
// for reuse (the engine passes the previous series' iterator once it is
// done with it) reads into. Every method comes from the embedded iterator.
type pointsIterator struct {
	chunkenc.Iterator
	ps promql.Series
}

// iteratorOf reads s into reuse's buffers when reuse is a pointsIterator,
// or into new ones.
func iteratorOf(s actastore.Series, reuse chunkenc.Iterator) chunkenc.Iterator {
	it, ok := reuse.(*pointsIterator)
	if !ok {
		it = &pointsIterator{}
	}
	if err := points(&it.ps, s); err != nil {
		return newErrIterator(err)
	}
	it.Iterator = promql.NewStorageSeries(it.ps).Iterator(it.Iterator)
	return it
}

// errIterator is an iterator that ends at once with err; its other
// methods come from chunkenc's empty iterator.
type errIterator struct {
	chunkenc.Iterator
	err error
}

func (e errIterator) Err() error { return e.err }

func newErrIterator(err error) chunkenc.Iterator {
	return errIterator{Iterator: chunkenc.NewNopIterator(), err: err}
}
