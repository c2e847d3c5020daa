// Package inproc runs SDK connectors inside the faucet process, behind the
// same pipeline.Connectors interface the plugin host implements. It is how
// the executor is unit-tested and how the benchmark measures what the
// process boundary costs; production runs always go through plugins/host.
package inproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Connectors serves the given SDK connectors in process.
type Connectors struct {
	byName map[string]sdk.Connector
}

var (
	_ pipeline.Connectors = (*Connectors)(nil)
	_ pipeline.Sharder    = (*Connectors)(nil)
)

// New returns in-process sessions of cs, keyed by their Spec names.
func New(cs ...sdk.Connector) *Connectors {
	m := make(map[string]sdk.Connector, len(cs))
	for _, c := range cs {
		m[c.Spec().Name] = c
	}
	return &Connectors{byName: m}
}

// bufferPool recycles batch buffers between a source and its sink, as the
// plugin transport recycles its message buffers.
var bufferPool = sync.Pool{New: func() any { b := make([]byte, 0, sdk.TargetBatchBytes*2); return &b }}

// recycle returns a batch's buffer to the pool once the sink is done with it.
func recycle(b []byte) {
	bufferPool.Put(&b)
}

// connError mirrors the host's errors: it names the connector and carries
// the connector's transience.
type connError struct {
	name string
	err  error
}

func (e *connError) Error() string   { return fmt.Sprintf("connector %s: %v", e.name, e.err) }
func (e *connError) Unwrap() error   { return e.err }
func (e *connError) Transient() bool { return sdk.IsTransient(e.err) }

func (c *Connectors) lookup(name string) (sdk.Connector, error) {
	conn, ok := c.byName[name]
	if !ok {
		names := make([]string, 0, len(c.byName))
		for n := range c.byName {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown connector %q (known: %s)", name, strings.Join(names, ", "))
	}
	return conn, nil
}

// OpenSource runs the source's Read in a goroutine feeding a one-batch
// channel, the in-process equivalent of the plugin's stream.
func (c *Connectors) OpenSource(ctx context.Context, cfg pipeline.ConnectorConfig, shard *pipeline.SourceShard) (pipeline.SourceSession, error) {
	conn, err := c.lookup(cfg.Type)
	if err != nil {
		return nil, err
	}
	src, ok := conn.(sdk.Source)
	if !ok {
		return nil, fmt.Errorf("connector %s is not a source", cfg.Type)
	}
	req := sdk.ReadRequest{Config: cfg.Config, Shard: shard}
	ctx, cancel := context.WithCancel(ctx)
	s := &source{name: cfg.Type, cancel: cancel, batches: make(chan sdk.Batch), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		w := sdk.NewBatchWriter(func(b sdk.Batch) error {
			// The writer reuses its buffer, as it does with the plugin
			// protocol, which copies the batch into a message.
			buf := bufferPool.Get().(*[]byte)
			b.Records = append((*buf)[:0], b.Records...)
			select {
			case s.batches <- b:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		err := src.Read(ctx, req, w)
		if err == nil {
			err = w.Flush()
		}
		s.err = err
	}()
	return s, nil
}

type source struct {
	name    string
	cancel  context.CancelFunc
	batches chan sdk.Batch
	done    chan struct{}
	err     error
}

func (s *source) Recv() (pipeline.Batch, error) {
	select {
	case b := <-s.batches:
		return pipeline.Batch{Seq: b.Seq, Count: b.Count, Records: b.Records}, nil
	case <-s.done:
		select {
		case b := <-s.batches:
			return pipeline.Batch{Seq: b.Seq, Count: b.Count, Records: b.Records}, nil
		default:
		}
		if s.err != nil {
			return pipeline.Batch{}, &connError{name: s.name, err: s.err}
		}
		return pipeline.Batch{}, io.EOF
	}
}

func (s *source) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// OpenSink opens the sink's writer; batches are written synchronously, so
// each Send returns once the batch is acknowledged.
func (c *Connectors) OpenSink(ctx context.Context, cfg pipeline.ConnectorConfig, acked func(int)) (pipeline.SinkSession, error) {
	conn, err := c.lookup(cfg.Type)
	if err != nil {
		return nil, err
	}
	snk, ok := conn.(sdk.Sink)
	if !ok {
		return nil, fmt.Errorf("connector %s is not a sink", cfg.Type)
	}
	w, err := snk.Open(ctx, cfg.Config)
	if err != nil {
		return nil, &connError{name: cfg.Type, err: err}
	}
	return &sink{name: cfg.Type, ctx: ctx, w: w, acked: acked}, nil
}

type sink struct {
	name    string
	ctx     context.Context
	w       sdk.Writer
	acked   func(int)
	seq     uint64
	records int64
}

func (s *sink) Send(b pipeline.Batch) error {
	s.seq++
	err := s.w.Write(s.ctx, sdk.Batch{Seq: s.seq, Count: b.Count, Records: b.Records})
	recycle(b.Records)
	if err != nil {
		return &connError{name: s.name, err: fmt.Errorf("batch %d: %w", s.seq, err)}
	}
	s.records += int64(b.Count)
	if s.acked != nil {
		s.acked(b.Count)
	}
	return nil
}

func (s *sink) Commit(ctx context.Context) (int64, error) {
	if err := s.w.Close(ctx); err != nil {
		return 0, &connError{name: s.name, err: err}
	}
	return s.records, nil
}

func (s *sink) Abort(ctx context.Context) error {
	if err := s.w.Abort(ctx); err != nil {
		return &connError{name: s.name, err: err}
	}
	return nil
}

// ConnectorSchema implements pipeline.Catalog.
func (c *Connectors) ConnectorSchema(role pipeline.Role, name string) (json.RawMessage, bool) {
	conn, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	spec := conn.Spec()
	schema := spec.SourceSchema
	if role == pipeline.RoleSink {
		schema = spec.SinkSchema
	}
	return schema, len(schema) > 0
}

// ConnectorNames implements pipeline.Catalog.
func (c *Connectors) ConnectorNames(role pipeline.Role) []string {
	var names []string
	for name := range c.byName {
		if _, ok := c.ConnectorSchema(role, name); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Shardable implements pipeline.Sharder.
func (c *Connectors) Shardable(source string) bool {
	conn, ok := c.byName[source]
	if !ok {
		return false
	}
	_, isSource := conn.(sdk.Source)
	_, isSharder := conn.(sdk.Sharder)
	return isSource && isSharder && conn.Spec().Shardable
}

// IndependentSessions implements pipeline.Sharder.
func (c *Connectors) IndependentSessions(sink string) bool {
	conn, ok := c.byName[sink]
	if !ok {
		return false
	}
	_, isSink := conn.(sdk.Sink)
	return isSink && conn.Spec().IndependentSessions
}

// Shards implements pipeline.ShardPlanner.
func (c *Connectors) Shards(ctx context.Context, cfg pipeline.ConnectorConfig, count int) ([]pipeline.SourceShard, error) {
	conn, err := c.lookup(cfg.Type)
	if err != nil {
		return nil, err
	}
	sh, ok := conn.(sdk.Sharder)
	if !ok {
		return nil, errors.New("connector " + cfg.Type + " cannot be sharded")
	}
	shards, err := sh.Shards(ctx, cfg.Config, count)
	if err != nil {
		return nil, &connError{name: cfg.Type, err: err}
	}
	return shards, nil
}
