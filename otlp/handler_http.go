package otlp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/acta-remote/acta-remote/apistatus"
	"github.com/gorilla/mux"
	"github.com/klauspost/compress/zstd"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// Paths are where OTLP/HTTP metrics are accepted: the OTLP default, and the
// paths Prometheus (--web.enable-otlp-receiver) and Mimir use, so existing
// exporter configs work unchanged. The Collector's otlphttp exporter appends
// /v1/metrics to its endpoint.
var Paths = []string{"/v1/metrics", "/api/v1/otlp/v1/metrics", "/otlp/v1/metrics"}

// RegisterRoutes mounts Handler on every path in Paths.
func (r *Receiver) RegisterRoutes(router *mux.Router) {
	h := r.Handler()
	for _, p := range Paths {
		router.Handle(p, h)
	}
}

// Handler serves OTLP/HTTP ExportMetricsServiceRequest on whatever path it
// is mounted (OTLP/HTTP spec, "OTLP/HTTP Request"/"Response"): POST only;
// application/x-protobuf or application/json, optionally Content-Encoding:
// gzip or zstd. Answers, in the request's encoding:
//
//	200 ExportMetricsServiceResponse, partial_success listing rejected points
//	400 google.rpc.Status: undecodable body (bad protobuf, JSON or gzip)
//	405 not POST; 415 other content types or encodings (text/plain)
//	413 google.rpc.Status: body over max_body_bytes, or decompressed body
//	    over max_decompressed_bytes
//	429 google.rpc.Status + Retry-After: every request slot stayed busy
//	    for max_queue_wait
//	503 google.rpc.Status + Retry-After: store overloaded or closing
//	500 google.rpc.Status: store failure
func (r *Receiver) Handler() http.Handler {
	return http.HandlerFunc(r.serveHTTP)
}

// errTooLarge marks a body over one of the byte caps.
var errTooLarge = errors.New("request body too large")

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "405 method not allowed, supported: [POST]", http.StatusMethodNotAllowed)
		return
	}
	enc := encoderFor(req.Header.Get("Content-Type"))
	if enc == nil {
		http.Error(w, fmt.Sprintf("415 unsupported media type %q, supported: [%s, %s]",
			req.Header.Get("Content-Type"), contentTypeProtobuf, contentTypeJSON), http.StatusUnsupportedMediaType)
		return
	}
	codec, ok := codecFor(req.Header.Get("Content-Encoding"))
	if !ok {
		http.Error(w, fmt.Sprintf("415 unsupported content encoding %q, supported: [gzip, zstd, identity]",
			req.Header.Get("Content-Encoding")), http.StatusUnsupportedMediaType)
		return
	}

	// The slot covers reading and decoding too: that is where the memory goes.
	if err := r.acquire(req.Context()); err != nil {
		r.writeFailure(w, enc, err)
		return
	}
	defer r.release()
	buf := r.getBuffer()
	defer r.putBuffer(buf)
	if err := r.readBody(w, req, codec, buf); err != nil {
		if errors.Is(err, errTooLarge) {
			r.writeStatus(w, enc, http.StatusRequestEntityTooLarge, codes.InvalidArgument, err.Error())
		} else {
			r.writeStatus(w, enc, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		}
		return
	}
	otlpReq, err := enc.unmarshalRequest(buf.Bytes())
	if err != nil {
		r.writeStatus(w, enc, http.StatusBadRequest, codes.InvalidArgument,
			fmt.Sprintf("cannot decode %s ExportMetricsServiceRequest: %v", enc.contentType(), err))
		return
	}

	resp, err := r.export(req.Context(), otlpReq.Metrics())
	if err != nil {
		r.writeFailure(w, enc, err)
		return
	}
	body, err := enc.marshalResponse(resp)
	if err != nil {
		r.writeStatus(w, enc, http.StatusInternalServerError, codes.Internal, "cannot encode response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", enc.contentType())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// readBody reads the request body into buf, bounded twice: at most
// max_body_bytes off the wire, and when compressed at most
// max_decompressed_bytes out of the decoder, which streams, so a
// decompression bomb never expands beyond the cap.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request, c codec, buf *bytes.Buffer) error {
	maxBody, maxOut := int64(r.cfg.MaxBodyBytes), int64(r.cfg.MaxDecompressedBytes)
	if req.ContentLength > maxBody {
		return fmt.Errorf("%w: Content-Length %d exceeds max_body_bytes %d", errTooLarge, req.ContentLength, maxBody)
	}
	body := http.MaxBytesReader(w, req.Body, maxBody)
	readErr := func(err error) error {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return fmt.Errorf("%w: body exceeds max_body_bytes %d", errTooLarge, maxBody)
		}
		// zstd refuses, from the frame header, a frame whose window would
		// take more memory than the decompressed cap.
		if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return fmt.Errorf("%w: zstd frame needs more than max_decompressed_bytes %d: %v", errTooLarge, maxOut, err)
		}
		if c == codecIdentity {
			return fmt.Errorf("cannot read body: %w", err)
		}
		return fmt.Errorf("cannot read %s body: %w", c, err)
	}
	if c == codecIdentity {
		if req.ContentLength > 0 {
			buf.Grow(int(req.ContentLength))
		}
		if _, err := buf.ReadFrom(body); err != nil {
			return readErr(err)
		}
		return nil
	}

	rd, release, err := r.decompressor(c, body)
	if err != nil {
		return readErr(err)
	}
	defer release()
	n, err := buf.ReadFrom(io.LimitReader(rd, maxOut+1))
	if err != nil {
		return readErr(err)
	}
	if n > maxOut {
		return fmt.Errorf("%w: body decompresses beyond max_decompressed_bytes %d", errTooLarge, maxOut)
	}
	return nil
}

// maxPooledBuffer keeps one huge request from pinning its buffer forever.
const maxPooledBuffer = 4 << 20

func (r *Receiver) getBuffer() *bytes.Buffer {
	if b, ok := r.bodies.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (r *Receiver) putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	r.bodies.Put(b)
}

// writeFailure answers a whole-request failure (a store or wait error) as
// apistatus.Of says: 503 with Retry-After, or 500.
func (r *Receiver) writeFailure(w http.ResponseWriter, enc encoder, err error) {
	a := apistatus.Of(apistatus.OTLP, err)
	status, code := a.HTTP, a.GRPC
	if a.Outcome == apistatus.Retry {
		apistatus.SetRetryAfter(w)
	} else {
		r.logger.Error("otlp: cannot store metrics", "err", err)
	}
	r.writeStatus(w, enc, status, code, err.Error())
}

// writeStatus answers with a google.rpc.Status in the request's encoding,
// as the OTLP/HTTP spec asks for failures.
func (r *Receiver) writeStatus(w http.ResponseWriter, enc encoder, httpStatus int, code codes.Code, msg string) {
	// Messages may quote the client's bytes; protobuf strings must be UTF-8.
	body, err := enc.marshalStatus(&spb.Status{Code: int32(code), Message: strings.ToValidUTF8(msg, "\uFFFD")})
	if err != nil { // cannot happen for a two-field message; answer anyway
		http.Error(w, msg, httpStatus)
		return
	}
	w.Header().Set("Content-Type", enc.contentType())
	w.WriteHeader(httpStatus)
	_, _ = w.Write(body)
}
