package protocol

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// codec is the connector protocol's gRPC codec. The bytes on the wire are
// standard protobuf (any protobuf implementation can talk to faucet); only
// the batch-carrying messages take a faster path that moves the records
// through pooled buffers, where the generic codec allocates, zeroes and
// copies a megabyte per message more than once.
type codec struct{}

var _ encoding.CodecV2 = codec{}

// Name keeps the standard content type, as the wire format is unchanged.
func (codec) Name() string { return "proto" }

// Batch fields of the messages that carry one: ReadResponse.batch = 1,
// WriteRequest.batch = 2; Batch.seq = 1, count = 2, records = 3. A batch in
// a shared slot (Batch.shared) takes the generic path: it carries no
// records to save a copy of.
const (
	readBatchField  protowire.Number = 1
	writeBatchField protowire.Number = 2
)

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	var (
		b     *connectorv1.Batch
		field protowire.Number
	)
	switch m := v.(type) {
	case *connectorv1.ReadResponse:
		b, field = m.GetBatch(), readBatchField
	case *connectorv1.WriteRequest:
		b, field = m.GetBatch(), writeBatchField
	}
	if b == nil || b.GetShared() != nil {
		msg, ok := v.(proto.Message)
		if !ok {
			return nil, fmt.Errorf("marshal: %T is not a protobuf message", v)
		}
		data, err := proto.Marshal(msg)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(data)}, nil
	}
	inner := protowire.SizeTag(1) + protowire.SizeVarint(b.GetSeq()) +
		protowire.SizeTag(2) + protowire.SizeVarint(uint64(b.GetCount())) +
		protowire.SizeTag(3) + protowire.SizeBytes(len(b.GetRecords()))
	size := protowire.SizeTag(field) + protowire.SizeBytes(inner)
	buf := pool.Get(size)
	out := (*buf)[:0]
	out = protowire.AppendTag(out, field, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(inner))
	out = protowire.AppendTag(out, 1, protowire.VarintType)
	out = protowire.AppendVarint(out, b.GetSeq())
	out = protowire.AppendTag(out, 2, protowire.VarintType)
	out = protowire.AppendVarint(out, uint64(b.GetCount()))
	out = protowire.AppendTag(out, 3, protowire.BytesType)
	out = protowire.AppendBytes(out, b.GetRecords())
	*buf = out
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *connectorv1.ReadResponse:
		if b, ok := decodeBatch(data, readBatchField); ok {
			m.Msg = &connectorv1.ReadResponse_Batch{Batch: b}
			return nil
		}
	case *connectorv1.WriteRequest:
		if b, ok := decodeBatch(data, writeBatchField); ok {
			m.Msg = &connectorv1.WriteRequest_Batch{Batch: b}
			return nil
		}
	}
	msg, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("unmarshal: %T is not a protobuf message", v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), msg)
}

// decodeBatch decodes a message holding only a batch in the given field,
// copying the records once into a pooled buffer (see Release). ok is false
// for any other shape; the caller then decodes the generic way.
func decodeBatch(data mem.BufferSlice, field protowire.Number) (*connectorv1.Batch, bool) {
	r := sliceReader{s: data}
	head := r.peek(2 * binaryMaxHeader)
	num, typ, n := protowire.ConsumeTag(head)
	if n < 0 || num != field || typ != protowire.BytesType {
		return nil, false
	}
	head = head[n:]
	inner, m := protowire.ConsumeVarint(head)
	if m < 0 || int(inner) != data.Len()-n-m {
		return nil, false
	}
	head = head[m:]
	pos := n + m
	b := &connectorv1.Batch{}
	for {
		num, typ, n := protowire.ConsumeTag(head)
		if n < 0 {
			return nil, false
		}
		head, pos = head[n:], pos+n
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(head)
			if m < 0 {
				return nil, false
			}
			b.Seq, head, pos = v, head[m:], pos+m
		case num == 2 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(head)
			if m < 0 || v > 1<<32-1 {
				return nil, false
			}
			b.Count, head, pos = uint32(v), head[m:], pos+m
		case num == 3 && typ == protowire.BytesType:
			size, m := protowire.ConsumeVarint(head)
			pos += m
			if m < 0 || int(size) != data.Len()-pos {
				return nil, false
			}
			buf := pool.Get(int(size))
			r.copyFrom(pos, (*buf)[:size])
			b.Records = (*buf)[:size]
			return b, true
		default:
			return nil, false
		}
	}
}

// binaryMaxHeader bounds the bytes before the records: two tags and three
// varints, ten bytes each at most.
const binaryMaxHeader = 32

// sliceReader reads a BufferSlice without consuming it.
type sliceReader struct{ s mem.BufferSlice }

// peek returns up to n leading bytes.
func (r sliceReader) peek(n int) []byte {
	out := make([]byte, 0, n)
	for _, b := range r.s {
		d := b.ReadOnlyData()
		out = append(out, d[:min(len(d), n-len(out))]...)
		if len(out) == n {
			break
		}
	}
	return out
}

// copyFrom copies the bytes from offset off into dst.
func (r sliceReader) copyFrom(off int, dst []byte) {
	for _, b := range r.s {
		d := b.ReadOnlyData()
		if off >= len(d) {
			off -= len(d)
			continue
		}
		n := copy(dst, d[off:])
		dst, off = dst[n:], 0
		if len(dst) == 0 {
			return
		}
	}
}

// bufferPool recycles message-sized buffers.
type bufferPool struct{ p sync.Pool }

var pool = &bufferPool{}

// maxPooled keeps unusually large buffers (a batch holding one huge
// record) out of the pool.
const maxPooled = 4 << 20

func (p *bufferPool) Get(n int) *[]byte {
	if v, ok := p.p.Get().(*[]byte); ok && cap(*v) >= n {
		*v = (*v)[:n]
		return v
	}
	b := make([]byte, n, max(n, 1<<20+4096))
	return &b
}

func (p *bufferPool) Put(b *[]byte) {
	if cap(*b) <= maxPooled {
		p.p.Put(b)
	}
}

// Release hands the records of a batch that arrived through the codec back
// to its pool, once nothing reads them any more. Releasing other slices is
// harmless; using records after releasing them is not.
func Release(records []byte) {
	if cap(records) == 0 {
		return
	}
	b := records[:0]
	pool.Put(&b)
}
