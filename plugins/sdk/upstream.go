package sdk

import (
	"context"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// writeFromUpstream runs a write session whose batches the sink reads from
// the source plugin directly. faucet's stream carries only control: closing
// it stops the read and commits what was acknowledged, an abort request
// discards the session.
func (s *server) writeFromUpstream(stream grpc.BidiStreamingServer[connectorv1.WriteRequest, connectorv1.WriteResponse], sink Sink, open *connectorv1.WriteOpen) error {
	ctx := stream.Context()
	up := open.GetUpstream()
	conn, err := grpc.NewClient("passthrough:///"+up.GetAddress(), append(protocol.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(protocol.Dialer(up.GetNetwork())),
	)...)
	if err != nil {
		return status.Errorf(codes.Internal, "connect to upstream: %v", err)
	}
	defer conn.Close()
	rctx, stopRead := context.WithCancel(ctx)
	defer stopRead()

	// faucet's requests: end of stream (stop) or abort.
	var (
		mu      sync.Mutex
		stopped bool
		aborted bool
	)
	control := func() (stop, abort bool) {
		mu.Lock()
		defer mu.Unlock()
		return stopped, aborted
	}
	go func() {
		for {
			req, err := stream.Recv()
			mu.Lock()
			switch {
			case err == io.EOF:
				stopped = true
			case err != nil || req.GetAbort() != nil:
				aborted = true
			}
			done := stopped || aborted
			mu.Unlock()
			if done {
				stopRead()
				return
			}
		}
	}()

	failed := func(err error) error {
		st, _ := status.FromError(err)
		return stream.Send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_UpstreamFailed{UpstreamFailed: &connectorv1.UpstreamFailure{Code: int32(st.Code()), Message: st.Message()}}})
	}
	rs, err := connectorv1.NewConnectorServiceClient(conn).Read(rctx, up.GetRead())
	var msg *connectorv1.ReadResponse
	if err == nil {
		// The first batch comes before the sink opens: a source that cannot
		// start never touches the sink.
		msg, err = rs.Recv()
	}
	if err != nil {
		// Stopped or aborted before the first batch: nothing was written, and
		// the source's cancellation is not its failure.
		if stop, abort := control(); stop || abort {
			return stream.Send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Stats{Stats: &connectorv1.Stats{}}})
		}
		return failed(err)
	}
	w, err := sink.Open(ctx, open.GetConfig())
	if err != nil {
		return toStatus(ctx, err)
	}
	var (
		seq           uint64
		records, size int64
	)
	for {
		if stop, abort := control(); stop || abort {
			break
		}
		if b := msg.GetBatch(); b != nil {
			seq++
			batch := Batch{Seq: seq, Count: int(b.GetCount()), Records: b.GetRecords()}
			err := w.Write(ctx, batch)
			protocol.Release(batch.Records)
			if err != nil {
				abort(w)
				return toStatus(ctx, fmt.Errorf("batch %d: %w", seq, err))
			}
			records += int64(batch.Count)
			size += int64(len(batch.Records))
			if err := stream.Send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Ack{Ack: &connectorv1.Ack{Seq: seq, Count: uint32(batch.Count)}}}); err != nil {
				abort(w)
				return err
			}
		} else if msg.GetStats() != nil {
			break
		}
		if msg, err = rs.Recv(); err != nil {
			if stop, abort := control(); stop || abort {
				break
			}
			abort(w)
			return failed(err)
		}
	}
	if _, aborted := control(); aborted {
		if err := w.Abort(ctx); err != nil {
			return toStatus(ctx, fmt.Errorf("abort: %w", err))
		}
		return stream.Send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Stats{Stats: &connectorv1.Stats{}}})
	}
	if err := w.Close(ctx); err != nil {
		return toStatus(ctx, err)
	}
	return stream.Send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Stats{Stats: &connectorv1.Stats{Records: records, Bytes: size}}})
}
