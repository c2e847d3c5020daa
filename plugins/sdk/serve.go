package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// Serve runs c as a faucet connector plugin: it answers faucet's handshake
// and serves c over gRPC until faucet stops it. It is the whole of a
// connector program's main. Logs written with log/slog reach faucet's log
// tagged with the connector's name. Serve exits the process when it ends and
// also when faucet, the parent process, disappears.
func Serve(c Connector) {
	if err := checkConnector(c); err != nil {
		fmt.Fprintln(os.Stderr, "faucet connector:", err)
		os.Exit(1)
	}
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{
		Level:       slog.LevelDebug,
		ReplaceAttr: hclogKeys,
	})))
	go exitWithParent(os.Getppid())
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  protocol.Handshake,
		VersionedPlugins: protocol.PluginSets(newServer(c)),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, protocol.ServerOptions()...)...)
		},
	})
	os.Exit(0)
}

// hclogKeys renames slog's JSON keys to the ones go-plugin parses on faucet's
// side, so a connector's log lines keep their level and message.
func hclogKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		// The one layout go-plugin accepts.
		a = slog.String("@timestamp", a.Value.Time().Format("2006-01-02T15:04:05.000000Z07:00"))
	case slog.MessageKey:
		a.Key = "@message"
	case slog.LevelKey:
		a.Key = "@level"
		switch lvl := a.Value.Any().(slog.Level); {
		case lvl >= slog.LevelError:
			a.Value = slog.StringValue("error")
		case lvl >= slog.LevelWarn:
			a.Value = slog.StringValue("warn")
		case lvl >= slog.LevelInfo:
			a.Value = slog.StringValue("info")
		default:
			a.Value = slog.StringValue("debug")
		}
	}
	return a
}

// exitWithParent ends the plugin when faucet is gone, however it died: the
// host also asks the kernel to kill its children, and this covers the
// platforms and corner cases where that does not happen.
func exitWithParent(ppid int) {
	for range time.Tick(time.Second) {
		if os.Getppid() != ppid {
			os.Exit(2)
		}
	}
}

// checkConnector rejects a connector whose Spec disagrees with the roles it
// implements, before faucet ever sees it.
func checkConnector(c Connector) error {
	spec := c.Spec()
	_, isSource := c.(Source)
	_, isSink := c.(Sink)
	_, isSharder := c.(Sharder)
	switch {
	case spec.Name == "":
		return errors.New("spec has no name")
	case !isSource && !isSink:
		return fmt.Errorf("connector %s implements neither Source nor Sink", spec.Name)
	case isSource != (len(spec.SourceSchema) > 0):
		return fmt.Errorf("connector %s: a source needs Spec.SourceSchema, and only a source may have one", spec.Name)
	case isSink != (len(spec.SinkSchema) > 0):
		return fmt.Errorf("connector %s: a sink needs Spec.SinkSchema, and only a sink may have one", spec.Name)
	case spec.Shardable && !isSharder:
		return fmt.Errorf("connector %s: Spec.Shardable needs a Shards method", spec.Name)
	}
	return nil
}

// newServer adapts c to the gRPC connector service.
func newServer(c Connector) connectorv1.ConnectorServiceServer {
	return &server{c: c, spec: c.Spec(), upstreams: newUpstreamPool(), regions: &regionCache{}, access: &accessCache{}}
}

type server struct {
	connectorv1.UnimplementedConnectorServiceServer
	c Connector
	// spec is c's, read once: a connector builds it afresh on every call,
	// and sessions need only its name and flags.
	spec      Spec
	upstreams *upstreamPool
	regions   *regionCache
	access    *accessCache
}

func (s *server) Spec(context.Context, *connectorv1.SpecRequest) (*connectorv1.SpecResponse, error) {
	spec := s.spec
	_, isSource := s.c.(Source)
	_, isSink := s.c.(Sink)
	kind := connectorv1.Kind_KIND_SOURCE
	switch {
	case isSource && isSink:
		kind = connectorv1.Kind_KIND_BOTH
	case isSink:
		kind = connectorv1.Kind_KIND_SINK
	}
	return &connectorv1.SpecResponse{
		Name:         spec.Name,
		Kind:         kind,
		Version:      spec.Version,
		Description:  spec.Description,
		SourceSchema: spec.SourceSchema,
		SinkSchema:   spec.SinkSchema,
		Capabilities: &connectorv1.Capabilities{
			Shardable: spec.Shardable, WriteModes: spec.WriteModes, ReadsUpstream: isSink,
			IndependentSessions: spec.IndependentSessions, RejectsRecords: spec.RejectsRecords,
		},
	}, nil
}

func (s *server) Check(ctx context.Context, req *connectorv1.CheckRequest) (*connectorv1.CheckResponse, error) {
	role := RoleSource
	if req.GetRole() == connectorv1.Role_ROLE_SINK {
		role = RoleSink
	}
	checker, ok := s.c.(Checker)
	if !ok {
		return &connectorv1.CheckResponse{Items: []*connectorv1.CheckItem{{Name: "config", Ok: true, Message: "the connector has no probes beyond schema validation"}}}, nil
	}
	ctx = s.access.callContext(ctx, req.GetFileAccess())
	items, err := checker.Check(ctx, role, req.GetConfig())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	resp := &connectorv1.CheckResponse{}
	for _, it := range items {
		resp.Items = append(resp.Items, &connectorv1.CheckItem{Name: it.Name, Ok: it.OK, Message: it.Message})
	}
	return resp, nil
}

func (s *server) Shards(ctx context.Context, req *connectorv1.ShardsRequest) (*connectorv1.ShardsResponse, error) {
	sharder, ok := s.c.(Sharder)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "connector %s is not shardable", s.spec.Name)
	}
	ctx = s.access.callContext(ctx, req.GetFileAccess())
	shards, err := sharder.Shards(ctx, req.GetConfig(), int(req.GetCount()))
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	resp := &connectorv1.ShardsResponse{}
	for _, sh := range shards {
		resp.Shards = append(resp.Shards, &connectorv1.Shard{Descriptor_: sh.Descriptor, EstimatedRecords: sh.EstimatedRecords, EstimatedBytes: sh.EstimatedBytes})
	}
	return resp, nil
}

func (s *server) Read(req *connectorv1.ReadRequest, stream grpc.ServerStreamingServer[connectorv1.ReadResponse]) error {
	src, ok := s.c.(Source)
	if !ok {
		return status.Errorf(codes.Unimplemented, "connector %s is not a source", s.spec.Name)
	}
	send := func(b *connectorv1.Batch) error {
		return stream.Send(&connectorv1.ReadResponse{Msg: &connectorv1.ReadResponse_Batch{Batch: b}})
	}
	// A sink reading this source directly samples the same records.
	var infer *sampler
	if req.GetReportDatasets() && !req.GetSampledByReader() {
		infer = &sampler{}
	}
	emit := func(b Batch) error {
		return send(&connectorv1.Batch{Seq: b.Seq, Count: uint32(b.Count), Records: b.Records})
	}
	var sb *sharedBatches
	if reg := req.GetSharedRegion(); reg != nil {
		sb = &sharedBatches{ctx: stream.Context(), reg: reg, send: send}
		defer sb.close()
		emit = sb.emit
	}
	w := NewBatchWriter(func(b Batch) error {
		infer.observe(b.Records)
		return emit(b)
	})
	if sb != nil {
		w.next, w.grow, w.growAt = sb.next, sb.grow, sharedMinBytes
		sb.w = w
	}
	ctx := s.access.callContext(stream.Context(), req.GetFileAccess())
	if err := s.read(ctx, src, req, w); err != nil {
		return err
	}
	stats := &connectorv1.Stats{Records: w.Records(), Bytes: w.Bytes()}
	if req.GetReportDatasets() {
		report(ctx, s.c, s.spec.Name, stats, DatasetsRequest{Role: RoleSource, Config: req.GetConfig(), Shard: shardOf(req), Observed: infer.schema()}, req.GetReportObserved())
	}
	return stream.Send(&connectorv1.ReadResponse{Msg: &connectorv1.ReadResponse_Stats{Stats: stats}})
}

func (s *server) Write(stream grpc.BidiStreamingServer[connectorv1.WriteRequest, connectorv1.WriteResponse]) error {
	sink, ok := s.c.(Sink)
	if !ok {
		return status.Errorf(codes.Unimplemented, "connector %s is not a sink", s.spec.Name)
	}
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	open := first.GetOpen()
	if open == nil {
		return status.Error(codes.InvalidArgument, "a write session must start with an open request")
	}
	ctx, outs := withOutputs(s.access.callContext(ctx, open.GetFileAccess()))
	ctx, rej := withRejects(ctx, s.spec, open.GetRecordPolicy())
	if open.GetUpstream() != nil {
		return s.writeFromUpstream(ctx, session{outs, rej}, stream, sink, open)
	}
	w, err := sink.Open(ctx, open.GetConfig())
	if err != nil {
		return toStatus(ctx, err)
	}
	var infer *sampler
	if open.GetReportDatasets() {
		infer = &sampler{}
	}
	var records, size int64
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			if err := w.Close(ctx); err != nil {
				return toStatus(ctx, err)
			}
			stats := &connectorv1.Stats{Records: records, Bytes: size}
			if infer != nil {
				report(ctx, s.c, s.spec.Name, stats, DatasetsRequest{Role: RoleSink, Config: open.GetConfig(), Observed: infer.schema()}, open.GetReportObserved())
			}
			return session{outs, rej}.finish(stream.Send, stats)
		}
		if err != nil {
			// faucet went away mid-session: nothing will commit this.
			abort(w)
			return err
		}
		switch m := req.GetMsg().(type) {
		case *connectorv1.WriteRequest_Batch:
			loan := &pooled{records: m.Batch.GetRecords()}
			b := Batch{Seq: m.Batch.GetSeq(), Count: int(m.Batch.GetCount()), Records: loan.records, lender: loan}
			infer.observe(b.Records)
			err := w.Write(ctx, b)
			loan.done()
			if err == nil {
				err = rej.flush(stream.Send)
			}
			if err != nil {
				abort(w)
				return toStatus(ctx, fmt.Errorf("batch %d: %w", b.Seq, err))
			}
			records += int64(b.Count)
			size += int64(len(b.Records))
			if err := stream.Send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Ack{Ack: &connectorv1.Ack{Seq: b.Seq, Count: uint32(b.Count)}}}); err != nil {
				abort(w)
				return err
			}
		case *connectorv1.WriteRequest_Abort:
			if err := w.Abort(ctx); err != nil {
				return toStatus(ctx, fmt.Errorf("abort: %w", err))
			}
			return stream.Send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Stats{Stats: &connectorv1.Stats{}}})
		default:
			abort(w)
			return status.Error(codes.InvalidArgument, "unexpected request in a write session")
		}
	}
}

// session is what a write session reports besides its acknowledgements.
type session struct {
	outs *outputs
	rej  *rejects
}

// finish sends the records refused last, then the final stats of a
// committed session: stats with the records it refused left out of those it
// made durable, and the files it wrote.
func (s session) finish(send func(*connectorv1.WriteResponse) error, stats *connectorv1.Stats) error {
	if err := s.rej.flush(send); err != nil {
		return err
	}
	stats.Rejected = s.rej.count()
	stats.Records -= stats.Rejected
	stats.Outputs = s.outs.list()
	return send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Stats{Stats: stats}})
}

// abort discards a session whose stream broke; the context is fresh because
// the stream's own is already done.
func abort(w Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Abort(ctx); err != nil {
		slog.Error("abort write session", "error", err)
	}
}

// toStatus turns a connector error into the protocol's status: UNAVAILABLE
// for transient errors, CANCELED when the call was cancelled, UNKNOWN with
// the error's text otherwise.
func toStatus(ctx context.Context, err error) error {
	switch {
	case IsTransient(err):
		return status.Error(codes.Unavailable, err.Error())
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return status.Error(codes.Canceled, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unknown, err.Error())
}

// read runs one Read of src into w, flushing what w still holds, and returns
// the outcome as the protocol's status.
func (s *server) read(ctx context.Context, src Source, req *connectorv1.ReadRequest, w *BatchWriter) error {
	err := src.Read(ctx, ReadRequest{Config: req.GetConfig(), Shard: shardOf(req)}, w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return toStatus(ctx, err)
	}
	return nil
}

// shardOf is the shard a read request names, nil for a whole read.
func shardOf(req *connectorv1.ReadRequest) *Shard {
	sh := req.GetShard()
	if sh == nil {
		return nil
	}
	return &Shard{Descriptor: sh.GetDescriptor_(), EstimatedRecords: sh.GetEstimatedRecords(), EstimatedBytes: sh.GetEstimatedBytes()}
}
