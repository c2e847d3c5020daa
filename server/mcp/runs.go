package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/openapi/client"
)

type runPipelineIn struct {
	Config         string            `json:"config" jsonschema:"The pipeline config, YAML or JSON."`
	ConfigFormat   string            `json:"config_format,omitempty" jsonschema:"yaml (the default) or json."`
	Name           string            `json:"name,omitempty" jsonschema:"Display name of the run; the config's name by default."`
	Labels         map[string]string `json:"labels,omitempty" jsonschema:"Labels stored on the run."`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"Resubmitting the same payload with the same key returns the same run instead of starting another."`
	TimeoutSecs    int64             `json:"timeout_secs,omitempty" jsonschema:"Fail the run when it executes longer than this."`
	DoctorFirst    bool              `json:"doctor_first,omitempty" jsonschema:"Probe every connector before queueing; a failed probe refuses the run."`
	DryRun         bool              `json:"dry_run,omitempty" jsonschema:"Only check the config and probe its connectors, as validate_config does: run nothing."`
}

// submitShape bounds the fields a run submission shares with a trigger.
func submitShape(sh shape) shape {
	sh["name"] = maxLen(maxNameBytes)
	sh["labels"] = stringMap
	sh["idempotency_key"] = maxLen(maxKeyBytes)
	sh["timeout_secs"] = atLeast(1)
	return sh
}

func runPipeline(maxConfig int) toolDef {
	return define(sdk.Tool{
		Name: "run_pipeline",
		Description: "Submit a pipeline config as a run, as POST /v1/runs does: the config is checked at once (an " +
			"error lists every problem with its line), then the run is queued and executes on the server. It answers " +
			"at once with the run_id and status: follow the run with get_run, and read its logs with get_run_logs. " +
			"Files the config names are the server's and must lie in its file roots; a relative path resolves in the first.",
	}, true, submitShape(configProps(maxConfig)).apply,
		func(ctx context.Context, api client.ClientInterface, in runPipelineIn) outcome {
			if in.DryRun {
				return doctor(ctx, api, in.Config, in.ConfigFormat)
			}
			req := client.SubmitRequest{Config: in.Config, Name: opt(in.Name), IdempotencyKey: opt(in.IdempotencyKey)}
			if in.ConfigFormat != "" {
				f := client.ConfigFormat(in.ConfigFormat)
				req.ConfigFormat = &f
			}
			if len(in.Labels) > 0 {
				req.Labels = &in.Labels
			}
			if in.TimeoutSecs > 0 {
				req.TimeoutSecs = &in.TimeoutSecs
			}
			if in.DoctorFirst {
				req.DoctorFirst = &in.DoctorFirst
			}
			return accepted(api.SubmitRun(ctx, nil, req))
		})
}

// accepted answers with a submission's 202 and notes the run it started.
func accepted(resp *http.Response, err error) outcome {
	o := answer(resp, err)
	if o.res.IsError {
		return o
	}
	var sub struct {
		RunID string `json:"run_id"`
	}
	if raw, ok := o.res.StructuredContent.(json.RawMessage); ok && json.Unmarshal(raw, &sub) == nil && sub.RunID != "" {
		o.runID = &sub.RunID
	}
	return o
}

// opt is a string argument as an optional API field: empty is absent.
func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type getRunIn struct {
	RunID string `json:"run_id" jsonschema:"The run's id, as run_pipeline or list_runs gives it."`
}

func getRun() toolDef {
	return define(sdk.Tool{
		Name: "get_run",
		Description: "One run's record: status (pending, queued, running, sharded, completed, failed, cancelled), " +
			"timings, records written, each invocation's outcome and the error of a failed run.",
	}, false, shape{"run_id": maxLen(maxIDBytes)}.apply,
		func(ctx context.Context, api client.ClientInterface, in getRunIn) outcome {
			o := answer(api.GetRun(ctx, in.RunID))
			o.runID = &in.RunID
			return o
		})
}

type listRunsIn struct {
	Status   []string `json:"status,omitempty" jsonschema:"Only runs in these statuses."`
	Name     string   `json:"name,omitempty" jsonschema:"Only runs with this name."`
	Template string   `json:"template,omitempty" jsonschema:"Only runs triggered from this template (its id)."`
	Since    string   `json:"since,omitempty" jsonschema:"Only runs submitted at or after this time (RFC 3339)."`
	Until    string   `json:"until,omitempty" jsonschema:"Only runs submitted before this time (RFC 3339)."`
	Limit    int64    `json:"limit,omitempty" jsonschema:"Page size (default 20)."`
	Cursor   string   `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page."`
}

func listRuns() toolDef {
	return define(sdk.Tool{
		Name: "list_runs",
		Description: "A page of runs, newest first, with the filters given. Pass next_cursor as cursor for the next " +
			"page; it is null on the last one.",
	}, false, shape{
		"status": func(p *jsonschema.Schema) { p.Items.Enum = runStatuses; p.MaxItems = ptr(len(runStatuses)) },
		"name":   maxLen(maxNameBytes), "template": maxLen(maxTemplateIDBytes),
		"since": dateTime, "until": dateTime,
		"limit":  between(1, maxRunsPerPage),
		"cursor": maxLen(maxIDBytes),
	}.apply,
		func(ctx context.Context, api client.ClientInterface, in listRunsIn) outcome {
			if in.Limit == 0 {
				in.Limit = defaultRunsPerPage
			}
			p := &client.ListRunsParams{Name: opt(in.Name), Template: opt(in.Template), Cursor: opt(in.Cursor), Limit: &in.Limit}
			if len(in.Status) > 0 {
				st := make([]client.RunStatus, len(in.Status))
				for i, s := range in.Status {
					st[i] = client.RunStatus(s)
				}
				p.Status = &st
			}
			for _, t := range []struct {
				name, value string
				into        **time.Time
			}{{"since", in.Since, &p.Since}, {"until", in.Until, &p.Until}} {
				if t.value == "" {
					continue
				}
				at, err := time.Parse(time.RFC3339, t.value)
				if err != nil {
					return outcome{res: textError(fmt.Sprintf("%s: %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", t.name, t.value))}
				}
				*t.into = &at
			}
			return answer(api.ListRuns(ctx, p))
		})
}

func dateTime(p *jsonschema.Schema) {
	p.Format = "date-time"
	p.MaxLength = ptr(64)
}

// Bounds of a page of log lines as get_run_logs answers it: an assistant
// reads every byte, so a long line is cut and a page ends early rather than
// fill its context; next_after then continues where the page stopped.
const (
	maxLogLineBytes = 4 << 10
	maxLogPageBytes = 256 << 10
)

type runLogsIn struct {
	RunID string `json:"run_id" jsonschema:"The run's id."`
	After int64  `json:"after,omitempty" jsonschema:"Only lines after this seq: next_after of the previous page."`
	Limit int64  `json:"limit,omitempty" jsonschema:"Most lines to return (default 200)."`
}

func getRunLogs() toolDef {
	return define(sdk.Tool{
		Name: "get_run_logs",
		Description: "A page of a run's persisted log lines, oldest first: {lines: [{seq, ts, level, line}], " +
			"truncated, next_after}. Pass next_after as after for the lines that follow; more: true says the page " +
			"was cut short to stay small (lines longer than 4 KiB are cut too). truncated: true says the server's " +
			"per-run cap dropped earlier lines. A running run's newest lines reach the history within moments.",
	}, false, shape{"run_id": maxLen(maxIDBytes), "after": atLeast(0), "limit": between(1, maxLogLinesPerPage)}.apply,
		func(ctx context.Context, api client.ClientInterface, in runLogsIn) outcome {
			if in.Limit == 0 {
				in.Limit = defaultLogLinesPage
			}
			format := client.StreamRunLogsParamsFormatJson
			body, refused := read(api.StreamRunLogs(ctx, in.RunID, &client.StreamRunLogsParams{Format: &format, After: &in.After, Limit: &in.Limit}))
			if refused != nil {
				refused.runID = &in.RunID
				return *refused
			}
			var page client.LogPage
			if err := json.Unmarshal(body, &page); err != nil {
				return outcome{res: textError("read the run's logs: " + err.Error()), runID: &in.RunID}
			}
			o := marshalAnswer(boundPage(page))
			o.runID = &in.RunID
			return o
		})
}

// logPage is the API's LogPage as get_run_logs answers it.
type logPage struct {
	Lines     []client.LogLine `json:"lines"`
	Truncated bool             `json:"truncated"`
	NextAfter int64            `json:"next_after"`
	More      bool             `json:"more,omitempty"`
}

// boundPage cuts lines longer than maxLogLineBytes, and ends the page
// before its lines pass maxLogPageBytes.
func boundPage(p client.LogPage) logPage {
	out := logPage{Lines: []client.LogLine{}, Truncated: p.Truncated, NextAfter: p.NextAfter}
	size := 0
	for i, l := range p.Lines {
		if len(l.Line) > maxLogLineBytes {
			l.Line = cut(l.Line, maxLogLineBytes) + fmt.Sprintf("… (%d bytes)", len(l.Line))
		}
		if size += len(l.Line) + 64; size > maxLogPageBytes && i > 0 {
			out.More, out.NextAfter = true, out.Lines[i-1].Seq
			break
		}
		out.Lines = append(out.Lines, l)
	}
	return out
}

// cut returns the longest prefix of s of at most n bytes that ends on a
// rune boundary.
func cut(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
