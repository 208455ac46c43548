package remotewrite

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/acta-remote/acta-remote/apistatus"
)

// msgType is the protobuf message a request carries.
type msgType uint8

const (
	msgV1 msgType = iota + 1 // prometheus.WriteRequest (Remote-Write 1.0)
	msgV2                    // io.prometheus.write.v2.Request (Remote-Write 2.0)
)

// Content negotiation per the Remote-Write 2.0 spec ("Protocol" section).
const (
	protoV1 = "prometheus.WriteRequest"
	protoV2 = "io.prometheus.write.v2.Request"

	headerSamplesWritten    = "X-Prometheus-Remote-Write-Samples-Written"
	headerHistogramsWritten = "X-Prometheus-Remote-Write-Histograms-Written"
	headerExemplarsWritten  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

// negotiate reads Content-Type and Content-Encoding. Remote-Write 2.0 spec:
// "application/x-protobuf" without a proto parameter means the 1.0 message;
// an unknown proto or media type, or an encoding other than snappy, is 415.
func negotiate(h http.Header) (msgType, error) {
	ct := h.Get("Content-Type")
	if ct == "" {
		return 0, fmt.Errorf("%w: missing Content-Type, want application/x-protobuf;proto=%s or %s", apistatus.ErrUnsupportedMedia, protoV1, protoV2)
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return 0, fmt.Errorf("%w: cannot parse Content-Type %q: %v", apistatus.ErrUnsupportedMedia, ct, err)
	}
	if media != "application/x-protobuf" {
		return 0, fmt.Errorf("%w: Content-Type %q, want application/x-protobuf", apistatus.ErrUnsupportedMedia, media)
	}
	var t msgType
	switch p := params["proto"]; p {
	case "", protoV1:
		t = msgV1
	case protoV2:
		t = msgV2
	default:
		return 0, fmt.Errorf("%w: proto message %q, want %s or %s", apistatus.ErrUnsupportedMedia, p, protoV1, protoV2)
	}
	if enc := h.Get("Content-Encoding"); !strings.EqualFold(strings.TrimSpace(enc), "snappy") {
		// The message type is known, so a 2.0 sender still gets its headers.
		return t, fmt.Errorf("%w: Content-Encoding %q, want snappy", apistatus.ErrUnsupportedMedia, enc)
	}
	return t, nil
}
