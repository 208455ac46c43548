// Package snappybody reads the snappy block-format request bodies of
// Remote-Write and Remote-Read, bounded before memory is committed.
package snappybody

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/golang/snappy"

	"github.com/acta-remote/acta-remote/apistatus"
)

// Read reads a snappy block-format body (the Remote-Write and
// Remote-Read framing) with two bounds checked before memory is committed:
// the compressed body is capped at maxBody bytes (http.MaxBytesReader), and
// the decoded length that snappy's header declares must not exceed
// maxDecoded. raw and dec are caller scratch buffers reused across requests;
// the grown buffers are returned with the decoded bytes (a prefix of dec).
func Read(w http.ResponseWriter, r *http.Request, raw, dec []byte, maxBody, maxDecoded int64) (rawOut, decOut, decoded []byte, err error) {
	if r.ContentLength > maxBody {
		return raw, dec, nil, fmt.Errorf("%w: body is %d bytes, limit %d", apistatus.ErrTooLarge, r.ContentLength, maxBody)
	}
	raw, err = readAll(raw[:0], http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return raw, dec, nil, fmt.Errorf("%w: body exceeds %d bytes", apistatus.ErrTooLarge, maxBody)
		}
		return raw, dec, nil, fmt.Errorf("%w: cannot read body: %v", apistatus.ErrBadRequest, err)
	}
	n, err := snappy.DecodedLen(raw)
	if err != nil {
		return raw, dec, nil, fmt.Errorf("%w: bad snappy block header: %v", apistatus.ErrBadRequest, err)
	}
	if int64(n) > maxDecoded {
		return raw, dec, nil, fmt.Errorf("%w: snappy declares %d decoded bytes, limit %d", apistatus.ErrTooLarge, n, maxDecoded)
	}
	if cap(dec) < n {
		dec = make([]byte, n)
	}
	decoded, err = snappy.Decode(dec[:cap(dec)], raw)
	if err != nil {
		return raw, dec, nil, fmt.Errorf("%w: bad snappy data: %v", apistatus.ErrBadRequest, err)
	}
	return raw, dec, decoded, nil
}

// readAll is io.ReadAll into a reused buffer.
func readAll(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
