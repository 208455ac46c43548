//go:build race

package remoteread

// raceEnabled: the race detector slows every goroutine several times, so
// tests of timing (not of results) relax what they ask.
const raceEnabled = true
