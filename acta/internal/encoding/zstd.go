package encoding

import "fmt"

func zstdDecode(src []byte, rawLen uint64, budget *Budget) ([]byte, error) {
	return nil, fmt.Errorf("%w: zstd", ErrUnsupported)
}
