package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/api"
	"github.com/faucet-dev/faucet/server/triggers"
)

// submitTriggerRun admits a run a trigger fired through admission, the path
// every submitted run takes. A refusal for what the run is (its config, its
// idempotency key) is a triggers.RejectedError, so a watcher does not retry
// the event; a fire that lost the race for its event passes through as
// db.ErrAlreadyFired.
func (s *services) submitTriggerRun(ctx context.Context, r triggers.Run) (triggers.Accepted, error) {
	res, err := s.admission.Submit(ctx, admission.Request{
		Config: r.Config, ConfigFormat: "json", Name: r.Name, Labels: r.Labels, TimeoutSecs: r.TimeoutSecs,
		IdempotencyKey: r.IdempotencyKey, Clock: r.Clock, Actor: r.Actor, Fire: r.Fire,
	})
	var cfgErr *admission.ConfigError
	var docErr *admission.DoctorError
	switch {
	case err == nil:
		return triggers.Accepted{RunID: res.RunID, Status: res.Status, SubmittedAt: res.SubmittedAt, Replayed: res.Replay, Warnings: res.Warnings}, nil
	case errors.As(err, &cfgErr), errors.As(err, &docErr), errors.Is(err, admission.ErrIdempotencyConflict):
		return triggers.Accepted{}, &triggers.RejectedError{Err: err}
	}
	return triggers.Accepted{}, err
}

// loadTriggers reads the --triggers file and checks each trigger's config
// as its fires will load it, over defaults; nil without a file. A file with
// a problem keeps the server from starting (a reload from swapping it in),
// every problem named at its line.
func loadTriggers(path string, pipes *pipelineHost, defaults []byte) (*triggers.Set, error) {
	if path == "" {
		return nil, nil
	}
	set, err := triggers.Load(path)
	if err == nil {
		err = set.Check(func(config []byte) error {
			_, err := pipes.loadWith(config, "json", time.Time{}, defaults)
			return err
		})
	}
	if err != nil {
		return nil, settingError([]string{"Triggers"}, "%[1]s: %[2]s", problemText(err))
	}
	return set, nil
}

// readDefaultConfig reads the --default-config file and checks that it is
// a config document (YAML or JSON, a mapping); nil without one. What it
// holds is checked with each config merged over it.
func readDefaultConfig(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, settingError([]string{"DefaultConfig"}, "read %[1]s: %[2]v", err)
	}
	doc, err := pipeline.ParseDocument(b, pipeline.FormatAuto)
	if err != nil {
		return nil, settingError([]string{"DefaultConfig"}, "%[1]s %[2]s: %[3]s", path, problemText(err))
	}
	if _, isMap := doc.Tree().(map[string]any); !isMap {
		return nil, settingError([]string{"DefaultConfig"}, "%[1]s %[2]s: a config is a mapping of keys (version, pipeline, …)", path)
	}
	return b, nil
}

// problemText is err's located problems, one a line, or err's text.
func problemText(err error) string {
	probs := pipeline.ConfigProblems(err)
	if len(probs) == 0 {
		return err.Error()
	}
	lines := make([]string, len(probs))
	for i, p := range probs {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// reloader re-reads --default-config and --triggers for POST /v1/reload.
// Both files are read and checked before either is swapped in, so a reload
// takes both or neither; reloads are one at a time.
type reloader struct {
	mu            sync.Mutex
	defaultConfig string
	triggersFile  string
	pipes         *pipelineHost
	triggers      *triggers.Service
}

// Reload implements api.Reloader.
func (r *reloader) Reload(ctx context.Context) (api.Reloaded, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.defaultConfig == "" && r.triggersFile == "" {
		return api.Reloaded{Reason: "no --default-config or --triggers configured; nothing to reload"}, nil
	}
	var defaults []byte
	if r.defaultConfig != "" {
		var err error
		if defaults, err = readDefaultConfig(r.defaultConfig); err != nil {
			return api.Reloaded{}, &api.ReloadError{Err: reloadProblem(err)}
		}
	}
	if r.defaultConfig == "" {
		defaults = *r.pipes.defaults.Load()
	}
	set, err := loadTriggers(r.triggersFile, r.pipes, defaults)
	if err != nil {
		return api.Reloaded{}, &api.ReloadError{Err: reloadProblem(err)}
	}
	out := api.Reloaded{Reloaded: true, Path: r.defaultConfig, Triggers: r.triggersFile}
	if r.defaultConfig != "" {
		r.pipes.setDefaults(defaults)
	}
	if set != nil {
		r.triggers.Reload(ctx, set)
	}
	return out, nil
}

// reloadProblem words a setting's error for the API, by its flag.
func reloadProblem(err error) error {
	var se *SettingError
	if errors.As(err, &se) {
		return fmt.Errorf("reload rejected, the previous files stay in force: %s", se.Describe(func(field string) string {
			return map[string]string{"DefaultConfig": "--default-config", "Triggers": "--triggers"}[field]
		}))
	}
	return err
}
