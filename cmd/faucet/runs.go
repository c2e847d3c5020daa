package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/openapi/client"
)

// runsClient carries the connection flags of the `faucet runs` commands.
type runsClient struct {
	server string
	token  string
}

func newRunsCmd() *cobra.Command {
	rc := &runsClient{}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Submit, inspect and control runs on a faucet serve",
		Long: "Talk to a running faucet serve. --server defaults to $FAUCET_SERVER or http://127.0.0.1:8080; " +
			"--token defaults to $FAUCET_TOKEN.",
	}
	cmd.PersistentFlags().StringVar(&rc.server, "server", envOr("FAUCET_SERVER", "http://127.0.0.1:8080"), "base URL of the faucet serve")
	cmd.PersistentFlags().StringVar(&rc.token, "token", os.Getenv("FAUCET_TOKEN"), "bearer token")
	cmd.AddCommand(rc.submitCmd(), rc.listCmd(), rc.getCmd(), rc.cancelCmd(), rc.deleteCmd(), rc.logsCmd())
	return cmd
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (rc *runsClient) client() (*client.ClientWithResponses, error) {
	return client.NewClientWithResponses(strings.TrimRight(rc.server, "/"), client.WithRequestEditorFn(rc.authorize))
}

func (rc *runsClient) authorize(_ context.Context, req *http.Request) error {
	if rc.token != "" {
		req.Header.Set("Authorization", "Bearer "+rc.token)
	}
	return nil
}

// apiError turns a non-success response into an error carrying the
// server's problem detail.
func apiError(resp *http.Response, body []byte) error {
	var p client.Problem
	if json.Unmarshal(body, &p) == nil && p.Error.Code != "" {
		msg := fmt.Sprintf("%d %s: %s", resp.StatusCode, p.Error.Code, p.Error.Message)
		if p.Error.Details != nil {
			if d, err := json.MarshalIndent(p.Error.Details, "", "  "); err == nil {
				msg += "\n" + string(d)
			}
		}
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			msg += " (retry after " + ra + "s)"
		}
		return errors.New(msg)
	}
	return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (rc *runsClient) submitCmd() *cobra.Command {
	var (
		name, key, format string
		labels            []string
		timeout           int64
		doctor, wait      bool
	)
	cmd := &cobra.Command{
		Use:   "submit FILE",
		Short: "Submit a pipeline config as a run (FILE - reads stdin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var data []byte
			var err error
			if args[0] == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(args[0])
			}
			if err != nil {
				return fmt.Errorf("read config: %w", err)
			}
			if format == "" {
				format = "yaml"
				if strings.HasSuffix(args[0], ".json") {
					format = "json"
				}
			}
			body := client.SubmitRequest{Config: string(data)}
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
			if len(labels) > 0 {
				m := map[string]string{}
				for _, l := range labels {
					k, v, ok := strings.Cut(l, "=")
					if !ok {
						return fmt.Errorf("--label %q: want key=value", l)
					}
					m[k] = v
				}
				body.Labels = &m
			}
			c, err := rc.client()
			if err != nil {
				return err
			}
			resp, err := c.SubmitRunWithResponse(cmd.Context(), nil, body)
			if err != nil {
				return err
			}
			if resp.JSON202 == nil {
				return apiError(resp.HTTPResponse, resp.Body)
			}
			for _, w := range derefSlice(resp.JSON202.Warnings) {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if !wait {
				return printJSON(cmd.OutOrStdout(), resp.JSON202)
			}
			rec, err := rc.await(cmd.Context(), c, resp.JSON202.RunId)
			if err != nil {
				return err
			}
			if err := printJSON(cmd.OutOrStdout(), rec); err != nil {
				return err
			}
			if rec.Status != client.RunStatusCompleted {
				return fmt.Errorf("run %s %s", rec.RunId, rec.Status)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "display name of the run")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "idempotency key: resubmitting the same payload returns the same run")
	cmd.Flags().StringVar(&format, "format", "", "config format, yaml or json (default: from the file extension)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label key=value (repeatable)")
	cmd.Flags().Int64Var(&timeout, "timeout-secs", 0, "fail the run when it executes longer than this")
	cmd.Flags().BoolVar(&doctor, "doctor-first", false, "probe every connector before queueing the run")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to finish; exit non-zero unless it completed")
	return cmd
}

func derefSlice[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}

// await polls a run until it is terminal.
func (rc *runsClient) await(ctx context.Context, c *client.ClientWithResponses, id string) (*client.RunRecord, error) {
	delay := 100 * time.Millisecond
	for {
		resp, err := c.GetRunWithResponse(ctx, id)
		if err != nil {
			return nil, err
		}
		if resp.JSON200 == nil {
			return nil, apiError(resp.HTTPResponse, resp.Body)
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

func (rc *runsClient) listCmd() *cobra.Command {
	var (
		statuses    []string
		name        string
		limit       int
		cursor      string
		all, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := rc.client()
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
			var runs []client.RunRecord
			for {
				resp, err := c.ListRunsWithResponse(cmd.Context(), params)
				if err != nil {
					return err
				}
				if resp.JSON200 == nil {
					return apiError(resp.HTTPResponse, resp.Body)
				}
				runs = append(runs, resp.JSON200.Runs...)
				next := resp.JSON200.NextCursor
				if !all || next == nil {
					if !all && next != nil && !asJSON {
						defer fmt.Fprintf(cmd.ErrOrStderr(), "more runs: --cursor %s\n", *next)
					}
					break
				}
				params.Cursor = next
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), runs)
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
	cmd.Flags().StringArrayVar(&statuses, "status", nil, "only runs in this status (repeatable)")
	cmd.Flags().StringVar(&name, "name", "", "only runs with this name")
	cmd.Flags().IntVar(&limit, "limit", 0, "page size (server default 50, at most 500)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue after this cursor")
	cmd.Flags().BoolVar(&all, "all", false, "follow next_cursor through every page")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (rc *runsClient) getCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get RUN_ID",
		Short: "Print a run record",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := rc.client()
			if err != nil {
				return err
			}
			resp, err := c.GetRunWithResponse(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return apiError(resp.HTTPResponse, resp.Body)
			}
			return printJSON(cmd.OutOrStdout(), resp.JSON200)
		},
	}
}

func (rc *runsClient) cancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Cancel a queued or running run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := rc.client()
			if err != nil {
				return err
			}
			resp, err := c.CancelRunWithResponse(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			switch resp.StatusCode() {
			case http.StatusAccepted:
				fmt.Fprintln(cmd.OutOrStdout(), "cancellation requested")
			case http.StatusOK:
				fmt.Fprintln(cmd.OutOrStdout(), "run had already finished")
			default:
				return apiError(resp.HTTPResponse, resp.Body)
			}
			return nil
		},
	}
}

func (rc *runsClient) deleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete RUN_ID",
		Short: "Delete a finished run from the history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := rc.client()
			if err != nil {
				return err
			}
			resp, err := c.DeleteRunWithResponse(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if resp.StatusCode() != http.StatusNoContent {
				return apiError(resp.HTTPResponse, resp.Body)
			}
			return nil
		},
	}
}

func (rc *runsClient) logsCmd() *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs RUN_ID",
		Short: "Print a run's logs; --follow streams them live until the run ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := rc.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if follow {
				return followLogs(cmd.Context(), c, args[0], out)
			}
			var after int64
			format := client.StreamRunLogsParamsFormatJsonl
			for {
				resp, err := c.StreamRunLogs(cmd.Context(), args[0], &client.StreamRunLogsParams{Format: &format, After: &after})
				if err != nil {
					return err
				}
				n, last, err := printLogPage(resp, out)
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
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "stream the live log until the run ends")
	return cmd
}

// printLogPage prints one jsonl page and returns how many lines it had and
// the last seq.
func printLogPage(resp *http.Response, out io.Writer) (n int, last int64, err error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return 0, 0, apiError(resp, body)
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
		fmt.Fprintf(out, "%s %-5s %s\n", l.Ts.Format(time.RFC3339), l.Level, l.Line)
		n++
		last = l.Seq
	}
	return n, last, sc.Err()
}

// followLogs reads the SSE stream of a run.
func followLogs(ctx context.Context, c *client.ClientWithResponses, id string, out io.Writer) error {
	resp, err := c.StreamRunLogs(ctx, id, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return apiError(resp, body)
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
					fmt.Fprintf(out, "%s %-5s %s\n", l.Ts.Format(time.RFC3339), l.Level, l.Line)
				}
			case "truncated":
				fmt.Fprintln(out, "[some lines were dropped before this reader saw them]")
			case "end":
				var end struct{ Status string }
				_ = json.Unmarshal([]byte(data), &end)
				fmt.Fprintf(out, "[run %s]\n", end.Status)
				return nil
			}
			event, data = "", ""
		}
	}
	return sc.Err()
}
