package sdk

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	"github.com/faucet-dev/faucet/plugins/internal/shm"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// writeFromUpstream runs a write session whose batches the sink reads from
// the source plugin directly. faucet's stream carries only control: closing
// it stops the read and commits what was acknowledged, an abort request
// discards the session.
func (s *server) writeFromUpstream(ctx context.Context, sess session, stream grpc.BidiStreamingServer[connectorv1.WriteRequest, connectorv1.WriteResponse], sink Sink, open *connectorv1.WriteOpen) error {
	up := open.GetUpstream()
	conn, release, err := s.upstreams.get(up.GetNetwork(), up.GetAddress())
	if err != nil {
		return status.Errorf(codes.Internal, "connect to upstream: %v", err)
	}
	defer release()
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
	// The first batch comes before the sink opens: a source that cannot
	// start never touches the sink.
	// A writer that refuses records may keep batches until it knows
	// which (Batch.Keep): slots for those beside the ones the source fills.
	slots := sharedSlots
	if open.GetRecordPolicy() != nil {
		slots += sharedKeptSlots
	}
	u, msg, err := openUpstream(rctx, conn, up, s.regions, slots)
	if err != nil {
		// Stopped or aborted before the first batch: nothing was written, and
		// the source's cancellation is not its failure.
		if stop, abort := control(); stop || abort {
			return stream.Send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Stats{Stats: &connectorv1.Stats{}}})
		}
		return failed(err)
	}
	defer u.close()
	w, err := sink.Open(ctx, open.GetConfig())
	if err != nil {
		return toStatus(ctx, err)
	}
	var (
		seq           uint64
		records, size int64
		infer         *sampler
		upstream      *connectorv1.Stats
	)
	if open.GetReportDatasets() {
		infer = &sampler{}
	}
	for {
		if stop, abort := control(); stop || abort {
			break
		}
		if b := msg.batch; b != nil {
			seq++
			data, err := u.records(b)
			if err != nil {
				abort(w)
				return status.Errorf(codes.Internal, "batch %d: %v", seq, err)
			}
			loan := u.loan(b, data)
			batch := Batch{Seq: seq, Count: int(b.GetCount()), Records: data, lender: loan}
			infer.observe(data)
			err = w.Write(ctx, batch)
			loan.done()
			if err == nil {
				err = sess.rej.flush(stream.Send)
			}
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
		} else if msg.stats != nil {
			upstream = msg.stats
			break
		}
		u.reclaim()
		if msg, err = u.recv(); err != nil {
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
	stats := &connectorv1.Stats{Records: records, Bytes: size}
	if infer != nil {
		report(ctx, s.c, s.spec.Name, stats, DatasetsRequest{Role: RoleSink, Config: open.GetConfig(), Observed: infer.schema()}, open.GetReportObserved())
		stats.Upstream = upstream
	}
	return sess.finish(stream.Send, stats)
}

// upstreamRead is a sink's read of the source plugin it reads directly,
// with a region of shared memory offered to the source when it speaks
// protocol 1.1, for the batches' records to cross without a copy.
type upstreamRead struct {
	rs      grpc.ServerStreamingClient[connectorv1.ReadResponse]
	regions *regionCache
	region  *shm.Region
	// consumed counts the batches read from slots: the next one must be in
	// slot consumed mod slots.
	consumed uint32
	// held are the slots read but not yet handed back to the source, in
	// order: a kept batch's, and those after it; kept counts the kept ones.
	held []*slotLoan
	kept int
	// finished is set once the source's final stats arrived: it writes
	// nothing more.
	finished bool
}

// regionCache keeps a sink's shared region from a read that did not use
// it for the next: creating and unmapping one costs a small read more than
// the rest of it does. A region a read used goes, and its memory with it.
type regionCache struct {
	mu   sync.Mutex
	idle *shm.Region
}

// get returns a region of the given number of slots.
func (c *regionCache) get(slots int) (*shm.Region, error) {
	c.mu.Lock()
	r := c.idle
	if r != nil && r.Slots() == slots {
		c.idle = nil
	} else {
		r = nil
	}
	c.mu.Unlock()
	if r != nil {
		return r, nil
	}
	return shm.Create(slots, sharedSlotBytes)
}

func (c *regionCache) put(r *shm.Region) {
	c.mu.Lock()
	keep := c.idle == nil
	if keep {
		c.idle = r
	}
	c.mu.Unlock()
	if !keep {
		r.Close()
	}
}

// upstreamMsg is a message of the read: a batch, or the final stats.
type upstreamMsg struct {
	batch *connectorv1.Batch
	stats *connectorv1.Stats
}

// openUpstream starts reading up and returns its first message.
func openUpstream(ctx context.Context, conn *grpc.ClientConn, up *connectorv1.Upstream, regions *regionCache, slots int) (*upstreamRead, upstreamMsg, error) {
	read := up.GetRead()
	u := &upstreamRead{regions: regions}
	version := int(max(up.GetProtocolVersion(), protocol.Version1))
	if !protocol.Supports(version, protocol.VersionSharedReads) {
		slog.Debug("reading the source through messages", "reason", fmt.Sprintf("the source speaks connector protocol version %d", version))
	} else if region, err := regions.get(slots); err != nil {
		slog.Debug("reading the source through messages", "reason", err.Error())
	} else {
		u.region = region
		read = proto.CloneOf(read)
		read.SharedRegion = &connectorv1.SharedRegion{
			Pid: int64(os.Getpid()), Fd: int32(region.FD()), Slots: uint32(region.Slots()),
			SlotBytes: uint32(region.SlotBytes()), HeaderBytes: shm.HeaderBytes,
		}
	}
	rs, err := connectorv1.NewConnectorServiceClient(conn).Read(ctx, read)
	if err == nil {
		u.rs = rs
		var msg upstreamMsg
		if msg, err = u.recv(); err == nil {
			return u, msg, nil
		}
	}
	u.close()
	return nil, upstreamMsg{}, err
}

func (u *upstreamRead) recv() (upstreamMsg, error) {
	m, err := u.rs.Recv()
	msg := upstreamMsg{batch: m.GetBatch(), stats: m.GetStats()}
	u.finished = u.finished || msg.stats != nil
	return msg, err
}

// records returns the records of a batch: in its message, or in the slot
// of the region it names, which must be the next one.
func (u *upstreamRead) records(b *connectorv1.Batch) ([]byte, error) {
	sh := b.GetShared()
	if sh == nil {
		return b.GetRecords(), nil
	}
	if u.region == nil || sh.GetSlot() != u.consumed%uint32(u.region.Slots()) || int(sh.GetLength()) > u.region.SlotBytes() {
		return nil, fmt.Errorf("the source named slot %d, %d bytes, where the shared region's next batch is not", sh.GetSlot(), sh.GetLength())
	}
	return u.region.Slot(int(sh.GetSlot()))[:sh.GetLength()], nil
}

// batchLoan lends a batch of the read to the writer.
type batchLoan interface {
	lender
	// done is called after Write: the memory goes back unless kept.
	done()
}

// loan is the lender of a batch read: its slot, or its message buffer.
func (u *upstreamRead) loan(b *connectorv1.Batch, records []byte) batchLoan {
	if b.GetShared() == nil {
		return &pooled{records: records}
	}
	u.consumed++
	return &slotLoan{u: u}
}

// slotLoan is a batch read from a slot of the region.
type slotLoan struct {
	u *upstreamRead
	// kept is the writer's keep of the batch, while it holds the slot.
	kept *Kept
}

// lend keeps the slot from the source until k is released, while fewer
// than the slots beyond sharedSlots are held.
func (l *slotLoan) lend(k *Kept) bool {
	if l.u.kept >= l.u.region.Slots()-sharedSlots {
		return false
	}
	l.kept = k
	l.u.kept++
	k.release = func() {
		l.kept = nil
		l.u.kept--
		l.u.handBack()
	}
	return true
}

func (l *slotLoan) done() {
	l.u.held = append(l.u.held, l)
	l.u.handBack()
}

// handBack hands the source the slots no writer keeps, in order: the slots
// of later batches wait for a kept one before them. It keeps as many slots
// as a writer may keep, kept or not, so that the source fills at most
// sharedSlots ahead of the sink, as in a session whose writer keeps
// none: slots a writer releases together (a window's, once the server
// has judged it) go back one per batch read, not all at once, which had
// the source race to fill them beside the sink and the database server.
func (u *upstreamRead) handBack() {
	n := 0
	for n < len(u.held) && u.held[n].kept == nil && len(u.held)-n > u.region.Slots()-sharedSlots {
		u.region.Consumed()
		n++
	}
	u.held = append(u.held[:0], u.held[n:]...)
}

// reclaim, before the next batch is read, moves the records of the oldest
// kept batches out of their slots while the source has fewer than
// sharedSlots to fill: however long a writer keeps batches, the source
// is never kept waiting for a slot while the sink waits for a batch.
func (u *upstreamRead) reclaim() {
	for len(u.held) > 0 && len(u.held) > u.region.Slots()-sharedSlots {
		head := u.held[0]
		head.kept.records = bytes.Clone(head.kept.records)
		head.kept.release = func() {}
		head.kept = nil
		u.kept--
		u.handBack()
	}
}

// close ends this process's hold on the region (the source unmaps its own),
// or keeps it for the next read when the source finished without using it.
func (u *upstreamRead) close() {
	switch {
	case u.region == nil:
	case u.finished && u.consumed == 0:
		u.regions.put(u.region)
	default:
		u.region.Close()
	}
}

// Limits of the upstream connections a sink keeps between sessions.
const (
	// maxIdleUpstreams connections stay open while no session uses them; a
	// sink usually reads the same few source processes of faucet's pool.
	maxIdleUpstreams = 4
	// upstreamIdleTimeout closes a connection no session used for that long.
	upstreamIdleTimeout = time.Minute
)

// upstreamPool keeps a sink's gRPC connections to source plugins, one per
// address, so that consecutive sessions reading the same source process
// share a connection instead of each paying a dial, an HTTP/2 handshake and
// the transport's buffers on both ends. faucet hands a source process to one
// session at a time and, where it can, pairs it again with the sink that
// read it last.
type upstreamPool struct {
	mu    sync.Mutex
	conns map[upstreamKey]*upstreamConn
}

type upstreamKey struct{ network, address string }

type upstreamConn struct {
	conn  *grpc.ClientConn
	users int
	used  time.Time
}

func newUpstreamPool() *upstreamPool {
	return &upstreamPool{conns: map[upstreamKey]*upstreamConn{}}
}

// get returns a connection to the source plugin at address and the function
// that hands it back when the session ends. An idle connection is reused
// only while it is up: one that went down may lead to whatever listens at
// the address now, so it is replaced by a fresh dial.
func (p *upstreamPool) get(network, address string) (*grpc.ClientConn, func(), error) {
	key := upstreamKey{network, address}
	p.mu.Lock()
	stale := p.expire(time.Now())
	u, ok := p.conns[key]
	if ok && u.users == 0 && u.conn.GetState() != connectivity.Ready {
		stale = append(stale, u.conn)
		delete(p.conns, key)
		ok = false
	}
	if !ok {
		conn, err := grpc.NewClient("passthrough:///"+address, append(protocol.DialOptions(),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(protocol.Dialer(network)),
		)...)
		if err != nil {
			p.mu.Unlock()
			closeAll(stale)
			return nil, nil, err
		}
		u = &upstreamConn{conn: conn}
		p.conns[key] = u
	}
	u.users++
	p.mu.Unlock()
	closeAll(stale)
	return u.conn, func() { p.put(key, u) }, nil
}

// put ends a session's use of u and closes the least recently used idle
// connections beyond maxIdleUpstreams.
func (p *upstreamPool) put(key upstreamKey, u *upstreamConn) {
	p.mu.Lock()
	u.users--
	u.used = time.Now()
	var idle []upstreamKey
	for k, c := range p.conns {
		if c.users == 0 {
			idle = append(idle, k)
		}
	}
	var stale []*grpc.ClientConn
	if len(idle) > maxIdleUpstreams {
		slices.SortFunc(idle, func(a, b upstreamKey) int { return p.conns[a].used.Compare(p.conns[b].used) })
		for _, k := range idle[:len(idle)-maxIdleUpstreams] {
			stale = append(stale, p.conns[k].conn)
			delete(p.conns, k)
		}
	}
	p.mu.Unlock()
	closeAll(stale)
}

// expire removes the idle connections unused for upstreamIdleTimeout and
// returns them for closing. The caller holds p.mu.
func (p *upstreamPool) expire(now time.Time) []*grpc.ClientConn {
	var stale []*grpc.ClientConn
	for k, c := range p.conns {
		if c.users == 0 && now.Sub(c.used) > upstreamIdleTimeout {
			stale = append(stale, c.conn)
			delete(p.conns, k)
		}
	}
	return stale
}

func closeAll(conns []*grpc.ClientConn) {
	for _, c := range conns {
		_ = c.Close()
	}
}
