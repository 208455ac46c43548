//go:build unix

package actastore

import "golang.org/x/sys/unix"

// fsSpace is the free (to unprivileged users) and total bytes of the file
// system holding dir; zeros when it cannot be read.
func fsSpace(dir string) (free, size int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize)
}
