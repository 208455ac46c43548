package remoteread

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/xorchunk"
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

// flushBytes is how many bytes of frames are gathered before they are
// written and flushed: one write per 64 KiB instead of one per series
// saves most of the syscalls of a many-series answer. Frames also go out
// whenever the next series is not encoded yet (the client decodes while
// we work), and at the end.
const flushBytes = 64 << 10

// frameWriter writes encoded frames, each
//
//	uvarint(len(msg)) | CRC-32C(msg), big-endian uint32 | msg
type frameWriter struct {
	w       io.Writer
	f       http.Flusher // may be nil
	buf     []byte       // frames not written yet
	started bool         // bytes (so the 200 status) went out: errors can no longer be answered
}

// write queues frames (whole ones, back to back).
func (fw *frameWriter) write(frames []byte) error {
	if len(fw.buf) == 0 && len(frames) >= flushBytes {
		return fw.send(frames)
	}
	fw.buf = append(fw.buf, frames...)
	if len(fw.buf) < flushBytes {
		return nil
	}
	return fw.flush()
}

// flush writes the queued frames.
func (fw *frameWriter) flush() error {
	if len(fw.buf) == 0 {
		return nil
	}
	err := fw.send(fw.buf)
	fw.buf = fw.buf[:0]
	return err
}

// finish writes the queued frames without flushing them: net/http sends
// them with the end of the answer, in one write instead of two (and a
// small answer with a Content-Length), which is a tenth of a one-series
// read.
func (fw *frameWriter) finish() error {
	f := fw.f
	fw.f = nil
	err := fw.flush()
	fw.f = f
	return err
}

func (fw *frameWriter) send(b []byte) error {
	fw.started = true
	if _, err := fw.w.Write(b); err != nil {
		return fmt.Errorf("write frames: %w", err)
	}
	if fw.f != nil {
		fw.f.Flush()
	}
	return nil
}

// streamChunks answers with one frame per series, or several when a series'
// chunks exceed MaxBytesPerFrame. Series come sorted by labels from the store,
// which the streamed protocol requires; they are encoded in parallel and
// written in that order (pipeline.go).
func (h *Handler) streamChunks(w http.ResponseWriter, r *http.Request, queries []query) {
	w.Header().Set("Content-Type", chunkedContentType)
	fl, _ := w.(http.Flusher)
	fw := &frameWriter{w: w, f: fl}
	for i, q := range queries {
		err := h.streamQuery(r, fw, i, q)
		if err == nil && i == len(queries)-1 {
			err = fw.finish()
		}
		if err != nil {
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

func (h *Handler) streamQuery(r *http.Request, fw *frameWriter, idx int, q query) error {
	// A store that keeps its files' XOR chunks hands them out as they are
	// (actastore.ChunkedSeries): no decoding and encoding again.
	ss := h.q.Select(actastore.WithXORChunks(r.Context()), q.mint, q.maxt, q.matchers...)
	b := budget{lim: &h.lim, query: idx}
	newEncoder := func() seriesEncoder {
		cw := chunkWriterPool.Get().(*chunkWriter)
		cw.lim, cw.maxFrame, cw.idx = &h.lim, h.lim.MaxBytesPerFrame, idx
		return cw
	}
	emit := func(j *job) error {
		if err := b.addSamples(j.samples); err != nil {
			return err
		}
		h.m.frames.Add(float64(j.frames))
		return fw.write(j.out)
	}
	err := eachSeries(r.Context(), ss, idx, &b, newEncoder, emit, func() {
		if err := fw.flush(); err != nil {
			h.log.Debug("remote read: flush failed", "err", err)
		}
	})
	if err != nil {
		return err
	}
	h.m.samples.Add(float64(b.samples))
	return nil
}

// chunkRoom is the spare capacity data gets before a chunk starts in it:
// about a chunk of samplesPerChunk regular samples. The encoder writes the
// chunk there (xorchunk.Encoder.Start); one that outgrows it grows apart
// from the chunks before it and is copied after them once whole.
const chunkRoom = 512

// chunkWriter is one worker's scratch for encoding series into frames.
type chunkWriter struct {
	lim      *Limits
	maxFrame int
	idx      int // query index
	enc      xorchunk.Encoder
	data     []byte // the chunks of the frame being built, back to back
	lbls     []prompb.Label
	chks     []prompb.Chunk
	cs       prompb.ChunkedSeries
	csp      []*prompb.ChunkedSeries // {&cs}
}

var chunkWriterPool = sync.Pool{New: func() any {
	cw := &chunkWriter{}
	cw.csp = []*prompb.ChunkedSeries{&cw.cs}
	return cw
}}

// release returns cw to the pool unless it holds a large buffer.
func (cw *chunkWriter) release() {
	if cap(cw.data) > maxPooledJob {
		return
	}
	clear(cw.chks[:cap(cw.chks)])
	clear(cw.lbls[:cap(cw.lbls)])
	cw.cs = prompb.ChunkedSeries{}
	chunkWriterPool.Put(cw)
}

// encode fills j.out with the series' frames: XOR chunks of at most
// samplesPerChunk samples, a frame whenever the chunks reach the frame size
// (labels deducted), as Prometheus's remote read handler cuts them.
func (cw *chunkWriter) encode(j *job) {
	s := j.s
	cw.lbls = prompb.FromLabels(s.Labels(), cw.lbls[:0])
	maxData := cw.maxFrame
	for _, l := range cw.lbls {
		maxData -= l.Size()
	}
	if hit, ok, err := histogramsOf(s); err != nil {
		j.err = fmt.Errorf("query %d: reading series %s: %w", cw.idx, s.Labels(), err)
		return
	} else if ok {
		cw.histogramSeries(j, hit, maxData)
		return
	}
	if cs, ok := s.(actastore.ChunkedSeries); ok {
		if parts := cs.FloatParts(); parts != nil {
			cw.parts(j, parts, maxData)
			return
		}
	}
	left := maxData
	var n, start int
	var mint, maxt int64
	cut := func() {
		cw.data = cw.enc.Finish(cw.data[:start])
		// The chunk's bytes stay where they are until the frame is
		// marshalled: later chunks are appended after them (or into a
		// new array, leaving them in the old one).
		data := cw.data[start:]
		cw.chks = append(cw.chks, prompb.Chunk{MinTimeMs: mint, MaxTimeMs: maxt, Type: prompb.Chunk_XOR, Data: data})
		n = 0
		if left -= cw.chks[len(cw.chks)-1].Size(); left <= 0 {
			left = maxData
			cw.frame(j)
		}
	}
	it := s.Iterator()
	for it.Next() {
		t, v := it.At()
		if n == 0 {
			start = len(cw.data)
			cw.data = slices.Grow(cw.data, chunkRoom)
			cw.enc.Start(cw.data)
			mint = t
		}
		cw.enc.Append(t, v)
		maxt = t
		n++
		j.samples++
		if n == samplesPerChunk {
			cut()
		}
	}
	if err := it.Err(); err != nil {
		j.err = fmt.Errorf("query %d: reading series %s: %w", cw.idx, s.Labels(), err)
		return
	}
	if n > 0 {
		cut()
	}
	cw.frame(j)
}

// parts is encode for a series whose floats come as parts: kept chunks go
// out as they are, samples are encoded into chunks of samplesPerChunk,
// frames cut as encode cuts them.
func (cw *chunkWriter) parts(j *job, parts []actastore.FloatPart, maxData int) {
	left := maxData
	add := func(c prompb.Chunk) {
		cw.chks = append(cw.chks, c)
		if left -= c.Size(); left <= 0 {
			left = maxData
			cw.frame(j)
		}
	}
	for _, p := range parts {
		for _, c := range p.Chunks {
			// The kept chunk's bytes are shared and only read (marshalled
			// into the frame).
			add(prompb.Chunk{MinTimeMs: c.MinT, MaxTimeMs: c.MaxT, Type: prompb.Chunk_XOR, Data: c.Data})
			j.samples += int64(c.Samples)
		}
		for i := 0; i < len(p.Samples); i += samplesPerChunk {
			run := p.Samples[i:min(i+samplesPerChunk, len(p.Samples))]
			start := len(cw.data)
			cw.data = slices.Grow(cw.data, chunkRoom)
			cw.enc.Start(cw.data)
			for _, smp := range run {
				cw.enc.Append(smp.T, smp.V)
			}
			cw.data = cw.enc.Finish(cw.data[:start])
			add(prompb.Chunk{MinTimeMs: run[0].T, MaxTimeMs: run[len(run)-1].T, Type: prompb.Chunk_XOR, Data: cw.data[start:]})
			j.samples += int64(len(run))
		}
	}
	cw.frame(j)
}

// frame appends one frame holding the chunks built so far to j.out:
// uvarint(len(msg)), CRC-32C(msg) big-endian, msg.
func (cw *chunkWriter) frame(j *job) {
	if len(cw.chks) == 0 {
		return
	}
	cw.cs.Labels, cw.cs.Chunks = cw.lbls, cw.chks
	resp := prompb.ChunkedReadResponse{ChunkedSeries: cw.csp, QueryIndex: int64(cw.idx)}
	size := resp.Size()
	j.out = binary.AppendUvarint(j.out, uint64(size))
	sum := len(j.out)
	j.out = append(j.out, 0, 0, 0, 0)
	j.out = slices.Grow(j.out, size)[:len(j.out)+size]
	msg := j.out[len(j.out)-size:]
	if _, err := resp.MarshalToSizedBuffer(msg); err != nil {
		j.err = fmt.Errorf("cannot marshal ChunkedReadResponse: %w", err)
		return
	}
	binary.BigEndian.PutUint32(j.out[sum:], crc32.Checksum(msg, castagnoli))
	j.frames++
	clear(cw.chks) // drop the references into data
	cw.chks, cw.data = cw.chks[:0], cw.data[:0]
}
