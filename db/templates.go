package db

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// The template rules, once for every dialect: each write locks its
// template first and reads the template's facts inside the same
// transaction, so what it decides on is what it changes.

func (s *store) TemplateRegister(ctx context.Context, d TemplateDraft) (TemplateVersion, error) {
	const op = "template register"
	if err := checkDraft(d); err != nil {
		return TemplateVersion{}, invalid(op, err)
	}
	now := s.now()
	var out TemplateVersion
	err := s.d.TemplateWrite(ctx, func(ctx context.Context, w TemplateWriter) error {
		version, err := w.TemplateNextVersion(ctx, d.ID, now)
		if err != nil {
			return err
		}
		facts, err := w.TemplateFacts(ctx, d.ID)
		if err != nil {
			return err
		}
		if d.Launch && facts.Deprecation != nil {
			return &DeprecatedError{ID: d.ID, Deprecation: *facts.Deprecation}
		}
		desc := d.Description
		if desc == nil && len(facts.Versions) > 0 {
			prev, err := w.TemplateVersionGet(ctx, d.ID, facts.Versions[0])
			if err != nil {
				return err
			}
			desc = prev.Description
		}
		out = TemplateVersion{
			ID: d.ID, Version: version, Name: d.Name, Description: desc, Format: d.Format,
			Body: d.Body, Params: d.Params, CreatedAt: now, CreatedBy: d.CreatedBy,
		}
		if err := w.TemplateVersionInsert(ctx, &out); err != nil {
			return err
		}
		facts.Versions = append([]int{version}, facts.Versions...)
		if facts.Tags == nil {
			facts.Tags = map[string]int{}
		}
		for _, tag := range d.Tags {
			if err := w.TemplateTagSet(ctx, &TemplateTagParams{ID: d.ID, Tag: tag, Version: version, Now: now, By: d.CreatedBy}); err != nil {
				return err
			}
			facts.Tags[tag] = version
		}
		if d.Launch {
			if facts.Launches, err = appendLaunch(ctx, w, facts.Launches, TemplateLaunchParams{ID: d.ID, Version: version, Now: now, By: d.CreatedBy}); err != nil {
				return err
			}
		}
		for _, v := range prunable(deriveState(facts)) {
			if err := w.TemplateVersionDelete(ctx, d.ID, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return TemplateVersion{}, templateError(ctx, op, err)
	}
	return out, nil
}

// checkDraft refuses a draft the tables cannot hold; the API checks the
// same bounds first, with messages for people.
func checkDraft(d TemplateDraft) error {
	if err := CheckTemplateID(d.ID); err != nil {
		return err
	}
	if d.Format != TemplateFormatYAML && d.Format != TemplateFormatJSON {
		return fmt.Errorf("template format %q: want yaml or json", d.Format)
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(d.Params, &params); err != nil || params == nil {
		return fmt.Errorf("template params: not a JSON object")
	}
	seen := map[string]bool{}
	for _, tag := range d.Tags {
		if err := CheckTemplateChannel(tag); err != nil {
			return err
		}
		if seen[tag] {
			return fmt.Errorf("channel %s is named twice", tag)
		}
		seen[tag] = true
	}
	return nil
}

// CheckTemplateID refuses an id that is not a slug of at most
// MaxTemplateIDLen characters: ^[a-z0-9][a-z0-9_-]*$, so an id is safe in a
// URL path and cannot collide with another by case.
func CheckTemplateID(id string) error {
	switch {
	case id == "":
		return errors.New("template id: empty")
	case len(id) > MaxTemplateIDLen:
		return fmt.Errorf("template id: longer than %d characters", MaxTemplateIDLen)
	}
	for i, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '-' || c == '_'):
		default:
			return fmt.Errorf("template id %q: want lowercase letters, digits, - and _, starting with a letter or digit", id)
		}
	}
	return nil
}

// CheckTemplateChannel refuses a name that is not an assignable channel.
func CheckTemplateChannel(tag string) error {
	if !slices.Contains(TemplateChannels, tag) {
		return fmt.Errorf("channel %q: not one of %v", tag, TemplateChannels)
	}
	return nil
}

// appendLaunch appends a launch to log (newest first) and trims the log to
// TemplateLaunchRetain entries.
func appendLaunch(ctx context.Context, w TemplateWriter, log []TemplateLaunch, p TemplateLaunchParams) ([]TemplateLaunch, error) {
	seq, err := w.TemplateLaunchAppend(ctx, &p)
	if err != nil {
		return nil, err
	}
	log = append([]TemplateLaunch{{Seq: seq, Version: p.Version, LaunchedAt: p.Now, LaunchedBy: p.By}}, log...)
	if len(log) > TemplateLaunchRetain {
		if err := w.TemplateLaunchTrim(ctx, p.ID, log[TemplateLaunchRetain-1].Seq); err != nil {
			return nil, err
		}
		log = log[:TemplateLaunchRetain]
	}
	return log, nil
}

// prunable lists the versions past the newest TemplateVersionRetain that
// nothing points at: no channel, and neither the live version nor the
// rollback target.
func prunable(st TemplateState) []int {
	if len(st.Versions) <= TemplateVersionRetain {
		return nil
	}
	kept := map[int]bool{}
	for _, v := range st.Tags {
		kept[v] = true
	}
	for _, p := range []*int{st.Stable, st.Previous} {
		if p != nil {
			kept[*p] = true
		}
	}
	var out []int
	for _, v := range st.Versions[TemplateVersionRetain:] {
		if !kept[v] {
			out = append(out, v)
		}
	}
	return out
}

// TemplateGet reads the state, then the version: a version never changes,
// so the pair is one the store held, unless the version was deleted in
// between, which reads as not found.
func (s *store) TemplateGet(ctx context.Context, id string, version int) (TemplateDetail, error) {
	const op = "template get"
	st, err := s.TemplateState(ctx, id)
	if err != nil {
		return TemplateDetail{}, err
	}
	v, err := s.d.TemplateVersionGet(ctx, id, version)
	if errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("version %d of template %s: %w", version, id, ErrNotFound)
	}
	if err != nil {
		return TemplateDetail{}, templateError(ctx, op, err)
	}
	return TemplateDetail{Version: v, State: st}, nil
}

func (s *store) TemplateState(ctx context.Context, id string) (TemplateState, error) {
	const op = "template state"
	facts, err := s.d.TemplateFacts(ctx, id)
	if err == nil && len(facts.Versions) == 0 {
		err = fmt.Errorf("template %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return TemplateState{}, templateError(ctx, op, err)
	}
	return deriveState(facts), nil
}

// TemplateList reads the newest versions, then every template's facts; a
// template deleted in between has no versions left and is left out.
func (s *store) TemplateList(ctx context.Context, f TemplateListFilter) ([]TemplateSummary, error) {
	const op = "template list"
	newest, err := s.d.TemplateListNewest(ctx)
	if err != nil {
		return nil, templateError(ctx, op, err)
	}
	facts, err := s.d.TemplateFactsAll(ctx)
	if err != nil {
		return nil, templateError(ctx, op, err)
	}
	out := make([]TemplateSummary, 0, len(newest))
	for _, v := range newest {
		st := deriveState(facts[v.ID])
		if len(st.Versions) == 0 || (st.Deprecation != nil && !f.IncludeDeprecated) {
			continue
		}
		out = append(out, TemplateSummary{Newest: v, State: st})
	}
	slices.SortFunc(out, func(a, b TemplateSummary) int {
		return cmp.Or(b.Newest.CreatedAt.Compare(a.Newest.CreatedAt), cmp.Compare(a.Newest.ID, b.Newest.ID))
	})
	return out, nil
}

func (s *store) TemplateDelete(ctx context.Context, id string, version *int) error {
	const op = "template delete"
	err := s.d.TemplateWrite(ctx, func(ctx context.Context, w TemplateWriter) error {
		if err := lock(ctx, w, id); err != nil {
			return err
		}
		if version == nil {
			return w.TemplateDelete(ctx, id)
		}
		facts, err := w.TemplateFacts(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case !slices.Contains(facts.Versions, *version):
			return fmt.Errorf("version %d of template %s: %w", *version, id, ErrNotFound)
		case len(facts.Versions) == 1:
			// A template exists while it has a version.
			return w.TemplateDelete(ctx, id)
		}
		return w.TemplateVersionDelete(ctx, id, *version)
	})
	return templateError(ctx, op, err)
}

// lock locks template id, naming it in ErrNotFound.
func lock(ctx context.Context, w TemplateWriter, id string) error {
	err := w.TemplateLock(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("template %s: %w", id, ErrNotFound)
	}
	return err
}

// lockFacts locks template id and reads its facts, checking that version
// (when not 0) exists.
func lockFacts(ctx context.Context, w TemplateWriter, id string, version int) (TemplateFacts, error) {
	if err := lock(ctx, w, id); err != nil {
		return TemplateFacts{}, err
	}
	facts, err := w.TemplateFacts(ctx, id)
	if err != nil {
		return TemplateFacts{}, err
	}
	if version != 0 && !slices.Contains(facts.Versions, version) {
		return TemplateFacts{}, fmt.Errorf("version %d of template %s: %w", version, id, ErrNotFound)
	}
	return facts, nil
}

func (s *store) TemplateTag(ctx context.Context, id, tag string, version int, by *string) error {
	const op = "template tag"
	if err := CheckTemplateChannel(tag); err != nil {
		return invalid(op, err)
	}
	now := s.now()
	err := s.d.TemplateWrite(ctx, func(ctx context.Context, w TemplateWriter) error {
		if _, err := lockFacts(ctx, w, id, version); err != nil {
			return err
		}
		return w.TemplateTagSet(ctx, &TemplateTagParams{ID: id, Tag: tag, Version: version, Now: now, By: by})
	})
	return templateError(ctx, op, err)
}

func (s *store) TemplateLaunch(ctx context.Context, id string, version int, by *string) (LaunchOutcome, error) {
	return s.launch(ctx, "template launch", id, by, func(TemplateState) (int, error) { return version, nil })
}

func (s *store) TemplateRollback(ctx context.Context, id string, by *string) (LaunchOutcome, error) {
	return s.launch(ctx, "template rollback", id, by, func(st TemplateState) (int, error) {
		if st.Previous == nil {
			return 0, fmt.Errorf("template %s: %w", id, ErrNoRollbackTarget)
		}
		return *st.Previous, nil
	})
}

// launch launches the version target picks from the template's state.
func (s *store) launch(ctx context.Context, op, id string, by *string, target func(TemplateState) (int, error)) (LaunchOutcome, error) {
	now := s.now()
	var out LaunchOutcome
	err := s.d.TemplateWrite(ctx, func(ctx context.Context, w TemplateWriter) error {
		facts, err := lockFacts(ctx, w, id, 0)
		if err != nil {
			return err
		}
		st := deriveState(facts)
		version, err := target(st)
		if err != nil {
			return err
		}
		if !slices.Contains(st.Versions, version) {
			return fmt.Errorf("version %d of template %s: %w", version, id, ErrNotFound)
		}
		if st.Deprecation != nil {
			return &DeprecatedError{ID: id, Deprecation: *st.Deprecation}
		}
		if d, ok := st.VersionDeprecations[version]; ok {
			return &DeprecatedError{ID: id, Version: &version, Deprecation: d}
		}
		if st.Stable != nil && *st.Stable == version {
			out = LaunchOutcome{Version: version, AlreadyLaunched: true, Status: st.Status()}
			return nil
		}
		if _, err := appendLaunch(ctx, w, st.Launches, TemplateLaunchParams{ID: id, Version: version, Now: now, By: by}); err != nil {
			return err
		}
		out = LaunchOutcome{Version: version, Replaced: st.Stable, Status: TemplateStatusLaunched}
		return nil
	})
	if err != nil {
		return LaunchOutcome{}, templateError(ctx, op, err)
	}
	return out, nil
}

func (s *store) TemplateDeprecate(ctx context.Context, id string, version *int, d *TemplateDeprecation) error {
	const op = "template deprecate"
	now := s.now()
	err := s.d.TemplateWrite(ctx, func(ctx context.Context, w TemplateWriter) error {
		v := 0
		if version != nil {
			v = *version
		}
		if _, err := lockFacts(ctx, w, id, v); err != nil {
			return err
		}
		if d == nil {
			return w.TemplateDeprecationClear(ctx, id, version)
		}
		dep := *d
		dep.DeprecatedAt = now
		return w.TemplateDeprecationSet(ctx, &TemplateDeprecationParams{ID: id, Version: version, Deprecation: dep})
	})
	return templateError(ctx, op, err)
}

// templateError names op in err: a missing template or version, a
// deprecation and a missing rollback target are verdicts no retry changes.
func templateError(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrTemplateDeprecated), errors.Is(err, ErrNoRollbackTarget):
		return invalid(op, err)
	}
	return fail(ctx, op, err)
}
