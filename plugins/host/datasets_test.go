package host_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// observe executes one invocation asking the connectors for their datasets
// and returns its lineage.
func observe(t *testing.T, h pipeline.Connectors, inv pipeline.Invocation) *pipeline.Lineage {
	t.Helper()
	res, err := pipeline.Execute(context.Background(), plan(inv), pipeline.ExecuteOptions{Connectors: h, Logger: testLogger(t), Observe: true})
	if err != nil {
		t.Fatalf("%s → %s: %v", inv.Source.Type, inv.Sink.Type, err)
	}
	if res[0].Lineage == nil {
		t.Fatalf("%s → %s: no lineage", inv.Source.Type, inv.Sink.Type)
	}
	return res[0].Lineage
}

func fileURI(path string) string { return "file://" + path }

// TestConnectorsReportTheirDatasets: asked to, a csv source and a jsonl
// sink end their sessions with their file, made absolute, and the schema
// their records showed, whether the sink reads the source directly or
// faucet relays the batches; not asked, they report nothing.
func TestConnectorsReportTheirDatasets(t *testing.T) {
	modes(t, func(t *testing.T, _ *host.Host, h pipeline.Connectors) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.csv")
		if err := os.WriteFile(in, []byte("id,name\n1,ann\n2,\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out.jsonl")
		// A relative path is made absolute: the plugins run in faucet's
		// working directory.
		t.Chdir(dir)
		inv := pipeline.Invocation{RowID: "default", Source: cfg("csv", map[string]any{"path": "in.csv"}), Sink: cfg("jsonl", map[string]any{"path": out})}
		l := observe(t, h, inv)
		strings := &pipeline.Schema{Columns: []pipeline.Column{{Name: "id", Type: "string"}, {Name: "name", Type: "string"}}}
		want := pipeline.Lineage{
			Source: pipeline.Observation{Datasets: []pipeline.Dataset{{Kind: "csv", URI: fileURI(in), Schema: strings}}, Records: 2, Bytes: l.Source.Bytes},
			Sink:   pipeline.Observation{Datasets: []pipeline.Dataset{{Kind: "jsonl", URI: fileURI(out), Schema: strings}}, Records: 2, Bytes: l.Sink.Bytes},
		}
		if !reflect.DeepEqual(*l, want) {
			t.Errorf("lineage = %+v\nwant      %+v", *l, want)
		}
		if l.Source.Bytes == 0 || l.Sink.Bytes == 0 {
			t.Errorf("bytes moved not reported: %+v", *l)
		}

		res, err := pipeline.Execute(context.Background(), plan(inv), pipeline.ExecuteOptions{Connectors: h, Logger: testLogger(t)})
		if err != nil || res[0].Lineage != nil {
			t.Errorf("without Observe: lineage %+v, err %v", res[0].Lineage, err)
		}
	})
}

// TestThirdPartyPluginReportsItsDatasets: the example plugin, built against
// today's SDK, reports its file with the schema it declares.
func TestThirdPartyPluginReportsItsDatasets(t *testing.T) {
	plugins := t.TempDir()
	install(t, linesBin, plugins, "faucet-lines")
	h := newHost(t, plugins)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	l := observe(t, h, pipeline.Invocation{RowID: "default", Source: cfg("lines", map[string]any{"path": in}), Sink: cfg("jsonl", map[string]any{"path": out})})
	want := []pipeline.Dataset{{Kind: "lines", URI: fileURI(in), Schema: &pipeline.Schema{Columns: []pipeline.Column{{Name: "n", Type: "integer"}, {Name: "line", Type: "string"}}}}}
	if !reflect.DeepEqual(l.Source.Datasets, want) {
		t.Errorf("source datasets = %+v, want %+v", l.Source.Datasets, want)
	}
	if len(l.Sink.Datasets) != 1 || l.Sink.Datasets[0].URI != fileURI(out) {
		t.Errorf("sink datasets = %+v", l.Sink.Datasets)
	}
}

// TestProtocol11PluginKeepsWorking runs the example plugin built against
// protocol 1.1, from before connectors could report datasets, with faucet
// asking for them: it negotiates 1.1, moves every record, and reports
// nothing, while the 1.2 connector beside it reports its own side when it
// can (a 1.1 sink reading its source directly passes nothing on).
func TestProtocol11PluginKeepsWorking(t *testing.T) {
	hostLog, logged := testLog(t)
	linesDir := buildLinesAt(t, protocol11Revision)
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), Logger: hostLog, PluginDirs: []string{linesDir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		for _, pid := range children(t, filepath.Join(linesDir, "faucet-lines")) {
			t.Errorf("protocol 1.1 plugin process %d left behind", pid)
		}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	l := observe(t, h, pipeline.Invocation{RowID: "default", Source: cfg("lines", map[string]any{"path": in}), Sink: cfg("jsonl", map[string]any{"path": out})})
	if n := countLines(t, out); n != 3 {
		t.Errorf("lines (1.1) → jsonl wrote %d records, want 3", n)
	}
	if len(l.Source.Datasets) != 0 {
		t.Errorf("the 1.1 source reported datasets: %+v", l.Source.Datasets)
	}
	if len(l.Sink.Datasets) != 1 || l.Sink.Datasets[0].URI != fileURI(out) || l.Sink.Records != 3 {
		t.Errorf("the 1.2 sink's report = %+v", l.Sink)
	}

	l, _, _ = csvToLines(t, h, dir, "1.1")
	if len(l.Source.Datasets)+len(l.Sink.Datasets) != 0 {
		t.Errorf("a 1.1 sink's run reported %+v", *l)
	}
	if !containsLine(logged.String(), "plugin started", "connector=faucet-lines", "protocol=2") {
		t.Error("faucet did not negotiate protocol 2 (1.1) with the 1.1 plugin")
	}
}

// TestProtocol12PluginKeepsWorking runs the example plugin built against
// protocol 1.2, which reports its datasets but cannot be told the file
// roots, beside 1.3 built-ins, with faucet asking for datasets and
// confining files: it negotiates 1.2, reports its file as a source and as
// a sink, whether faucet relays the batches or a 1.3 sink reads it
// directly, and is named in a warning as a connector whose paths are not
// confined.
func TestProtocol12PluginKeepsWorking(t *testing.T) {
	h, dir, logged := linesHostAt(t, protocol12Revision)
	in, lines := threeLines(t, dir)
	for name, conns := range map[string]pipeline.Connectors{"piped": h, "relayed": relayOnly{h}} {
		l, out := linesToJSONL(t, conns, dir, name, in, "1.2")
		want := []pipeline.Dataset{{Kind: "lines", URI: fileURI(in), Schema: lines}}
		if !reflect.DeepEqual(l.Source.Datasets, want) || l.Source.Records != 3 {
			t.Errorf("%s: the 1.2 source's report = %+v, want datasets %+v", name, l.Source, want)
		}
		if len(l.Sink.Datasets) != 1 || l.Sink.Datasets[0].URI != fileURI(out) || l.Sink.Records != 3 {
			t.Errorf("%s: the 1.3 sink's report = %+v", name, l.Sink)
		}
	}

	l, csvIn, linesOut := csvToLines(t, h, dir, "1.2")
	if len(l.Source.Datasets) != 1 || l.Source.Datasets[0].URI != fileURI(csvIn) {
		t.Errorf("the 1.3 source's report, passed on by the 1.2 sink = %+v", l.Source)
	}
	if len(l.Sink.Datasets) != 1 || l.Sink.Datasets[0].URI != fileURI(linesOut) {
		t.Errorf("the 1.2 sink's report = %+v", l.Sink)
	}
	if !containsLine(logged.String(), "plugin started", "connector=faucet-lines", "protocol=3") {
		t.Error("faucet did not negotiate protocol 3 (1.2) with the 1.2 plugin")
	}
	if !containsLine(logged.String(), "is not told the file roots", "connector=lines") {
		t.Errorf("no warning names the protocol 1.2 plugin that cannot be confined:\n%s", logged.String())
	}
}

// TestProtocol13PluginKeepsWorking runs the example plugin built against
// protocol 1.3, whose sessions send the observed schema on each dataset,
// beside 1.4 built-ins, which send it once and share a pipe's one sample:
// a 1.4 sink reading the 1.3 source directly, or relayed, reports its
// file with the schema it observed, and a 1.4 source read directly by the
// 1.3 sink, which takes no sample for it, samples its records itself.
func TestProtocol13PluginKeepsWorking(t *testing.T) {
	h, dir, logged := linesHostAt(t, protocol13Revision)
	in, lines := threeLines(t, dir)
	for name, conns := range map[string]pipeline.Connectors{"piped": h, "relayed": relayOnly{h}} {
		l, out := linesToJSONL(t, conns, dir, name, in, "1.3")
		want := pipeline.Lineage{
			Source: pipeline.Observation{Datasets: []pipeline.Dataset{{Kind: "lines", URI: fileURI(in), Schema: lines}}, Records: 3, Bytes: l.Source.Bytes},
			Sink:   pipeline.Observation{Datasets: []pipeline.Dataset{{Kind: "jsonl", URI: fileURI(out), Schema: lines}}, Records: 3, Bytes: l.Sink.Bytes},
		}
		if !reflect.DeepEqual(*l, want) {
			t.Errorf("%s: lines (1.3) → jsonl lineage = %+v\nwant %+v", name, *l, want)
		}
	}

	l, csvIn, linesOut := csvToLines(t, h, dir, "1.3")
	wantSource := []pipeline.Dataset{{Kind: "csv", URI: fileURI(csvIn), Schema: &pipeline.Schema{Columns: []pipeline.Column{{Name: "line", Type: "string"}}}}}
	if !reflect.DeepEqual(l.Source.Datasets, wantSource) {
		t.Errorf("the 1.4 source's report, passed on by the 1.3 sink = %+v, want %+v", l.Source.Datasets, wantSource)
	}
	if want := []pipeline.Dataset{{Kind: "lines", URI: fileURI(linesOut), Schema: lines}}; !reflect.DeepEqual(l.Sink.Datasets, want) {
		t.Errorf("the 1.3 sink's report = %+v, want %+v", l.Sink.Datasets, want)
	}
	if !containsLine(logged.String(), "plugin started", "connector=faucet-lines", "protocol=4") {
		t.Error("faucet did not negotiate protocol 4 (1.3) with the 1.3 plugin")
	}
}

// linesHostAt starts a host with the built-ins and the example plugin built
// from revision, confined to a file root of its own, which it returns with
// the host's log. The test fails if a plugin process outlives the host.
func linesHostAt(t *testing.T, revision string) (*host.Host, string, *lockedBuffer) {
	t.Helper()
	hostLog, logged := testLog(t)
	linesDir := buildLinesAt(t, revision)
	dir := t.TempDir()
	files := sdk.NewFiles([]string{dir}, nil)
	h, err := host.New(context.Background(), host.Options{
		Executable: faucetBin, Builtins: builtinSpecs(), Logger: hostLog, PluginDirs: []string{linesDir},
		Files: func() *sdk.Files { return files },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		for _, pid := range children(t, filepath.Join(linesDir, "faucet-lines")) {
			t.Errorf("plugin process %d of revision %s left behind", pid, revision[:12])
		}
	})
	return h, dir, logged
}

// threeLines writes a file of three lines in dir for the example plugin to
// read, and returns it with the schema the plugin declares for it.
func threeLines(t *testing.T, dir string) (string, *pipeline.Schema) {
	t.Helper()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return in, &pipeline.Schema{Columns: []pipeline.Column{{Name: "n", Type: "integer"}, {Name: "line", Type: "string"}}}
}

// linesToJSONL runs threeLines' file in through conns from the example
// plugin, built against protocol version, into name.jsonl in dir, and
// checks the three records it wrote; it returns the lineage and the output.
func linesToJSONL(t *testing.T, conns pipeline.Connectors, dir, name, in, version string) (*pipeline.Lineage, string) {
	t.Helper()
	out := filepath.Join(dir, name+".jsonl")
	l := observe(t, conns, pipeline.Invocation{RowID: "default", Source: cfg("lines", map[string]any{"path": in}), Sink: cfg("jsonl", map[string]any{"path": out})})
	if n := countLines(t, out); n != 3 {
		t.Errorf("%s: lines (%s) → jsonl wrote %d records, want 3", name, version, n)
	}
	return l, out
}

// csvToLines runs a two-line CSV file in dir through h into the example
// plugin, built against protocol version, and checks the lines it wrote;
// it returns the lineage with both files.
func csvToLines(t *testing.T, h pipeline.Connectors, dir, version string) (l *pipeline.Lineage, csvIn, linesOut string) {
	t.Helper()
	csvIn = filepath.Join(dir, "in.csv")
	if err := os.WriteFile(csvIn, []byte("line\nx\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	linesOut = filepath.Join(dir, "out.txt")
	l = observe(t, h, pipeline.Invocation{RowID: "default", Source: cfg("csv", map[string]any{"path": csvIn}), Sink: cfg("lines", map[string]any{"path": linesOut})})
	if got, err := os.ReadFile(linesOut); err != nil || string(got) != "x\ny\n" {
		t.Errorf("csv → lines (%s) wrote %q (%v)", version, got, err)
	}
	return l, csvIn, linesOut
}
