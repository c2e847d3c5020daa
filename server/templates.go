package server

import (
	"context"

	"github.com/faucet-dev/faucet/server/runner"
	"github.com/faucet-dev/faucet/server/templates"
)

// submitTemplateRun admits a run triggered from a template through the
// runner's Submit, the path every submitted run takes.
func submitTemplateRun(ctx context.Context, run *runner.Runner, r templates.Run) (templates.Accepted, error) {
	res, err := run.Submit(ctx, runner.SubmitRequest{
		Config: r.Config, ConfigFormat: "json", Name: r.Name, Labels: r.Labels, TimeoutSecs: r.TimeoutSecs,
		DoctorFirst: r.DoctorFirst, IdempotencyKey: r.IdempotencyKey, Clock: r.Clock, Concurrency: r.Concurrency,
		Audit: r.Audit, Template: &runner.TemplateRef{ID: r.TemplateID, Version: r.Version}, Secrets: r.Secrets,
		Fingerprint: r.Fingerprint,
	})
	if err != nil {
		return templates.Accepted{}, err
	}
	return templates.Accepted{RunID: res.RunID, Status: res.Status, SubmittedAt: res.SubmittedAt, Replayed: res.Replay, Warnings: res.Warnings}, nil
}
