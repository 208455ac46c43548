package remoteread

import (
	"fmt"
	"net/http"

	"github.com/acta-remote/acta-remote/apistatus"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// samples answers with one snappy-compressed ReadResponse holding a
// QueryResult per query, in request order. The whole answer is built in
// memory, which the per-query sample limit bounds.
func (h *Handler) samples(w http.ResponseWriter, r *http.Request, queries []query) {
	resp := prompb.ReadResponse{Results: make([]*prompb.QueryResult, len(queries))}
	var total int64
	for i, q := range queries {
		res, n, err := h.selectSamples(r, i, q)
		if err != nil {
			apistatus.WriteText(w, apistatus.RemoteRead, err)
			return
		}
		resp.Results[i] = res
		total += n
	}
	data, err := resp.Marshal()
	if err != nil {
		apistatus.WriteText(w, apistatus.RemoteRead, fmt.Errorf("cannot marshal ReadResponse: %w", err))
		return
	}
	out := snappy.Encode(nil, data)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Header().Set("Content-Encoding", "snappy")
	if _, err := w.Write(out); err != nil {
		h.log.Debug("remote read: client went away", "err", err)
		return
	}
	h.m.samples.Add(float64(total))
}

func (h *Handler) selectSamples(r *http.Request, idx int, q query) (*prompb.QueryResult, int64, error) {
	ss := h.q.Select(r.Context(), q.mint, q.maxt, q.matchers...)
	defer ss.Close()
	b := budget{lim: &h.lim, query: idx}
	res := &prompb.QueryResult{}
	for ss.Next() {
		if err := b.addSeries(); err != nil {
			return nil, 0, err
		}
		s := ss.At()
		ts := &prompb.TimeSeries{Labels: prompb.FromLabels(s.Labels(), nil)}
		it := s.Iterator()
		for it.Next() {
			if err := b.addSample(); err != nil {
				return nil, 0, err
			}
			t, v := it.At()
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: t, Value: v})
		}
		if err := it.Err(); err != nil {
			return nil, 0, fmt.Errorf("query %d: reading series %s: %w", idx, s.Labels(), err)
		}
		hit, ok, err := histogramsOf(s)
		if err == nil && ok {
			err = appendHistograms(ts, hit, &b)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("query %d: reading series %s: %w", idx, s.Labels(), err)
		}
		res.Timeseries = append(res.Timeseries, ts)
	}
	if err := ss.Err(); err != nil {
		return nil, 0, selectErr(idx, err)
	}
	return res, b.samples, nil
}
