package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/dlq"
)

// DLQInspectRequest is the body of POST /v1/dlq/inspect.
type DLQInspectRequest struct {
	Location       string    `json:"location" minLength:"1" maxLength:"4096" doc:"A dead-letter file, a directory of *.jsonl dead-letter files, or a glob, within the server's file roots."`
	Reason         DLQReason `json:"reason,omitempty" doc:"Only the letters with this reason."`
	Limit          *int      `json:"limit,omitempty" minimum:"0" maximum:"1000" doc:"Letters in sample; 5 when omitted."`
	Offset         int       `json:"offset,omitempty" minimum:"0" doc:"The first letter of sample (in file and line order): pass next_offset to page on."`
	EncryptionKeys []string  `json:"encryption_keys,omitempty" maxItems:"0" doc:"Keys of a dead-letter file sealed at rest; this server seals none, so it takes none."`
}

// DLQReplayRequest is the body of POST /v1/dlq/replay.
type DLQReplayRequest struct {
	Config         string       `json:"config" minLength:"1" doc:"The pipeline config whose sink the records are replayed into; its source is replaced by the dead letters."`
	ConfigFormat   ConfigFormat `json:"config_format,omitempty" doc:"Format of config; yaml when omitted."`
	From           string       `json:"from" minLength:"1" maxLength:"4096" doc:"The dead-letter file (or directory, or glob) to replay, within the server's file roots."`
	Reason         DLQReason    `json:"reason,omitempty" doc:"Only the letters with this reason."`
	FailedDLQ      string       `json:"failed_dlq,omitempty" maxLength:"4096" doc:"Where records that fail again go; default <from>.replay-failed.jsonl beside from. Never from itself."`
	Row            string       `json:"row,omitempty" maxLength:"256" doc:"The matrix row of config whose sink the replay writes to; the first when omitted."`
	DryRun         bool         `json:"dry_run,omitempty" doc:"Count the candidates and check the config without submitting a run."`
	EncryptionKeys []string     `json:"encryption_keys,omitempty" maxItems:"0" doc:"Keys of a dead-letter file sealed at rest; this server seals none, so it takes none."`
}

// DLQReplayOutcome is what POST /v1/dlq/replay did.
type DLQReplayOutcome struct {
	Candidates     int    `json:"candidates" doc:"Letters the replay feeds the sink."`
	RecordsWritten int64  `json:"records_written" doc:"Always 0 here: the replay is a run of its own, whose record counts what its sink wrote."`
	DryRun         bool   `json:"dry_run"`
	FailedDLQ      string `json:"failed_dlq" doc:"Where records that fail again go."`
	RunID          string `json:"run_id,omitempty" doc:"The replay's run; follow it with GET /v1/runs/{id}. Absent for a dry run, or when there was nothing to replay."`
	Status         string `json:"status,omitempty" doc:"The run's status at submission."`
}

// DLQDiscardRequest is the body of POST /v1/dlq/discard.
type DLQDiscardRequest struct {
	Location       string    `json:"location" minLength:"1" maxLength:"4096" doc:"A dead-letter file, a directory of *.jsonl dead-letter files, or a glob, within the server's file roots."`
	Reason         DLQReason `json:"reason,omitempty" doc:"Only the letters with this reason."`
	BeforeMS       *int64    `json:"before_ms,omitempty" doc:"Only the letters whose ts_ms is strictly older than this."`
	Delete         bool      `json:"delete,omitempty" doc:"Delete the letters instead of appending them to <file>.archived.jsonl beside the file."`
	EncryptionKeys []string  `json:"encryption_keys,omitempty" maxItems:"0" doc:"Keys of a dead-letter file sealed at rest; this server seals none, so it takes none."`
}

// registerDLQ adds the dead-letter routes.
func registerDLQ(g groups, d *Deps) {
	huma.Register(g.v1, huma.Operation{
		OperationID: "inspectDLQ", Method: http.MethodPost, Path: "/dlq/inspect",
		Summary: "Inspect a dead-letter location (read-only)", Tags: []string{"dlq"},
		Description: "Reads a dead-letter location within the server's file roots and returns the letters by reason " +
			"and error kind, with a page of them (limit from offset). Viewer; audited as dlq.inspect.",
		Errors:   []int{400},
		Metadata: map[string]any{metaRole: auth.Viewer, metaAction: "dlq.inspect"},
	}, d.inspectDLQ)

	huma.Register(g.v1, huma.Operation{
		OperationID: "replayDLQ", Method: http.MethodPost, Path: "/dlq/replay",
		Summary: "Replay dead letters through a pipeline config's sink", Tags: []string{"dlq"},
		Description: "Submits the records of a dead-letter location as a normal run: the config's source is replaced by " +
			"the letters (connector dlq), its sink is kept, and records it refuses again land in a fresh dead-letter " +
			"file (failed_dlq), never in the one replayed. The run's record names what it replays (replay_of). A " +
			"location with no dead letter (a file of other lines) is 400. Operator; audited as dlq.replay.",
		Errors:   []int{400, 429, 503},
		Metadata: map[string]any{metaRole: auth.Operator, metaAction: "dlq.replay"},
	}, d.replayDLQ)

	huma.Register(g.v1, huma.Operation{
		OperationID: "discardDLQ", Method: http.MethodPost, Path: "/dlq/discard",
		Summary: "Discard (archive or delete) dead letters", Tags: []string{"dlq"},
		Description: "Removes the letters matching reason and before_ms from a location within the server's file roots, " +
			"archived to <file>.archived.jsonl beside it unless delete; other lines stay as they are. Operator; " +
			"audited as dlq.discard.",
		Errors:   []int{400},
		Metadata: map[string]any{metaRole: auth.Operator, metaAction: "dlq.discard"},
	}, d.discardDLQ)
}

type inspectDLQInput struct {
	Body DLQInspectRequest
}

type inspectDLQOutput struct {
	Body dlq.Summary
}

func (d *Deps) inspectDLQ(ctx context.Context, in *inspectDLQInput) (*inspectDLQOutput, error) {
	limit := 5
	if in.Body.Limit != nil {
		limit = *in.Body.Limit
	}
	sum, err := d.DLQ.Inspect(ctx, dlq.InspectRequest{Location: in.Body.Location, Reason: string(in.Body.Reason), Limit: limit, Offset: in.Body.Offset})
	d.audit(ctx, principalFrom(ctx), "dlq.inspect", nil, nil, resultOf(err))
	if err != nil {
		return nil, d.dlqError(err)
	}
	return &inspectDLQOutput{Body: sum}, nil
}

type replayDLQInput struct {
	Body DLQReplayRequest
}

type replayDLQOutput struct {
	Body DLQReplayOutcome
}

func (d *Deps) replayDLQ(ctx context.Context, in *replayDLQInput) (*replayDLQOutput, error) {
	p := principalFrom(ctx)
	b := in.Body
	plan, err := d.DLQ.PlanReplay(ctx, dlq.ReplayRequest{
		Config: b.Config, ConfigFormat: b.ConfigFormat.orYAML(), From: b.From, Reason: string(b.Reason), FailedDLQ: b.FailedDLQ, Row: b.Row,
	})
	if err != nil {
		d.audit(ctx, p, "dlq.replay", nil, nil, "error")
		return nil, d.dlqError(err)
	}
	out := DLQReplayOutcome{Candidates: plan.Candidates, DryRun: b.DryRun, FailedDLQ: plan.FailedDLQ}
	if b.DryRun || plan.Candidates == 0 {
		// Nothing runs, but the config must be one that could.
		if err := d.Admission.Check(string(plan.Config), "json"); err != nil {
			d.audit(ctx, p, "dlq.replay", nil, nil, "error")
			return nil, d.serviceError(err)
		}
		d.audit(ctx, p, "dlq.replay", nil, nil, "ok")
		return &replayDLQOutput{Body: out}, nil
	}
	who := actor(ctx, p)
	res, err := d.Admission.Submit(ctx, admission.Request{
		Config: string(plan.Config), ConfigFormat: "json", ReplayOf: &plan.From, Actor: &who, Action: "dlq.replay",
	})
	if err != nil {
		d.audit(ctx, p, "dlq.replay", nil, nil, "error")
		return nil, d.serviceError(err)
	}
	out.RunID, out.Status = res.RunID, string(res.Status)
	return &replayDLQOutput{Body: out}, nil
}

type discardDLQInput struct {
	Body DLQDiscardRequest
}

type discardDLQOutput struct {
	Body dlq.DiscardOutcome
}

func (d *Deps) discardDLQ(ctx context.Context, in *discardDLQInput) (*discardDLQOutput, error) {
	res, err := d.DLQ.Discard(ctx, dlq.DiscardRequest{Location: in.Body.Location, Reason: string(in.Body.Reason), BeforeMS: in.Body.BeforeMS, Delete: in.Body.Delete})
	d.audit(ctx, principalFrom(ctx), "dlq.discard", nil, nil, resultOf(err))
	if err != nil {
		return nil, d.dlqError(err)
	}
	return &discardDLQOutput{Body: res}, nil
}

func resultOf(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// dlqError maps an error of the dead-letter service to its problem: a bad
// location, reason or config (one outside the roots too) is 400.
func (d *Deps) dlqError(err error) error {
	if bad := new(dlq.BadRequestError); errors.As(err, &bad) {
		return errBadConfig(err.Error(), nil)
	}
	return d.serviceError(err)
}
