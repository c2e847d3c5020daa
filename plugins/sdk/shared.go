package sdk

import (
	"context"
	"log/slog"

	"github.com/faucet-dev/faucet/plugins/internal/shm"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// Shared regions a sink reading a source directly offers (protocol 1.1):
// one slot the source fills while the sink consumes another and a third
// already filled waits, each the size of a full batch plus room for its
// last record, which BatchWriter appends before it cuts the batch. The
// source maps the region once the batch it collects reaches
// sharedMinBytes; a read smaller than that costs less than the mapping,
// and its batches travel in their messages.
//
// A session with a record policy gets sharedKeptSlots more, so that a
// writer can keep batches (Batch.Keep) until it knows which of their
// records it refuses without copying them: up to 16 MiB of them.
const (
	sharedSlots     = 3
	sharedKeptSlots = 16
	sharedSlotBytes = TargetBatchBytes + 64<<10
	sharedMinBytes  = 64 << 10
)

// sharedBatches is a source's side of a Read whose sink offered a shared
// region: from the first batch worth it on, each batch is built in the
// next slot and crosses to the sink without a copy. A batch that outgrew
// its slot (a record near MaxRecordBytes) travels in its message, and so
// does every batch when the region cannot be mapped.
type sharedBatches struct {
	w    *BatchWriter
	ctx  context.Context
	reg  *connectorv1.SharedRegion
	send func(*connectorv1.Batch) error
	// region is the sink's region once mapped; unusable is set when mapping
	// it failed.
	region   *shm.Region
	unusable bool
	// sent counts the batches sent through slots: the next one goes into
	// slot sent mod slots.
	sent uint32
}

// grow moves a batch that reached sharedMinBytes into the first slot,
// mapping the region: the read is worth it.
func (sb *sharedBatches) grow(buf []byte) []byte {
	sb.w.grow = nil
	if sb.mapRegion(); sb.region == nil || len(buf) > sb.region.SlotBytes() {
		return buf
	}
	return append(sb.region.Slot(sb.slot())[:0], buf...)
}

// emit sends a batch: by its place in a slot, or in its message.
func (sb *sharedBatches) emit(b Batch) error {
	msg := &connectorv1.Batch{Seq: b.Seq, Count: uint32(b.Count)}
	r := sb.region
	if r != nil && len(b.Records) <= r.SlotBytes() {
		slot := sb.slot()
		if !r.Contains(slot, b.Records) {
			copy(r.Slot(slot), b.Records)
		}
		msg.Shared = &connectorv1.SharedSlot{Slot: uint32(slot), Length: uint32(len(b.Records))}
	} else {
		msg.Records = b.Records
	}
	if err := sb.send(msg); err != nil {
		return err
	}
	if msg.Shared == nil {
		return nil
	}
	sb.sent++
	// The next slot is free once the sink has consumed the batch that used
	// it last, slots batches ago.
	return r.WaitConsumed(sb.ctx, sb.sent+1-uint32(r.Slots()))
}

// slot is the slot the next batch goes into.
func (sb *sharedBatches) slot() int { return int(sb.sent % uint32(sb.region.Slots())) }

// next is where the writer collects the next batch: its slot once the
// region is mapped, the writer's own buffer before.
func (sb *sharedBatches) next(own []byte) []byte {
	if sb.region == nil {
		return own
	}
	return sb.region.Slot(sb.slot())[:0]
}

func (sb *sharedBatches) mapRegion() {
	region, err := shm.Open(int(sb.reg.GetPid()), int(sb.reg.GetFd()), int(sb.reg.GetSlots()), int(sb.reg.GetSlotBytes()))
	if err != nil || int(sb.reg.GetHeaderBytes()) != shm.HeaderBytes {
		slog.Debug("the batches travel in messages: the sink's shared region cannot be used", "error", err, "header_bytes", sb.reg.GetHeaderBytes())
		if region != nil {
			region.Close()
		}
		sb.unusable = true
		return
	}
	sb.region = region
}

func (sb *sharedBatches) close() {
	if sb.region != nil {
		sb.region.Close()
	}
}
