package remoteread

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/acta-remote/acta-remote/actastore"
)

// LocalOnlyHeader asks an acta-remote writer's remote read to answer from
// its head and local files only, skipping files whose local copy is gone
// (a query instance reads those from the bucket itself).
const LocalOnlyHeader = "X-Acta-Local-Only"

// Remote is a Querier over a remote-read endpoint (another acta-remote,
// or Prometheus), through Prometheus's own remote-read client
// (storage/remote): a query instance's fan-out to live writers.
type Remote struct {
	url string
	c   remote.ReadClient
}

// RemoteOptions configure a Remote.
type RemoteOptions struct {
	Timeout         time.Duration
	BearerTokenFile string // "Authorization: Bearer <file contents>"
	CAFile          string // PEM CAs for an https URL
	LocalOnly       bool   // send LocalOnlyHeader
}

// NewRemote returns a Querier reading from rawURL (…/api/v1/read).
func NewRemote(name, rawURL string, o RemoteOptions) (*Remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("remote read %s: %w", rawURL, err)
	}
	hc := config_util.DefaultHTTPClientConfig
	if o.BearerTokenFile != "" {
		hc.Authorization = &config_util.Authorization{Type: "Bearer", CredentialsFile: o.BearerTokenFile}
	}
	hc.TLSConfig.CAFile = o.CAFile
	// ChunkedReadLimit: Prometheus's default for remote_read
	// (chunked_read_limit), the largest frame taken from the stream.
	cc := &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(o.Timeout), HTTPClientConfig: hc,
		ChunkedReadLimit: promconfig.DefaultChunkedReadLimit}
	if o.LocalOnly {
		cc.Headers = map[string]string{LocalOnlyHeader: "1"}
	}
	c, err := remote.NewReadClient(name, cc)
	if err != nil {
		return nil, fmt.Errorf("remote read %s: %w", rawURL, err)
	}
	return &Remote{url: rawURL, c: c}, nil
}

// Select reads the matching series in [mint, maxt] (ms, inclusive) from
// the endpoint, sorted by labels, every sample and histogram as sent.
func (r *Remote) Select(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) actastore.SeriesSet {
	q, err := remote.ToQuery(mint, maxt, ms, nil)
	if err != nil {
		return actastore.NewSeriesSet(nil, fmt.Errorf("remote read %s: %w", r.url, err))
	}
	ss, err := r.c.Read(ctx, q, true)
	if err != nil {
		return actastore.NewSeriesSet(nil, fmt.Errorf("remote read %s: %w", r.url, err))
	}
	var out []actastore.Series
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		var fs []actastore.Sample
		var hs []actastore.HistogramSample
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				fs = append(fs, actastore.Sample{T: t, V: v})
			case chunkenc.ValHistogram:
				t, h := it.AtHistogram(nil)
				hs = append(hs, actastore.HistogramSample{T: t, H: h})
			case chunkenc.ValFloatHistogram:
				t, h := it.AtFloatHistogram(nil)
				hs = append(hs, actastore.HistogramSample{T: t, FH: h})
			}
		}
		if err := it.Err(); err != nil {
			return actastore.NewSeriesSet(nil, fmt.Errorf("remote read %s: %w", r.url, err))
		}
		out = append(out, actastore.NewSeries(s.Labels(), fs, hs))
	}
	if err := ss.Err(); err != nil {
		return actastore.NewSeriesSet(nil, fmt.Errorf("remote read %s: %w", r.url, err))
	}
	slices.SortFunc(out, func(a, b actastore.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return actastore.NewSeriesSet(out, nil)
}

var _ actastore.Querier = (*Remote)(nil)
