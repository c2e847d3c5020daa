// Command ogen runs the SDK scenario (see openapi/sdk_test.go) with a client
// ogen generated from openapi/openapi.yaml into ./faucet.
package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ogen-go/ogen/ogenerrors"

	"faucet.test/sdkcheck/ogen/faucet"
	"faucet.test/sdkcheck/scenario"
)

// bearer is the client's security source: the token, or none at all.
type bearer string

func (b bearer) BearerAuth(context.Context, faucet.OperationName) (faucet.BearerAuth, error) {
	if b == "" {
		return faucet.BearerAuth{}, ogenerrors.ErrSkipClientSecurity
	}
	return faucet.BearerAuth{Token: string(b)}, nil
}

func main() {
	env := scenario.Load()
	ctx := context.Background()
	c, err := faucet.NewClient(env.URL, bearer(env.Token))
	scenario.Must(err, "client")

	// Submit with a key, replay, conflict.
	body := &faucet.SubmitRequest{
		Config: env.Config, Name: faucet.NewOptString(env.Name),
		IdempotencyKey: faucet.NewOptNilString(env.Name + "-key"),
		Labels:         faucet.NewOptSubmitRequestLabels(faucet.SubmitRequestLabels{"scenario": env.Name}),
	}
	first := submit(ctx, c, body)
	scenario.Check(!first.Replayed, "first submit says replayed")
	again := submit(ctx, c, body)
	scenario.Check(again.RunID == first.RunID && again.Replayed, "replay: %+v, want run %s replayed", again, first.RunID)
	changed := *body
	changed.Labels = faucet.NewOptSubmitRequestLabels(faucet.SubmitRequestLabels{"scenario": env.Name, "changed": "yes"})
	res, err := c.SubmitRun(ctx, &changed, faucet.SubmitRunParams{})
	scenario.Must(err, "submit a changed payload")
	conflict, ok := res.(*faucet.SubmitRunConflict)
	scenario.Check(ok && conflict.Response.Error.Code == faucet.ErrorCodeConflict, "changed payload: %#v, want a 409 conflict", res)

	done := wait(ctx, c, first.RunID)
	scenario.Check(done.Status == faucet.RunStatusCompleted && done.RecordsWritten > 0 && done.Attempt == 0, "finished run: %+v", done)

	// Cancel a held run; cancelling it again is a no-op.
	held := submit(ctx, c, &faucet.SubmitRequest{Config: env.HoldConfig, Name: faucet.NewOptString(env.Name)})
	cancel, err := c.CancelRun(ctx, faucet.CancelRunParams{ID: held.RunID})
	scenario.Must(err, "cancel")
	_, ok = cancel.(*faucet.CancelRunAccepted)
	scenario.Check(ok, "cancel: %#v, want 202", cancel)
	scenario.Check(wait(ctx, c, held.RunID).Status == faucet.RunStatusCancelled, "held run was not cancelled")
	cancel, err = c.CancelRun(ctx, faucet.CancelRunParams{ID: held.RunID})
	scenario.Must(err, "cancel again")
	_, ok = cancel.(*faucet.CancelRunOK)
	scenario.Check(ok, "cancel of a finished run: %#v, want 200", cancel)

	// Paginate one run a page.
	var ids []string
	params := faucet.ListRunsParams{Name: faucet.NewOptString(env.Name), Limit: faucet.NewOptInt64(1)}
	for range 10 {
		res, err := c.ListRuns(ctx, params)
		scenario.Must(err, "list")
		page, ok := res.(*faucet.ListResponse)
		scenario.Check(ok && len(page.Runs) <= 1, "list: %#v", res)
		for _, r := range page.Runs {
			ids = append(ids, r.RunID)
		}
		if page.NextCursor.Null {
			break
		}
		params.Cursor = faucet.NewOptString(page.NextCursor.Value)
	}
	scenario.Check(len(ids) == 2 && ids[0] == held.RunID && ids[1] == first.RunID, "pages: %v, want [%s %s]", ids, held.RunID, first.RunID)
	res2, err := c.ListRuns(ctx, faucet.ListRunsParams{Cursor: faucet.NewOptString("no-such-run")})
	scenario.Must(err, "list after an unknown cursor")
	badCursor, ok := res2.(*faucet.ListRunsBadRequest)
	scenario.Check(ok && badCursor.Response.Error.Code == faucet.ErrorCodeBadConfig, "unknown cursor: %#v, want 400", res2)

	// Logs: the JSON page, then the event stream.
	logs, err := c.StreamRunLogs(ctx, faucet.StreamRunLogsParams{ID: first.RunID, Format: faucet.NewOptStreamRunLogsFormat(faucet.StreamRunLogsFormatJSON)})
	scenario.Must(err, "logs")
	page, ok := logs.(*faucet.LogPage)
	scenario.Check(ok && len(page.Lines) > 0, "logs: %#v", logs)
	last := page.Lines[len(page.Lines)-1]
	scenario.Check(last.Line == "run completed" && page.NextAfter == last.Seq && !page.Truncated, "log page: %+v", page)
	follow, err := c.FollowRunLogs(ctx, faucet.FollowRunLogsParams{ID: first.RunID})
	scenario.Must(err, "follow logs")
	stream, ok := follow.(*faucet.FollowRunLogsOK)
	scenario.Check(ok, "follow logs: %#v", follow)
	events, err := scenario.Events(stream.Data)
	scenario.Must(err, "read the event stream")
	var lines []faucet.LogLine
	for _, ev := range events[:len(events)-1] {
		var l faucet.LogLine
		scenario.Must(l.UnmarshalJSON([]byte(ev.Data)), "log event")
		scenario.Check(ev.Name == "log", "event %s before the end", ev.Name)
		lines = append(lines, l)
	}
	var end struct {
		RunID  string           `json:"run_id"`
		Status faucet.RunStatus `json:"status"`
	}
	scenario.Must(json.Unmarshal([]byte(events[len(events)-1].Data), &end), "end event")
	scenario.Check(events[len(events)-1].Name == "end" && end.RunID == first.RunID && end.Status == faucet.RunStatusCompleted, "end event: %+v", events[len(events)-1])
	scenario.Check(len(lines) == len(page.Lines) && lines[len(lines)-1].Seq == last.Seq, "the stream has %d lines, the page %d", len(lines), len(page.Lines))

	// Typed 404 and 401.
	get, err := c.GetRun(ctx, faucet.GetRunParams{ID: "no-such-run"})
	scenario.Must(err, "get a missing run")
	missing, ok := get.(*faucet.GetRunNotFound)
	scenario.Check(ok && missing.Response.Error.Code == faucet.ErrorCodeNotFound, "missing run: %#v, want 404", get)
	stranger, err := faucet.NewClient(env.URL, bearer("not-a-token"))
	scenario.Must(err, "client")
	who, err := stranger.Whoami(ctx)
	scenario.Must(err, "whoami with a wrong token")
	denied, ok := who.(*faucet.UnauthorizedHeaders)
	scenario.Check(ok && denied.Response.Error.Code == faucet.ErrorCodeUnauthorized && denied.WWWAuthenticate != "", "wrong token: %#v, want 401", who)
	who, err = c.Whoami(ctx)
	scenario.Must(err, "whoami")
	me, ok := who.(*faucet.Whoami)
	scenario.Check(ok && me.Role == faucet.RoleAdmin && me.AuthEnabled, "whoami: %#v", who)

	// A --no-auth server takes calls without a token.
	open, err := faucet.NewClient(env.NoAuthURL, bearer(""))
	scenario.Must(err, "client")
	who, err = open.Whoami(ctx)
	scenario.Must(err, "tokenless whoami")
	anon, ok := who.(*faucet.Whoami)
	scenario.Check(ok && !anon.AuthEnabled, "tokenless whoami: %#v", who)
	list, err := open.ListRuns(ctx, faucet.ListRunsParams{Limit: faucet.NewOptInt64(1)})
	scenario.Must(err, "tokenless list")
	_, ok = list.(*faucet.ListResponse)
	scenario.Check(ok, "tokenless list: %#v", list)
}

func submit(ctx context.Context, c *faucet.Client, body *faucet.SubmitRequest) *faucet.SubmitResponse {
	res, err := c.SubmitRun(ctx, body, faucet.SubmitRunParams{})
	scenario.Must(err, "submit")
	sub, ok := res.(*faucet.SubmitResponse)
	scenario.Check(ok, "submit: %#v, want 202", res)
	return sub
}

func wait(ctx context.Context, c *faucet.Client, id string) *faucet.RunRecord {
	for range 1200 {
		res, err := c.GetRun(ctx, faucet.GetRunParams{ID: id})
		scenario.Must(err, "get")
		rec, ok := res.(*faucet.RunRecord)
		scenario.Check(ok, "get %s: %#v", id, res)
		switch rec.Status {
		case faucet.RunStatusCompleted, faucet.RunStatusFailed, faucet.RunStatusCancelled:
			return rec
		}
		time.Sleep(50 * time.Millisecond)
	}
	scenario.Failf("run %s did not finish within a minute", id)
	return nil
}
