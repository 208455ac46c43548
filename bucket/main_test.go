package bucket_test

import (
	"os"
	"testing"

	"github.com/acta-remote/acta-remote/bucket/s3test"
)

func TestMain(m *testing.M) {
	code := m.Run()
	s3test.StopShared()
	os.Exit(code)
}
