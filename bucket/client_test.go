package bucket_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/acta-remote/acta-remote/bucket"
	"github.com/acta-remote/acta-remote/bucket/s3test"
)

// The client against a real SeaweedFS with signed requests: a small PUT
// and a multipart upload verify by size and CRC read back; ranged reads
// return exactly the bytes asked for; listing, deletion, missing objects;
// an unsigned client is refused.
func TestClientAgainstSeaweedFS(t *testing.T) {
	srv := s3test.Shared(t, "acta-test")
	ctx := context.Background()
	c := srv.Client(t, "acta-test")
	cfg := srv.Config("acta-test")
	cfg.PartSize = 5 << 20
	mp, err := bucket.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	small := []byte("hello, bucket")
	big := make([]byte, 12<<20+12345) // three parts
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	for _, o := range []struct {
		key  string
		data []byte
	}{{"p/a/small.bin", small}, {"p/a/big.bin", big}} {
		if err := mp.Put(ctx, o.key, bytes.NewReader(o.data), int64(len(o.data))); err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(ctx, o.key, int64(len(o.data)), bucket.CRC32C(o.data)); err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(ctx, o.key, int64(len(o.data)), bucket.CRC32C(o.data)^1); !errors.Is(err, bucket.ErrVerify) {
			t.Fatalf("verify with a wrong CRC: %v", err)
		}
		if err := c.Verify(ctx, o.key, int64(len(o.data))+1, bucket.CRC32C(o.data)); !errors.Is(err, bucket.ErrVerify) {
			t.Fatalf("verify with a wrong size: %v", err)
		}
	}
	for _, rg := range [][2]int64{{0, 1}, {5, 100}, {5 << 20, 4096}, {int64(len(big)) - 7, 7}} {
		b, err := c.GetRange(ctx, "p/a/big.bin", rg[0], rg[1], "test")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, big[rg[0]:rg[0]+rg[1]]) {
			t.Fatalf("range %v: wrong bytes", rg)
		}
	}
	if _, err := c.GetRange(ctx, "p/a/small.bin", 10, 10, "test"); !errors.Is(err, bucket.ErrShortRead) {
		t.Fatalf("range past the end: %v, want ErrShortRead", err)
	}
	if _, err := c.GetRange(ctx, "p/a/missing.bin", 0, 10, "test"); !errors.Is(err, bucket.ErrNotFound) {
		t.Fatalf("missing object: %v, want ErrNotFound", err)
	}
	if _, err := c.Get(ctx, "p/a/big.bin", 1<<20, "test"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("get over the limit: %v", err)
	}
	var keys []string
	if err := c.List(ctx, "p/", true, func(o bucket.ObjectInfo) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "p/a/big.bin,p/a/small.bin" {
		t.Fatalf("listed %v", keys)
	}
	var prefixes []string
	if err := c.List(ctx, "p/", false, func(o bucket.ObjectInfo) error {
		if o.Prefix {
			prefixes = append(prefixes, o.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(prefixes, ",") != "p/a/" {
		t.Fatalf("prefixes %v", prefixes)
	}
	if err := c.Delete(ctx, "p/a/small.bin"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "p/a/small.bin"); err != nil {
		t.Fatalf("deleting a deleted object: %v", err)
	}
	if _, err := c.Get(ctx, "p/a/small.bin", 100, "test"); !errors.Is(err, bucket.ErrNotFound) {
		t.Fatalf("deleted object: %v", err)
	}
	anon := srv.Config("acta-test")
	anon.AccessKeyID, anon.SecretAccessKey = "", ""
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	ac, err := bucket.New(anon)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Get(ctx, "p/a/big.bin", 1<<30, "test"); err == nil {
		t.Fatal("an unsigned GET succeeded on a server with credentials")
	}
	wrong := srv.Config("acta-test")
	wrong.SecretAccessKey = "not-the-secret"
	wc, _ := bucket.New(wrong)
	if err := wc.PutBytes(ctx, "p/x", []byte("x")); err == nil {
		t.Fatal("a PUT signed with a wrong secret succeeded")
	}
	// The standard AWS environment signs when the config has no keys.
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	ec, _ := bucket.New(anon)
	if b, err := ec.GetRange(ctx, "p/a/big.bin", 3, 3, "test"); err != nil || !bytes.Equal(b, big[3:6]) {
		t.Fatalf("signed from the environment: %v", err)
	}
}
