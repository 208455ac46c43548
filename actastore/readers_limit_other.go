//go:build !unix

package actastore

// defaultMaxOpenReaders is Options.MaxOpenReaders' default where the file
// descriptor limit is not known.
func defaultMaxOpenReaders() int { return 4096 }
