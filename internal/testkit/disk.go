package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of size bytes on a fresh directory, unmounts
// it when the test ends and returns the directory. A real full disk needs
// root and mount(8); where the machine cannot mount (not root, no tmpfs, a
// container without the capability) the test is skipped with the reason.
func MountTmpfs(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs for a real disk-full test (needs root and mount): %v %s", size, err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// FillDisk writes the file path until its file system has not a byte
// left: large writes first, then pages, then single bytes, each until
// ENOSPC, so that even a write of one byte elsewhere fails. Any other
// error fails the test. Removing path frees the space again.
func FillDisk(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for _, n := range []int{64 << 10, 4096, 1} {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v", path, err)
				}
				break
			}
		}
	}
}
