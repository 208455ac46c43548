package testkit

import (
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
)

// ReadResponse decodes a Remote-Read SAMPLES answer: a prompb.ReadResponse
// in one snappy block.
func ReadResponse(body []byte) (*prompb.ReadResponse, error) {
	dec, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("cannot decode the SAMPLES answer's snappy block: %w", err)
	}
	var r prompb.ReadResponse
	if err := r.Unmarshal(dec); err != nil {
		return nil, fmt.Errorf("cannot unmarshal the SAMPLES answer: %w", err)
	}
	return &r, nil
}

// Frames reads a Remote-Read STREAMED_XOR_CHUNKS answer from r with
// Prometheus's own chunked reader, which checks the framing and each
// frame's CRC-32C and refuses a frame over maxFrame bytes, and hands f
// every frame in order. It returns the first error of the reader or f.
func Frames(r io.Reader, maxFrame uint64, f func(*prompb.ChunkedReadResponse) error) error {
	cr := remote.NewChunkedReader(r, maxFrame, nil)
	for {
		var c prompb.ChunkedReadResponse
		if err := cr.NextProto(&c); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := f(&c); err != nil {
			return err
		}
	}
}
