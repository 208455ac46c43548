package remoteread

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"

	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Wire constants of STREAMED_XOR_CHUNKS (Prometheus remote read, frozen).
const (
	chunkedContentType = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
	// samplesPerChunk matches Prometheus's head chunks, so a reader sees
	// the chunk sizes it is used to.
	samplesPerChunk = 120
)

// castagnoli is built once: crc32 picks its fast path by table identity.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameWriter writes one frame per message:
//
//	uvarint(len(msg)) | CRC-32C(msg), big-endian uint32 | msg
type frameWriter struct {
	w       io.Writer
	f       http.Flusher // may be nil
	hdr     [binary.MaxVarintLen64 + 4]byte
	started bool // bytes (so the 200 status) went out: errors can no longer be answered
}

func (fw *frameWriter) write(msg []byte) error {
	n := binary.PutUvarint(fw.hdr[:], uint64(len(msg)))
	binary.BigEndian.PutUint32(fw.hdr[n:], crc32.Checksum(msg, castagnoli))
	fw.started = true
	if _, err := fw.w.Write(fw.hdr[:n+4]); err != nil {
		return err
	}
	if _, err := fw.w.Write(msg); err != nil {
		return err
	}
	// Flush per frame so the client decodes while we read the next series,
	// and the server never buffers more than a frame.
	if fw.f != nil {
		fw.f.Flush()
	}
	return nil
}

// streamChunks answers with one frame per series, or several when a series'
// chunks exceed MaxBytesPerFrame. Series come sorted by labels from the store,
// which the streamed protocol requires.
func (h *Handler) streamChunks(w http.ResponseWriter, r *http.Request, queries []query) {
	w.Header().Set("Content-Type", chunkedContentType)
	fl, _ := w.(http.Flusher)
	fw := &frameWriter{w: w, f: fl}
	st := &streamState{}
	for i, q := range queries {
		if err := h.streamQuery(r, fw, st, i, q); err != nil {
			if !fw.started {
				writeError(w, err)
				return
			}
			// Returning normally would make a cut stream look complete to the
			// client; aborting resets the connection.
			h.log.Error("remote read: stream failed after it started", "query", i, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
}

// streamState is scratch kept across a request's series.
type streamState struct {
	lbls []prompb.Label
	chks []prompb.Chunk
	buf  []byte
}

func (h *Handler) streamQuery(r *http.Request, fw *frameWriter, st *streamState, idx int, q query) error {
	ss := h.q.Select(r.Context(), q.mint, q.maxt, q.matchers...)
	defer ss.Close()
	b := budget{lim: &h.lim, query: idx}
	for ss.Next() {
		if err := b.addSeries(); err != nil {
			return err
		}
		s := ss.At()
		st.lbls = prompb.FromLabels(s.Labels(), st.lbls[:0])
		maxData := h.lim.MaxBytesPerFrame
		for _, l := range st.lbls {
			maxData -= l.Size()
		}
		left := maxData
		st.chks = st.chks[:0]
		if hit, ok, err := histogramsOf(s); err != nil {
			return fmt.Errorf("query %d: reading series %s: %w", idx, s.Labels(), err)
		} else if ok {
			if err := h.streamHistogramSeries(fw, st, idx, &b, s, hit, maxData); err != nil {
				return err
			}
			continue
		}

		var (
			c          = chunkenc.NewXORChunk()
			app, _     = c.Appender()
			n          int
			mint, maxt int64
		)
		cut := func() error {
			st.chks = append(st.chks, prompb.Chunk{MinTimeMs: mint, MaxTimeMs: maxt, Type: prompb.Chunk_XOR, Data: c.Bytes()})
			left -= st.chks[len(st.chks)-1].Size()
			c = chunkenc.NewXORChunk() // the cut chunk's bytes stay referenced until sent
			app, _ = c.Appender()
			n = 0
			if left > 0 {
				return nil
			}
			left = maxData
			return h.sendFrame(fw, st, idx)
		}
		it := s.Iterator()
		for it.Next() {
			if err := b.addSample(); err != nil {
				return err
			}
			t, v := it.At()
			if n == 0 {
				mint = t
			}
			app.Append(0, t, v)
			maxt = t
			n++
			if n == samplesPerChunk {
				if err := cut(); err != nil {
					return err
				}
			}
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("query %d: reading series %s: %w", idx, s.Labels(), err)
		}
		if n > 0 {
			if err := cut(); err != nil {
				return err
			}
		}
		if len(st.chks) > 0 {
			if err := h.sendFrame(fw, st, idx); err != nil {
				return err
			}
		}
	}
	if err := ss.Err(); err != nil {
		return selectErr(idx, err)
	}
	h.m.samples.Add(float64(b.samples))
	return nil
}

func (h *Handler) sendFrame(fw *frameWriter, st *streamState, idx int) error {
	if len(st.chks) == 0 {
		return nil
	}
	resp := prompb.ChunkedReadResponse{
		ChunkedSeries: []*prompb.ChunkedSeries{{Labels: st.lbls, Chunks: st.chks}},
		QueryIndex:    int64(idx),
	}
	size := resp.Size()
	if cap(st.buf) < size {
		st.buf = make([]byte, size)
	}
	n, err := resp.MarshalToSizedBuffer(st.buf[:size])
	if err != nil {
		return fmt.Errorf("cannot marshal ChunkedReadResponse: %w", err)
	}
	st.chks = st.chks[:0]
	h.m.frames.Inc()
	if err := fw.write(st.buf[size-n : size]); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}
