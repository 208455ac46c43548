//go:build !race

package remoteread

// raceEnabled: see race_on_test.go.
const raceEnabled = false
