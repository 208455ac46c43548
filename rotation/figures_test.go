package rotation

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/acta-remote/acta-remote/acta"
)

// TestFigures measures what a rotation period costs on disk for one 15 s
// series: allocated bytes per sample (st_blocks × 512, 4 KiB file-system
// blocks) of a sealed file as head flushes leave it (20-row blocks, the
// store's zstd-3 flush or no codec) and after compaction, and the write
// amplification of the file data (bytes flushed + bytes rewritten, over
// the bytes the compacted file keeps). `go test -run Figures -v ./rotation`.
func TestFigures(t *testing.T) {
	none := acta.WriterOptions{Codec: acta.CodecNone, Encoding: acta.EncodingAdaptive}
	t.Logf("%-7s %-7s %6s | %-22s | %-22s | %-9s | %s", "kind", "period", "rows", "flushed zstd B/smp", "flushed none B/smp", "compacted", "write amp")
	for _, kind := range []string{"counter", "gauge"} {
		for _, p := range []struct {
			name string
			n    int
		}{{"2h", 480}, {"6h", 1440}, {"1d", 5760}, {"7d", 40320}} {
			smps := realistic15s(kind, 11, p.n)
			dir := t.TempDir()
			fz, fn := filepath.Join(dir, "z.acta"), filepath.Join(dir, "n.acta")
			writeBlocks(t, fz, flushOptions, chunk(smps, 20)...)
			writeBlocks(t, fn, none, chunk(smps, 20)...)
			az, an := allocated(t, fz), allocated(t, fn)
			res, err := CompactFile(fn, fn+".tmp", CompactOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !sameBits(readAll(t, fn), smps) {
				t.Fatal("compaction changed samples")
			}
			wa := float64(res.BytesIn+res.BytesOut) / float64(res.BytesOut)
			per := func(b int64) string { return fmt.Sprintf("%.2f", float64(b)/float64(p.n)) }
			t.Logf("%-7s %-7s %6d | %8s (%7d B)   | %8s (%7d B)   | %5s     | %.1fx",
				kind, p.name, p.n, per(az), az, per(an), an, per(res.AllocatedOut), wa)
		}
	}
}
