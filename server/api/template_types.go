package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/templates"
)

// VersionChannel is a named version channel.
type VersionChannel string

// Schema makes VersionChannel the VersionChannel component.
func (VersionChannel) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "VersionChannel",
		"A named version channel: a pointer at one version. The set is closed. stable (the launched version, "+
			"and what a request naming no version uses), previous (the version launched before it) and newest (the "+
			"highest version number) are derived and cannot be assigned; dev, test, staging, pre-prod, canary and "+
			"prod are assigned with POST /v1/templates/{id}/tags. latest is not a channel: it reads as both stable "+
			"and newest.",
		templates.Channels...)
}

// TemplateStatus is a template's lifecycle status.
type TemplateStatus string

// Schema makes TemplateStatus the TemplateStatus component.
func (TemplateStatus) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "TemplateStatus",
		"The lifecycle status of a template (not of a version), derived so it never disagrees with the registry: "+
			"draft until a version is launched, launched afterwards, deprecated once retired.",
		db.TemplateStatusDraft, db.TemplateStatusLaunched, db.TemplateStatusDeprecated)
}

// VersionSelector picks a template version in a request body: a channel
// name, a numeric string, or a number. It is checked by the handler, so a
// misspelt channel gets a message naming the channels.
type VersionSelector struct {
	raw string
}

// UnmarshalJSON keeps a string or a number as given.
func (v *VersionSelector) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v.raw = s
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("version: want a channel name or a version number")
	}
	v.raw = n.String()
	return nil
}

// Schema makes VersionSelector the VersionSelector component.
func (VersionSelector) Schema(r huma.Registry) *huma.Schema {
	const name = "VersionSelector"
	if _, ok := r.Map()[name]; !ok {
		r.Map()[name] = &huma.Schema{
			Description: "A template version: a VersionChannel name (" + strings.Join(templates.Channels, ", ") +
				"), a numeric string, or a number. 0, latest and unknown names are refused.",
			OneOf: []*huma.Schema{
				{Type: huma.TypeString, Description: "A channel name or a version number as text."},
				{Type: huma.TypeInteger, Minimum: ptrFloat(1)},
			},
		}
	}
	return &huma.Schema{Ref: "#/components/schemas/" + name}
}

// selector reads v (def when absent); a bad one is 422, as for any body
// field that cannot be accepted.
func (v *VersionSelector) selector(def templates.Selector) (templates.Selector, error) {
	if v == nil {
		return def, nil
	}
	sel, err := templates.ParseSelector(v.raw)
	if err != nil {
		return templates.Selector{}, errUnprocessable("version: "+err.Error(), nil)
	}
	return sel, nil
}

// querySelector reads a version query parameter; absent is nil, a bad one
// is 400, as for any bad parameter.
func querySelector(raw string) (*templates.Selector, error) {
	if raw == "" {
		return nil, nil
	}
	sel, err := templates.ParseSelector(raw)
	if err != nil {
		return nil, errBadConfig("query parameter version: "+err.Error(), nil)
	}
	return &sel, nil
}

// ParamSpec is one declared param of a template.
type ParamSpec struct {
	Type        string  `json:"type" enum:"string,int,float,bool" doc:"The type a trigger's value is converted to."`
	Required    bool    `json:"required" doc:"A trigger must give a value: the param has no default."`
	Default     any     `json:"default,omitempty" doc:"The value used when a trigger gives none."`
	Secret      bool    `json:"secret" doc:"The value is masked in every response, log and record, and never stored; a clustered server refuses such params."`
	Description *string `json:"description,omitempty"`
}

// TemplateVersionInfo is one version of a template without its body.
type TemplateVersionInfo struct {
	ID          string               `json:"id" doc:"The template id (a slug)."`
	Version     int                  `json:"version" minimum:"1" doc:"The version. In a listing, the newest registered one; state.stable is what a request naming no version uses."`
	Name        *string              `json:"name,omitempty" doc:"The config's own name."`
	Description *string              `json:"description,omitempty"`
	Params      map[string]ParamSpec `json:"params" doc:"The params the config declares, by name: what a trigger supplies."`
	CreatedAt   time.Time            `json:"created_at"`
	CreatedBy   *string              `json:"created_by,omitempty" doc:"The principal that registered the version."`
}

// TemplateSummary is a template version with, on the read paths, its
// template's release state.
type TemplateSummary struct {
	TemplateVersionInfo
	State *TemplateState `json:"state,omitempty" doc:"The template's release state; present on the read paths."`
}

// DeprecationRecord says who retired a template or version, when and why.
type DeprecationRecord struct {
	DeprecatedAt time.Time `json:"deprecated_at"`
	DeprecatedBy *string   `json:"deprecated_by,omitempty"`
	Reason       *string   `json:"reason,omitempty"`
}

// VersionDeprecation is the deprecation of one version.
type VersionDeprecation struct {
	Version int `json:"version"`
	DeprecationRecord
}

// LaunchRecord is one entry of a template's launch log.
type LaunchRecord struct {
	Seq        int       `json:"seq" doc:"The template's launch sequence number, from 1."`
	Version    int       `json:"version"`
	LaunchedAt time.Time `json:"launched_at"`
	LaunchedBy *string   `json:"launched_by,omitempty" doc:"The principal that launched it."`
}

// TemplateState is a template's whole release state. Everything but the
// channels and the deprecations derives from the launch log, so no pointer
// outlives what it points at.
type TemplateState struct {
	Status   TemplateStatus `json:"status"`
	Versions []int          `json:"versions" doc:"Every stored version, newest first."`
	Stable   *int           `json:"stable" nullable:"true" doc:"The launched version: what stable, and a request naming no version, use. null while the template is a draft."`
	Previous *int           `json:"previous" nullable:"true" doc:"The version launched before stable: the rollback target."`
	Newest   *int           `json:"newest" nullable:"true" doc:"The highest version number, launched or not."`
	Tags     map[string]int `json:"tags" doc:"The assigned channels ({channel: version}); the derived ones are not listed."`
	// Deprecation is set while the template is deprecated.
	Deprecation         *DeprecationRecord   `json:"deprecation,omitempty" doc:"Present only when status is deprecated."`
	VersionDeprecations []VersionDeprecation `json:"version_deprecations" doc:"The individually deprecated versions, newest first: triggers and launches of them are refused."`
}

// TemplateDetail is one version, its body and its template's whole state.
type TemplateDetail struct {
	TemplateVersionInfo
	TemplateState
	Body     string         `json:"body" doc:"The config document exactly as registered (its references unresolved)."`
	Format   ConfigFormat   `json:"format"`
	IsStable bool           `json:"is_stable" doc:"Whether this version is the launched one."`
	Launches []LaunchRecord `json:"launches" doc:"The launch log, newest first (its newest 100 entries; the audit log keeps every launch)."`
}

// RegisterTemplateRequest is the body of POST /v1/templates.
type RegisterTemplateRequest struct {
	ID           string           `json:"id,omitempty" maxLength:"64" doc:"The template id: lowercase letters, digits, - and _ (starting with a letter or digit), at most 64. Derived from the config's name when omitted."`
	Config       string           `json:"config" minLength:"1" doc:"The config document, stored exactly as given. It may declare params (params: {NAME: {type, required, default, secret, description}}) and refer to them as ${param.NAME}."`
	ConfigFormat ConfigFormat     `json:"config_format,omitempty" doc:"Format of config; yaml when omitted."`
	Description  *string          `json:"description,omitempty" maxLength:"1024" doc:"What the template does; the previous version's description when omitted."`
	Tags         []VersionChannel `json:"tags,omitempty" maxItems:"6" doc:"Assignable channels to point at the new version; a derived channel is refused (422), a channel named twice is a conflict (409)."`
	Launch       bool             `json:"launch,omitempty" doc:"Launch the new version, making it stable. A register alone never moves callers."`
}

// TemplateList is the body of GET /v1/templates.
type TemplateList struct {
	Templates []TemplateSummary `json:"templates"`
}

// PromoteTemplateRequest is the body of POST /v1/templates/{id}/tags.
type PromoteTemplateRequest struct {
	Tag     VersionChannel   `json:"tag" doc:"The assignable channel to point (dev, test, staging, pre-prod, canary, prod)."`
	Version *VersionSelector `json:"version,omitempty" doc:"The version to point it at: a number, or a channel whose version to copy; stable when omitted. Resolved to a number now, so the channel never follows later moves."`
}

// ChannelAssignment says where a channel points now.
type ChannelAssignment struct {
	ID      string `json:"id"`
	Tag     string `json:"tag"`
	Version int    `json:"version"`
}

// LaunchTemplateRequest is the body of POST /v1/templates/{id}/launch.
type LaunchTemplateRequest struct {
	Version *VersionSelector `json:"version,omitempty" doc:"The version to make live: a number, or a channel whose version to launch; newest when omitted."`
}

// LaunchResponse is the result of a launch or rollback.
type LaunchResponse struct {
	ID              string         `json:"id"`
	Version         int            `json:"version" doc:"The live version now."`
	Replaced        *int           `json:"replaced,omitempty" doc:"The version it replaced, the new previous; absent on a first launch and when nothing changed."`
	AlreadyLaunched bool           `json:"already_launched" doc:"true when the version was live already, so nothing changed."`
	Status          TemplateStatus `json:"status"`
}

// DeprecateTemplateRequest is the body of POST /v1/templates/{id}/deprecate.
type DeprecateTemplateRequest struct {
	Reason  *string          `json:"reason,omitempty" maxLength:"1024" doc:"Why it is retired; triggers that are refused name it."`
	Undo    bool             `json:"undo,omitempty" doc:"Revive instead of retire."`
	Version *VersionSelector `json:"version,omitempty" doc:"Deprecate (or revive) just this version; the whole template when omitted."`
}

// DeprecationResult is a template's status after a deprecation.
type DeprecationResult struct {
	ID      string         `json:"id"`
	Status  TemplateStatus `json:"status"`
	Version *int           `json:"version,omitempty" doc:"The version deprecated or revived, when the request named one."`
}

// TriggerTemplateRequest is the body of POST /v1/templates/{id}/runs. The
// fields after version are SubmitRequest's: the run is submitted through
// the same path.
type TriggerTemplateRequest struct {
	Params         map[string]any    `json:"params,omitempty" maxProperties:"64" doc:"Values of the template's declared params: strings, numbers and booleans, converted to the declared types. A value containing ${ is refused: params are data."`
	Env            map[string]string `json:"env,omitempty" doc:"Not supported: a non-empty env is refused (422). The run reads the environment of the server that executes it."`
	Version        *VersionSelector  `json:"version,omitempty" doc:"The version to run: stable when omitted, another channel, or a number."`
	Name           *string           `json:"name,omitempty" maxLength:"256" doc:"Display name of the run; the config's name when omitted."`
	Labels         map[string]string `json:"labels,omitempty" maxProperties:"64" doc:"Labels of the run (as for SubmitRequest); template and template_version are the trigger's."`
	TimeoutSecs    *int64            `json:"timeout_secs,omitempty" minimum:"1" nullable:"true"`
	DoctorFirst    bool              `json:"doctor_first,omitempty"`
	IdempotencyKey *string           `json:"idempotency_key,omitempty" minLength:"1" maxLength:"256" nullable:"true" doc:"As for SubmitRequest. A repeat with the same params returns the existing run; secret params do not count, since nothing stored may derive from them."`
	Clock          *string           `json:"clock,omitempty" format:"date-time"`
	Concurrency    *int              `json:"concurrency,omitempty" minimum:"1" maximum:"1024"`
}

// TriggeredRun is the 202 body of POST /v1/templates/{id}/runs.
type TriggeredRun struct {
	RunID           string         `json:"run_id"`
	Status          RunStatus      `json:"status"`
	SubmittedAt     time.Time      `json:"submitted_at"`
	TemplateID      string         `json:"template_id"`
	TemplateVersion int            `json:"template_version"`
	Params          map[string]any `json:"params" doc:"The bound params, every secret one as ***."`
	Replayed        bool           `json:"replayed" doc:"true when the idempotency_key matched an earlier trigger: run_id is that trigger's run."`
	Warnings        []string       `json:"warnings,omitempty"`
}

func toParams(raw json.RawMessage) map[string]ParamSpec {
	out := map[string]ParamSpec{}
	var ps templates.Params
	if json.Unmarshal(raw, &ps) != nil {
		return out
	}
	for name, p := range ps {
		out[name] = ParamSpec{Type: p.Type, Required: p.Required, Default: p.Default, Secret: p.Secret, Description: p.Description}
	}
	return out
}

func toVersionInfo(v db.TemplateVersion) TemplateVersionInfo {
	return TemplateVersionInfo{
		ID: v.ID, Version: v.Version, Name: v.Name, Description: v.Description, Params: toParams(v.Params),
		CreatedAt: v.CreatedAt.UTC(), CreatedBy: v.CreatedBy,
	}
}

func toDeprecation(d db.TemplateDeprecation) DeprecationRecord {
	return DeprecationRecord{DeprecatedAt: d.DeprecatedAt.UTC(), DeprecatedBy: d.DeprecatedBy, Reason: d.Reason}
}

func toTemplateState(st db.TemplateState) TemplateState {
	out := TemplateState{
		Status: TemplateStatus(st.Status()), Versions: st.Versions, Stable: st.Stable, Previous: st.Previous,
		Newest: st.Newest, Tags: st.Tags, VersionDeprecations: []VersionDeprecation{},
	}
	if out.Versions == nil {
		out.Versions = []int{}
	}
	if out.Tags == nil {
		out.Tags = map[string]int{}
	}
	if st.Deprecation != nil {
		d := toDeprecation(*st.Deprecation)
		out.Deprecation = &d
	}
	for _, v := range st.Versions {
		if d, ok := st.VersionDeprecations[v]; ok {
			out.VersionDeprecations = append(out.VersionDeprecations, VersionDeprecation{Version: v, DeprecationRecord: toDeprecation(d)})
		}
	}
	return out
}

func toTemplateDetail(d db.TemplateDetail) TemplateDetail {
	out := TemplateDetail{
		TemplateVersionInfo: toVersionInfo(d.Version), TemplateState: toTemplateState(d.State),
		Body: d.Version.Body, Format: ConfigFormat(d.Version.Format),
		IsStable: d.State.Stable != nil && *d.State.Stable == d.Version.Version, Launches: []LaunchRecord{},
	}
	for _, l := range d.State.Launches {
		out.Launches = append(out.Launches, LaunchRecord{Seq: l.Seq, Version: l.Version, LaunchedAt: l.LaunchedAt.UTC(), LaunchedBy: l.LaunchedBy})
	}
	return out
}

func toLaunchResponse(id string, o db.LaunchOutcome) LaunchResponse {
	return LaunchResponse{ID: id, Version: o.Version, Replaced: o.Replaced, AlreadyLaunched: o.AlreadyLaunched, Status: TemplateStatus(o.Status)}
}

// withTemplateLabels is a run's labels on the wire: a run triggered from a
// template carries its template and version as labels too, where faucet
// clients look for them; the record keeps them once, in columns.
func withTemplateLabels(r *db.RunRecord, labels map[string]string) map[string]string {
	if r.TemplateID == nil || r.TemplateVersion == nil {
		return labels
	}
	out := make(map[string]string, len(labels)+2)
	for k, v := range labels {
		out[k] = v
	}
	out[templates.LabelTemplate] = *r.TemplateID
	out[templates.LabelTemplateVersion] = strconv.Itoa(*r.TemplateVersion)
	return out
}
