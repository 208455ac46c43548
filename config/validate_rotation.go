package config

import "time"

const day = 24 * time.Hour

func (c *Config) validateRotation(v *validator) {
	v.oneOf("storage.flush_codec", c.Storage.FlushCodec, "auto", "none", "zstd")
	r := c.Rotation
	if p := time.Duration(r.Period); p != 0 {
		// Boundaries must fall on the UTC day structure: a period dividing
		// a day (1h, 2h, 6h...) or a whole number of days.
		if p < time.Minute || p > 366*day {
			v.failf("rotation.period", "must be 0 or between 1m and 366d, got %s", r.Period)
		} else if day%p != 0 && p%day != 0 {
			v.failf("rotation.period", "must divide 1d evenly (1h, 2h, 6h, 12h...) or be whole days, got %s", r.Period)
		}
	}
	if r.MaxFileSize != 0 && (r.MaxFileSize < 64<<10 || r.MaxFileSize > 4<<30) {
		v.failf("rotation.max_file_size", "must be 0 or between 64KiB and 4GiB, got %s", r.MaxFileSize)
	}
	v.durationRange("rotation.interval", r.Interval, time.Second, day)
	if a := time.Duration(r.Retention.MaxAge); a != 0 && a < time.Hour {
		// Shorter than the WAL's life, expired samples could come back
		// from a WAL replay after a crash.
		v.failf("rotation.retention.max_age", "must be 0 (keep everything) or at least 1h, got %s", r.Retention.MaxAge)
	}
	if m := r.Retention.MaxSize; m != 0 && m < 1<<20 {
		v.failf("rotation.retention.max_size", "must be 0 (unlimited) or at least 1MiB, got %s", m)
	}
	cp := r.Compaction
	v.rangeInt("rotation.compaction.block_rows", int64(cp.BlockRows), 1024, 1<<20)
	v.rangeInt("rotation.compaction.zstd_level", int64(cp.ZstdLevel), 1, 22)
	if b := cp.MaxBytesPerSecond; b != 0 && b < 64<<10 {
		v.failf("rotation.compaction.max_bytes_per_second", "must be 0 (unpaced) or at least 64KiB, got %s", b)
	}
	v.tiers("rotation.compaction.tiers", cp.Tiers, time.Duration(r.Period))
}

// tiers checks the merge tiers: at most 4, each a multiple of the
// rotation period (a window holds whole periods) and of the tier before
// it (a window holds whole windows of the tier below), up to 366d.
func (v *validator) tiers(key string, tiers []Period, period time.Duration) {
	if len(tiers) > 4 {
		v.failf(key, "at most 4 tiers, got %d", len(tiers))
		return
	}
	prev := time.Duration(0)
	for i, t := range tiers {
		d := time.Duration(t)
		switch {
		case d < time.Hour || d > 366*day:
			v.failf(key, "tier %d must be between 1h and 366d, got %s", i, t)
		case period > 0 && (d <= period || d%period != 0):
			v.failf(key, "tier %d (%s) must be a multiple of rotation.period (%s) above it", i, t, Period(period))
		case prev > 0 && (d <= prev || d%prev != 0):
			v.failf(key, "tier %d (%s) must be a multiple of tier %d (%s) above it", i, t, i-1, Period(prev))
		default:
			prev = d
			continue
		}
		return
	}
}
