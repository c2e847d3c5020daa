package admission

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/pipeline"
)

// DoctorReport is the outcome of probing a plan's connectors, as returned by
// POST /v1/doctor and stored on runs submitted with doctor_first.
type DoctorReport struct {
	// OK is true when every probe passed.
	OK          bool               `json:"ok"`
	Invocations []DoctorInvocation `json:"invocations"`
}

// DoctorInvocation is the probes of one invocation (matrix row).
type DoctorInvocation struct {
	RowID  string        `json:"row_id"`
	Checks []DoctorCheck `json:"checks"`
}

// DoctorCheck is one connector probe.
type DoctorCheck struct {
	// Role is the side of the pipeline the connector plays.
	Role      pipeline.Role `json:"role"`
	Connector string        `json:"connector"`
	// Name says what was probed ("connect", "write permission").
	Name string `json:"name,omitempty"`
	OK   bool   `json:"ok"`
	// Message explains a failure, or carries the probe's note on success.
	Message    string `json:"message,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Failures counts the failed probes.
func (r DoctorReport) Failures() int {
	n := 0
	for _, inv := range r.Invocations {
		for _, c := range inv.Checks {
			if !c.OK {
				n++
			}
		}
	}
	return n
}

// Redacted returns a copy of r with secrets masked in every message.
func (r DoctorReport) Redacted(red *redact.Redactor) DoctorReport {
	out := DoctorReport{OK: r.OK, Invocations: make([]DoctorInvocation, len(r.Invocations))}
	for i, inv := range r.Invocations {
		checks := make([]DoctorCheck, len(inv.Checks))
		for j, c := range inv.Checks {
			c.Message = red.String(c.Message)
			checks[j] = c
		}
		out.Invocations[i] = DoctorInvocation{RowID: inv.RowID, Checks: checks}
	}
	return out
}

// Doctor loads a config and probes its connectors, without running it. The
// report is redacted.
func (s *Service) Doctor(ctx context.Context, config, format string) (DoctorReport, error) {
	plan, err := LoadPlan(s.pipes, config, format, nil, s.cfg.Clock())
	if err != nil {
		return DoctorReport{}, err
	}
	return s.probe(ctx, plan, s.redactor(plan))
}

// doctor runs the doctor_first probes of a submission and encodes the
// report for the record: a failing probe rejects it with a DoctorError.
func (s *Service) doctor(ctx context.Context, plan *pipeline.Plan, red *redact.Redactor) (json.RawMessage, error) {
	rep, err := s.probe(ctx, plan, red)
	if err == nil && !rep.OK {
		err = &DoctorError{Report: rep}
	}
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("encode doctor report: %w", err)
	}
	return b, nil
}

func (s *Service) probe(ctx context.Context, plan *pipeline.Plan, red *redact.Redactor) (DoctorReport, error) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.ProbeTimeout)
	defer cancel()
	rep, err := s.pipes.Probe(pctx, plan)
	if err != nil {
		return DoctorReport{}, fmt.Errorf("probe connectors: %s", red.String(err.Error()))
	}
	rep.OK = rep.Failures() == 0
	return rep.Redacted(red), nil
}
