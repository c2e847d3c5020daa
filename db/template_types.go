package db

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Bounds of the template registry.
const (
	// MaxTemplateIDLen bounds a template id: long enough for
	// team-service-purpose, short enough for a URL path and a table.
	MaxTemplateIDLen = 64
	// TemplateVersionRetain is how many of a template's newest versions a
	// register keeps. Older ones are pruned, except a version a channel or
	// the launch log's stable or previous entry points at.
	TemplateVersionRetain = 20
	// TemplateLaunchRetain is how many of a template's newest launch-log
	// entries a launch keeps; the audit log keeps every launch.
	TemplateLaunchRetain = 100
)

// TemplateChannels are the channels a version can be assigned to, in
// promotion order. The set is closed: a mistyped channel is refused, never
// created. The derived channels (stable, previous, newest) are computed from
// the launch log and the versions, never stored.
var TemplateChannels = []string{"dev", "test", "staging", "pre-prod", "canary", "prod"}

// Template formats, as stored.
const (
	TemplateFormatYAML = "yaml"
	TemplateFormatJSON = "json"
)

// TemplateVersion is one registered version of a template. Versions never
// change once registered.
type TemplateVersion struct {
	ID      string
	Version int
	// Name is the config's own name, when it has one.
	Name        *string
	Description *string
	// Format is TemplateFormatYAML or TemplateFormatJSON.
	Format string
	// Body is the config document exactly as registered; empty in
	// TemplateList's summaries.
	Body string
	// Params is the JSON object of the params the config declares.
	Params    json.RawMessage
	CreatedAt time.Time
	CreatedBy *string
}

// TemplateDraft is a version to register: the store assigns its number.
type TemplateDraft struct {
	ID   string
	Name *string
	// Description nil keeps the description of the template's newest
	// version: it describes the template, not the build.
	Description *string
	Format      string
	Body        string
	Params      json.RawMessage
	CreatedBy   *string
	// Tags are channels pointed at the new version.
	Tags []string
	// Launch makes the new version the live (stable) one.
	Launch bool
}

// TemplateLaunch is one entry of a template's launch log.
type TemplateLaunch struct {
	Seq        int
	Version    int
	LaunchedAt time.Time
	LaunchedBy *string
}

// TemplateDeprecation says who retired a template, or one of its versions,
// when and why.
type TemplateDeprecation struct {
	DeprecatedAt time.Time
	DeprecatedBy *string
	Reason       *string
}

// TemplateFacts are what the store keeps about a template besides its
// versions' contents: everything its state derives from.
type TemplateFacts struct {
	// Versions are the stored version numbers, newest first.
	Versions []int
	// Launches is the launch log, newest first.
	Launches []TemplateLaunch
	// Tags maps each assigned channel to its version.
	Tags map[string]int
	// Deprecation is set while the template as a whole is deprecated.
	Deprecation *TemplateDeprecation
	// VersionDeprecations are the individually deprecated versions.
	VersionDeprecations map[int]TemplateDeprecation
}

// TemplateState is a template's whole release state: its facts and the
// pointers derived from them, so a pointer can never outlive its target.
type TemplateState struct {
	TemplateFacts
	// Stable is the launched version, the newest launch-log entry; nil
	// while the template is a draft.
	Stable *int
	// Previous is the version launched before Stable, the rollback target.
	Previous *int
	// Newest is the highest version number, launched or not.
	Newest *int
}

// TemplateStatus is the lifecycle state of a template (not of a version).
type TemplateStatus string

// The template statuses: draft until a version is launched, deprecated once
// retired.
const (
	TemplateStatusDraft      TemplateStatus = "draft"
	TemplateStatusLaunched   TemplateStatus = "launched"
	TemplateStatusDeprecated TemplateStatus = "deprecated"
)

// Status derives the template's status from its state.
func (s TemplateState) Status() TemplateStatus {
	switch {
	case s.Deprecation != nil:
		return TemplateStatusDeprecated
	case s.Stable != nil:
		return TemplateStatusLaunched
	}
	return TemplateStatusDraft
}

// deriveState computes the pointers of f. Previous is the newest launch of
// another version than the live one: a re-launch of the live version never
// enters the log, but deleting a version can leave two entries of one
// version adjacent.
func deriveState(f TemplateFacts) TemplateState {
	s := TemplateState{TemplateFacts: f}
	if s.Tags == nil {
		s.Tags = map[string]int{}
	}
	if s.VersionDeprecations == nil {
		s.VersionDeprecations = map[int]TemplateDeprecation{}
	}
	if len(f.Versions) > 0 {
		s.Newest = &f.Versions[0]
	}
	if len(f.Launches) > 0 {
		stable := f.Launches[0].Version
		s.Stable = &stable
		for _, l := range f.Launches[1:] {
			if l.Version != stable {
				prev := l.Version
				s.Previous = &prev
				break
			}
		}
	}
	return s
}

// TemplateDetail is one version with its template's state, read together.
type TemplateDetail struct {
	Version TemplateVersion
	State   TemplateState
}

// TemplateSummary is the newest version of a template (without its body)
// with the template's state.
type TemplateSummary struct {
	Newest TemplateVersion
	State  TemplateState
}

// TemplateListFilter selects the templates TemplateList returns.
type TemplateListFilter struct {
	// IncludeDeprecated lists deprecated templates too.
	IncludeDeprecated bool
}

// LaunchOutcome is the result of a launch or rollback.
type LaunchOutcome struct {
	// Version is the live version now.
	Version int
	// Replaced is the version it replaced, the new previous; nil on a
	// first launch and when nothing changed.
	Replaced *int
	// AlreadyLaunched is true when Version was live already: nothing was
	// written, so previous stays a real rollback target.
	AlreadyLaunched bool
	// Status is the template's status after the launch.
	Status TemplateStatus
}

// Template errors, besides ErrNotFound for a template or version that does
// not exist.
var (
	// ErrTemplateDeprecated: the template, or the version, is deprecated;
	// the error is a *DeprecatedError.
	ErrTemplateDeprecated = errors.New("deprecated")
	// ErrNoRollbackTarget: the template has no previous launch to roll
	// back to.
	ErrNoRollbackTarget = errors.New("no previous launch to roll back to")
)

// DeprecatedError refuses an action on a deprecated template or version,
// naming the deprecation.
type DeprecatedError struct {
	ID string
	// Version is set when the version is deprecated, not the template.
	Version     *int
	Deprecation TemplateDeprecation
}

func (e *DeprecatedError) Error() string {
	what := fmt.Sprintf("template %s", e.ID)
	if e.Version != nil {
		what = fmt.Sprintf("version %d of template %s", *e.Version, e.ID)
	}
	msg := what + " is deprecated"
	if e.Deprecation.Reason != nil && *e.Deprecation.Reason != "" {
		msg += ": " + *e.Deprecation.Reason
	}
	return msg
}

// Is makes a DeprecatedError match ErrTemplateDeprecated.
func (e *DeprecatedError) Is(target error) bool { return target == ErrTemplateDeprecated }

// DecodeTemplateFacts reads a template's facts as a driver reads them in
// one statement: each kind a JSON array, in no particular order, of
// versions (numbers), launches ({seq, version, at, by}), tags ({tag,
// version}) and deprecations ({version, at, by, reason}; a null version is
// the template's); timeOf reads an at as the dialect writes it.
func DecodeTemplateFacts(versions, launches, tags, deprecations []byte, timeOf func(json.RawMessage) (time.Time, error)) (TemplateFacts, error) {
	f := TemplateFacts{Tags: map[string]int{}, VersionDeprecations: map[int]TemplateDeprecation{}}
	var ls []struct {
		Seq, Version int
		At           json.RawMessage
		By           *string
	}
	var ts []struct {
		Tag     string
		Version int
	}
	var ds []struct {
		Version    *int
		At         json.RawMessage
		By, Reason *string
	}
	for _, doc := range []struct {
		raw  []byte
		into any
	}{{versions, &f.Versions}, {launches, &ls}, {tags, &ts}, {deprecations, &ds}} {
		if err := json.Unmarshal(doc.raw, doc.into); err != nil {
			return TemplateFacts{}, fmt.Errorf("decode template facts: %w", err)
		}
	}
	slices.SortFunc(f.Versions, func(a, b int) int { return b - a })
	for _, l := range ls {
		at, err := timeOf(l.At)
		if err != nil {
			return TemplateFacts{}, fmt.Errorf("decode launch time: %w", err)
		}
		f.Launches = append(f.Launches, TemplateLaunch{Seq: l.Seq, Version: l.Version, LaunchedAt: at.UTC(), LaunchedBy: l.By})
	}
	slices.SortFunc(f.Launches, func(a, b TemplateLaunch) int { return b.Seq - a.Seq })
	for _, t := range ts {
		f.Tags[t.Tag] = t.Version
	}
	for _, d := range ds {
		at, err := timeOf(d.At)
		if err != nil {
			return TemplateFacts{}, fmt.Errorf("decode deprecation time: %w", err)
		}
		dep := TemplateDeprecation{DeprecatedAt: at.UTC(), DeprecatedBy: d.By, Reason: d.Reason}
		if d.Version == nil {
			f.Deprecation = &dep
		} else {
			f.VersionDeprecations[*d.Version] = dep
		}
	}
	return f, nil
}
