package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRotationDefaults(t *testing.T) {
	r := Default().Rotation
	want := RotationConfig{
		Period: Period(24 * time.Hour), MaxFileSize: 64 << 20, Interval: time.Minute,
		Compaction: CompactionConfig{Enabled: true, BlockRows: 65536, ZstdLevel: 9, MaxBytesPerSecond: 16 << 20,
			Tiers: []Period{Period(7 * 24 * time.Hour), Period(28 * 24 * time.Hour)}},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("rotation defaults %+v, want %+v", r, want)
	}
	if c := Default().Storage.FlushCodec; c != "auto" {
		t.Errorf("storage.flush_codec default %q", c)
	}
}

func TestRotationLoad(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good_rotation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rotation
	if r.Period != Period(2*time.Hour) || r.MaxFileSize != 0 || r.Retention.MaxAge != Period(15*24*time.Hour) ||
		r.Retention.MaxSize != 10<<30 || r.Compaction.Enabled || r.Compaction.ZstdLevel != 9 ||
		r.Compaction.BlockRows != 65536 || r.Interval != time.Minute ||
		!reflect.DeepEqual(r.Compaction.Tiers, []Period{Period(12 * time.Hour), Period(7 * 24 * time.Hour)}) {
		t.Errorf("overrides not applied: %+v", r)
	}
}

func TestRotationBad(t *testing.T) {
	f := func(file, key, reason string) {
		t.Helper()
		_, err := Load(filepath.Join("testdata", file))
		if err == nil {
			t.Errorf("%s: no error", file)
			return
		}
		if msg := err.Error(); !strings.Contains(msg, key) || !strings.Contains(msg, reason) {
			t.Errorf("%s: error %q should name key %q and reason %q", file, msg, key, reason)
		}
	}
	f("bad_rotation_period.yaml", "rotation.period:", "must divide 1d evenly (1h, 2h, 6h, 12h...) or be whole days, got 5h0m0s")
	f("bad_rotation_period_syntax.yaml", "rotation.period:", `invalid duration "1x"`)
	f("bad_retention_age.yaml", "rotation.retention.max_age:", "must be 0 (keep everything) or at least 1h, got 10m0s")
	f("bad_compaction_zstd.yaml", "rotation.compaction.zstd_level:", "must be between 1 and 22, got 30")
	f("bad_rotation_sizes.yaml", "rotation.max_file_size:", "must be 0 or between 64KiB and 4GiB, got 1KiB")
	f("bad_rotation_sizes.yaml", "rotation.retention.max_size:", "must be 0 (unlimited) or at least 1MiB, got 10KiB")
	f("bad_flush_codec.yaml", "storage.flush_codec:", `got "lz4"`)
	f("bad_tiers_period.yaml", "rotation.compaction.tiers:", "tier 0 (36h0m0s) must be a multiple of rotation.period (1d) above it")
	f("bad_tiers_order.yaml", "rotation.compaction.tiers:", "tier 1 (10d) must be a multiple of tier 0 (7d) above it")
	f("bad_tiers_syntax.yaml", "rotation.compaction.tiers:", `invalid duration "week"`)
}

// An empty list turns merging off.
func TestRotationNoTiers(t *testing.T) {
	c, err := Parse([]byte("rotation:\n  compaction:\n    tiers: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rotation.Compaction.Tiers) != 0 {
		t.Errorf("tiers %v", c.Rotation.Compaction.Tiers)
	}
}

func TestParsePeriod(t *testing.T) {
	f := func(in string, want time.Duration, ok bool) {
		t.Helper()
		got, err := ParsePeriod(in)
		if (err == nil) != ok || time.Duration(got) != want {
			t.Errorf("ParsePeriod(%q) = %v, %v; want %v, ok=%v", in, time.Duration(got), err, want, ok)
		}
	}
	f("1d", 24*time.Hour, true)
	f("2w", 14*24*time.Hour, true)
	f("2h", 2*time.Hour, true)
	f("90m", 90*time.Minute, true)
	f("0s", 0, true)
	f("-1d", 0, false)
	f("1.5d", 0, false)
	f("soon", 0, false)
	if s := Period(48 * time.Hour).String(); s != "2d" {
		t.Errorf("String = %q", s)
	}
}
