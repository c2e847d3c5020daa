package triggers

import (
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
)

// Check loads every enabled trigger's config as its fires will, each
// ${trigger.*} value a placeholder, and returns every problem the load
// finds (as pipeline.ConfigErrors), each where it stands: in the config's
// file, or at the trigger's inline config in the triggers file. A problem
// in a value an event fills is left for the fire that gives it a real one.
// load is the server's own loading of a submitted config, its defaults
// merged under.
func (s *Set) Check(load func(config []byte) error) error {
	var probs pipeline.ConfigErrors
	for _, t := range s.Triggers {
		if !t.Enabled {
			continue
		}
		e := newEvent(t, time.Time{})
		e.placeholder = true
		cfg, err := bind(t.config, e)
		if err != nil {
			return fmt.Errorf("trigger %s: bind placeholders: %w", t.Name, err)
		}
		err = load(cfg)
		if err == nil {
			continue
		}
		found := pipeline.ConfigProblems(err)
		if found == nil {
			return fmt.Errorf("trigger %s: load its config: %w", t.Name, err)
		}
		filled := map[string]bool{}
		for _, r := range references(t.config.Tree(), nil) {
			filled[pipeline.PathString(r.at...)] = true
		}
		for _, p := range found {
			switch {
			case filled[p.Path]:
			case p.File == "defaults":
				probs = append(probs, p)
			case t.inlineAt != nil:
				msg := p.Message
				if p.Path != "" {
					msg = p.Path + ": " + msg
				}
				q := s.doc.Problem(msg, t.inlineAt...)
				q.File = s.Path
				probs = append(probs, q)
			default:
				t.config.Place([]*pipeline.ConfigError{p})
				p.File = t.configName
				probs = append(probs, p)
			}
		}
	}
	if len(probs) > 0 {
		return probs
	}
	return nil
}
