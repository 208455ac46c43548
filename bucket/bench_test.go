package bucket_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/bucket/s3test"
)

// BenchmarkPutVerify uploads objects of the given sizes to a real
// SeaweedFS on loopback and verifies each (HEAD, then the whole object
// read back and checked by CRC-32C): what one upload of the tier costs.
// 64 MiB objects go in 64 MiB parts (one PUT), 200 MiB in four parts.
//
//	go test -run '^$' -bench PutVerify -benchtime 5x ./bucket
func BenchmarkPutVerify(b *testing.B) {
	srv := s3test.Shared(b, "acta-bench")
	for _, size := range []int{1 << 10, 64 << 10, 4 << 20, 64 << 20, 200 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			c := srv.Client(b, "acta-bench")
			data := make([]byte, size)
			r := rand.New(rand.NewPCG(uint64(size), 1))
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			crc := bucket.CRC32C(data)
			ctx := context.Background()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				key := fmt.Sprintf("bench/%d-%d", size, i)
				if err := c.Put(ctx, key, bytes.NewReader(data), int64(size)); err != nil {
					b.Fatal(err)
				}
				if err := c.Verify(ctx, key, int64(size), crc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
