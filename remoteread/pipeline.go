package remoteread

import (
	"context"
	"runtime"
	"sync"

	"github.com/acta-remote/acta-remote/actastore"
)

// A query's series are encoded in parallel and sent in order: one
// goroutine iterates the SeriesSet (not safe for concurrent use; its Next
// loads a series), a pool of GOMAXPROCS workers encodes the series it
// hands out, and the handler's goroutine takes the results in series order
// and writes them. At most 2×GOMAXPROCS series are loaded or encoded at
// once (each holds its samples and its encoded answer), so memory stays
// bounded whatever the query selects.

// job is one series on its way through the pipeline.
type job struct {
	s    actastore.Series
	done chan struct{} // signalled once out/err are set

	out     []byte // encoded answer: frames, or a compressed SAMPLES piece
	piece   []byte // SAMPLES: the compressed piece within out
	raw     int    // SAMPLES: the piece's uncompressed length
	frames  int    // STREAMED_XOR_CHUNKS: frames in out
	samples int64  // samples (and histograms) encoded
	err     error
}

// maxPooledJob: jobs holding larger buffers are dropped after use rather
// than pooled, so one huge series does not pin its memory.
const maxPooledJob = 4 << 20

var jobPool = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

func getJob() *job { return jobPool.Get().(*job) }

func putJob(j *job) {
	if cap(j.out) > maxPooledJob {
		return
	}
	j.reset()
	jobPool.Put(j)
}

// reset empties j for the next series, keeping its buffer.
func (j *job) reset() {
	j.s, j.err, j.piece = nil, nil, nil
	j.out = j.out[:0]
	j.raw, j.frames, j.samples = 0, 0, 0
}

// seriesEncoder fills a job's out (and counts) from its series. Each
// worker goroutine gets its own from the newEncoder passed to eachSeries,
// so it keeps scratch between series, and releases it when done (the
// encoders are pooled: a steady stream of reads reuses their buffers).
type seriesEncoder interface {
	encode(j *job)
	release()
}

// eachSeries encodes every series of ss and calls emit with each in series
// order. idle, if not nil, is called before emit would wait for a series
// still being encoded (the streamed answer flushes then). The budget's
// series limit is applied as series come; emit applies the sample limit.
// The first error (the store's, wrapped by selectErr; an encoder's; emit's)
// stops everything and is returned; ss is closed on return.
//
// A query selecting one series is encoded on the calling goroutine: no
// pipeline to start for the latency-bound single-series read.
func eachSeries(ctx context.Context, ss actastore.SeriesSet, idx int, b *budget, newEncoder func() seriesEncoder, emit func(*job) error, idle func()) error {
	defer ss.Close()
	if !ss.Next() {
		return storeErr(idx, ss.Err())
	}
	first := ss.At()
	if err := b.addSeries(); err != nil {
		return err
	}
	if !ss.Next() {
		if err := ss.Err(); err != nil {
			return selectErr(idx, err)
		}
		j := getJob()
		defer putJob(j)
		j.s = first
		enc := newEncoder()
		enc.encode(j)
		enc.release()
		if j.err != nil {
			return j.err
		}
		return emit(j)
	}
	second := ss.At()
	if err := b.addSeries(); err != nil {
		return err
	}

	workers := runtime.GOMAXPROCS(0)
	inflight := 2 * workers
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	free := make(chan *job, inflight)
	for range inflight {
		free <- getJob()
	}
	jobs := make(chan *job)
	order := make(chan *job, inflight)
	var wg sync.WaitGroup

	// The producer: the only goroutine that touches ss until wg.Wait.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(jobs)
		// send queues s (or an error in its place) in order. A job is put
		// in order only once a worker has it (or it carries an error), so
		// everything the writer waits for gets signalled.
		send := func(s actastore.Series, err error) bool {
			var j *job
			select {
			case j = <-free:
			case <-ctx.Done():
				return false
			}
			j.s, j.err = s, err
			if err != nil {
				j.done <- struct{}{}
			} else {
				select {
				case jobs <- j:
				case <-ctx.Done():
					return false
				}
			}
			select {
			case order <- j:
				return err == nil
			case <-ctx.Done():
				return false
			}
		}
		if !send(first, nil) || !send(second, nil) {
			return
		}
		for ss.Next() {
			s := ss.At()
			if err := b.addSeries(); err != nil {
				send(nil, err)
				return
			}
			if !send(s, nil) {
				return
			}
		}
		if err := ss.Err(); err != nil {
			send(nil, selectErr(idx, err))
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			enc := newEncoder()
			defer enc.release()
			for j := range jobs {
				if err := ctx.Err(); err != nil {
					j.err = err
				} else {
					enc.encode(j)
				}
				j.done <- struct{}{}
			}
		}()
	}

	var err error
	for j := range order {
		ready := false
		if err == nil && idle != nil {
			select {
			case <-j.done:
				ready = true
			default:
				idle()
			}
		}
		if !ready {
			<-j.done
		}
		if err == nil {
			if err = j.err; err == nil {
				err = emit(j)
			}
			if err != nil {
				cancel()
			}
		}
		j.reset()
		free <- j
	}
	wg.Wait()
	for len(free) > 0 {
		putJob(<-free)
	}
	return err
}

// storeErr wraps a store error of Select (nil stays nil).
func storeErr(idx int, err error) error {
	if err == nil {
		return nil
	}
	return selectErr(idx, err)
}
