package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/openapi/client"
	"github.com/faucet-dev/faucet/pipeline"
)

func newRunsCmd() *cobra.Command {
	sf := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Submit, inspect and control runs on a faucet serve",
		Long: "Talk to a running faucet serve. --server defaults to $FAUCET_SERVER or " + defaultServer +
			" (a bare host:port means http); --token defaults to $FAUCET_TOKEN.",
	}
	sf.register(cmd, true)
	cmd.AddCommand(sf.submitCmd(), sf.listCmd(), sf.getCmd(), sf.cancelCmd(), sf.deleteCmd(), sf.logsCmd())
	return cmd
}

func (sf *serverFlags) submitCmd() *cobra.Command {
	var (
		name, key, format string
		labels, sets      []string
		timeout           int64
		doctor, wait      bool
		out               *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "submit FILE",
		Short: "Submit a pipeline config as a run (FILE - reads stdin)",
		Long: `Submit a pipeline config as a run. With --set, the overrides are applied here,
as faucet run applies them, and the server receives the resulting config as
JSON. With --wait, submit follows the run to its end and exits non-zero
unless it completed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := client.SubmitRequest{}
			if format == "" {
				format = "yaml"
				if strings.HasSuffix(args[0], ".json") {
					format = "json"
				}
			}
			if format != "yaml" && format != "json" {
				return usageErrorf("--format %q: want yaml or json", format)
			}
			var err error
			if body.Labels, err = labelFlags(labels); err != nil {
				return err
			}
			var data []byte
			if args[0] == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(args[0])
			}
			if err != nil {
				return fmt.Errorf("read config: %w", err)
			}
			if len(sets) > 0 {
				if data, err = pipeline.ApplySets(data, pipeline.Format(format), sets); err != nil {
					return configProblems(cmd.ErrOrStderr(), displayName(args[0]), err)
				}
				format = "json"
			}
			body.Config = string(data)
			f := client.ConfigFormat(format)
			body.ConfigFormat = &f
			if name != "" {
				body.Name = &name
			}
			if key != "" {
				body.IdempotencyKey = &key
			}
			if timeout > 0 {
				body.TimeoutSecs = &timeout
			}
			if doctor {
				body.DoctorFirst = &doctor
			}
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.SubmitRunWithResponse(cmd.Context(), nil, body)
			if err != nil {
				return err
			}
			if resp.JSON202 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			for _, w := range derefSlice(resp.JSON202.Warnings) {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if !wait {
				if *out == outputJSON {
					return printJSON(cmd.OutOrStdout(), resp.JSON202)
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "run %s %s\n", resp.JSON202.RunId, resp.JSON202.Status)
				return err
			}
			rec, err := sf.await(cmd.Context(), c, resp.JSON202.RunId)
			if err != nil {
				return err
			}
			if err := printRun(cmd.OutOrStdout(), *out, rec); err != nil {
				return err
			}
			if rec.Status != client.RunStatusCompleted {
				return fmt.Errorf("run %s %s", rec.RunId, rec.Status)
			}
			return nil
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringVar(&name, "name", "", "display name of the run")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "idempotency key: resubmitting the same payload returns the same run")
	cmd.Flags().StringVar(&format, "format", "", "config format, yaml or json (default: from the file extension)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label key=value (repeatable)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, setUsage)
	cmd.Flags().Int64Var(&timeout, "timeout-secs", 0, "fail the run when it executes longer than this")
	cmd.Flags().BoolVar(&doctor, "doctor-first", false, "probe every connector before queueing the run")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to finish; exit non-zero unless it completed")
	return cmd
}

// labelFlags reads --label key=value flags; none is nil.
func labelFlags(labels []string) (*map[string]string, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--label %q: want key=value", l)
		}
		m[k] = v
	}
	return &m, nil
}

func derefSlice[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}

// await polls a run until it is terminal.
func (sf *serverFlags) await(ctx context.Context, c *client.ClientWithResponses, id string) (*client.RunRecord, error) {
	delay := 100 * time.Millisecond
	for {
		resp, err := c.GetRunWithResponse(ctx, id)
		if err != nil {
			return nil, err
		}
		if resp.JSON200 == nil {
			return nil, sf.apiError(resp.HTTPResponse, resp.Body)
		}
		switch resp.JSON200.Status {
		case client.RunStatusCompleted, client.RunStatusFailed, client.RunStatusCancelled:
			return resp.JSON200, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
			delay = min(2*delay, 2*time.Second)
		}
	}
}

// printRun prints a run record: all of it as JSON, or what a person looks
// for first.
func printRun(w io.Writer, format outputFormat, r *client.RunRecord) error {
	if format == outputJSON {
		return printJSON(w, r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run:\t%s\n", r.RunId)
	fmt.Fprintf(tw, "status:\t%s\n", r.Status)
	if r.Name != nil {
		fmt.Fprintf(tw, "name:\t%s\n", *r.Name)
	}
	fmt.Fprintf(tw, "submitted:\t%s\n", r.SubmittedAt.Format(time.RFC3339))
	if r.StartedAt != nil {
		fmt.Fprintf(tw, "started:\t%s\n", r.StartedAt.Format(time.RFC3339))
	}
	if r.FinishedAt != nil {
		fmt.Fprintf(tw, "finished:\t%s\n", r.FinishedAt.Format(time.RFC3339))
	}
	numbers.Fprintf(tw, "records written:\t%d\n", r.RecordsWritten)
	if r.Error != nil {
		fmt.Fprintf(tw, "error:\t%s\n", *r.Error)
	}
	for _, inv := range r.Invocations {
		result := "ok"
		if inv.Error != nil {
			result = *inv.Error
		}
		numbers.Fprintf(tw, "  %s\t%d records, %d ms, %s\n", inv.RowId, inv.RecordsWritten, inv.DurationMs, result)
	}
	return tw.Flush()
}

func (sf *serverFlags) listCmd() *cobra.Command {
	var (
		statuses               []string
		name, template, cursor string
		limit                  int
		all, quiet             bool
		out                    *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			params := &client.ListRunsParams{}
			if limit > 0 {
				l := int64(limit)
				params.Limit = &l
			}
			if name != "" {
				params.Name = &name
			}
			if template != "" {
				params.Template = &template
			}
			if len(statuses) > 0 {
				st := make([]client.RunStatus, len(statuses))
				for i, s := range statuses {
					st[i] = client.RunStatus(s)
				}
				params.Status = &st
			}
			if cursor != "" {
				params.Cursor = &cursor
			}
			runs, next, err := sf.listRuns(cmd.Context(), c, params, all)
			if err != nil {
				return err
			}
			if next != "" && *out != outputJSON && !quiet {
				defer fmt.Fprintf(cmd.ErrOrStderr(), "more runs: --cursor %s\n", next)
			}
			switch {
			case *out == outputJSON:
				return printJSON(cmd.OutOrStdout(), runs)
			case quiet:
				for _, r := range runs {
					fmt.Fprintln(cmd.OutOrStdout(), r.RunId)
				}
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN ID\tSTATUS\tNAME\tSUBMITTED\tRECORDS\tERROR")
			for _, r := range runs {
				n, e := "", ""
				if r.Name != nil {
					n = *r.Name
				}
				if r.Error != nil {
					e = *r.Error
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.RunId, r.Status, n, r.SubmittedAt.Format(time.RFC3339), r.RecordsWritten, e)
			}
			return tw.Flush()
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringArrayVar(&statuses, "status", nil, "only runs in this status (repeatable)")
	cmd.Flags().StringVar(&name, "name", "", "only runs with this name")
	cmd.Flags().StringVar(&template, "template", "", "only runs triggered from this template")
	cmd.Flags().IntVar(&limit, "limit", 0, "page size (server default 50, at most 500)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue after this cursor")
	cmd.Flags().BoolVar(&all, "all", false, "follow next_cursor through every page")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the run ids, one a line")
	return cmd
}

// listRuns reads one page of runs, or with all every page, and returns the
// cursor of the page after the last one read ("" at the end).
func (sf *serverFlags) listRuns(ctx context.Context, c *client.ClientWithResponses, params *client.ListRunsParams, all bool) ([]client.RunRecord, string, error) {
	var runs []client.RunRecord
	for {
		resp, err := c.ListRunsWithResponse(ctx, params)
		if err != nil {
			return nil, "", err
		}
		if resp.JSON200 == nil {
			return nil, "", sf.apiError(resp.HTTPResponse, resp.Body)
		}
		runs = append(runs, resp.JSON200.Runs...)
		next := resp.JSON200.NextCursor
		if next == nil {
			return runs, "", nil
		}
		if !all {
			return runs, *next, nil
		}
		params.Cursor = next
	}
}

func (sf *serverFlags) getCmd() *cobra.Command {
	var out *outputFormat
	cmd := &cobra.Command{
		Use:               "get RUN_ID",
		Short:             "Print a run record",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: sf.completeRunIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.GetRunWithResponse(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			return printRun(cmd.OutOrStdout(), *out, resp.JSON200)
		},
	}
	out = addOutputFlags(cmd)
	return cmd
}

// cancelResult is what runs cancel prints with --output json.
type cancelResult struct {
	RunID string `json:"run_id"`
	// Requested is false when the run had already finished.
	Requested bool `json:"requested"`
}

func (sf *serverFlags) cancelCmd() *cobra.Command {
	var out *outputFormat
	cmd := &cobra.Command{
		Use:               "cancel RUN_ID",
		Short:             "Cancel a queued or running run",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: sf.completeRunIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.CancelRunWithResponse(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			res := cancelResult{RunID: args[0]}
			switch resp.StatusCode() {
			case http.StatusAccepted:
				res.Requested = true
			case http.StatusOK:
			default:
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			msg := "run had already finished"
			if res.Requested {
				msg = "cancellation requested"
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), msg)
			return err
		},
	}
	out = addOutputFlags(cmd)
	return cmd
}

// deleteResult is what runs delete prints with --output json.
type deleteResult struct {
	RunID   string `json:"run_id"`
	Deleted bool   `json:"deleted"`
}

func (sf *serverFlags) deleteCmd() *cobra.Command {
	var out *outputFormat
	cmd := &cobra.Command{
		Use:               "delete RUN_ID",
		Short:             "Delete a finished run from the history",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: sf.completeRunIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.DeleteRunWithResponse(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if resp.StatusCode() != http.StatusNoContent {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), deleteResult{RunID: args[0], Deleted: true})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s deleted\n", args[0])
			return err
		},
	}
	out = addOutputFlags(cmd)
	return cmd
}

func (sf *serverFlags) logsCmd() *cobra.Command {
	var (
		follow bool
		out    *outputFormat
	)
	cmd := &cobra.Command{
		Use:               "logs RUN_ID",
		Short:             "Print a run's logs; --follow streams them live until the run ends",
		Long:              "Print a run's logs. With --output json each line is a JSON object (seq, ts, level, line), one a line.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: sf.completeRunIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			lp := logPrinter{w: cmd.OutOrStdout(), json: *out == outputJSON}
			if follow {
				return sf.followLogs(cmd.Context(), c, args[0], lp)
			}
			var after int64
			format := client.StreamRunLogsParamsFormatJsonl
			for {
				resp, err := c.StreamRunLogs(cmd.Context(), args[0], &client.StreamRunLogsParams{Format: &format, After: &after})
				if err != nil {
					return err
				}
				n, last, err := sf.printLogPage(resp, lp)
				if err != nil {
					return err
				}
				if n == 0 {
					return nil
				}
				after = last
			}
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "stream the live log until the run ends")
	return cmd
}

// logPrinter prints log lines as text or as JSON Lines.
type logPrinter struct {
	w    io.Writer
	json bool
}

func (p logPrinter) line(l client.LogLine) error {
	if p.json {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(p.w, "%s %-5s %s\n", l.Ts.Format(time.RFC3339), l.Level, l.Line)
	return err
}

// note prints a remark about the stream itself; JSON output carries only
// the lines.
func (p logPrinter) note(msg string) {
	if !p.json {
		fmt.Fprintln(p.w, msg)
	}
}

// printLogPage prints one jsonl page and returns how many lines it had and
// the last seq.
func (sf *serverFlags) printLogPage(resp *http.Response, lp logPrinter) (n int, last int64, err error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return 0, 0, sf.apiError(resp, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var l client.LogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return n, last, fmt.Errorf("decode log line: %w", err)
		}
		if l.Seq == 0 {
			continue
		}
		if err := lp.line(l); err != nil {
			return n, last, err
		}
		n++
		last = l.Seq
	}
	return n, last, sc.Err()
}

// followLogs reads the SSE stream of a run.
func (sf *serverFlags) followLogs(ctx context.Context, c *client.ClientWithResponses, id string, lp logPrinter) error {
	resp, err := c.StreamRunLogs(ctx, id, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return sf.apiError(resp, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "":
			switch event {
			case "log":
				var l client.LogLine
				if err := json.Unmarshal([]byte(data), &l); err == nil {
					if err := lp.line(l); err != nil {
						return err
					}
				}
			case "truncated":
				lp.note("[some lines were dropped before this reader saw them]")
			case "end":
				var end struct{ Status string }
				_ = json.Unmarshal([]byte(data), &end)
				lp.note("[run " + end.Status + "]")
				return nil
			}
			event, data = "", ""
		}
	}
	return sc.Err()
}

// completeRunIDs completes a run id from the server's newest runs, the way
// the flags on the command line say to reach it.
func (sf *serverFlags) completeRunIDs(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := sf.connect(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
	defer cancel()
	limit := int64(100)
	runs, _, err := sf.listRuns(ctx, c, &client.ListRunsParams{Limit: &limit}, false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, r := range runs {
		if strings.HasPrefix(r.RunId, prefix) {
			desc := string(r.Status)
			if r.Name != nil {
				desc = *r.Name + ", " + desc
			}
			out = append(out, r.RunId+"\t"+desc)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
