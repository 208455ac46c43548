// Package e2e holds acta-remote's end-to-end tests against real third-party
// programs built from the Go module proxy (today: Prometheus 3.16).
//
// It is its own Go module so that those programs and their dependencies never
// enter the main module's go.mod. The tests build the acta-remote binary from
// the parent directory and drive it over loopback HTTP only.
//
// Run with `make test` at the repository root, or here with
//
//	go test -count=1 -timeout 60m ./...
//
// The first run builds Prometheus into e2e/.bin/ (about 10 minutes on two
// cores); later runs reuse it. Environment knobs:
//
//	ACTA_E2E_PROMETHEUS=/path/to/prometheus  use this binary, build nothing
//	ACTA_E2E_CACHE=/dir                      where built programs are cached (default e2e/.bin)
//	ACTA_E2E_RACE=1                          build acta-remote with -race (needs cgo)
//	ACTA_E2E_BACKEND=prometheus              run the same test against a Prometheus
//	                                         remote-write receiver instead of
//	                                         acta-remote: checks the harness itself
package e2e
