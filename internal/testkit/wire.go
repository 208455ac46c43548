package testkit

import (
	"fmt"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// The Content-Type of each Remote-Write message (Remote-Write 2.0 spec,
// "Protocol").
const (
	ContentTypeRW1 = "application/x-protobuf;proto=prometheus.WriteRequest"
	ContentTypeRW2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
)

// Message is a protobuf message as prompb generates it.
type Message interface{ Marshal() ([]byte, error) }

// Encode is msg's protobuf encoding in one snappy block, the body of a
// Remote-Write or Remote-Read request. It panics if msg cannot be
// marshalled, which for prompb's messages cannot happen.
func Encode(msg Message) []byte {
	b, err := msg.Marshal()
	if err != nil {
		panic(fmt.Sprintf("testkit: cannot marshal %T: %v", msg, err))
	}
	return snappy.Encode(nil, b)
}

// RW1 is the body of a Remote-Write 1.0 request holding ts.
func RW1(ts ...prompb.TimeSeries) []byte {
	return Encode(&prompb.WriteRequest{Timeseries: ts})
}

// RW2 is the body of a Remote-Write 2.0 request.
func RW2(req *writev2.Request) []byte { return Encode(req) }

// ReadRequest is the body of a Remote-Read request for qs, accepting the
// answers types (none: SAMPLES only, as Prometheus reads it).
func ReadRequest(types []prompb.ReadRequest_ResponseType, qs ...*prompb.Query) []byte {
	return Encode(&prompb.ReadRequest{Queries: qs, AcceptedResponseTypes: types})
}

// Labels is a prompb label list of name/value pairs kv, in the order
// given (a Remote-Write sender must sort them; tests of unsorted input
// rely on the order being kept). An odd last element is dropped.
func Labels(kv ...string) []prompb.Label {
	out := make([]prompb.Label, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}
