# acta-remote. `make test` is the one test command: vet, the S3-compatible
# server the object-storage tests need (SeaweedFS), unit tests, a short run
# of every fuzz target, then the end-to-end tests against real Prometheus
# and SeaweedFS (both built from the Go module proxy on first use: about 10
# and 5 minutes on 2 cores).

GO       ?= go
FUZZTIME ?= 10s
BIN      ?= bin/acta-remote
# Arguments for `make run`, e.g. make run ARGS='--config acta-remote.yml'.
ARGS     ?=

.PHONY: all build run test vet seaweedfs unit fuzz e2e e2e-reference load clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/acta-remote

run:
	$(GO) run ./cmd/acta-remote $(ARGS)

test: vet seaweedfs unit fuzz e2e

vet:
	$(GO) vet ./...
	cd e2e && $(GO) vet ./...

# SeaweedFS's weed, built once into the e2e cache ($ACTA_E2E_CACHE, else
# e2e/.bin), where the unit tests of bucket/ and actastore/ find it (they
# skip their object-storage tests without it).
seaweedfs:
	cd e2e && $(GO) test -count=1 -run '^TestBuildSeaweedFS$$' ./...

unit:
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -race -timeout 10m -run 'TestConcurrent' ./actastore

fuzz:
	scripts/fuzz.sh $(FUZZTIME)

e2e:
	cd e2e && $(GO) test -count=1 -timeout 60m -v ./...

# The backpressure load test at full length: 60 s at twice the measured
# sustainable write rate (`make unit` runs an 8 s version).
load:
	ACTA_LOAD_FULL=1 $(GO) test -count=1 -timeout 10m -v -run '^TestServeBackpressure$$' ./cmd/acta-remote

# The same end-to-end tests with a Prometheus receiver in acta-remote's place:
# checks the harness itself (not part of `make test`).
e2e-reference:
	cd e2e && ACTA_E2E_BACKEND=prometheus $(GO) test -count=1 -timeout 60m -v -run TestPrometheus ./...

clean:
	rm -rf bin

# Side-by-side benchmark (cmd/acta-bench): acta-remote, Prometheus and
# VictoriaMetrics on the same generated data; the peers are built from the Go
# module proxy on first use. Results in bench-results/<time>/. Default size
# 10k series × 6 h, then restart after kill -9 with 5.76 M samples in the
# head and memory per series at 200k and 1M series (about 13 min on 2
# cores); bench-quick is a smoke run (about 3.5 min).
# Extra flags: make bench BENCH_ARGS='--series 20000 --systems acta-remote'.
BENCH_ARGS ?=

.PHONY: bench bench-quick bench-multiday

bench:
	$(GO) run ./cmd/acta-bench $(BENCH_ARGS)

# 2,000 series × 3 days: rotation, sealing, compaction and tier merges all
# happen before the disk is measured; each shape group also alone (about
# 40 min on 2 cores).
bench-multiday:
	$(GO) run ./cmd/acta-bench --scenario multiday $(BENCH_ARGS)

bench-quick:
	$(GO) run ./cmd/acta-bench --quick $(BENCH_ARGS)
