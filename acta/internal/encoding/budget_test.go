package encoding

import (
	"errors"
	"runtime"
	"testing"
)

// TestDecodeChargesBeforeAllocating feeds inputs that declare far more
// output than the budget allows and checks they fail with ErrLimit without
// the process allocating anything near the declared size.
func TestDecodeChargesBeforeAllocating(t *testing.T) {
	big := 1 << 26 // 64 Mi rows
	cases := []struct {
		name    string
		class   Class
		width   int
		rows    int
		layout  uint16
		streams []Stream
	}{
		{"constant expands", ClassSigned, 8, big, LayoutConstant, []Stream{rawStream(KindValues, TransformRaw, 1, 1, 0, 0, 0, 0, 0, 0, 0)}},
		{"zero-width bit packing", ClassUnsigned, 8, big, LayoutPlain, []Stream{rawStream(KindValues, TransformBitPacked, big, 0)}},
		{"run of everything", ClassFloat, 8, big, LayoutRunLength, []Stream{
			rawStream(KindRunValues, TransformRaw, 1, 0, 0, 0, 0, 0, 0, 0, 0),
			rawStream(KindRunLengths, TransformBitPacked, 1, 27, 0, 0, 0, 4)}},
		{"var dictionary", ClassVar, 0, big, LayoutDictionary, []Stream{
			rawStream(KindDictionaryValues, TransformRaw, 1, 'x', 'y'),
			rawStream(KindDictionaryLengths, TransformRaw, 1, 2, 0, 0, 0),
			rawStream(KindIndices, TransformBitPacked, big, 0)}},
		{"zstd declares more", ClassSigned, 8, 1 << 20, LayoutPlain, []Stream{{Kind: KindValues, Codec: CodecZstd,
			Count: 1 << 20, RawLen: 8 << 20, Data: sharedZstdEncoder(3).encode(nil, make([]byte, 8<<20))}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, err := Decode(tc.class, tc.width, false, tc.rows, tc.layout, 0, false, tc.streams, &Budget{Remaining: 1 << 20})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("err = %v, want ErrLimit", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
				t.Fatalf("allocated %d bytes before refusing", grew)
			}
		})
	}
}
