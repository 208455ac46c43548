package actastore

import (
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestCatalogAddBatches: series added in more than one batch of
// catalogAppendSeries all load back, in order, with their refs, created
// times and labels.
func TestCatalogAddBatches(t *testing.T) {
	dir := t.TempDir()
	c, err := loadCatalog(dir, func(seriesRec) error { return nil }, func(deletedRec) {})
	if err != nil {
		t.Fatal(err)
	}
	n := 2*catalogAppendSeries + 5
	rec := func(i int) seriesRec {
		return seriesRec{Ref: uint64(i)*7 + 1, Created: int64(i) * 1000,
			Labels: labels.FromStrings("__name__", "m", "i", strconv.Itoa(i))}
	}
	if err := c.add(n, rec); err != nil {
		t.Fatal(err)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	var got []seriesRec
	c, err = loadCatalog(dir, func(r seriesRec) error {
		r.Labels = r.Labels.Copy()
		got = append(got, r)
		return nil
	}, func(deletedRec) {})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if len(got) != n {
		t.Fatalf("loaded %d series, want %d", len(got), n)
	}
	for i, r := range got {
		w := rec(i)
		if r.Ref != w.Ref || r.Created != w.Created || !labels.Equal(r.Labels, w.Labels) {
			t.Fatalf("series %d: got %+v, want %+v", i, r, w)
		}
	}
}
