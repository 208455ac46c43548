package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// matcher is an equality or regular-expression label matcher.
type matcher struct {
	Name, Value string
	Re          bool
}

// seriesSet maps a series' labels (labels.String) to its samples.
type seriesSet map[string][]Sample

// reader reads series back from one system, asking for remote read's
// SAMPLES answer when samples is set (STREAMED_XOR_CHUNKS otherwise). The
// returned duration is the time to the last byte of the answer: what the
// server costs, not how fast this program decodes JSON or protobuf. A
// system without that kind of answer returns errNoSuchRead.
type reader func(ms []matcher, mint, maxt int64, samples bool) (seriesSet, time.Duration, error)

// errNoSuchRead: the system has no such read (VictoriaMetrics has no
// remote read, so no SAMPLES answer either); the query is left out.
var errNoSuchRead = errors.New("not offered by this system")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// answerBuf holds a reader's answers, one at a time: each read goes into
// the memory of the one before. A read's time to the last byte is then the
// server's and loopback's, not this program's heap growing into fresh
// pages: on this VM a fresh page costs about 10 µs, and io.ReadAll growing
// a new 60 MB buffer added 0.3-1 s to every system's all-series read (the
// decoding between reads frees the old one). The untimed first read of
// each query grows it. Not safe for concurrent use; what is decoded from
// its bytes is copied out of them (prompb and encoding/json copy).
type answerBuf struct{ b bytes.Buffer }

// read returns r's bytes, valid until the next read.
func (a *answerBuf) read(r io.Reader) ([]byte, error) {
	a.b.Reset()
	_, err := a.b.ReadFrom(r)
	return a.b.Bytes(), err
}

// remoteReader reads with Prometheus remote read, asking for
// STREAMED_XOR_CHUNKS as Prometheus's own client does, or SAMPLES.
func remoteReader(client *http.Client, readURL string) reader {
	var ab answerBuf
	return func(ms []matcher, mint, maxt int64, samples bool) (seriesSet, time.Duration, error) {
		q := &prompb.Query{StartTimestampMs: mint, EndTimestampMs: maxt}
		for _, m := range ms {
			typ := prompb.LabelMatcher_EQ
			if m.Re {
				typ = prompb.LabelMatcher_RE
			}
			q.Matchers = append(q.Matchers, &prompb.LabelMatcher{Type: typ, Name: m.Name, Value: m.Value})
		}
		typ := prompb.ReadRequest_STREAMED_XOR_CHUNKS
		if samples {
			typ = prompb.ReadRequest_SAMPLES
		}
		rr := &prompb.ReadRequest{Queries: []*prompb.Query{q}, AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{typ}}
		raw, err := rr.Marshal()
		if err != nil {
			return nil, 0, err
		}
		req, err := http.NewRequest(http.MethodPost, readURL, bytes.NewReader(snappy.Encode(nil, raw)))
		if err != nil {
			return nil, 0, err
		}
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return nil, 0, err
		}
		body, err := ab.read(resp.Body)
		resp.Body.Close()
		took := time.Since(t0)
		if err != nil {
			return nil, took, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, took, fmt.Errorf("remote read: HTTP %d: %.300s", resp.StatusCode, body)
		}
		var set seriesSet
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-streamed-protobuf") {
			set, err = decodeChunked(body, mint, maxt)
		} else {
			set, err = decodeSamples(body)
		}
		return set, took, err
	}
}

// decodeChunked decodes frames of uvarint(length), big-endian CRC-32C and a
// ChunkedReadResponse, keeping samples within [mint, maxt]: chunks are
// whole, so they may reach outside the asked range.
func decodeChunked(body []byte, mint, maxt int64) (seriesSet, error) {
	set := seriesSet{}
	for len(body) > 0 {
		n, k := binary.Uvarint(body)
		if k <= 0 || uint64(len(body)-k) < 4+n {
			return nil, fmt.Errorf("remote read: truncated frame at %d bytes from the end", len(body))
		}
		sum := binary.BigEndian.Uint32(body[k:])
		frame := body[k+4 : k+4+int(n)]
		body = body[k+4+int(n):]
		if crc32.Checksum(frame, castagnoli) != sum {
			return nil, fmt.Errorf("remote read: frame checksum mismatch")
		}
		var cr prompb.ChunkedReadResponse
		if err := cr.Unmarshal(frame); err != nil {
			return nil, err
		}
		for _, cs := range cr.ChunkedSeries {
			key := pbLabels(cs.Labels).String()
			for _, c := range cs.Chunks {
				if c.Type != prompb.Chunk_XOR {
					return nil, fmt.Errorf("remote read: chunk encoding %s, want XOR", c.Type)
				}
				ch, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
				if err != nil {
					return nil, err
				}
				it := ch.Iterator(nil)
				for it.Next() == chunkenc.ValFloat {
					t, v := it.At()
					if t >= mint && t <= maxt {
						set[key] = append(set[key], Sample{T: t, V: v})
					}
				}
				if it.Err() != nil {
					return nil, it.Err()
				}
			}
		}
	}
	return set, nil
}

func decodeSamples(body []byte) (seriesSet, error) {
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, err
	}
	var rr prompb.ReadResponse
	if err := rr.Unmarshal(raw); err != nil {
		return nil, err
	}
	set := seriesSet{}
	for _, r := range rr.Results {
		for _, ts := range r.Timeseries {
			key := pbLabels(ts.Labels).String()
			for _, s := range ts.Samples {
				set[key] = append(set[key], Sample{T: s.Timestamp, V: s.Value})
			}
		}
	}
	return set, nil
}

func pbLabels(ls []prompb.Label) labels.Labels {
	b := labels.NewScratchBuilder(len(ls))
	for _, l := range ls {
		b.Add(l.Name, l.Value)
	}
	b.Sort()
	return b.Labels()
}

// vmExportReader reads raw samples with VictoriaMetrics's /api/v1/export
// (JSON lines), its documented way of getting stored samples back: it has
// no remote read.
func vmExportReader(client *http.Client, base string) reader {
	var ab answerBuf
	return func(ms []matcher, mint, maxt int64, samples bool) (seriesSet, time.Duration, error) {
		if samples {
			return nil, 0, errNoSuchRead
		}
		var sel []string
		for _, m := range ms {
			op := "="
			if m.Re {
				op = "=~"
			}
			sel = append(sel, m.Name+op+strconv.Quote(m.Value))
		}
		v := url.Values{}
		v.Set("match[]", "{"+strings.Join(sel, ",")+"}")
		v.Set("start", msToSeconds(mint))
		v.Set("end", msToSeconds(maxt))
		t0 := time.Now()
		resp, err := client.Get(base + "/api/v1/export?" + v.Encode())
		if err != nil {
			return nil, 0, err
		}
		body, err := ab.read(resp.Body)
		resp.Body.Close()
		took := time.Since(t0)
		if err != nil {
			return nil, took, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, took, fmt.Errorf("export: HTTP %d: %.300s", resp.StatusCode, body)
		}
		set := seriesSet{}
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 256<<20)
		for sc.Scan() {
			var line struct {
				Metric     map[string]string `json:"metric"`
				Values     []json.Number     `json:"values"`
				Timestamps []int64           `json:"timestamps"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				return nil, took, fmt.Errorf("export: %v", err)
			}
			key := labels.FromMap(line.Metric).String()
			for i, n := range line.Values {
				f, err := strconv.ParseFloat(n.String(), 64)
				if err != nil {
					return nil, took, fmt.Errorf("export: value %q: %v", n, err)
				}
				set[key] = append(set[key], Sample{T: line.Timestamps[i], V: f})
			}
		}
		return set, took, sc.Err()
	}
}

// msToSeconds formats ms as the seconds-with-fraction VictoriaMetrics
// parses, without losing the milliseconds.
func msToSeconds(ms int64) string {
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}
