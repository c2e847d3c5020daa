package db

import (
	"encoding/json"
	"fmt"
	"time"
)

// submission is the document of what never changes about a run after its
// submit. Its keys are the RunRecord's own, so the document a version 1
// history kept (the whole record) reads as a submission once the columns'
// keys are gone from it.
type submission struct {
	DoctorReport json.RawMessage `json:"doctor_report,omitempty"`
	ConfigBody   *string         `json:"config_body,omitempty"`
	ConfigFormat *string         `json:"config_format,omitempty"`
	TimeoutSecs  *int64          `json:"timeout_secs,omitempty"`
	Clock        *string         `json:"clock,omitempty"`
	Concurrency  *int            `json:"concurrency,omitempty"`
	Callback     json.RawMessage `json:"callback,omitempty"`
	ReplayOf     *string         `json:"replay_of,omitempty"`
}

// micro is t as every dialect stores it: UTC, at microsecond precision.
func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func microPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := micro(*t)
	return &v
}

// encodeRun splits rec into the columns and documents a driver stores.
func encodeRun(rec *RunRecord) (RunRow, error) {
	row := RunRow{
		RunID:          rec.RunID,
		Name:           rec.Name,
		Status:         rec.Status,
		SubmittedAt:    micro(rec.SubmittedAt),
		StartedAt:      microPtr(rec.StartedAt),
		FinishedAt:     microPtr(rec.FinishedAt),
		IdempotencyKey: rec.IdempotencyKey,
		Attempt:        rec.Attempt,
		RecordsWritten: rec.RecordsWritten,
		Error:          rec.Error,
	}
	if (rec.TemplateID == nil) != (rec.TemplateVersion == nil) {
		return RunRow{}, fmt.Errorf("run %s: template id and template version go together", rec.RunID)
	}
	row.TemplateID, row.TemplateVersion = rec.TemplateID, rec.TemplateVersion
	labels := rec.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	var err error
	if row.Labels, err = json.Marshal(labels); err != nil {
		return RunRow{}, fmt.Errorf("encode labels of run %s: %w", rec.RunID, err)
	}
	if row.Submission, err = json.Marshal(submission{
		DoctorReport: rec.DoctorReport, ConfigBody: rec.ConfigBody, ConfigFormat: rec.ConfigFormat,
		TimeoutSecs: rec.TimeoutSecs, Clock: rec.Clock, Concurrency: rec.Concurrency, Callback: rec.Callback,
		ReplayOf: rec.ReplayOf,
	}); err != nil {
		return RunRow{}, fmt.Errorf("encode submission of run %s: %w", rec.RunID, err)
	}
	if len(rec.Invocations) > 0 {
		if row.Invocations, err = json.Marshal(rec.Invocations); err != nil {
			return RunRow{}, fmt.Errorf("encode invocations of run %s: %w", rec.RunID, err)
		}
	}
	return row, nil
}

// decodeRun rebuilds a run from its row; elapsed_secs is derived from its
// start and finish.
func decodeRun(row RunRow) (RunRecord, error) {
	rec := RunRecord{
		RunID:           row.RunID,
		Name:            row.Name,
		Status:          row.Status,
		SubmittedAt:     row.SubmittedAt.UTC(),
		StartedAt:       utcPtr(row.StartedAt),
		FinishedAt:      utcPtr(row.FinishedAt),
		RecordsWritten:  row.RecordsWritten,
		Invocations:     []InvocationRecord{},
		Error:           row.Error,
		IdempotencyKey:  row.IdempotencyKey,
		Attempt:         row.Attempt,
		TemplateID:      row.TemplateID,
		TemplateVersion: row.TemplateVersion,
	}
	rec.ElapsedSecs = elapsedSecs(rec.StartedAt, rec.FinishedAt)
	if err := json.Unmarshal(row.Labels, &rec.Labels); err != nil {
		return RunRecord{}, fmt.Errorf("decode labels of run %s: %w", row.RunID, err)
	}
	if rec.Labels == nil {
		rec.Labels = map[string]string{}
	}
	var sub submission
	if err := json.Unmarshal(row.Submission, &sub); err != nil {
		return RunRecord{}, fmt.Errorf("decode submission of run %s: %w", row.RunID, err)
	}
	rec.DoctorReport, rec.ConfigBody, rec.ConfigFormat = sub.DoctorReport, sub.ConfigBody, sub.ConfigFormat
	rec.TimeoutSecs, rec.Clock, rec.Concurrency, rec.Callback = sub.TimeoutSecs, sub.Clock, sub.Concurrency, sub.Callback
	rec.ReplayOf = sub.ReplayOf
	if len(row.Invocations) > 0 {
		if err := json.Unmarshal(row.Invocations, &rec.Invocations); err != nil {
			return RunRecord{}, fmt.Errorf("decode invocations of run %s: %w", row.RunID, err)
		}
	}
	return rec, nil
}

func decodeRuns(rows []RunRow) ([]RunRecord, error) {
	out := make([]RunRecord, len(rows))
	for i, row := range rows {
		var err error
		if out[i], err = decodeRun(row); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// elapsedSecs is the time between a run's start and finish, nil until it
// has both. Both are whole microseconds, so the division is exact to the
// microsecond a stored timestamp keeps.
func elapsedSecs(started, finished *time.Time) *float64 {
	if started == nil || finished == nil {
		return nil
	}
	secs := float64(finished.Sub(*started).Microseconds()) / 1e6
	return &secs
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}
