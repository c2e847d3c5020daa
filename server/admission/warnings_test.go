package admission

import (
	"time"

	"context"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/pipeline"
)

// sinkModes is a pipeline layer where "split" sources shard, every sink but
// "jsonl" commits its sessions on its own, and every sink has one write mode
// ("" means append).
type sinkModes string

func (sinkModes) LoadAt([]byte, string, time.Time) (*pipeline.Plan, error) { return nil, nil }
func (sinkModes) Probe(context.Context, *pipeline.Plan) (DoctorReport, error) {
	return DoctorReport{}, nil
}
func (sinkModes) Shardable(src pipeline.ConnectorConfig) bool { return src.Type == "split" }
func (sinkModes) IndependentSessions(sink pipeline.ConnectorConfig) bool {
	return sink.Type != "jsonl"
}
func (m sinkModes) WriteMode(pipeline.ConnectorConfig) string {
	if m == "" {
		return "append"
	}
	return string(m)
}

func TestSubmitWarnings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		cluster bool
		mode    sinkModes
		plan    *pipeline.Plan
		want    []string
	}{
		{"local run", false, "", &pipeline.Plan{Invocations: []pipeline.Invocation{{}}}, nil},
		{"shard outside a cluster", false, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "split"}, Sink: pipeline.ConnectorConfig{Type: "csv"}}}},
			[]string{"sharded execution (4 shards) is at-least-once"}},
		{"unshardable source outside a cluster", false, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "stdin"}}}},
			[]string{"source connector stdin cannot be sharded"}},
		{"clustered run into an appending sink", true, "", &pipeline.Plan{Invocations: []pipeline.Invocation{{Sink: pipeline.ConnectorConfig{Type: "jsonl"}}}},
			[]string{"clustered execution is at-least-once", "jsonl (write_mode append)"}},
		{"sharded run", true, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "split"}, Sink: pipeline.ConnectorConfig{Type: "csv"}}}},
			[]string{"sharded execution (4 shards) is at-least-once"}},
		{"sharded run into one shared output", false, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "split"}, Sink: pipeline.ConnectorConfig{Type: "jsonl"}}}},
			[]string{"sink jsonl does not commit and abort concurrent sessions on their own", "the run executes whole"}},
		{"sharded matrix", true, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{}, {}}},
			[]string{"2 matrix rows; the run executes whole", "clustered execution is at-least-once"}},
		{"unshardable source", true, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "stdin"}}}},
			[]string{"source connector stdin cannot be sharded"}},
		{"clustered run into a keyed sink", true, "upsert", &pipeline.Plan{Invocations: []pipeline.Invocation{{}}}, nil},
		{"clustered run that overwrites", true, "overwrite", &pipeline.Plan{Invocations: []pipeline.Invocation{{}}}, nil},
		{"sharded run that overwrites", true, "overwrite", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "split"}, Sink: pipeline.ConnectorConfig{Type: "csv"}}}},
			[]string{"sink csv overwrites its target", "the run executes whole"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(warnings(c.mode, c.plan, c.cluster), "\n")
			if len(c.want) == 0 && got != "" {
				t.Fatalf("warnings %q, want none", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Fatalf("warnings %q lack %q", got, w)
				}
			}
		})
	}
}
