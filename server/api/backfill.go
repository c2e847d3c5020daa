package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/backfill"
)

// BackfillRequest is the body of POST /v1/backfill.
type BackfillRequest struct {
	Config       string            `json:"config" minLength:"1" doc:"The pipeline config, YAML or JSON; its sources use ${backfill.start}, ${backfill.end} (and the other ${backfill.…}) or ${now…} to read one unit."`
	ConfigFormat ConfigFormat      `json:"config_format,omitempty" doc:"Format of config; yaml when omitted."`
	From         string            `json:"from" minLength:"1" doc:"Start of the window (inclusive): RFC 3339, or a date (midnight in timezone)."`
	To           string            `json:"to" minLength:"1" doc:"End of the window (exclusive): RFC 3339, or a date."`
	Window       *string           `json:"window,omitempty" doc:"Length of a unit: 45s, 30m, 6h (or seconds) are fixed, 1d and 1w calendar days and weeks in timezone. Without it the whole window is one unit."`
	Timezone     *string           `json:"timezone,omitempty" doc:"IANA time zone of dates, calendar days and the units' clocks; UTC when omitted."`
	Name         *string           `json:"name,omitempty" maxLength:"200" doc:"Base name of the unit runs, named {name}-backfill-{unit}; the config's name when omitted, else pipeline."`
	Labels       map[string]string `json:"labels,omitempty" maxProperties:"62" doc:"Labels of every unit run, besides the backfill and backfill_unit labels faucet sets."`
	TimeoutSecs  *int64            `json:"timeout_secs,omitempty" minimum:"1" doc:"Timeout of each unit run."`
	Callback     *CallbackSpec     `json:"callback,omitempty" doc:"Refused (422): a backfill is one run per unit, so no single run is its completion; give each unit run a callback of its own with POST /v1/runs."`
}

// BackfillUnit is one unit of a backfill and its run.
type BackfillUnit struct {
	Unit      string             `json:"unit" doc:"The unit's id: its start in UTC, compact (20260601T000000Z)."`
	Start     string             `json:"start" doc:"Start of the unit (inclusive), RFC 3339 in timezone."`
	End       string             `json:"end" doc:"End of the unit (exclusive)."`
	Status    BackfillUnitStatus `json:"status"`
	RunID     *string            `json:"run_id,omitempty"`
	Replayed  bool               `json:"replayed" doc:"true when the unit's run existed already (its idempotency key replayed): this request created no run for it."`
	RunStatus *RunStatus         `json:"run_status,omitempty" doc:"The run's status when it was submitted or replayed."`
	Error     *string            `json:"error,omitempty" doc:"Why the unit was not submitted (a full queue: post the same backfill again to submit the rest)."`
}

// BackfillResponse is the 202 body of POST /v1/backfill.
type BackfillResponse struct {
	Backfill   string         `json:"backfill" doc:"The backfill's hash: the backfill label of every unit run, and the middle of their idempotency keys."`
	Descriptor string         `json:"descriptor" doc:"What the hash is of: time|from|to|window|name."`
	Planned    int            `json:"planned" doc:"Units of the window."`
	Submitted  int            `json:"submitted" doc:"Units that have their run: created plus replayed."`
	Created    int            `json:"created" doc:"Unit runs this request created."`
	Replayed   int            `json:"replayed" doc:"Unit runs that existed already."`
	Units      []BackfillUnit `json:"units"`
}

type backfillInput struct {
	Body BackfillRequest
}

type backfillOutput struct {
	Body BackfillResponse
}

func (d *Deps) registerBackfill(g groups, maxBody int64) {
	huma.Register(g.v1, huma.Operation{
		OperationID: "submitBackfill", Method: http.MethodPost, Path: "/backfill",
		Summary: "Submit a backfill: one run per unit of a time window", Tags: []string{"runs"},
		Description: "Plans [from, to) into units of window and submits one run per unit through the path of POST /v1/runs, " +
			"in order: each with its ${backfill.*} tokens substituted, the name {name}-backfill-{unit}, the labels backfill and " +
			"backfill_unit, its clock (${now…}) the unit's start, delivery at_least_once and the idempotency key " +
			"backfill:{hash}:{unit}, so posting the same backfill again replays the units already submitted and submits the rest. " +
			"A full queue stops the units: the rest are not_submitted, and the same post submits them later. A malformed window, " +
			"more than 10000 units, or sources that use no token of the window are 400; a refusal of the first unit (an invalid " +
			"config, a full queue) is the answer itself, and nothing is written.",
		DefaultStatus: http.StatusAccepted, MaxBodyBytes: maxBody,
		Errors:   []int{400, 409, 413, 422, 429, 503},
		Metadata: map[string]any{metaRole: auth.Operator, metaAction: "backfill.submit"},
	}, d.submitBackfill)
}

func (d *Deps) submitBackfill(ctx context.Context, in *backfillInput) (*backfillOutput, error) {
	b := in.Body
	if b.Callback != nil {
		return nil, errUnprocessable(backfill.ErrCallback.Error(), nil)
	}
	if err := labelsError(b.Labels); err != nil {
		return nil, err
	}
	plan, err := backfill.Prepare(backfill.Request{
		Config: b.Config, ConfigFormat: b.ConfigFormat.orYAML(), From: b.From, To: b.To, Window: b.Window,
		Timezone: b.Timezone, Name: b.Name, Labels: b.Labels, TimeoutSecs: b.TimeoutSecs,
	})
	var planErr *backfill.Error
	switch {
	case errors.As(err, &planErr):
		return nil, errBadConfig(planErr.Msg, nil)
	case err != nil:
		return nil, errBadConfig(err.Error(), nil)
	}
	p := principalFrom(ctx)
	who := actor(ctx, p)
	res, err := plan.Submit(ctx, func(ctx context.Context, r backfill.Run) (backfill.Accepted, error) {
		out, err := d.Admission.Submit(ctx, admission.Request{
			Config: r.Config, ConfigFormat: "json", Name: &r.Name, Labels: r.Labels, TimeoutSecs: r.TimeoutSecs,
			IdempotencyKey: &r.IdempotencyKey, Clock: &r.Clock, Actor: &who,
		})
		if errors.Is(err, admission.ErrQueueFull) {
			return backfill.Accepted{}, fmt.Errorf("the run queue is full; post the same backfill again to submit the rest: %w", err)
		}
		if err != nil {
			return backfill.Accepted{}, err
		}
		return backfill.Accepted{RunID: out.RunID, Status: string(out.Status), Replayed: out.Replay}, nil
	})
	if err != nil {
		return nil, d.serviceError(err)
	}
	d.audit(ctx, p, "backfill.submit", nil, &res.Hash, "ok")
	out := BackfillResponse{Backfill: res.Hash, Descriptor: res.Descriptor, Planned: len(res.Units), Units: make([]BackfillUnit, len(res.Units))}
	for i, u := range res.Units {
		unit := BackfillUnit{Unit: u.ID, Start: pipeline.Timestamp(u.Start), End: pipeline.Timestamp(u.End), Status: "not_submitted"}
		switch {
		case u.Submitted:
			unit.Status, unit.RunID, unit.Replayed = "submitted", &u.Run.RunID, u.Run.Replayed
			st := RunStatus(u.Run.Status)
			unit.RunStatus = &st
			out.Submitted++
			if u.Run.Replayed {
				out.Replayed++
			} else {
				out.Created++
			}
		default:
			unit.Error = &u.Error
		}
		out.Units[i] = unit
	}
	return &backfillOutput{Body: out}, nil
}
