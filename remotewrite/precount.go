package remotewrite

import "google.golang.org/protobuf/encoding/protowire"

// Field numbers of the repeated timeseries field: prometheus.WriteRequest
// (Remote-Write 1.0) and io.prometheus.write.v2.Request (Remote-Write 2.0
// spec). Frozen by the protocols.
const (
	timeseriesFieldV1 protowire.Number = 1
	timeseriesFieldV2 protowire.Number = 5
)

// countTopLevel counts the occurrences of field num at the top level of the
// protobuf message b, decoding nothing else. The generated Unmarshal turns
// every 2-byte empty series into a 128-176-byte struct (and grows the slice
// by doubling), so the series limit is checked on the wire first: a 16 MiB
// body of empty series would otherwise allocate gigabytes before the limit
// could be applied (STYLE: bound untrusted sizes before allocating). ok is
// false when b is not well-formed at the top level; the caller then lets
// Unmarshal report the error.
func countTopLevel(b []byte, num protowire.Number) (n int, ok bool) {
	for len(b) > 0 {
		f, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return n, false
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(f, typ, b)
		if l < 0 {
			return n, false
		}
		b = b[l:]
		if f == num {
			n++
		}
	}
	return n, true
}
