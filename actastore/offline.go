package actastore

import (
	"io"
	"path/filepath"
)

// Offline tools (acta-remote recover --salvage --data-dir) work on a data
// directory no server has open. These give them the store's own names, so
// they cannot drift from what Open uses and ignores.

// LockDataDir takes the data directory's LOCK exactly as Open does (flock,
// without waiting), so a tool refuses to run beside a live server and a
// server refuses to start beside the tool. Close releases it.
func LockDataDir(dir string) (io.Closer, error) {
	return lockDir(filepath.Join(dir, lockFileName))
}

// ActaFileDirs are the directories under dir that hold the store's Acta
// files, searched recursively: the float series files, and the histogram,
// exemplar and metadata files (their WAL, also there, has no .acta names).
func ActaFileDirs(dir string) []string {
	return []string{filepath.Join(dir, seriesDirName), filepath.Join(dir, histDirName)}
}

// ActaFileExt ends the name of every Acta file the store reads.
const ActaFileExt = seriesFileExt

// SalvageNames returns, for the store file at path, where a rewrite is
// written before it is renamed over path (a temporary name Open deletes)
// and the name the damaged original is kept under (Open ignores it).
func SalvageNames(path string) (tmp, aside string) {
	return path + ".salvage" + tmpSuffix, path + ".damaged"
}
