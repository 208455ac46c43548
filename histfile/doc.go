// Package histfile converts Prometheus native histograms (integer and float,
// every schema including custom buckets, -53) to and from the columns of a
// histogram series file (an Acta v0.2 file), and to and from the compact
// binary form the store's WAL records carry. It does no I/O.
//
// Every field of model/histogram.{Histogram,FloatHistogram} survives a round
// trip exactly: float fields keep their IEEE 754 bits (the stale NaN in Sum
// included), spans keep zero-length spans and their offsets, integer bucket
// counts stay deltas as prompb.Histogram and model/histogram carry them.
// Layout: docs/format/histogram.md.
package histfile
