package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

var (
	_ pipeline.Connectors     = (*Host)(nil)
	_ pipeline.Sharder        = (*Host)(nil)
	_ pipeline.SourceObserver = (*sourceSession)(nil)
	_ pipeline.SinkObserver   = (*sinkSession)(nil)
)

// ConnectorError is a failure reported by, or about, one connector.
type ConnectorError struct {
	// Connector is the connector's name.
	Connector string
	// Exited is set when the plugin process died; Msg is then its exit cause.
	Exited    bool
	Msg       string
	transient bool
}

func (e *ConnectorError) Error() string {
	if e.Exited {
		return fmt.Sprintf("connector %s exited: %s", e.Connector, e.Msg)
	}
	return fmt.Sprintf("connector %s: %s", e.Connector, e.Msg)
}

// Transient reports whether retrying may succeed: the connector said so, or
// its process died and the pool will start a fresh one.
func (e *ConnectorError) Transient() bool { return e.transient || e.Exited }

// exitWait is how long a failed call waits for a dying plugin's exit to be
// observed, so the error names the crash rather than a broken pipe.
const exitWait = time.Second

// translate turns a call's error into a ConnectorError; a dead process is
// marked broken so the pool replaces it.
func translate(name string, p *proc, err error) error {
	st, _ := status.FromError(err)
	if st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded {
		if cause, ok := p.exited(0); ok {
			return &ConnectorError{Connector: name, Exited: true, Msg: cause}
		}
		return err
	}
	if st.Code() == codes.Unavailable || st.Code() == codes.Internal || st.Code() == codes.Unknown && errors.Is(err, io.ErrUnexpectedEOF) {
		if cause, ok := p.exited(exitWait); ok {
			return &ConnectorError{Connector: name, Exited: true, Msg: cause}
		}
	}
	return &ConnectorError{Connector: name, Msg: st.Message(), transient: st.Code() == codes.Unavailable}
}

// OpenSource implements pipeline.Connectors.
func (h *Host) OpenSource(ctx context.Context, cfg pipeline.ConnectorConfig, shard *pipeline.SourceShard) (pipeline.SourceSession, error) {
	c, err := h.connector(cfg.Type, pipeline.RoleSource)
	if err != nil {
		return nil, err
	}
	p, err := h.checkout(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	datasets := reports(pipeline.ObservationWanted(ctx), p.version)
	req := &connectorv1.ReadRequest{Config: cfg.Config, ReportDatasets: datasets, ReportObserved: apart(datasets, p.version), FileAccess: h.fileAccess(c, p)}
	if shard != nil {
		req.Shard = &connectorv1.Shard{Descriptor_: shard.Descriptor, EstimatedRecords: shard.EstimatedRecords, EstimatedBytes: shard.EstimatedBytes}
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := p.rpc.Read(sctx, req)
	if err != nil {
		cancel()
		err = translate(c.Name, p, err)
		h.checkin(c.Name, p)
		return nil, err
	}
	return &sourceSession{h: h, name: c.Name, p: p, ctx: ctx, cancel: cancel, stream: stream}, nil
}

type sourceSession struct {
	h      *Host
	name   string
	p      *proc
	ctx    context.Context
	cancel context.CancelFunc
	stream grpc.ServerStreamingClient[connectorv1.ReadResponse]
	ended  bool
	closed bool
	// stats are the read's final stats, once it ended.
	stats *connectorv1.Stats
}

func (s *sourceSession) Recv() (pipeline.Batch, error) {
	if s.ended {
		return pipeline.Batch{}, io.EOF
	}
	msg, err := s.stream.Recv()
	if err == io.EOF {
		s.p.markBroken()
		return pipeline.Batch{}, &ConnectorError{Connector: s.name, Msg: "the read ended without its final stats"}
	}
	if err != nil {
		if s.ctx.Err() != nil {
			return pipeline.Batch{}, s.ctx.Err()
		}
		return pipeline.Batch{}, translate(s.name, s.p, err)
	}
	switch m := msg.GetMsg().(type) {
	case *connectorv1.ReadResponse_Batch:
		return pipeline.Batch{Seq: m.Batch.GetSeq(), Count: int(m.Batch.GetCount()), Records: m.Batch.GetRecords()}, nil
	case *connectorv1.ReadResponse_Stats:
		s.ended, s.stats = true, m.Stats
		return pipeline.Batch{}, io.EOF
	}
	s.p.markBroken()
	return pipeline.Batch{}, &ConnectorError{Connector: s.name, Msg: "unexpected message in a read"}
}

// ObservedSource implements pipeline.SourceObserver: what the source's final
// stats reported.
func (s *sourceSession) ObservedSource() (pipeline.Observation, bool) {
	if s.stats == nil {
		return pipeline.Observation{}, false
	}
	return observation(s.name, s.stats, nil), len(s.stats.GetDatasets()) > 0
}

// Close cancels the read if it is still going and returns the process to
// the pool (a source that stops at cancellation stays usable).
func (s *sourceSession) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cancel()
	s.h.checkin(s.name, s.p)
	return nil
}

// OpenSink implements pipeline.Connectors.
func (h *Host) OpenSink(ctx context.Context, cfg pipeline.ConnectorConfig, acked func(int)) (pipeline.SinkSession, error) {
	c, err := h.connector(cfg.Type, pipeline.RoleSink)
	if err != nil {
		return nil, err
	}
	p, err := h.checkout(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	report := pipeline.SessionReportFrom(ctx)
	datasets := reports(pipeline.ObservationWanted(ctx), p.version)
	sctx, cancel := context.WithCancel(ctx)
	stream, err := p.rpc.Write(sctx)
	if err == nil {
		err = stream.Send(&connectorv1.WriteRequest{Msg: &connectorv1.WriteRequest_Open{Open: &connectorv1.WriteOpen{
			Config: cfg.Config, ReportDatasets: datasets, ReportObserved: apart(datasets, p.version),
			FileAccess: h.fileAccess(c, p), RecordPolicy: recordPolicy(c, p, report),
		}}})
	}
	if err != nil {
		cancel()
		err = translate(c.Name, p, err)
		h.checkin(c.Name, p)
		return nil, err
	}
	s := &sinkSession{h: h, name: c.Name, p: p, cancel: cancel, stream: stream, acked: acked, report: report, done: make(chan struct{})}
	go s.receive()
	return s, nil
}

type sinkSession struct {
	h      *Host
	name   string
	p      *proc
	cancel context.CancelFunc
	stream grpc.BidiStreamingClient[connectorv1.WriteRequest, connectorv1.WriteResponse]
	acked  func(int)
	report pipeline.SessionReport
	seq    uint64

	done  chan struct{}
	stats *connectorv1.Stats
	err   error
	once  sync.Once
}

// receive reads acknowledgements until the final stats or an error.
func (s *sinkSession) receive() {
	defer close(s.done)
	var want uint64 = 1
	for {
		msg, err := s.stream.Recv()
		if err != nil {
			if err == io.EOF {
				err = &ConnectorError{Connector: s.name, Msg: "the write ended without its final stats"}
				s.p.markBroken()
			} else {
				err = translate(s.name, s.p, err)
			}
			s.err = err
			return
		}
		switch m := msg.GetMsg().(type) {
		case *connectorv1.WriteResponse_Ack:
			if m.Ack.GetSeq() != want {
				s.p.markBroken()
				s.err = &ConnectorError{Connector: s.name, Msg: fmt.Sprintf("acknowledged batch %d, expected %d", m.Ack.GetSeq(), want)}
				return
			}
			want++
			if s.acked != nil {
				s.acked(int(m.Ack.GetCount()))
			}
		case *connectorv1.WriteResponse_Rejected:
			if n := reportRejected(s.report, m.Rejected); n > 0 && s.acked != nil {
				// Acknowledged, and then refused.
				s.acked(-n)
			}
		case *connectorv1.WriteResponse_Stats:
			s.stats = m.Stats
			reportOutputs(s.report, m.Stats)
			return
		}
	}
}

// recordPolicy is the record policy an open request to p carries: the
// session's, when the connector honours one and speaks protocol 1.3.
func recordPolicy(c *Connector, p *proc, r pipeline.SessionReport) *connectorv1.RecordPolicy {
	if r.Policy == nil {
		return nil
	}
	if !c.RejectsRecords || !protocol.Supports(p.version, protocol.VersionFileAccess) {
		if r.Unrefused != nil {
			r.Unrefused(fmt.Sprintf("sink %s cannot refuse single records (it does not say so in its spec, or speaks a protocol before 1.3)", c.Name))
		}
		return nil
	}
	return &connectorv1.RecordPolicy{MaxAttempts: uint32(max(1, r.Policy.MaxAttempts))}
}

// reportRejected hands a sink's refused records to the session's report
// and returns how many there were.
func reportRejected(r pipeline.SessionReport, rej *connectorv1.Rejected) int {
	for _, rec := range rej.GetRecords() {
		if r.Rejected != nil {
			r.Rejected(pipeline.Rejection{
				Seq: rej.GetSeq(), Index: int(rec.GetIndex()), Record: rec.GetRecord(),
				Error: rec.GetError(), Attempts: int(rec.GetAttempts()),
			})
		}
	}
	return len(rej.GetRecords())
}

// reportOutputs hands the files a sink's final stats list to the session's
// report.
func reportOutputs(r pipeline.SessionReport, st *connectorv1.Stats) {
	if r.Output == nil {
		return
	}
	for _, o := range st.GetOutputs() {
		r.Output(pipeline.OutputFile{Path: o.GetPath(), Size: o.GetSize(), Existed: o.GetExisted()})
	}
}

func (s *sinkSession) Send(b pipeline.Batch) error {
	s.seq++
	err := s.stream.Send(&connectorv1.WriteRequest{Msg: &connectorv1.WriteRequest_Batch{Batch: &connectorv1.Batch{
		Seq: s.seq, Count: uint32(b.Count), Records: b.Records,
	}}})
	// Sending encoded the records; their buffer can serve the next message.
	protocol.Release(b.Records)
	if err == nil {
		return nil
	}
	// The stream broke; the real cause arrives on the receiving side.
	<-s.done
	if s.err != nil {
		return s.err
	}
	return translate(s.name, s.p, err)
}

func (s *sinkSession) Commit(ctx context.Context) (int64, error) {
	if err := s.stream.CloseSend(); err != nil {
		return 0, s.finish(ctx, translate(s.name, s.p, err))
	}
	if err := s.finish(ctx, nil); err != nil {
		return 0, err
	}
	return s.stats.GetRecords(), nil
}

// ObservedSink implements pipeline.SinkObserver: what the sink's final
// stats reported, once it committed.
func (s *sinkSession) ObservedSink() (pipeline.Observation, bool) {
	select {
	case <-s.done:
	default:
		return pipeline.Observation{}, false
	}
	if s.stats == nil {
		return pipeline.Observation{}, false
	}
	return observation(s.name, s.stats, nil), len(s.stats.GetDatasets()) > 0
}

func (s *sinkSession) Abort(ctx context.Context) error {
	err := s.stream.Send(&connectorv1.WriteRequest{Msg: &connectorv1.WriteRequest_Abort{Abort: &connectorv1.WriteAbort{}}})
	if err == nil {
		err = s.stream.CloseSend()
	}
	if err != nil {
		err = translate(s.name, s.p, err)
	}
	return s.finish(ctx, err)
}

// finish waits for the sink's final answer (or ctx), then releases the
// process: back to the pool after a clean end, killed otherwise.
func (s *sinkSession) finish(ctx context.Context, err error) error {
	select {
	case <-s.done:
		if err == nil {
			err = s.err
		}
	case <-ctx.Done():
		s.p.markBroken()
		if err == nil {
			err = &ConnectorError{Connector: s.name, Msg: fmt.Sprintf("gave up waiting for the sink to finish: %v", ctx.Err())}
		}
	}
	s.once.Do(func() {
		s.cancel()
		if s.stats == nil {
			s.p.markBroken()
		}
		s.h.checkin(s.name, s.p)
	})
	return err
}

// Shardable implements pipeline.Sharder.
func (h *Host) Shardable(source string) bool {
	c, ok := h.connectors[source]
	return ok && c.Source && c.Shardable
}

// IndependentSessions implements pipeline.Sharder.
func (h *Host) IndependentSessions(sink string) bool {
	c, ok := h.connectors[sink]
	return ok && c.Sink && c.IndependentSessions
}

// Shards implements pipeline.ShardPlanner.
func (h *Host) Shards(ctx context.Context, cfg pipeline.ConnectorConfig, count int) ([]pipeline.SourceShard, error) {
	c, err := h.connector(cfg.Type, pipeline.RoleSource)
	if err != nil {
		return nil, err
	}
	if !c.Shardable {
		return nil, fmt.Errorf("connector %s cannot be sharded", c.Name)
	}
	p, err := h.checkout(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	defer h.checkin(c.Name, p)
	resp, err := p.rpc.Shards(ctx, &connectorv1.ShardsRequest{Config: cfg.Config, Count: uint32(count), FileAccess: h.fileAccess(c, p)})
	if err != nil {
		return nil, translate(c.Name, p, err)
	}
	out := make([]pipeline.SourceShard, 0, len(resp.GetShards()))
	for _, sh := range resp.GetShards() {
		out = append(out, pipeline.SourceShard{Descriptor: sh.GetDescriptor_(), EstimatedRecords: sh.GetEstimatedRecords(), EstimatedBytes: sh.GetEstimatedBytes()})
	}
	return out, nil
}

// Check probes a connector config in a role (connectivity, permissions).
func (h *Host) Check(ctx context.Context, role pipeline.Role, cfg pipeline.ConnectorConfig) ([]sdk.CheckItem, error) {
	c, err := h.connector(cfg.Type, role)
	if err != nil {
		return nil, err
	}
	p, err := h.checkout(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	defer h.checkin(c.Name, p)
	r := connectorv1.Role_ROLE_SOURCE
	if role == pipeline.RoleSink {
		r = connectorv1.Role_ROLE_SINK
	}
	resp, err := p.rpc.Check(ctx, &connectorv1.CheckRequest{Role: r, Config: cfg.Config, FileAccess: h.fileAccess(c, p)})
	if err != nil {
		return nil, translate(c.Name, p, err)
	}
	items := make([]sdk.CheckItem, 0, len(resp.GetItems()))
	for _, it := range resp.GetItems() {
		items = append(items, sdk.CheckItem{Name: it.GetName(), OK: it.GetOk(), Message: it.GetMessage()})
	}
	return items, nil
}
