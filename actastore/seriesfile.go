package actastore

// The file I/O of series files sits behind these few functions so the rest
// of the store never touches a file format. A series file holds blocks of
// (timestamp ms, value) rows; each block appended by the store is sorted by
// timestamp, and readers merge blocks.

// block is one decoded block of a series file. Values are float64 here
// whatever the file stores: a file whose value column is int64 or decimal64
// (see DESIGN.md) is converted bit-exactly by the reader.
type block struct {
	ts     []int64
	vs     []float64
	sorted bool // timestamps nondecreasing
}

// fileWriter appends blocks to one series file. It is used by one goroutine
// at a time (the writer cache hands it out exclusively).
type fileWriter interface {
	// appendBlock writes one block and hands it to the OS, so readers opening
	// the file afterwards see it; it is durable after sync.
	appendBlock(ts []int64, vs []float64) error
	sync() error
	// close closes the file without fsync; the writer cache syncs it.
	close() error
}

// fileOptions are what writers need from the store's Options.
type fileOptions struct {
	zstd      bool
	zstdLevel int
	blockRows int
}
