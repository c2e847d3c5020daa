package server

import (
	"context"

	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/templates"
)

// submitTemplateRun admits a run triggered from a template through
// admission, the path every submitted run takes.
func (s *services) submitTemplateRun(ctx context.Context, r templates.Run) (templates.Accepted, error) {
	res, err := s.admission.Submit(ctx, admission.Request{
		Config: r.Config, ConfigFormat: "json", Name: r.Name, Labels: r.Labels, TimeoutSecs: r.TimeoutSecs,
		DoctorFirst: r.DoctorFirst, IdempotencyKey: r.IdempotencyKey, Clock: r.Clock, Concurrency: r.Concurrency,
		Actor: r.Actor, Template: &admission.TemplateRef{ID: r.TemplateID, Version: r.Version}, Secrets: r.Secrets,
		Fingerprint: r.Fingerprint,
	})
	if err != nil {
		return templates.Accepted{}, err
	}
	return templates.Accepted{RunID: res.RunID, Status: res.Status, SubmittedAt: res.SubmittedAt, Replayed: res.Replay, Warnings: res.Warnings}, nil
}
