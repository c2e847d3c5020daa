package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/inproc"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// memSink is an in-memory sink that records what it committed and lets a
// test make it fail or slow down.
type memSink struct {
	mu        sync.Mutex
	committed [][]byte
	opened    int
	aborted   int
	// writeHook runs before each batch is accepted.
	writeHook func(seq uint64) error
}

func (s *memSink) Spec() sdk.Spec {
	return sdk.Spec{Name: "mem", SinkSchema: json.RawMessage(`{"type":"object"}`), IndependentSessions: true}
}

func (s *memSink) Open(context.Context, json.RawMessage) (sdk.Writer, error) {
	s.mu.Lock()
	s.opened++
	s.mu.Unlock()
	return &memWriter{s: s}, nil
}

func (s *memSink) records() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.committed)
}

type memWriter struct {
	s       *memSink
	pending [][]byte
}

func (w *memWriter) Write(_ context.Context, b sdk.Batch) error {
	if w.s.writeHook != nil {
		if err := w.s.writeHook(b.Seq); err != nil {
			return err
		}
	}
	for r := range b.All() {
		w.pending = append(w.pending, append([]byte(nil), r...))
	}
	return nil
}

func (w *memWriter) Close(context.Context) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.committed = append(w.s.committed, w.pending...)
	return nil
}

func (w *memWriter) Abort(context.Context) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.aborted++
	return nil
}

// flaky is a source that fails transiently (or permanently) on its first
// attempts, then emits n records.
type flaky struct {
	n         int
	failFirst int
	permanent bool
	attempts  atomic.Int32
	// emitted counts records appended, for back-pressure checks.
	emitted atomic.Int64
}

func (f *flaky) Spec() sdk.Spec {
	return sdk.Spec{Name: "flaky", SourceSchema: json.RawMessage(`{"type":"object"}`)}
}

func (f *flaky) Read(ctx context.Context, _ sdk.ReadRequest, w *sdk.BatchWriter) error {
	attempt := int(f.attempts.Add(1))
	for i := range f.n {
		if attempt <= f.failFirst && i == f.n/2 {
			err := errors.New("connection reset by hunter2")
			if f.permanent {
				return err
			}
			return sdk.Transient(err)
		}
		if err := w.Append(map[string]int{"i": i}); err != nil {
			return err
		}
		f.emitted.Add(1)
	}
	return nil
}

func onePlan(source string) *pipeline.Plan {
	return &pipeline.Plan{
		Invocations: []pipeline.Invocation{{RowID: "r1", Source: pipeline.ConnectorConfig{Type: source, Config: json.RawMessage(`{"count": 100000}`)}, Sink: pipeline.ConnectorConfig{Type: "mem", Config: json.RawMessage(`{}`)}}},
		Execution:   pipeline.Execution{MaxConcurrent: 1, OnError: pipeline.OnErrorStop},
	}
}

func TestRetryTransientFailureWithoutDuplicates(t *testing.T) {
	src := &flaky{n: 50_000, failFirst: 2}
	sink := &memSink{}
	p := onePlan("flaky")
	p.Retry = pipeline.Retry{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
	res, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: inproc.New(src, sink)})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if got := src.attempts.Load(); got != 3 {
		t.Errorf("attempts = %d, want 3", got)
	}
	if res[0].RecordsWritten != 50_000 || sink.records() != 50_000 {
		t.Errorf("written %d, committed %d; want 50000 each (aborted attempts leave nothing)", res[0].RecordsWritten, sink.records())
	}
	if sink.aborted != 2 {
		t.Errorf("aborted sessions = %d, want 2", sink.aborted)
	}
}

func TestRetryGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name      string
		permanent bool
		attempts  int32
	}{
		{"transient, attempts exhausted", false, 2},
		{"permanent, no retry", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &flaky{n: 10_000, failFirst: 5, permanent: tc.permanent}
			p := onePlan("flaky")
			p.Retry = pipeline.Retry{MaxAttempts: 2}
			p.Secrets = []string{"hunter2"}
			res, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: inproc.New(src, &memSink{})})
			if err == nil || res[0].Err == nil {
				t.Fatal("want a failure")
			}
			if got := src.attempts.Load(); got != tc.attempts {
				t.Errorf("attempts = %d, want %d", got, tc.attempts)
			}
			if strings.Contains(res[0].Err.Error(), "hunter2") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the secret leaked: %v", res[0].Err)
			}
			if !strings.Contains(res[0].Err.Error(), "connection reset by [REDACTED]") {
				t.Errorf("error = %v, want the cause with the secret redacted", res[0].Err)
			}
			if pipeline.IsTransient(res[0].Err) == tc.permanent {
				t.Errorf("transience of %v lost through redaction", res[0].Err)
			}
		})
	}
}

func TestBackPressureBoundsBufferedBatches(t *testing.T) {
	src := &flaky{n: 200_000}
	var written atomic.Int64
	const buffer = 2
	var worst atomic.Int64
	sink := &memSink{writeHook: func(uint64) error {
		// A slow sink: the source may run ahead only by the bounded buffer.
		time.Sleep(time.Millisecond)
		ahead := src.emitted.Load() - written.Add(sdk.MaxBatchRecords)
		if ahead > worst.Load() {
			worst.Store(ahead)
		}
		return nil
	}}
	p := onePlan("flaky")
	if _, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: inproc.New(src, sink), BufferBatches: buffer}); err != nil {
		t.Fatal(err)
	}
	// In flight at most: the buffer, one batch in the executor's hand, one
	// being emitted, one being filled.
	if limit := int64(buffer+3) * sdk.MaxBatchRecords; worst.Load() > limit {
		t.Errorf("the source ran %d records ahead of the sink, over the bound %d", worst.Load(), limit)
	}
}

func TestCancelCommitsAcknowledged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &memSink{writeHook: func(seq uint64) error {
		if seq == 5 {
			cancel()
		}
		return nil
	}}
	var last pipeline.Progress
	p := onePlan("generate")
	p.Invocations[0].Source.Config = json.RawMessage(`{"count": 10000000}`)
	res, err := pipeline.Execute(ctx, p, pipeline.ExecuteOptions{
		Connectors: inproc.New(generate.Connector{}, sink),
		Progress:   func(pr pipeline.Progress) { last = pr },
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want cancellation", err)
	}
	n := res[0].RecordsWritten
	if n <= 0 || n >= 10_000_000 {
		t.Errorf("written = %d, want the acknowledged batches only", n)
	}
	if int64(sink.records()) != n || last.Records != n || last.RowRecords != n || last.RowID != "r1" {
		t.Errorf("committed %d, last progress %+v, result %d: all must agree", sink.records(), last, n)
	}
}

func TestConcurrencyAndOrder(t *testing.T) {
	sink := &memSink{}
	var invs []pipeline.Invocation
	for i := range 6 {
		invs = append(invs, pipeline.Invocation{
			RowID:  fmt.Sprintf("row%d", i),
			Source: pipeline.ConnectorConfig{Type: "generate", Config: json.RawMessage(fmt.Sprintf(`{"count": %d}`, 1000*(i+1)))},
			Sink:   pipeline.ConnectorConfig{Type: "mem", Config: json.RawMessage(`{}`)},
		})
	}
	p := &pipeline.Plan{Invocations: invs, Execution: pipeline.Execution{MaxConcurrent: 3, OnError: pipeline.OnErrorContinue}}
	res, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: inproc.New(generate.Connector{}, sink)})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.RowID != fmt.Sprintf("row%d", i) || r.RecordsWritten != int64(1000*(i+1)) || r.Duration <= 0 {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if sink.records() != 21000 {
		t.Errorf("committed %d records, want 21000", sink.records())
	}
}

func TestCancelledBeforeStartIsNotRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := pipeline.Execute(ctx, onePlan("generate"), pipeline.ExecuteOptions{Connectors: inproc.New(generate.Connector{}, &memSink{})})
	if !errors.Is(err, pipeline.ErrNotRun) || !errors.Is(res[0].Err, context.Canceled) {
		t.Errorf("error = %v, result = %+v; want not run because cancelled", err, res[0])
	}
}

// noPipe offers a Piper that declines every pair.
type noPipe struct {
	*inproc.Connectors
	asked atomic.Int32
}

func (n *noPipe) OpenPipe(context.Context, pipeline.ConnectorConfig, *pipeline.SourceShard, pipeline.ConnectorConfig, func(int)) (pipeline.PipeSession, error) {
	n.asked.Add(1)
	return nil, pipeline.ErrNoPipe
}

func TestDeclinedPipeFallsBackToRelay(t *testing.T) {
	sink := &memSink{}
	conns := &noPipe{Connectors: inproc.New(generate.Connector{}, sink)}
	res, err := pipeline.Execute(context.Background(), onePlan("generate"), pipeline.ExecuteOptions{Connectors: conns})
	if err != nil || res[0].RecordsWritten != 100_000 || sink.records() != 100_000 || conns.asked.Load() != 1 {
		t.Errorf("result %+v, err %v, committed %d, pipe asked %d times", res, err, sink.records(), conns.asked.Load())
	}
}

// sessionLogs records the SessionLog each session is opened with.
type sessionLogs struct {
	*inproc.Connectors
	mu   sync.Mutex
	seen []pipeline.SessionLog
}

func (s *sessionLogs) record(ctx context.Context) {
	l, ok := pipeline.SessionLogFrom(ctx)
	if !ok {
		l = pipeline.SessionLog{Secrets: []string{"<none attached>"}}
	}
	s.mu.Lock()
	s.seen = append(s.seen, l)
	s.mu.Unlock()
}

func (s *sessionLogs) OpenSource(ctx context.Context, c pipeline.ConnectorConfig, shard *pipeline.SourceShard) (pipeline.SourceSession, error) {
	s.record(ctx)
	return s.Connectors.OpenSource(ctx, c, shard)
}

func (s *sessionLogs) OpenSink(ctx context.Context, c pipeline.ConnectorConfig, acked func(int)) (pipeline.SinkSession, error) {
	s.record(ctx)
	return s.Connectors.OpenSink(ctx, c, acked)
}

// TestSessionsCarryTheRunsLogAndSecrets checks what Execute tells the
// Connectors about each session: the plan's secrets always, and the logger
// for the connectors' lines (ConnectorLogger, else Logger, tagged with the
// row) when there is one.
func TestSessionsCarryTheRunsLogAndSecrets(t *testing.T) {
	var runLog strings.Builder
	logger := slog.New(slog.NewTextHandler(&runLog, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	for _, tc := range []struct {
		name string
		opts pipeline.ExecuteOptions
		want string // what a line logged to the session's logger reads as
	}{
		{"connector logger", pipeline.ExecuteOptions{ConnectorLogger: logger}, "level=INFO msg=hello row_id=r1\n"},
		{"run logger", pipeline.ExecuteOptions{Logger: logger}, "level=INFO msg=hello row_id=r1\n"},
		{"no logger", pipeline.ExecuteOptions{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns := &sessionLogs{Connectors: inproc.New(generate.Connector{}, &memSink{})}
			p := onePlan("generate")
			p.Secrets = []string{"s3cret", "t0ken"}
			tc.opts.Connectors = conns
			if _, err := pipeline.Execute(context.Background(), p, tc.opts); err != nil {
				t.Fatal(err)
			}
			if len(conns.seen) != 2 {
				t.Fatalf("%d sessions recorded, want a source and a sink", len(conns.seen))
			}
			for _, l := range conns.seen {
				if !slices.Equal(l.Secrets, p.Secrets) {
					t.Errorf("session secrets %v, want %v", l.Secrets, p.Secrets)
				}
				runLog.Reset()
				if l.Logger != nil {
					l.Logger.Info("hello")
				}
				if got := runLog.String(); !strings.HasSuffix(got, tc.want) || (tc.want == "" && got != "") {
					t.Errorf("a session line reads %q, want %q", got, tc.want)
				}
			}
		})
	}
}
