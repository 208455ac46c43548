package main

import (
	"log/slog"
	"reflect"
	"testing"

	"github.com/acta-remote/acta-remote/config"
	"github.com/acta-remote/acta-remote/otlp"
)

// default.yaml's otlp block, mapped, is the receiver's own defaults: a key
// added to one side and not the other shows here.
func TestOTLPOptionsDefault(t *testing.T) {
	got := otlpOptions(config.Default().OTLP)
	want := otlp.DefaultConfig()
	// Empty and nil lists mean the same.
	for _, c := range []*otlp.Config{&got, &want} {
		if len(c.PromoteResourceAttributes) == 0 {
			c.PromoteResourceAttributes = nil
		}
		if len(c.IgnoreResourceAttributes) == 0 {
			c.IgnoreResourceAttributes = nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("default.yaml otlp block maps to\n%+v\nwant otlp.DefaultConfig()\n%+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Every field of the block reaches the receiver.
func TestOTLPOptionsMapsEveryKey(t *testing.T) {
	c, err := config.Load("../../config/testdata/good_otlp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := otlpOptions(c.OTLP)
	if o.TranslationStrategy != "NoUTF8EscapingWithSuffixes" || len(o.PromoteResourceAttributes) != 2 ||
		!o.KeepIdentifyingResourceAttributes || o.TargetInfo || !o.PromoteScopeMetadata ||
		o.MaxBodyBytes != 8<<20 || o.MaxDecompressedBytes != 32<<20 || o.GRPC.Enabled ||
		o.DeltaTemporality != otlp.DeltaConvert || o.DeltaConversion.MaxStreams != 5000 ||
		o.GRPC.ListenAddress != "127.0.0.1:4317" || o.MaxConcurrent != 16 {
		t.Fatalf("mapped %+v", o)
	}
}

// storage.memory_budget bounds the store's read caches as well as its
// head: 256 MiB gives 32 MiB of kept chunks, 16 MiB of reader indexes and
// 80 MiB of head; without a budget the store keeps its defaults.
func TestStoreOptionsMemoryBudget(t *testing.T) {
	c := config.Default()
	c.Storage.MemoryBudget = 256 << 20
	o := storeOptions(c, slog.New(slog.DiscardHandler), nil)
	if o.MaxChunkCacheBytes != 32<<20 || o.MaxReaderBytes != 16<<20 || o.MaxHeadBytes != 80<<20 {
		t.Fatalf("256 MiB budget: chunks %d, reader indexes %d, head %d", o.MaxChunkCacheBytes, o.MaxReaderBytes, o.MaxHeadBytes)
	}
	c.Storage.MemoryBudget = 0
	o = storeOptions(c, slog.New(slog.DiscardHandler), nil)
	if o.MaxChunkCacheBytes != 0 || o.MaxReaderBytes != 0 || o.MaxHeadBytes != int64(c.Storage.MaxHeadBytes) {
		t.Fatalf("no budget: chunks %d, reader indexes %d, head %d", o.MaxChunkCacheBytes, o.MaxReaderBytes, o.MaxHeadBytes)
	}
}
