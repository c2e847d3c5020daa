package host

import (
	"context"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

var (
	_ pipeline.Piper          = (*Host)(nil)
	_ pipeline.SourceObserver = (*pipeSession)(nil)
	_ pipeline.SinkObserver   = (*pipeSession)(nil)
)

// OpenPipe implements pipeline.Piper: the sink plugin reads the source
// plugin directly, and faucet follows the acknowledgements.
func (h *Host) OpenPipe(ctx context.Context, source pipeline.ConnectorConfig, shard *pipeline.SourceShard, sink pipeline.ConnectorConfig, acked func(int)) (pipeline.PipeSession, error) {
	sc, err := h.connector(source.Type, pipeline.RoleSource)
	if err != nil {
		return nil, err
	}
	kc, err := h.connector(sink.Type, pipeline.RoleSink)
	if err != nil {
		return nil, err
	}
	if !kc.readsUpstream {
		return nil, pipeline.ErrNoPipe
	}
	src, err := h.checkout(ctx, sc, nil)
	if err != nil {
		return nil, err
	}
	dst, err := h.checkout(ctx, kc, src)
	if err != nil {
		h.checkin(sc.Name, src)
		return nil, err
	}
	h.pair(src, dst)
	release := func() {
		h.checkin(sc.Name, src)
		h.checkin(kc.Name, dst)
	}
	addr := src.client.ReattachConfig()
	if addr == nil || addr.Addr == nil {
		release()
		return nil, &ConnectorError{Connector: sc.Name, Msg: "the plugin has no address to read from"}
	}
	// The sink passes the source's report on only when it speaks 1.2 too.
	// A sink speaking 1.4 samples the records for both, and a source
	// speaking 1.4 then takes no sample of the same records.
	observe := reports(pipeline.ObservationWanted(ctx), dst.version)
	sinkApart := apart(observe, dst.version)
	read := &connectorv1.ReadRequest{
		Config: source.Config, ReportDatasets: observe && reports(true, src.version),
		SampledByReader: sinkApart && protocol.Supports(src.version, protocol.VersionObserved), FileAccess: h.fileAccess(sc, src),
	}
	if shard != nil {
		read.Shard = &connectorv1.Shard{Descriptor_: shard.Descriptor, EstimatedRecords: shard.EstimatedRecords, EstimatedBytes: shard.EstimatedBytes}
	}
	report := pipeline.SessionReportFrom(ctx)
	sctx, cancel := context.WithCancel(ctx)
	stream, err := dst.rpc.Write(sctx)
	if err == nil {
		err = stream.Send(&connectorv1.WriteRequest{Msg: &connectorv1.WriteRequest_Open{Open: &connectorv1.WriteOpen{
			Config:         sink.Config,
			FileAccess:     h.fileAccess(kc, dst),
			RecordPolicy:   recordPolicy(kc, dst, report),
			Upstream:       &connectorv1.Upstream{Network: addr.Addr.Network(), Address: addr.Addr.String(), Read: read, ProtocolVersion: uint32(src.version)},
			ReportDatasets: observe,
			ReportObserved: sinkApart,
		}}})
	}
	if err != nil {
		cancel()
		err = translate(kc.Name, dst, err)
		release()
		return nil, err
	}
	p := &pipeSession{source: sc.Name, sink: kc.Name, src: src, dst: dst, stream: stream, cancel: cancel, acked: acked,
		report: report, done: make(chan struct{}), release: release}
	go p.receive()
	return p, nil
}

type pipeSession struct {
	source, sink string
	src, dst     *proc
	stream       grpc.BidiStreamingClient[connectorv1.WriteRequest, connectorv1.WriteResponse]
	cancel       context.CancelFunc
	acked        func(int)
	report       pipeline.SessionReport
	release      func()

	done     chan struct{}
	records  int64
	stats    *connectorv1.Stats
	err      error
	stopOnce sync.Once
	endOnce  sync.Once
}

// receive follows the sink's answers until its final stats or a failure.
func (p *pipeSession) receive() {
	defer close(p.done)
	var want uint64 = 1
	for {
		msg, err := p.stream.Recv()
		if err != nil {
			if err == io.EOF {
				p.dst.markBroken()
				err = &ConnectorError{Connector: p.sink, Msg: "the write ended without its final stats"}
			} else {
				err = translate(p.sink, p.dst, err)
			}
			p.err = err
			return
		}
		switch m := msg.GetMsg().(type) {
		case *connectorv1.WriteResponse_Ack:
			if m.Ack.GetSeq() != want {
				p.dst.markBroken()
				p.err = &ConnectorError{Connector: p.sink, Msg: fmt.Sprintf("acknowledged batch %d, expected %d", m.Ack.GetSeq(), want)}
				return
			}
			want++
			if p.acked != nil {
				p.acked(int(m.Ack.GetCount()))
			}
		case *connectorv1.WriteResponse_Rejected:
			if n := reportRejected(p.report, m.Rejected); n > 0 && p.acked != nil {
				p.acked(-n)
			}
		case *connectorv1.WriteResponse_Stats:
			p.records, p.stats = m.Stats.GetRecords(), m.Stats
			reportOutputs(p.report, m.Stats)
			return
		case *connectorv1.WriteResponse_UpstreamFailed:
			// The source's own failure, seen from the sink: name the source.
			f := m.UpstreamFailed
			p.err = translate(p.source, p.src, status.Error(codes.Code(f.GetCode()), f.GetMessage()))
			return
		}
	}
}

func (p *pipeSession) Wait(ctx context.Context) (int64, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.dst.markBroken()
		p.end()
		return 0, &ConnectorError{Connector: p.sink, Msg: fmt.Sprintf("gave up waiting for the sink: %v", ctx.Err())}
	}
	p.end()
	if p.err != nil {
		return 0, p.err
	}
	return p.records, nil
}

func (p *pipeSession) Stop(ctx context.Context) (int64, error) {
	p.stopOnce.Do(func() { p.stream.CloseSend() })
	return p.Wait(ctx)
}

func (p *pipeSession) Abort(ctx context.Context) error {
	p.stopOnce.Do(func() {
		// The sink stops reading, discards the session and answers with
		// empty stats; a stream that broke instead fails Wait.
		if err := p.stream.Send(&connectorv1.WriteRequest{Msg: &connectorv1.WriteRequest_Abort{Abort: &connectorv1.WriteAbort{}}}); err == nil {
			p.stream.CloseSend()
		}
	})
	_, err := p.Wait(ctx)
	return err
}

// ObservedSource implements pipeline.SourceObserver: the source's final
// stats as the sink passed them on, with the sink's sample of the records
// for a source that took none.
func (p *pipeSession) ObservedSource() (pipeline.Observation, bool) {
	st := p.final()
	up := st.GetUpstream()
	if up == nil {
		return pipeline.Observation{}, false
	}
	return observation(p.source, up, st.GetObserved()), len(up.GetDatasets()) > 0
}

// ObservedSink implements pipeline.SinkObserver.
func (p *pipeSession) ObservedSink() (pipeline.Observation, bool) {
	st := p.final()
	if st == nil {
		return pipeline.Observation{}, false
	}
	return observation(p.sink, st, nil), len(st.GetDatasets()) > 0
}

// final is the sink's final stats once the transfer ended, nil before.
func (p *pipeSession) final() *connectorv1.Stats {
	select {
	case <-p.done:
		return p.stats
	default:
		return nil
	}
}

// end releases both processes once: back to the pool, unless translate or
// Wait found them broken.
func (p *pipeSession) end() {
	p.endOnce.Do(func() {
		p.cancel()
		p.release()
	})
}
