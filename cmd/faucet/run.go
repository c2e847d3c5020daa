package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/faucet-dev/faucet/pipeline"
)

func newRunCmd() *cobra.Command {
	var (
		pf     pluginFlags
		sets   []string
		shards int
		out    *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a pipeline config (YAML or JSON; - reads standard input) from the terminal",
		Long: `Run loads and validates a pipeline config, then moves the records from
its source to its sink, once per matrix row, through connector plugin
processes. Progress goes to standard error: a live line on a terminal,
a plain line every few seconds otherwise, and a summary per invocation at
the end (on standard output as JSON with --output json). The exit status is
1 when any invocation fails.

Ctrl-C cancels cooperatively: sources stop, and every sink that appends or
upserts commits exactly the batches it acknowledged; a sink that overwrites
its target (a file, a table) discards its partial copy instead, so the
target keeps its previous contents. The exit status is then 130. A second
Ctrl-C stops at once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPipeline(cmd.Context(), args[0], sets, shards, &pf, *out, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	pf.register(cmd)
	out = addOutputFlags(cmd)
	cmd.Flags().StringArrayVar(&sets, "set", nil, setUsage)
	cmd.Flags().IntVar(&shards, "shards", 0, "split the source into N shards moved in parallel, each committed on its own (a single pipeline with a shardable source and a sink whose sessions are transactions)")
	return cmd
}

func runPipeline(ctx context.Context, file string, sets []string, shards int, pf *pluginFlags, format outputFormat, stdout, stderr io.Writer) error {
	st := newStatus(stderr)
	h, log, err := pf.open(ctx, st)
	if err != nil {
		return err
	}
	defer h.Close()
	plan, notes, err := loadPlan(file, sets, h)
	if err != nil {
		return configProblems(stderr, file, err)
	}
	for _, n := range notes {
		fmt.Fprintln(stderr, n)
	}
	if shards > 1 {
		split, err := pipeline.SplitShards(ctx, plan, shards, h)
		if err != nil {
			return err
		}
		if split.Note != "" {
			fmt.Fprintln(stderr, "note:", split.Note)
		}
		plan = split.Plan
	}
	for _, inv := range plan.Invocations {
		if inv.Sink.Type == "stdout" && format == outputJSON {
			return usageErrorf("--output json prints the summary on standard output, where the stdout sink of row %q writes its records", inv.RowID)
		}
		if inv.Sink.Type == "stdout" && isTerminal(os.Stdout) {
			// Records print on this terminal; a redrawn line would garble them.
			st.live = false
		}
	}

	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			st.note("interrupted: sinks commit the batches they acknowledged, or keep the target they overwrite (Ctrl-C again stops at once)")
			// The next signal takes the default action: faucet exits, and the
			// plugin processes die with it.
			signal.Reset(os.Interrupt, syscall.SIGTERM)
		case <-done:
		}
	}()

	// The summary reports each invocation's outcome; the executor's own log
	// lines would repeat it, so they show from level info (-v) on. The
	// connectors' own lines keep the log's level, secrets masked.
	execLog := slog.New(slog.DiscardHandler)
	if log.Enabled(ctx, slog.LevelInfo) {
		execLog = log
	}
	st.begin()
	results, err := pipeline.Execute(ctx, plan, pipeline.ExecuteOptions{Connectors: h, Progress: st.progress, Logger: execLog, ConnectorLogger: log})
	st.end()
	sum := summarize(results, st.elapsed(), ctx.Err() != nil)
	if format == outputJSON {
		if perr := printJSON(stdout, sum); perr != nil {
			return perr
		}
	} else {
		sum.print(stderr)
	}
	return err
}

var numbers = message.NewPrinter(language.English)

// runSummary is the outcome of a faucet run: one entry per invocation and
// the totals. It is what --output json prints.
type runSummary struct {
	Invocations    []invocationSummary `json:"invocations"`
	RecordsWritten int64               `json:"records_written"`
	DurationMS     int64               `json:"duration_ms"`
	Interrupted    bool                `json:"interrupted"`
	// Incomplete counts the invocations that failed, were cancelled or did
	// not run.
	Incomplete int `json:"incomplete"`
}

type invocationSummary struct {
	RowID          string `json:"row_id"`
	RecordsWritten int64  `json:"records_written"`
	DurationMS     int64  `json:"duration_ms"`
	// Result is ok, failed, cancelled or not run.
	Result string `json:"result"`
	// TargetKept is true for a cancelled invocation whose sink overwrites
	// its target: the sink discarded its partial copy.
	TargetKept bool   `json:"target_kept,omitempty"`
	Error      string `json:"error,omitempty"`
	elapsed    time.Duration
}

// summarize sums up the results. After an interrupt an unfinished
// invocation is "cancelled", its records those its sink committed.
func summarize(results []pipeline.InvocationResult, elapsed time.Duration, interrupted bool) runSummary {
	sum := runSummary{Invocations: []invocationSummary{}, DurationMS: elapsed.Milliseconds(), Interrupted: interrupted}
	for _, r := range results {
		sum.RecordsWritten += r.RecordsWritten
		inv := invocationSummary{RowID: r.RowID, RecordsWritten: r.RecordsWritten, DurationMS: r.Duration.Milliseconds(), Result: "ok", elapsed: r.Duration}
		switch {
		case errors.Is(r.Err, pipeline.ErrNotRun):
			inv.Result = "not run"
		case r.Err != nil && interrupted:
			inv.Result = "cancelled"
			inv.TargetKept = errors.Is(r.Err, pipeline.ErrTargetKept)
		case r.Err != nil:
			inv.Result = "failed"
		}
		if r.Err != nil {
			inv.Error = r.Err.Error()
			sum.Incomplete++
		}
		sum.Invocations = append(sum.Invocations, inv)
	}
	return sum
}

// print writes the summary for a person: one line per invocation and a
// total.
func (sum runSummary) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tRECORDS\tDURATION\tRESULT")
	for _, inv := range sum.Invocations {
		outcome := inv.Result
		switch {
		case inv.TargetKept:
			outcome = "cancelled, previous output kept (the sink overwrites its target)"
		case inv.Result == "failed":
			outcome = "failed: " + inv.Error
		}
		numbers.Fprintf(tw, "%s\t%d\t%s\t%s\n", inv.RowID, inv.RecordsWritten, inv.elapsed.Round(time.Millisecond), outcome)
	}
	tw.Flush()
	elapsed := time.Duration(sum.DurationMS) * time.Millisecond
	numbers.Fprintf(w, "%d records in %s (%.0f rows/s)", sum.RecordsWritten, elapsed, rate(sum.RecordsWritten, elapsed))
	if sum.Incomplete > 0 {
		fmt.Fprintf(w, "; %d of %d invocations did not complete", sum.Incomplete, len(sum.Invocations))
	}
	fmt.Fprintln(w)
}

func rate(rows int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(rows) / d.Seconds()
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Progress cadence: a live line redraws often; plain lines are for logs.
const (
	liveEvery  = 200 * time.Millisecond
	plainEvery = 5 * time.Second
)

// status owns standard error while a pipeline runs. On a terminal it keeps
// one progress line redrawn in place; elsewhere it prints a plain progress
// line every few seconds. Log lines written through it (it is the logger's
// output) clear the live line first, so neither garbles the other.
type status struct {
	out  io.Writer
	live bool

	mu      sync.Mutex
	start   time.Time
	rows    int64
	drawn   bool
	stopped chan struct{}
	wg      sync.WaitGroup
}

func newStatus(out io.Writer) *status {
	f, ok := out.(*os.File)
	return &status{out: out, live: ok && isTerminal(f), start: time.Now()}
}

// begin starts the clock and the periodic progress output.
func (s *status) begin() {
	s.mu.Lock()
	s.start = time.Now()
	s.stopped = make(chan struct{})
	s.mu.Unlock()
	every := plainEvery
	if s.live {
		every = liveEvery
	}
	s.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stopped:
				return
			case <-t.C:
				s.mu.Lock()
				s.draw()
				s.mu.Unlock()
			}
		}
	})
}

// end stops the periodic output and erases the live line.
func (s *status) end() {
	close(s.stopped)
	s.wg.Wait()
	s.mu.Lock()
	s.erase()
	s.mu.Unlock()
}

func (s *status) elapsed() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.start)
}

// progress is the executor's callback.
func (s *status) progress(p pipeline.Progress) {
	s.mu.Lock()
	s.rows = p.Records
	s.mu.Unlock()
}

// draw renders the progress line; s.mu is held.
func (s *status) draw() {
	d := time.Since(s.start)
	line := numbers.Sprintf("%d rows, %.0f rows/s, %s elapsed", s.rows, rate(s.rows, d), d.Round(100*time.Millisecond))
	if s.live {
		fmt.Fprintf(s.out, "\r\033[K%s", line)
		s.drawn = true
		return
	}
	fmt.Fprintf(s.out, "progress: %s\n", line)
}

// erase removes the live line; s.mu is held.
func (s *status) erase() {
	if s.drawn {
		fmt.Fprint(s.out, "\r\033[K")
		s.drawn = false
	}
}

// note prints a message on its own line.
func (s *status) note(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	fmt.Fprintln(s.out, msg)
}

// Write passes a log line through without garbling the live line, which the
// next tick redraws.
func (s *status) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	return s.out.Write(p)
}
