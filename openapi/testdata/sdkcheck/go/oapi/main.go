// Command oapi runs the SDK scenario (see openapi/sdk_test.go) with a client
// oapi-codegen generated from openapi/openapi-3.0.yaml into ./client.
package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"faucet.test/sdkcheck/oapi/client"
	"faucet.test/sdkcheck/scenario"
)

func newClient(url, token string) *client.ClientWithResponses {
	c, err := client.NewClientWithResponses(url, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}))
	scenario.Must(err, "client")
	return c
}

func main() {
	env := scenario.Load()
	ctx := context.Background()
	c := newClient(env.URL, env.Token)

	// Submit with a key, replay, conflict.
	key := env.Name + "-key"
	body := client.SubmitRequest{Config: env.Config, Name: &env.Name, IdempotencyKey: &key, Labels: &map[string]string{"scenario": env.Name}}
	first := submit(ctx, c, body)
	scenario.Check(!first.Replayed, "first submit says replayed")
	again := submit(ctx, c, body)
	scenario.Check(again.RunId == first.RunId && again.Replayed, "replay: %+v, want run %s replayed", again, first.RunId)
	body.Labels = &map[string]string{"scenario": env.Name, "changed": "yes"}
	res, err := c.SubmitRunWithResponse(ctx, nil, body)
	scenario.Must(err, "submit a changed payload")
	scenario.Check(res.ApplicationproblemJSON409 != nil && res.ApplicationproblemJSON409.Error.Code == client.ErrorCodeConflict, "changed payload: %d %s, want a 409 conflict", res.StatusCode(), res.Body)

	done := wait(ctx, c, first.RunId)
	scenario.Check(done.Status == client.RunStatusCompleted && done.RecordsWritten > 0 && done.Attempt == 0, "finished run: %+v", done)

	// Cancel a held run; cancelling it again is a no-op.
	held := submit(ctx, c, client.SubmitRequest{Config: env.HoldConfig, Name: &env.Name})
	cancel, err := c.CancelRunWithResponse(ctx, held.RunId)
	scenario.Must(err, "cancel")
	scenario.Check(cancel.StatusCode() == http.StatusAccepted, "cancel: %d, want 202", cancel.StatusCode())
	scenario.Check(wait(ctx, c, held.RunId).Status == client.RunStatusCancelled, "held run was not cancelled")
	cancel, err = c.CancelRunWithResponse(ctx, held.RunId)
	scenario.Must(err, "cancel again")
	scenario.Check(cancel.StatusCode() == http.StatusOK, "cancel of a finished run: %d, want 200", cancel.StatusCode())

	// Paginate one run a page.
	var ids []string
	limit := int64(1)
	params := client.ListRunsParams{Name: &env.Name, Limit: &limit}
	for range 10 {
		page, err := c.ListRunsWithResponse(ctx, &params)
		scenario.Must(err, "list")
		scenario.Check(page.JSON200 != nil && len(page.JSON200.Runs) <= 1, "list: %d %s", page.StatusCode(), page.Body)
		for _, r := range page.JSON200.Runs {
			ids = append(ids, r.RunId)
		}
		if page.JSON200.NextCursor == nil {
			break
		}
		params.Cursor = page.JSON200.NextCursor
	}
	scenario.Check(len(ids) == 2 && ids[0] == held.RunId && ids[1] == first.RunId, "pages: %v, want [%s %s]", ids, held.RunId, first.RunId)
	unknown := "no-such-run"
	bad, err := c.ListRunsWithResponse(ctx, &client.ListRunsParams{Cursor: &unknown})
	scenario.Must(err, "list after an unknown cursor")
	scenario.Check(bad.ApplicationproblemJSON400 != nil && bad.ApplicationproblemJSON400.Error.Code == client.ErrorCodeBadConfig, "unknown cursor: %d %s, want 400", bad.StatusCode(), bad.Body)

	// Logs: the JSON page, then the event stream.
	format := client.StreamRunLogsParamsFormatJson
	logs, err := c.StreamRunLogsWithResponse(ctx, first.RunId, &client.StreamRunLogsParams{Format: &format})
	scenario.Must(err, "logs")
	scenario.Check(logs.JSON200 != nil && len(logs.JSON200.Lines) > 0, "logs: %d %s", logs.StatusCode(), logs.Body)
	page := logs.JSON200
	last := page.Lines[len(page.Lines)-1]
	scenario.Check(last.Line == "run completed" && page.NextAfter == last.Seq && !page.Truncated, "log page: %+v", page)
	follow, err := c.FollowRunLogs(ctx, first.RunId, nil)
	scenario.Must(err, "follow logs")
	defer follow.Body.Close()
	scenario.Check(follow.StatusCode == http.StatusOK && follow.Header.Get("Content-Type") == "text/event-stream", "follow logs: %d %s", follow.StatusCode, follow.Header.Get("Content-Type"))
	events, err := scenario.Events(follow.Body)
	scenario.Must(err, "read the event stream")
	var lines []client.LogLine
	for _, ev := range events[:len(events)-1] {
		var l client.LogLine
		scenario.Must(json.Unmarshal([]byte(ev.Data), &l), "log event")
		scenario.Check(ev.Name == "log", "event %s before the end", ev.Name)
		lines = append(lines, l)
	}
	var end struct {
		RunID  string           `json:"run_id"`
		Status client.RunStatus `json:"status"`
	}
	scenario.Must(json.Unmarshal([]byte(events[len(events)-1].Data), &end), "end event")
	scenario.Check(events[len(events)-1].Name == "end" && end.RunID == first.RunId && end.Status == client.RunStatusCompleted, "end event: %+v", events[len(events)-1])
	scenario.Check(len(lines) == len(page.Lines) && lines[len(lines)-1].Seq == last.Seq, "the stream has %d lines, the page %d", len(lines), len(page.Lines))

	// Typed 404 and 401.
	missing, err := c.GetRunWithResponse(ctx, "no-such-run")
	scenario.Must(err, "get a missing run")
	scenario.Check(missing.ApplicationproblemJSON404 != nil && missing.ApplicationproblemJSON404.Error.Code == client.ErrorCodeNotFound, "missing run: %d %s, want 404", missing.StatusCode(), missing.Body)
	who, err := newClient(env.URL, "not-a-token").WhoamiWithResponse(ctx)
	scenario.Must(err, "whoami with a wrong token")
	scenario.Check(who.ApplicationproblemJSON401 != nil && who.ApplicationproblemJSON401.Error.Code == client.ErrorCodeUnauthorized && who.HTTPResponse.Header.Get("WWW-Authenticate") != "",
		"wrong token: %d %s, want 401", who.StatusCode(), who.Body)
	who, err = c.WhoamiWithResponse(ctx)
	scenario.Must(err, "whoami")
	scenario.Check(who.JSON200 != nil && who.JSON200.Role == client.Admin && who.JSON200.AuthEnabled, "whoami: %s", who.Body)

	// A --no-auth server takes calls without a token.
	open := newClient(env.NoAuthURL, "")
	who, err = open.WhoamiWithResponse(ctx)
	scenario.Must(err, "tokenless whoami")
	scenario.Check(who.JSON200 != nil && !who.JSON200.AuthEnabled, "tokenless whoami: %d %s", who.StatusCode(), who.Body)
	list, err := open.ListRunsWithResponse(ctx, &client.ListRunsParams{Limit: &limit})
	scenario.Must(err, "tokenless list")
	scenario.Check(list.JSON200 != nil, "tokenless list: %d %s", list.StatusCode(), list.Body)
}

func submit(ctx context.Context, c *client.ClientWithResponses, body client.SubmitRequest) *client.SubmitResponse {
	res, err := c.SubmitRunWithResponse(ctx, nil, body)
	scenario.Must(err, "submit")
	scenario.Check(res.JSON202 != nil, "submit: %d %s, want 202", res.StatusCode(), res.Body)
	return res.JSON202
}

func wait(ctx context.Context, c *client.ClientWithResponses, id string) *client.RunRecord {
	for range 1200 {
		res, err := c.GetRunWithResponse(ctx, id)
		scenario.Must(err, "get")
		scenario.Check(res.JSON200 != nil, "get %s: %d %s", id, res.StatusCode(), res.Body)
		switch res.JSON200.Status {
		case client.RunStatusCompleted, client.RunStatusFailed, client.RunStatusCancelled:
			return res.JSON200
		}
		time.Sleep(50 * time.Millisecond)
	}
	scenario.Failf("run %s did not finish within a minute", id)
	return nil
}
