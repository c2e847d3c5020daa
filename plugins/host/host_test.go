package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
)

// relayOnly hides the host's Piper, so the executor relays the batches
// through its own process (the host's source and sink sessions).
type relayOnly struct{ pipeline.Connectors }

// modes runs a test with the sink reading the source directly (pipe) and
// with the executor relaying the batches (relay).
func modes(t *testing.T, test func(t *testing.T, h *host.Host, conns pipeline.Connectors)) {
	for _, mode := range []string{"pipe", "relay"} {
		t.Run(mode, func(t *testing.T) {
			h := newHost(t)
			var conns pipeline.Connectors = h
			if mode == "relay" {
				conns = relayOnly{h}
			}
			test(t, h, conns)
		})
	}
}

func TestCSVToJSONL(t *testing.T) {
	modes(t, testCSVToJSONL)
}

func testCSVToJSONL(t *testing.T, _ *host.Host, h pipeline.Connectors) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	csvText := "id,name,note\n" +
		"1,Ada,plain\n" +
		"2,\"Lovelace, Ada\",\"said \"\"hi\"\"\"\n" +
		"3,Zoë,\"two\nlines\"\n" +
		"4,,\n"
	if err := os.WriteFile(in, []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out", "out.jsonl")
	results, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{
		RowID:  "default",
		Source: cfg("csv", map[string]any{"path": in}),
		Sink:   cfg("jsonl", map[string]any{"path": out}),
	}), pipeline.ExecuteOptions{Connectors: h})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if results[0].RecordsWritten != 4 || results[0].RowID != "default" {
		t.Errorf("result = %+v, want 4 records for row default", results[0])
	}
	want := []map[string]any{
		{"id": "1", "name": "Ada", "note": "plain"},
		{"id": "2", "name": "Lovelace, Ada", "note": `said "hi"`},
		{"id": "3", "name": "Zoë", "note": "two\nlines"},
		{"id": "4", "name": "", "note": ""},
	}
	if got := readJSONL(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("output = %v, want %v", got, want)
	}
}

func TestMissingInputFileWritesNothing(t *testing.T) {
	modes(t, testMissingInputFileWritesNothing)
}

func testMissingInputFileWritesNothing(t *testing.T, _ *host.Host, h pipeline.Connectors) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	results, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{
		RowID:  "default",
		Source: cfg("csv", map[string]any{"path": filepath.Join(dir, "nope.csv")}),
		Sink:   cfg("jsonl", map[string]any{"path": out}),
	}), pipeline.ExecuteOptions{Connectors: h})
	if err == nil || !strings.Contains(err.Error(), "connector csv: input file") || !strings.Contains(err.Error(), "nope.csv") {
		t.Fatalf("error = %v, want the csv connector naming the missing file", err)
	}
	if results[0].RecordsWritten != 0 {
		t.Errorf("records written = %d, want 0", results[0].RecordsWritten)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("the sink left files behind: %v", entries)
	}
}

func TestMatrixOnError(t *testing.T) {
	h := newHost(t)
	dir := t.TempDir()
	good := func(row string, n int) pipeline.Invocation {
		return pipeline.Invocation{
			RowID:  row,
			Source: cfg("generate", map[string]any{"count": n}),
			Sink:   cfg("jsonl", map[string]any{"path": filepath.Join(dir, row+".jsonl")}),
		}
	}
	bad := pipeline.Invocation{
		RowID:  "bad",
		Source: cfg("jsonl", map[string]any{"path": filepath.Join(dir, "missing.jsonl")}),
		Sink:   cfg("jsonl", map[string]any{"path": filepath.Join(dir, "bad.jsonl")}),
	}
	for _, tc := range []struct {
		onError pipeline.OnError
		lastErr error
		last    int64
	}{
		{pipeline.OnErrorContinue, nil, 30},
		{pipeline.OnErrorStop, pipeline.ErrNotRun, 0},
	} {
		t.Run(string(tc.onError), func(t *testing.T) {
			p := plan(good("a", 10), bad, good("c", 30))
			p.Execution.OnError = tc.onError
			results, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: h})
			if err == nil || !strings.Contains(err.Error(), "1 of 3 invocations failed") || !strings.Contains(err.Error(), "first, bad: ") {
				t.Errorf("error = %v, want one failure naming row bad", err)
			}
			if results[0].Err != nil || results[0].RecordsWritten != 10 {
				t.Errorf("row a = %+v, want 10 records", results[0])
			}
			if results[1].Err == nil || !strings.Contains(results[1].Err.Error(), "missing.jsonl") {
				t.Errorf("row bad error = %v", results[1].Err)
			}
			if !errors.Is(results[2].Err, tc.lastErr) || results[2].RecordsWritten != tc.last {
				t.Errorf("row c = %+v, want error %v and %d records", results[2], tc.lastErr, tc.last)
			}
		})
	}
}

func TestCancelCommitsExactlyTheAcknowledgedBatches(t *testing.T) {
	modes(t, testCancelCommitsExactlyTheAcknowledgedBatches)
}

func testCancelCommitsExactlyTheAcknowledgedBatches(t *testing.T, _ *host.Host, h pipeline.Connectors) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		acked int64
	)
	results, err := pipeline.Execute(ctx, plan(pipeline.Invocation{
		RowID:         "default",
		Source:        cfg("generate", map[string]any{"count": 50_000_000}),
		Sink:          cfg("jsonl", map[string]any{"path": out, "write_mode": "append"}),
		SinkWriteMode: "append",
	}), pipeline.ExecuteOptions{Connectors: h, Progress: func(p pipeline.Progress) {
		mu.Lock()
		acked = p.Records
		mu.Unlock()
		if p.Records >= 100_000 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want cancellation", err)
	}
	n := results[0].RecordsWritten
	if n < 100_000 || n >= 50_000_000 {
		t.Fatalf("records written = %d, want a partial count of at least 100000", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if acked != n {
		t.Errorf("the sink acknowledged %d records but committed %d", acked, n)
	}
	if lines := countLines(t, out); lines != n {
		t.Errorf("output holds %d records, the sink acknowledged %d", lines, n)
	}
}

func TestCancelledOverwriteKeepsThePreviousFile(t *testing.T) {
	modes(t, testCancelledOverwriteKeepsThePreviousFile)
}

// testCancelledOverwriteKeepsThePreviousFile cancels a run whose sink
// overwrites its file once batches were acknowledged: the file must still
// hold what it held before, and nothing of the partial copy may be left.
func testCancelledOverwriteKeepsThePreviousFile(t *testing.T, _ *host.Host, h pipeline.Connectors) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	const previous = "{\"previous\": true}\n"
	if err := os.WriteFile(out, []byte(previous), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results, err := pipeline.Execute(ctx, plan(pipeline.Invocation{
		RowID:         "default",
		Source:        cfg("generate", map[string]any{"count": 50_000_000}),
		Sink:          cfg("jsonl", map[string]any{"path": out}),
		SinkWriteMode: pipeline.WriteModeOverwrite,
	}), pipeline.ExecuteOptions{Connectors: h, Progress: func(p pipeline.Progress) {
		if p.Records >= 100_000 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, pipeline.ErrTargetKept) {
		t.Fatalf("error = %v, want a cancellation that kept the target", err)
	}
	if n := results[0].RecordsWritten; n != 0 {
		t.Errorf("records written = %d; a discarded overwrite commits none", n)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != previous {
		t.Errorf("after the cancelled overwrite the file holds %d bytes (%v), want the previous %q", len(got), err, previous)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the partial copy was left behind: %v", names)
	}
}

// A cancel that lands while the source has not produced its first batch is a
// clean stop with nothing written, not a failure of the source or the sink.
// The example plugin's source blocks opening a FIFO nobody writes to.
func TestCancelBeforeTheFirstBatch(t *testing.T) {
	plugins := t.TempDir()
	install(t, linesBin, plugins, "faucet-lines")
	for _, mode := range []string{"pipe", "relay"} {
		t.Run(mode, func(t *testing.T) {
			h := newHost(t, plugins)
			var conns pipeline.Connectors = h
			if mode == "relay" {
				conns = relayOnly{h}
			}
			dir := t.TempDir()
			fifo := filepath.Join(dir, "in.txt")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			// Unblock the plugin's open once the run has ended, so its
			// goroutine does not outlive the test.
			t.Cleanup(func() {
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
			out := filepath.Join(dir, "out.jsonl")
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			results, err := pipeline.Execute(ctx, plan(pipeline.Invocation{
				RowID:  "default",
				Source: cfg("lines", map[string]any{"path": fifo}),
				Sink:   cfg("jsonl", map[string]any{"path": out}),
			}), pipeline.ExecuteOptions{Connectors: conns})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error = %v, want cancellation", err)
			}
			if n := results[0].RecordsWritten; n != 0 {
				t.Fatalf("records written = %d, want 0", n)
			}
			if msg := results[0].Err.Error(); strings.Contains(msg, "failed") {
				t.Fatalf("a cancel before any batch reads as a failure: %s", msg)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("sink output after a cancel before any batch: %v", err)
			}
		})
	}
}

func TestKilledSourcePlugin(t *testing.T) {
	modes(t, testKilledSourcePlugin)
}

func testKilledSourcePlugin(t *testing.T, _ *host.Host, h pipeline.Connectors) {
	dir := t.TempDir()
	var once sync.Once
	var killed []int
	results, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{
		RowID:  "default",
		Source: cfg("generate", map[string]any{"count": 50_000_000}),
		Sink:   cfg("jsonl", map[string]any{"path": filepath.Join(dir, "out.jsonl")}),
	}), pipeline.ExecuteOptions{Connectors: h, Progress: func(pipeline.Progress) {
		once.Do(func() {
			killed = children(t, "connector serve generate")
			for _, pid := range killed {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Errorf("kill %d: %v", pid, err)
				}
			}
		})
	}})
	if len(killed) != 1 {
		t.Fatalf("found %d generate plugin processes to kill, want 1", len(killed))
	}
	if err == nil || !strings.Contains(err.Error(), "connector generate exited: signal: killed") {
		t.Fatalf("error = %v, want the crash named", err)
	}
	if !pipeline.IsTransient(err) {
		t.Errorf("a crashed plugin should be retriable: %v", err)
	}
	if results[0].RecordsWritten != 0 {
		t.Errorf("records written = %d after the sink aborted, want 0", results[0].RecordsWritten)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the aborted sink left its output: %v", err)
	}
	for _, pid := range children(t, "connector serve generate") {
		if pid == killed[0] {
			t.Errorf("killed plugin %d is still a live child", pid)
		}
	}

	// The pool replaced the process: the next run works.
	res, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{
		RowID:  "default",
		Source: cfg("generate", map[string]any{"count": 1000}),
		Sink:   cfg("jsonl", map[string]any{"path": filepath.Join(dir, "again.jsonl")}),
	}), pipeline.ExecuteOptions{Connectors: h})
	if err != nil || res[0].RecordsWritten != 1000 {
		t.Fatalf("next run: %+v, %v", res, err)
	}
}

func TestPoolReusesWarmProcesses(t *testing.T) {
	h := newHost(t)
	dir := t.TempDir()
	run := func() {
		t.Helper()
		_, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{
			RowID:  "default",
			Source: cfg("generate", map[string]any{"count": 10}),
			Sink:   cfg("jsonl", map[string]any{"path": filepath.Join(dir, "out.jsonl")}),
		}), pipeline.ExecuteOptions{Connectors: h})
		if err != nil {
			t.Fatal(err)
		}
	}
	run()
	first := children(t, "connector serve generate")
	run()
	second := children(t, "connector serve generate")
	if len(first) != 1 || !reflect.DeepEqual(first, second) {
		t.Errorf("generate processes: %v then %v, want the same single warm process", first, second)
	}
}

func TestShardedRunThroughPlugins(t *testing.T) {
	h := newHost(t)
	dir := t.TempDir()
	src := cfg("generate", map[string]any{"count": 20_000, "seed": 3})
	shards, err := h.Shards(context.Background(), src, 4)
	if err != nil || len(shards) != 4 {
		t.Fatalf("shards: %v, %v", shards, err)
	}
	var invs []pipeline.Invocation
	for i := range shards {
		invs = append(invs, pipeline.Invocation{
			RowID: "shard", Source: src, SourceShard: &shards[i],
			Sink: cfg("jsonl", map[string]any{"path": filepath.Join(dir, "all.jsonl"), "write_mode": "append"}),
		})
	}
	invs = append(invs, pipeline.Invocation{RowID: "whole", Source: src, Sink: cfg("jsonl", map[string]any{"path": filepath.Join(dir, "whole.jsonl")})})
	if _, err := pipeline.Execute(context.Background(), plan(invs...), pipeline.ExecuteOptions{Connectors: h}); err != nil {
		t.Fatal(err)
	}
	sharded, whole := readJSONL(t, filepath.Join(dir, "all.jsonl")), readJSONL(t, filepath.Join(dir, "whole.jsonl"))
	if len(whole) != 20_000 || !reflect.DeepEqual(sharded, whole) {
		t.Errorf("the shards gave %d records, the whole source %d, or they differ", len(sharded), len(whole))
	}
}

func TestStdoutSinkWritesToFaucetsStdout(t *testing.T) {
	// The plugin writes straight to the file faucet has as its standard output.
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), Logger: testLogger(t), Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{
		RowID: "default", Source: cfg("generate", map[string]any{"count": 123}), Sink: cfg("stdout", map[string]any{}),
	}), pipeline.ExecuteOptions{Connectors: h})
	if err != nil || res[0].RecordsWritten != 123 {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if n := countLines(t, out.Name()); n != 123 {
		t.Errorf("stdout got %d lines, want 123 as soon as the run ends", n)
	}
}

func TestKilledSinkPlugin(t *testing.T) {
	modes(t, func(t *testing.T, _ *host.Host, h pipeline.Connectors) {
		dir := t.TempDir()
		var once sync.Once
		var killed []int
		_, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{
			RowID:  "default",
			Source: cfg("generate", map[string]any{"count": 50_000_000}),
			Sink:   cfg("csv", map[string]any{"path": filepath.Join(dir, "out.csv")}),
		}), pipeline.ExecuteOptions{Connectors: h, Progress: func(pipeline.Progress) {
			once.Do(func() {
				killed = children(t, "connector serve csv")
				for _, pid := range killed {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
		}})
		if len(killed) != 1 {
			t.Fatalf("found %d csv plugin processes to kill, want 1", len(killed))
		}
		if err == nil || !strings.Contains(err.Error(), "connector csv exited: signal: killed") {
			t.Fatalf("error = %v, want the sink's crash named", err)
		}
	})
}

func TestSinkErrorAbortsTheOutput(t *testing.T) {
	modes(t, func(t *testing.T, _ *host.Host, h pipeline.Connectors) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.jsonl")
		lines := strings.Repeat(`{"a": 1}`+"\n", 20_000) + `{"a": 2, "surprise": true}` + "\n"
		if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out", "out.csv")
		res, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{
			RowID: "default", Source: cfg("jsonl", map[string]any{"path": in}), Sink: cfg("csv", map[string]any{"path": out}),
		}), pipeline.ExecuteOptions{Connectors: h})
		if err == nil || !strings.Contains(err.Error(), `connector csv: batch`) || !strings.Contains(err.Error(), `"surprise"`) {
			t.Fatalf("error = %v, want the csv sink's complaint", err)
		}
		if pipeline.IsTransient(err) || res[0].RecordsWritten != 0 {
			t.Errorf("transient = %v, written = %d; want a permanent failure with nothing written", pipeline.IsTransient(err), res[0].RecordsWritten)
		}
		if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
			t.Errorf("the aborted sink left %v", entries)
		}
	})
}

func TestPoolLimits(t *testing.T) {
	run := func(t *testing.T, opts host.Options) {
		opts.Executable, opts.Builtins, opts.Logger = faucetBin, builtinSpecs(), testLogger(t)
		h, err := host.New(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		dir := t.TempDir()
		var invs []pipeline.Invocation
		for i := range 3 {
			invs = append(invs, pipeline.Invocation{
				RowID:  fmt.Sprint(i),
				Source: cfg("generate", map[string]any{"count": 200_000}),
				Sink:   cfg("jsonl", map[string]any{"path": filepath.Join(dir, fmt.Sprintf("%d.jsonl", i))}),
			})
		}
		p := plan(invs...)
		p.Execution.MaxConcurrent = 3
		if _, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: h}); err != nil {
			t.Fatal(err)
		}
	}
	eventually := func(t *testing.T, what string, done func() bool) {
		testwait.Until(t, 30*time.Second, func() error {
			if !done() {
				return fmt.Errorf("%s: children %v", what, children(t, "connector serve"))
			}
			return nil
		})
	}
	t.Run("max idle", func(t *testing.T) {
		// Three sessions ran at once; one process per connector stays warm.
		run(t, host.Options{MaxIdle: 1, IdleTimeout: time.Hour})
		eventually(t, "more than one idle generate process", func() bool { return len(children(t, "connector serve generate")) == 1 })
	})
	t.Run("idle timeout", func(t *testing.T) {
		run(t, host.Options{IdleTimeout: 300 * time.Millisecond})
		eventually(t, "idle processes outlived the idle timeout", func() bool { return len(children(t, "connector serve")) == 0 })
	})
}

func TestRetryAfterAPluginCrash(t *testing.T) {
	modes(t, func(t *testing.T, _ *host.Host, h pipeline.Connectors) {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		var once sync.Once
		killed := 0
		p := plan(pipeline.Invocation{
			RowID:  "default",
			Source: cfg("generate", map[string]any{"count": 300_000}),
			Sink:   cfg("jsonl", map[string]any{"path": out}),
		})
		p.Retry = pipeline.Retry{MaxAttempts: 2, InitialBackoff: time.Millisecond}
		res, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: h, Progress: func(pipeline.Progress) {
			once.Do(func() {
				for _, pid := range children(t, "connector serve generate") {
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						killed++
					}
				}
			})
		}})
		if killed != 1 {
			t.Fatalf("killed %d source processes, want 1", killed)
		}
		// The first attempt's sink aborted; the retry wrote everything once.
		if err != nil || res[0].RecordsWritten != 300_000 || countLines(t, out) != 300_000 {
			t.Fatalf("result %+v, err %v, %d lines; want 300000 records exactly once", res, err, countLines(t, out))
		}
	})
}
