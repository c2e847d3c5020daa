package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/runlog"
)

// sseKeepAlive is how often an idle stream sends a comment, so proxies and
// clients do not time it out.
const sseKeepAlive = 15 * time.Second

// followRetryAfter is the Retry-After of a follower refused by a cap.
const followRetryAfter = "5"

type logsInput struct {
	ID          string `path:"id" doc:"Run id."`
	After       int64  `query:"after" minimum:"0" doc:"Only lines with seq greater than this."`
	LastEventID string `header:"Last-Event-ID" doc:"SSE resume point: the seq of the last line received; wins over a smaller after."`
	Format      string `query:"format" enum:"json,jsonl,text" doc:"Read the persisted lines in this format; omit for the event stream of followRunLogs."`
	Limit       int    `query:"limit" default:"1000" minimum:"1" maximum:"10000" doc:"Most lines to return (persisted read)."`
}

// follow is the input of the event stream the request asks for.
func (in *logsInput) follow() *followInput {
	return &followInput{ID: in.ID, After: in.After, LastEventID: in.LastEventID}
}

type followInput struct {
	ID          string `path:"id" doc:"Run id."`
	After       int64  `query:"after" minimum:"0" doc:"Only lines with seq greater than this."`
	LastEventID string `header:"Last-Event-ID" doc:"SSE resume point: the seq of the last line received; wins over a smaller after."`
}

// from is the seq the reader has seen up to.
func (in *followInput) from() int64 {
	if n, err := strconv.ParseInt(in.LastEventID, 10, 64); err == nil && n > in.After {
		return n
	}
	return in.After
}

// logEventStream documents the text/event-stream body of the log routes. As
// a whole the body is text, which is what validators of whole bodies check
// it against; each event's data is one of the log events, which the 3.1
// document says through contentSchema (OpenAPI 3.2 calls it itemSchema).
func logEventStream(a huma.API) *huma.MediaType {
	r := a.OpenAPI().Components.Schemas
	return &huma.MediaType{Schema: &huma.Schema{
		Type: huma.TypeString,
		Description: "The event stream. The data of each event is a LogLine (event log), a LogTruncated " +
			"(event truncated) or a LogEnd (event end).",
		Extensions: map[string]any{
			"contentMediaType": "text/event-stream",
			"contentSchema": &huma.Schema{OneOf: []*huma.Schema{
				r.Schema(reflectType[LogLine](), true, ""),
				r.Schema(reflectType[LogTruncated](), true, ""),
				r.Schema(reflectType[LogEnd](), true, ""),
			}},
		},
	}}
}

func reflectType[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

func (d *Deps) streamRunLogs(ctx context.Context, in *logsInput) (*huma.StreamResponse, error) {
	if in.Format == "" {
		return d.followRunLogs(ctx, in.follow())
	}
	if _, err := d.Runs.Get(ctx, in.ID); err != nil {
		return nil, d.serviceError(err)
	}
	after := in.follow().from()
	page, err := d.Store.RunLogList(ctx, in.ID, after, in.Limit)
	if err != nil {
		return nil, d.serviceError(fmt.Errorf("read run logs: %w", err))
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) { writePersisted(hctx, in.Format, after, page) }}, nil
}

func (d *Deps) followRunLogs(ctx context.Context, in *followInput) (*huma.StreamResponse, error) {
	rec, err := d.Runs.Get(ctx, in.ID)
	if err != nil {
		return nil, d.serviceError(err)
	}
	after := in.from()
	release, err := d.Follow.Join(in.ID)
	if err != nil {
		return nil, NewProblem(http.StatusTooManyRequests, CodeQueueFull, err.Error()+"; retry later", nil).
			WithHeader("Retry-After", followRetryAfter)
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		defer release()
		hctx.SetHeader("Content-Type", "text/event-stream")
		hctx.SetHeader("Cache-Control", "no-cache")
		hctx.SetHeader("X-Accel-Buffering", "no")
		hctx.SetStatus(http.StatusOK)
		_, w := humago.Unwrap(hctx)
		s := &sseWriter{w: w, rc: http.NewResponseController(w)}
		// A stream lasts as long as the run: the whole-request read
		// deadline is for reading the request, which is done.
		_ = s.rc.SetReadDeadline(time.Time{})
		// Headers now: a follower knows it was admitted before any line.
		_ = s.rc.Flush()
		if run, ok := d.Logs.Lookup(in.ID); ok {
			d.tailLive(hctx.Context(), s, run, after)
			return
		}
		d.tailPersisted(hctx.Context(), s, rec, after)
	}}, nil
}

func writePersisted(hctx huma.Context, format string, after int64, page db.RunLogPage) {
	bw := bufio.NewWriter(hctx.BodyWriter())
	defer bw.Flush()
	switch format {
	case "json":
		out := LogPage{Lines: make([]LogLine, len(page.Lines)), Truncated: page.Truncated, NextAfter: after}
		for i, l := range page.Lines {
			out.Lines[i] = toLogLine(l)
			out.NextAfter = l.Seq
		}
		hctx.SetHeader("Content-Type", "application/json")
		hctx.SetStatus(http.StatusOK)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(out)
		return
	case "text":
		hctx.SetHeader("Content-Type", "text/plain; charset=utf-8")
		hctx.SetStatus(http.StatusOK)
		if page.Truncated {
			fmt.Fprintln(bw, "[earlier lines were dropped by the per-run log cap]")
		}
		for _, l := range page.Lines {
			fmt.Fprintf(bw, "%s %-5s %s\n", l.TS.UTC().Format(time.RFC3339Nano), l.Level, l.Line)
		}
		return
	}
	hctx.SetHeader("Content-Type", "application/x-ndjson")
	hctx.SetStatus(http.StatusOK)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, l := range page.Lines {
		_ = enc.Encode(toLogLine(l))
	}
	if page.Truncated {
		_ = enc.Encode(map[string]bool{"truncated": true})
	}
}

func toLogLine(l db.RunLogLine) LogLine {
	return LogLine{Seq: l.Seq, TS: l.TS.UTC(), Level: l.Level, Line: l.Line}
}

// tailLive streams a run this process holds in memory: replay from the ring,
// then follow until the run finishes.
func (d *Deps) tailLive(ctx context.Context, s *sseWriter, run *runlog.Run, after int64) {
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		changed := run.Changed()
		lines, truncated, done := run.Since(after, 500)
		if truncated {
			if s.event("truncated", 0, LogTruncated{Reason: "lines were dropped from the live buffer before this reader saw them; read them with format=jsonl"}) != nil {
				return
			}
		}
		for _, l := range lines {
			if s.event("log", l.Seq, toLogLine(l)) != nil {
				return
			}
			after = l.Seq
		}
		if done {
			d.sendEnd(ctx, s, run.ID())
			return
		}
		if len(lines) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-keep.C:
			if s.comment("keepalive") != nil {
				return
			}
		}
	}
}

// tailPersisted streams a run this process does not hold: its persisted
// lines, from the run's feed, which one poller shares among all the run's
// followers here; a follower the feed has left behind reads the history
// until it catches up.
func (d *Deps) tailPersisted(ctx context.Context, s *sseWriter, rec *db.RunRecord, after int64) {
	feed, leave := d.Follow.Feed(rec.RunID)
	defer leave()
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	sentTruncated := false
	for {
		changed := feed.Changed()
		lines, held, truncated, done, err := feed.Since(after, 1000)
		if !held {
			page, err := d.Store.RunLogList(ctx, rec.RunID, after, 1000)
			if err != nil {
				return
			}
			lines, truncated = page.Lines, page.Truncated && after == 0
		}
		if truncated && !sentTruncated {
			sentTruncated = true
			if s.event("truncated", 0, LogTruncated{Reason: "earlier lines were dropped by the per-run log cap"}) != nil {
				return
			}
		}
		for _, l := range lines {
			if s.event("log", l.Seq, toLogLine(l)) != nil {
				return
			}
			after = l.Seq
		}
		if done {
			if err == nil {
				d.sendEnd(ctx, s, rec.RunID)
			}
			return
		}
		if len(lines) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-keep.C:
			if s.comment("keepalive") != nil {
				return
			}
		}
	}
}

func (d *Deps) sendEnd(ctx context.Context, s *sseWriter, runID string) {
	var status RunStatus
	if rec, err := d.Store.RunGet(ctx, runID); err == nil {
		status = RunStatus(rec.Status)
	}
	_ = s.event("end", 0, LogEnd{RunID: runID, Status: status})
}

// sseWriter writes server-sent events and flushes each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *sseWriter) event(name string, id int64, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(b)+48)
	if id > 0 {
		buf = append(buf, "id: "...)
		buf = strconv.AppendInt(buf, id, 10)
		buf = append(buf, '\n')
	}
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sseWriter) comment(text string) error {
	if _, err := s.w.Write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return s.rc.Flush()
}
