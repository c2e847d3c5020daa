package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/inproc"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// parts is a shardable source of count records in parts of 1000; the part
// named by fail fails.
type parts struct{}

type partsConfig struct {
	Count int `json:"count"`
	Fail  int `json:"fail"`
}

func (parts) Spec() sdk.Spec {
	return sdk.Spec{Name: "parts", SourceSchema: json.RawMessage(`{"type":"object"}`), Shardable: true}
}

func (parts) Shards(_ context.Context, config json.RawMessage, count int) ([]sdk.Shard, error) {
	var cfg partsConfig
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, err
	}
	var out []sdk.Shard
	for i := range min(count, cfg.Count/1000) {
		out = append(out, sdk.Shard{Descriptor: json.RawMessage(fmt.Sprint(i + 1))})
	}
	return out, nil
}

func (parts) Read(_ context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	var cfg partsConfig
	var part int
	if err := json.Unmarshal(req.Config, &cfg); err != nil {
		return err
	}
	if err := json.Unmarshal(req.Shard.Descriptor, &part); err != nil {
		return err
	}
	if part == cfg.Fail {
		return errors.New("part is unreadable")
	}
	for i := (part - 1) * 1000; i < part*1000; i++ {
		if err := w.Append(map[string]int{"i": i}); err != nil {
			return err
		}
	}
	return nil
}

// overwriting is a sink whose write mode defaults to overwrite.
type overwriting struct{ memSink }

func (*overwriting) Spec() sdk.Spec {
	return sdk.Spec{Name: "overwriting", SinkSchema: json.RawMessage(`{"type":"object","properties":{"write_mode":{"default":"overwrite"}}}`), IndependentSessions: true}
}

// oneOutput is a sink whose sessions share one output and do not abort on
// their own.
type oneOutput struct{ memSink }

func (*oneOutput) Spec() sdk.Spec {
	return sdk.Spec{Name: "one-output", SinkSchema: json.RawMessage(`{"type":"object"}`)}
}

func shardPlan(source string, config string) *pipeline.Plan {
	return &pipeline.Plan{
		Invocations: []pipeline.Invocation{{RowID: "r1", Source: pipeline.ConnectorConfig{Type: source, Config: json.RawMessage(config)}, Sink: pipeline.ConnectorConfig{Type: "mem", Config: json.RawMessage(`{}`)}}},
		Execution:   pipeline.Execution{MaxConcurrent: 1, OnError: pipeline.OnErrorStop},
	}
}

func TestSplitShardsRunsEveryRecordOnce(t *testing.T) {
	sink := &memSink{}
	conns := inproc.New(generate.Connector{}, sink)
	split, err := pipeline.SplitShards(context.Background(), shardPlan("generate", `{"count": 30000}`), 3, conns)
	if err != nil || split.Note != "" {
		t.Fatalf("split: %v %q", err, split.Note)
	}
	var rows []string
	for _, inv := range split.Plan.Invocations {
		rows = append(rows, inv.RowID)
	}
	if want := []string{"r1/00000", "r1/00001", "r1/00002"}; !slices.Equal(rows, want) || split.Plan.Execution.MaxConcurrent != 3 {
		t.Fatalf("shard invocations %v (max_concurrent %d), want %v all at once", rows, split.Plan.Execution.MaxConcurrent, want)
	}
	res, err := pipeline.Execute(context.Background(), split.Plan, pipeline.ExecuteOptions{Connectors: conns})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, r := range res {
		sum += r.RecordsWritten
	}
	if sum != 30000 || sink.opened != 3 {
		t.Fatalf("shards wrote %d records in %d sessions, want 30000 in 3", sum, sink.opened)
	}
	var want []string
	for id := int64(1); id <= 30000; id++ {
		want = append(want, string(generate.AppendRow(nil, 1, id)))
	}
	got := make([]string, len(sink.committed))
	for i, r := range sink.committed {
		got[i] = string(r)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the shards committed %d records that differ from the source's %d", len(got), len(want))
	}
}

func TestSplitShardsRunsWhole(t *testing.T) {
	conns := inproc.New(generate.Connector{}, &flaky{}, &memSink{}, &overwriting{}, &oneOutput{})
	matrix := shardPlan("generate", `{"count": 10}`)
	matrix.Invocations = append(matrix.Invocations, matrix.Invocations[0])
	overwrite := shardPlan("generate", `{"count": 10}`)
	overwrite.Invocations[0].Sink.Type = "overwriting"
	shared := shardPlan("generate", `{"count": 10}`)
	shared.Invocations[0].Sink.Type = "one-output"
	for _, tc := range []struct {
		plan *pipeline.Plan
		note string
	}{
		{matrix, "2 matrix rows"},
		{shardPlan("flaky", `{}`), "source connector flaky cannot be sharded"},
		{overwrite, "sink overwriting overwrites its target"},
		{shared, "sink one-output does not commit and abort concurrent sessions on their own"},
		{shardPlan("generate", `{"count": 1}`), "the source yields 1 shard(s)"},
	} {
		split, err := pipeline.SplitShards(context.Background(), tc.plan, 4, conns)
		if err != nil || split.Plan != tc.plan || !strings.Contains(split.Note, tc.note) {
			t.Errorf("%s: split %v, note %q, want the plan whole and a note saying %q", tc.plan.Invocations[0].Source.Type, err, split.Note, tc.note)
		}
	}
}

func TestSplitShardsFailureCountsShards(t *testing.T) {
	sink := &memSink{}
	conns := inproc.New(parts{}, sink)
	split, err := pipeline.SplitShards(context.Background(), shardPlan("parts", `{"count": 3000, "fail": 2}`), 3, conns)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Execute(context.Background(), split.Plan, pipeline.ExecuteOptions{Connectors: conns})
	if err == nil || !strings.Contains(err.Error(), "1/3 shard(s) failed; first, r1/00001") {
		t.Fatalf("a failed shard: %v", err)
	}
	if res[0].RecordsWritten != 1000 || res[1].RecordsWritten != 0 || res[2].RecordsWritten != 1000 || sink.records() != 2000 {
		t.Errorf("results %+v, committed %d: the other shards commit on their own", res, sink.records())
	}
}
