package bucket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Bucket retention by age, run by exactly one instance (the owner). It
// publishes a horizon first: a file whose newest sample is older is
// expired, and every reader (writers and query instances) ignores it from
// its next look at the horizon on. A file is deleted, from every
// instance's prefix, only once it is older than a horizon published at
// least DeleteDelay ago: every reader that looks at the horizon more
// often than that ignores it by then, so no reader is left reading a
// deleted object.
// Each writer drops the expired files from its series and its next index,
// and deletes their objects a delete delay after publishing it; the owner
// deletes those an index still names (a writer that no longer runs, or
// lags), and readers ignore them meanwhile.

// Horizon is the retention.json object (docs/format/bucket.md).
type Horizon struct {
	// MinTime (ms): files whose newest sample is older are expired.
	MinTime int64 `json:"min_time_ms"`
	// MaxAge is the owner's retention, for people reading the object.
	MaxAge string `json:"max_age"`
	// Owner is the instance that runs retention.
	Owner string `json:"owner"`
	// Updated (ms) is when the owner last wrote it.
	Updated int64 `json:"updated_ms"`
}

// Expired reports whether a file whose newest sample is maxT (ms) is past
// the horizon.
func (h Horizon) Expired(maxT int64) bool { return maxT < h.MinTime }

// ReadHorizon reads the retention horizon; none published is the zero
// Horizon (nothing expires).
func (c *Client) ReadHorizon(ctx context.Context, l Layout) (Horizon, error) {
	b, err := c.Get(ctx, l.RetentionKey(), 1<<16, "retention")
	if errors.Is(err, ErrNotFound) {
		return Horizon{}, nil
	}
	if err != nil {
		return Horizon{}, err
	}
	var h Horizon
	if err := json.Unmarshal(b, &h); err != nil {
		return Horizon{}, fmt.Errorf("bucket: %s: %w", c.URL(l.RetentionKey()), err)
	}
	return h, nil
}

// RetentionOptions configure bucket retention.
type RetentionOptions struct {
	Owner       string        // the instance running it (written into the horizon)
	MaxAge      time.Duration // files whose newest sample is older are expired
	DeleteDelay time.Duration // how much older before their objects are deleted
	MaxIndexRaw int64         // bound of one decoded index object (LoadState)
}

// RetentionResult reports one pass.
type RetentionResult struct {
	Horizon  Horizon
	Deleted  int   // delete requests sent (a restarted owner sends them again for files an index still names)
	Bytes    int64 // their size
	Expired  int   // files past the horizon still named by an index
	Failures int   // objects that could not be deleted (retried next pass)
}

// Retainer runs bucket retention passes, keeping each instance's index
// state between them.
type Retainer struct {
	c       *Client
	l       Layout
	o       RetentionOptions
	states  map[string]*State
	gone    map[string]bool // keys deleted, still named by an index
	history []stamp         // horizons published, oldest first
	loaded  bool            // the horizon of an earlier run was read
}

// stamp is a horizon and when it was published.
type stamp struct {
	at  time.Time
	min int64
}

// NewRetainer returns the retention runner of the layout's prefix.
func (c *Client) NewRetainer(l Layout, o RetentionOptions) *Retainer {
	return &Retainer{c: c, l: l, o: o, states: make(map[string]*State), gone: make(map[string]bool)}
}

// Run publishes the horizon of now-MaxAge, then deletes, under every
// instance prefix, the objects of files older than the newest horizon
// published at least DeleteDelay ago (by this run or, read from the
// bucket, an earlier one). The first run deletes nothing.
func (r *Retainer) Run(ctx context.Context, now time.Time) (RetentionResult, error) {
	c, l, o := r.c, r.l, r.o
	if !r.loaded {
		prev, err := c.ReadHorizon(ctx, l)
		if err != nil {
			return RetentionResult{}, err
		}
		if prev.MinTime != 0 {
			r.history = append(r.history, stamp{at: time.UnixMilli(prev.Updated), min: prev.MinTime})
		}
		r.loaded = true
	}
	h := Horizon{MinTime: now.Add(-o.MaxAge).UnixMilli(), MaxAge: o.MaxAge.String(), Owner: o.Owner, Updated: now.UnixMilli()}
	res := RetentionResult{Horizon: h}
	b, _ := json.Marshal(h)
	if err := c.PutBytes(ctx, l.RetentionKey(), b); err != nil {
		return res, fmt.Errorf("publish retention horizon: %w", err)
	}
	r.history = append(r.history, stamp{at: now, min: h.MinTime})
	cut, last := int64(math.MinInt64), -1
	for i, s := range r.history {
		if !s.at.After(now.Add(-o.DeleteDelay)) && s.min > cut {
			cut, last = s.min, i
		}
	}
	if last > 0 {
		r.history = r.history[last:] // older ones can no longer decide anything
	}
	insts, err := c.ListInstances(ctx, l)
	if err != nil {
		return res, err
	}
	var errs []error
	named := make(map[string]bool)
	for _, inst := range insts {
		st, err := c.LoadState(ctx, l, inst, r.states[inst], o.MaxIndexRaw)
		r.states[inst] = st
		if err != nil {
			errs = append(errs, fmt.Errorf("retention of instance %s: %w", inst, err))
			continue
		}
		for _, f := range st.Files {
			if !h.Expired(f.MaxT) {
				continue
			}
			res.Expired++
			if last < 0 || f.MaxT >= cut {
				continue
			}
			key := l.FileKey(inst, f.Kind, f.Ref, f.Start, f.CRC)
			named[key] = true
			if r.gone[key] {
				continue
			}
			if err := c.Delete(ctx, key); err != nil {
				res.Failures++
				errs = append(errs, err)
				continue
			}
			r.gone[key] = true
			res.Deleted++
			res.Bytes += f.Size
		}
	}
	for k := range r.gone {
		if !named[k] { // its instance's index no longer names it
			delete(r.gone, k)
		}
	}
	return res, errors.Join(errs...)
}
