package otlp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/acta-remote/acta-remote/apistatus"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the Collector's otlp exporter compresses with gzip by default
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// GRPCServer serves OTLP/gRPC opentelemetry.proto.collector.metrics.v1.
// MetricsService/Export on its own listener. A nil *GRPCServer (gRPC
// disabled) is valid: Serve returns nil at once and Stop does nothing, so
// the server can wire it unconditionally.
type GRPCServer struct {
	srv *grpc.Server
	lis net.Listener
}

// NewGRPCServer listens on cfg.GRPC.ListenAddress (so a busy port fails
// here, not in Serve) and registers MetricsService backed by r. It returns
// nil, nil when cfg.GRPC.Enabled is false. Messages over
// max_decompressed_bytes (after decompression) are refused by gRPC with
// RESOURCE_EXHAUSTED. opts are added to the server's own (the caller's TLS
// credentials and auth interceptors).
func NewGRPCServer(r *Receiver, opts ...grpc.ServerOption) (*GRPCServer, error) {
	if !r.cfg.GRPC.Enabled {
		return nil, nil
	}
	lis, err := net.Listen("tcp", r.cfg.GRPC.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("otlp: cannot listen for gRPC on %s: %w", r.cfg.GRPC.ListenAddress, err)
	}
	srv := grpc.NewServer(append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(r.cfg.MaxDecompressedBytes)),
		// gRPC decodes a message before Export takes a request slot; capping
		// streams per connection keeps decoded-but-waiting messages bounded too.
		grpc.MaxConcurrentStreams(uint32(r.cfg.MaxConcurrent)),
	}, opts...)...)
	pmetricotlp.RegisterGRPCServer(srv, &grpcMetrics{r: r})
	return &GRPCServer{srv: srv, lis: lis}, nil
}

// Addr is the bound address (useful with port 0).
func (s *GRPCServer) Addr() net.Addr {
	if s == nil {
		return nil
	}
	return s.lis.Addr()
}

// Serve accepts connections until Stop; it returns nil after Stop.
func (s *GRPCServer) Serve() error {
	if s == nil {
		return nil
	}
	if err := s.srv.Serve(s.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("otlp: gRPC server: %w", err)
	}
	return nil
}

// Stop stops accepting, lets in-flight Exports finish until ctx is done,
// then closes every connection.
func (s *GRPCServer) Stop(ctx context.Context) {
	if s == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.srv.Stop()
		<-done
	}
}

type grpcMetrics struct {
	pmetricotlp.UnimplementedGRPCServer
	r *Receiver
}

// Export answers like the HTTP handler: partial_success for rejected data
// points, UNAVAILABLE with RetryInfo when the store asks for a retry (the
// OTLP spec makes UNAVAILABLE retryable), INTERNAL otherwise. The error is
// converted to a gRPC status here because gRPC would report any other error
// as UNKNOWN.
func (g *grpcMetrics) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	if err := g.r.acquire(ctx); err != nil {
		return pmetricotlp.ExportResponse{}, g.failure(err)
	}
	defer g.r.release()
	resp, err := g.r.export(ctx, req.Metrics())
	if err != nil {
		return pmetricotlp.ExportResponse{}, g.failure(err)
	}
	return resp, nil
}

// failure turns a whole-request failure into a gRPC status as
// apistatus.Of says.
func (g *grpcMetrics) failure(err error) error {
	a := apistatus.Of(apistatus.OTLP, err)
	code := a.GRPC
	st := status.New(code, strings.ToValidUTF8(err.Error(), "\uFFFD"))
	if a.Outcome == apistatus.Retry {
		if d, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(apistatus.RetryAfter)}); derr == nil {
			st = d
		}
	} else {
		g.r.logger.Error("otlp: cannot store metrics", "err", err)
	}
	return st.Err()
}
