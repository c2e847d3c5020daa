package sdk

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
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
