//go:build unix

package actastore

import "syscall"

// defaultMaxOpenReaders is Options.MaxOpenReaders' default: half the
// process's file descriptor limit (Go raises the soft limit to the hard
// one at start-up), at least 4096 and at most 65536. A query over every
// series cycles through all their files, and an LRU smaller than that
// cycle never hits (each open evicts the file the next query wants
// first): with 10,000 series a 4096-reader cache reopened every file of
// every such query.
func defaultMaxOpenReaders() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 4096
	}
	return int(min(max(lim.Cur/2, 4096), 65536))
}
