// Package servicetest wires faucet serve's run-lifecycle services over a
// real SQLite history file with a scripted pipeline layer, for the services'
// own tests: the services are real, and so is the store; only the connector
// processes are stood in for, by Engine.
package servicetest

import (
	"time"

	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
)

// Engine stands in for the pipeline layer. A config is the number of rows
// to "write"; "hold" reports 3 records and keeps the run in flight until
// cancelled; "gated" waits for Gate; "stuck" reports 4 records and then
// ignores cancellation until Gate closes, like a connector hung in a write;
// "split:N" asks for N shards of a shardable source whose shards write 10
// rows each, "split:N:F" makes shard F fail, and "split:N:hold" makes every
// shard hold like "hold"; "matrix:R" is a matrix of R
// invocations over a shardable source (invocation i writes 10·i records);
// "unshardable:N" a single pipeline of N records from a source that cannot
// be split; "bad" does not load.
type Engine struct {
	// Scale multiplies the rows written (0 means 1), so a test can tell
	// which engine, and so which member, wrote a result.
	Scale int64
	// Executions counts Execute calls when set.
	Executions *atomic.Int64
	Gate       chan struct{}
	// Mode is every sink's write mode; "" means append.
	Mode string
}

var _ admission.Pipelines = Engine{}

// LoadAt loads a config of the forms above.
func (e Engine) LoadAt(config []byte, _ string, _ time.Time) (*pipeline.Plan, error) {
	s := string(config)
	kind, arg, _ := strings.Cut(s, ":")
	switch {
	case s == "bad":
		return nil, errors.New("line 1, column 1: not a pipeline")
	case s == "hold", s == "gated", s == "stuck":
		return &pipeline.Plan{Name: s, Invocations: []pipeline.Invocation{{RowID: s}}}, nil
	case kind == "split":
		parts := strings.Split(arg, ":")
		n, err := strconv.Atoi(parts[0])
		if err != nil {
			return nil, err
		}
		src := pipeline.ConnectorConfig{Type: "split", Config: json.RawMessage("-1")}
		switch {
		case len(parts) > 1 && parts[1] == "hold":
			src.Config = json.RawMessage(`"hold"`)
		case len(parts) > 1:
			src.Config = json.RawMessage(parts[1])
		}
		return &pipeline.Plan{Name: "split", Shard: &pipeline.Shard{Count: n}, Invocations: []pipeline.Invocation{{RowID: "split", Source: src}}}, nil
	case kind == "matrix":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return nil, err
		}
		plan := &pipeline.Plan{Name: kind, Shard: &pipeline.Shard{Count: 4}}
		for i := 1; i <= n; i++ {
			plan.Invocations = append(plan.Invocations, pipeline.Invocation{RowID: strconv.Itoa(10 * i), Source: pipeline.ConnectorConfig{Type: "split"}})
		}
		return plan, nil
	case kind == "unshardable":
		if _, err := strconv.Atoi(arg); err != nil {
			return nil, err
		}
		return &pipeline.Plan{Name: kind, Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{
			{RowID: arg, Source: pipeline.ConnectorConfig{Type: "generate"}},
		}}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, err
	}
	return &pipeline.Plan{Name: "rows", Invocations: []pipeline.Invocation{{RowID: strconv.Itoa(n)}}}, nil
}

// Execute executes a plan's invocations one after another.
func (e Engine) Execute(ctx context.Context, _ string, plan *pipeline.Plan, _ *slog.Logger, progress func(int64)) ([]pipeline.InvocationResult, error) {
	if e.Executions != nil {
		e.Executions.Add(1)
	}
	var out []pipeline.InvocationResult
	for _, inv := range plan.Invocations {
		res, err := e.invoke(ctx, inv, progress)
		out = append(out, res)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (e Engine) invoke(ctx context.Context, inv pipeline.Invocation, progress func(int64)) (pipeline.InvocationResult, error) {
	scale := max(e.Scale, 1)
	row := inv.RowID
	switch row {
	case "hold":
		progress(3)
		<-ctx.Done()
		return pipeline.InvocationResult{RowID: row, RecordsWritten: 3, Err: ctx.Err()}, ctx.Err()
	case "stuck":
		progress(4)
		<-e.Gate
		return pipeline.InvocationResult{RowID: row, RecordsWritten: 4}, nil
	case "gated":
		select {
		case <-e.Gate:
		case <-ctx.Done():
			return pipeline.InvocationResult{RowID: row, Err: ctx.Err()}, ctx.Err()
		}
		return pipeline.InvocationResult{RowID: row, RecordsWritten: 5 * scale}, nil
	case "split":
		if inv.SourceShard == nil {
			return pipeline.InvocationResult{RowID: row, RecordsWritten: 1000}, nil
		}
		if string(inv.Source.Config) == `"hold"` {
			progress(3)
			<-ctx.Done()
			return pipeline.InvocationResult{RowID: row, RecordsWritten: 3, Err: ctx.Err()}, ctx.Err()
		}
		var shard, fail int
		if err := json.Unmarshal(inv.SourceShard.Descriptor, &shard); err != nil {
			return pipeline.InvocationResult{}, err
		}
		if err := json.Unmarshal(inv.Source.Config, &fail); err != nil {
			return pipeline.InvocationResult{}, err
		}
		if shard == fail {
			err := fmt.Errorf("shard %d broke", shard)
			return pipeline.InvocationResult{RowID: row, Err: err}, err
		}
		return pipeline.InvocationResult{RowID: row, RecordsWritten: 10}, nil
	}
	n, _ := strconv.Atoi(row)
	return pipeline.InvocationResult{RowID: row, RecordsWritten: int64(n) * scale}, nil
}

// Shardable: only the "split" source splits.
func (Engine) Shardable(src pipeline.ConnectorConfig) bool { return src.Type == "split" }

// Shards splits a "split" source into count shards of 10 records.
func (Engine) Shards(_ context.Context, src pipeline.ConnectorConfig, count int) ([]pipeline.SourceShard, error) {
	if src.Type != "split" {
		return nil, errors.New("not shardable")
	}
	out := make([]pipeline.SourceShard, count)
	for i := range out {
		out[i] = pipeline.SourceShard{Descriptor: json.RawMessage(strconv.Itoa(i)), EstimatedRecords: 10}
	}
	return out, nil
}

// IndependentSessions: every sink commits its sessions on its own.
func (Engine) IndependentSessions(pipeline.ConnectorConfig) bool { return true }

// WriteMode is every sink's write mode.
func (e Engine) WriteMode(pipeline.ConnectorConfig) string { return cmp.Or(e.Mode, "append") }

// Probe fails every probe.
func (Engine) Probe(context.Context, *pipeline.Plan) (admission.DoctorReport, error) {
	return admission.DoctorReport{Invocations: []admission.DoctorInvocation{{RowID: "x", Checks: []admission.DoctorCheck{{Role: pipeline.RoleSource, OK: false, Message: "down"}}}}}, nil
}
