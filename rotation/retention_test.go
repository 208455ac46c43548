package rotation

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestRetentionPlan(t *testing.T) {
	h := hourMs
	files := []File{
		{Ref: 1, Start: 0, End: 2 * h, Sealed: true, Bytes: 4096},
		{Ref: 1, Start: 2 * h, End: 4 * h, Sealed: true, Bytes: 8192},
		{Ref: 1, Start: 4 * h, End: math.MaxInt64, Bytes: 4096}, // newest, busy
		{Ref: 2, Start: 0, End: 2 * h, Sealed: true, Bytes: 4096},
		{Ref: 2, Start: 2 * h, End: 3 * h, Bytes: 4096}, // newest, idle since 3h-1
		{Ref: 3, Start: 2 * h, End: 4 * h, Sealed: true, Bytes: 4096},
		{Ref: 3, Start: 4 * h, End: 5 * h, Bytes: 4096},
	}
	f := func(name string, r Retention, now, other int64, want []Deletion) {
		t.Helper()
		if got := r.Plan(files, now, other); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got  %+v\n want %+v", name, got, want)
		}
	}
	f("nothing configured", Retention{}, 100*h, 0, nil)
	// Cutoff 4h: files whose every sample is < 4h go, End <= 4h.
	f("age", Retention{MaxAge: 2 * time.Hour}, 6*h, 0, []Deletion{
		{files[0], ReasonAge}, {files[3], ReasonAge}, {files[4], ReasonAge}, {files[1], ReasonAge}, {files[5], ReasonAge},
	})
	// Cutoff 3h-1: ref 2's newest file ends (End-1) exactly at the cutoff;
	// a sample at now-MaxAge is still retained, so the file stays.
	f("age boundary", Retention{MaxAge: 2 * time.Hour}, 5*h-1, 0, []Deletion{
		{files[0], ReasonAge}, {files[3], ReasonAge},
	})
	f("age boundary, 1 ms later", Retention{MaxAge: 2 * time.Hour}, 5*h, 0, []Deletion{
		{files[0], ReasonAge}, {files[3], ReasonAge}, {files[4], ReasonAge},
	})
	// Total 32768 + 1000 other; cap 24000: oldest sealed first (End, Start,
	// Ref): ref 1 0h (4096), ref 2 0h (4096) -> 25576, then ref 1 2h-4h
	// (8192) -> 17384.
	f("size", Retention{MaxBytes: 24000}, 6*h, 1000, []Deletion{
		{files[0], ReasonSizeCap}, {files[3], ReasonSizeCap}, {files[1], ReasonSizeCap},
	})
	// Newest files are never deleted for size, however full the disk.
	f("size never takes newest files", Retention{MaxBytes: 1}, 6*h, 0, []Deletion{
		{files[0], ReasonSizeCap}, {files[3], ReasonSizeCap}, {files[1], ReasonSizeCap}, {files[5], ReasonSizeCap},
	})
	// Age frees 12288 of 32768; 20480 > 12000, so two sealed files more.
	f("age then size", Retention{MaxAge: 3 * time.Hour, MaxBytes: 12000}, 6*h, 0, []Deletion{
		{files[0], ReasonAge}, {files[3], ReasonAge}, {files[4], ReasonAge}, {files[1], ReasonSizeCap}, {files[5], ReasonSizeCap},
	})
}

// TestRetentionPlanKinds: two kinds of file of one series (float and
// histogram in actastore) are planned together: the size cap takes the
// oldest sealed file whatever its kind, ties broken by Kind.
func TestRetentionPlanKinds(t *testing.T) {
	h := hourMs
	files := []File{
		{Ref: 1, Start: 2 * h, End: 4 * h, Sealed: true, Bytes: 4096},
		{Ref: 1, Start: 4 * h, End: math.MaxInt64, Bytes: 4096},
		{Ref: 1, Start: 0, End: 2 * h, Sealed: true, Bytes: 4096, Kind: 1},
		{Ref: 1, Start: 2 * h, End: 4 * h, Sealed: true, Bytes: 4096, Kind: 1},
		{Ref: 1, Start: 4 * h, End: 5 * h, Bytes: 4096, Kind: 1},
	}
	got := Retention{MaxBytes: 3 * 4096}.Plan(files, 6*h, 0)
	want := []Deletion{{files[2], ReasonSizeCap}, {files[0], ReasonSizeCap}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("size:\n got  %+v\n want %+v", got, want)
	}
	got = Retention{MaxAge: time.Hour}.Plan(files, 6*h, 0)
	want = []Deletion{{files[2], ReasonAge}, {files[0], ReasonAge}, {files[3], ReasonAge}, {files[4], ReasonAge}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("age:\n got  %+v\n want %+v", got, want)
	}
}
