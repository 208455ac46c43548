package remotewrite

import (
	"bytes"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestCountTopLevel(t *testing.T) {
	f := func(b []byte, num, want int, wantOK bool) {
		t.Helper()
		n, ok := countTopLevel(b, protowire.Number(num))
		if n != want || ok != wantOK {
			t.Fatalf("countTopLevel(% x, %d) = %d, %v; want %d, %v", b, num, n, ok, want, wantOK)
		}
	}
	f(nil, 1, 0, true)
	f([]byte{0x0a, 0x00, 0x0a, 0x00, 0x1a, 0x00}, 1, 2, true) // two field-1 messages, one field-3
	f([]byte{0x0a, 0x00, 0x2a, 0x01, 0x00, 0x2a, 0x00}, 5, 2, true)
	f([]byte{0x0a, 0x05, 0x00}, 1, 0, false)            // length beyond the input
	f([]byte{0x08, 0x96, 0x01, 0x0a, 0x00}, 1, 2, true) // varint field 1 counts too: Unmarshal then refuses it
}

// A body of empty series beyond max_series_per_request is refused on the
// wire count, before Unmarshal would allocate a struct per series.
func TestManyEmptySeriesRefusedBeforeUnmarshal(t *testing.T) {
	srv := newServer(t, &memAppender{})
	for _, c := range []struct {
		ct  string
		tag byte
	}{{ctV1, 0x0a}, {ctV2, 0x2a}} {
		body := bytes.Repeat([]byte{c.tag, 0x00}, 100_000) // 100k empty series, 200 KB
		comp := snappy.Encode(nil, body)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a := post(t, srv.URL, c.ct, "snappy", comp)
		runtime.ReadMemStats(&after)
		if a.code != http.StatusRequestEntityTooLarge || !strings.Contains(a.body, "max_series_per_request") {
			t.Fatalf("%s: got %d %q, want 413 naming max_series_per_request", c.ct, a.code, a.body)
		}
		// Unmarshal would allocate 100k x 128-176 B structs (12-17 MB, more
		// with slice growth); the wire count needs the decoded body only.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
			t.Fatalf("%s: refusing 100k empty series allocated %d bytes, want < 4 MiB", c.ct, alloc)
		}
	}
}
