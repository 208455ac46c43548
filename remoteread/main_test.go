package remoteread

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	closeWide() // the stores BenchmarkReadWide keeps across runs
	os.Exit(code)
}
