package actastore

import (
	"os"
	"testing"

	"github.com/acta-remote/acta-remote/bucket/s3test"
)

// TestMain stops the SeaweedFS server the tier tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	s3test.StopShared()
	os.Exit(code)
}
