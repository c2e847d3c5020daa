package sdk

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/faucet-dev/faucet/plugins/internal/shm"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// Shared regions a sink reading a source directly creates (protocol 1.1):
// one slot the source fills while the sink consumes another and a third
// already filled waits, each the size of a full batch plus room for its
// last record, which BatchWriter appends before it cuts the batch.
const (
	sharedSlots     = 3
	sharedSlotBytes = TargetBatchBytes + 64<<10
)

// ReadShared serves a Read whose batches the source writes straight into
// the calling sink's shared region, slot after free slot: the records are
// built in place and cross to the sink without a copy. A batch that
// outgrew its slot (a record near MaxRecordBytes) travels in its message.
func (s *server) ReadShared(stream grpc.BidiStreamingServer[connectorv1.ReadSharedRequest, connectorv1.ReadSharedResponse]) error {
	src, ok := s.c.(Source)
	if !ok {
		return status.Errorf(codes.Unimplemented, "connector %s is not a source", s.c.Spec().Name)
	}
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	open := first.GetOpen()
	if open == nil || open.GetRegion() == nil {
		return status.Error(codes.InvalidArgument, "a shared read must start with an open request naming the region")
	}
	reg := open.GetRegion()
	region, err := shm.Open(int(reg.GetPid()), int(reg.GetFd()), int(reg.GetSlots()), int(reg.GetSlotBytes()))
	if err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	defer region.Close()

	// The sink hands slots back as it consumes their batches.
	free := make(chan int, region.Slots())
	for i := range region.Slots() {
		free <- i
	}
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				return
			}
			if i := int(req.GetRelease()); req.GetOpen() == nil && i < region.Slots() {
				select {
				case free <- i:
				default: // released twice: a confused sink; ignore it
				}
			}
		}
	}()

	cur := <-free
	w := NewBatchWriter(func(b Batch) error {
		msg := &connectorv1.Batch{Seq: b.Seq, Count: uint32(b.Count)}
		slot := region.Slot(cur)
		switch {
		case region.Contains(cur, b.Records):
		case len(b.Records) <= len(slot):
			copy(slot, b.Records)
		default:
			msg.Records = b.Records
		}
		if msg.Records == nil {
			msg.Shared = &connectorv1.SharedSlot{Slot: uint32(cur), Length: uint32(len(b.Records))}
		}
		if err := stream.Send(&connectorv1.ReadSharedResponse{Msg: &connectorv1.ReadSharedResponse_Batch{Batch: msg}}); err != nil {
			return err
		}
		if msg.Shared == nil {
			return nil
		}
		select {
		case cur = <-free:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	w.buf = region.Slot(cur)[:0]
	w.next = func() []byte { return region.Slot(cur)[:0] }
	if err := s.read(ctx, src, open.GetRead(), w); err != nil {
		return err
	}
	return stream.Send(&connectorv1.ReadSharedResponse{Msg: &connectorv1.ReadSharedResponse_Stats{Stats: &connectorv1.Stats{Records: w.Records(), Bytes: w.Bytes()}}})
}

// read runs one Read of src into w, flushing what w still holds, and returns
// the outcome as the protocol's status.
func (s *server) read(ctx context.Context, src Source, req *connectorv1.ReadRequest, w *BatchWriter) error {
	rr := ReadRequest{Config: req.GetConfig()}
	if sh := req.GetShard(); sh != nil {
		rr.Shard = &Shard{Descriptor: sh.GetDescriptor_(), EstimatedRecords: sh.GetEstimatedRecords(), EstimatedBytes: sh.GetEstimatedBytes()}
	}
	err := src.Read(ctx, rr, w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return toStatus(ctx, err)
	}
	return nil
}
