package otlp

import (
	"mime"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// Content types of OTLP/HTTP (OTLP/HTTP spec, "Binary Protobuf Encoding"
// and "JSON Protobuf Encoding").
const (
	contentTypeProtobuf = "application/x-protobuf"
	contentTypeJSON     = "application/json"
)

// encoder is one OTLP/HTTP wire encoding. It is chosen once from the
// request's Content-Type, and the response (success or google.rpc.Status)
// goes back in the same encoding, so handlers never branch on the format.
type encoder interface {
	contentType() string
	unmarshalRequest(body []byte) (pmetricotlp.ExportRequest, error)
	marshalResponse(pmetricotlp.ExportResponse) ([]byte, error)
	marshalStatus(*spb.Status) ([]byte, error)
}

type protoEncoder struct{}

func (protoEncoder) contentType() string { return contentTypeProtobuf }

func (protoEncoder) unmarshalRequest(body []byte) (pmetricotlp.ExportRequest, error) {
	req := pmetricotlp.NewExportRequest()
	return req, req.UnmarshalProto(body)
}

func (protoEncoder) marshalResponse(r pmetricotlp.ExportResponse) ([]byte, error) {
	return r.MarshalProto()
}

func (protoEncoder) marshalStatus(s *spb.Status) ([]byte, error) { return proto.Marshal(s) }

type jsonEncoder struct{}

func (jsonEncoder) contentType() string { return contentTypeJSON }

func (jsonEncoder) unmarshalRequest(body []byte) (pmetricotlp.ExportRequest, error) {
	req := pmetricotlp.NewExportRequest()
	return req, req.UnmarshalJSON(body)
}

func (jsonEncoder) marshalResponse(r pmetricotlp.ExportResponse) ([]byte, error) {
	return r.MarshalJSON()
}

func (jsonEncoder) marshalStatus(s *spb.Status) ([]byte, error) { return protojson.Marshal(s) }

// encoderFor returns the encoder for a Content-Type header, or nil.
// Parameters such as charset are ignored.
func encoderFor(header string) encoder {
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return nil
	}
	switch mt {
	case contentTypeProtobuf:
		return protoEncoder{}
	case contentTypeJSON:
		return jsonEncoder{}
	}
	return nil
}
