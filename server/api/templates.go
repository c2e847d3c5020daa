package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/templates"
)

// registerTemplates adds the /v1/templates operations. Reading the registry
// is a viewer's; changing it, and triggering a run from it, an operator's,
// as for the runs themselves.
func (d *Deps) registerTemplates(g groups, maxBody int64) {
	const tag = "templates"
	op := func(id, method, path, summary, desc string, role auth.Role, action string, status int, errs ...int) huma.Operation {
		meta := map[string]any{metaRole: role}
		if action != "" {
			meta[metaAction] = action
		}
		return huma.Operation{
			OperationID: id, Method: method, Path: path, Summary: summary, Description: desc, Tags: []string{tag},
			DefaultStatus: status, Errors: append(errs, http.StatusServiceUnavailable), Metadata: meta, MaxBodyBytes: maxBody,
		}
	}
	huma.Register(g.v1, op("registerTemplate", http.MethodPost, "/templates", "Register a pipeline template",
		"Stores a config document, and the typed params it declares, as the template's next version, so runs are "+
			"triggered by {id, params} instead of sending the whole config. A register never moves callers: an unpinned "+
			"trigger keeps using stable until a version is launched (launch: true here, or POST /v1/templates/{id}/launch), "+
			"so a first register leaves the template a draft. The body is stored verbatim (${env:…} stays unresolved, for the "+
			"server that runs it). The config is checked like a submitted one, its params filled with placeholders: 400 with "+
			"each problem's path and line when it is not a valid pipeline. Versions are numbered from 1 and never reused; "+
			"the newest 20 are kept, and any a channel, stable or previous points at.",
		auth.Operator, "template.register", http.StatusCreated, 400, 409, 413, 422), d.registerTemplate)
	huma.Register(g.v1, op("listTemplates", http.MethodGet, "/templates", "List pipeline templates",
		"The newest version of every template, newest registered first, each with its template's release state. Bodies "+
			"are left out: read one with GET /v1/templates/{id}. Deprecated templates are listed with include_deprecated.",
		auth.Viewer, "", 0, 400), d.listTemplates)
	huma.Register(g.v1, op("getTemplate", http.MethodGet, "/templates/{id}", "Get a pipeline template version",
		"One version (stable unless version says otherwise) with its body, the template's whole release state and its "+
			"launch log. A draft has no stable version: ask for version=newest. A channel with no version is 409.",
		auth.Viewer, "", 0, 400, 404, 409), d.getTemplate)
	huma.Register(g.v1, op("deleteTemplate", http.MethodDelete, "/templates/{id}", "Delete a pipeline template or one version",
		"Deletes one version (version given: a number or a channel, resolved to its version) with the channels, launch-log "+
			"entries and deprecation that point at it, or the whole template. Deleting the last version deletes the template. "+
			"Runs triggered from it are kept.",
		auth.Operator, "template.delete", http.StatusNoContent, 400, 404, 409), d.deleteTemplate)
	huma.Register(g.v1, op("promoteTemplate", http.MethodPost, "/templates/{id}/tags", "Point a channel at a template version",
		"Points an assignable channel (dev, test, staging, pre-prod, canary, prod) at a version, moving it when it pointed "+
			"elsewhere. version may name another channel, whose version is copied (stable when omitted). The derived channels "+
			"(stable, previous, newest) cannot be assigned (422): stable moves only by launching.",
		auth.Operator, "template.promote", http.StatusOK, 400, 404, 409, 413, 422), d.promoteTemplate)
	huma.Register(g.v1, op("launchTemplate", http.MethodPost, "/templates/{id}/launch", "Launch a template version",
		"Makes a version (newest when omitted) the live one, stable, by appending it to the launch log; the version it "+
			"replaces becomes previous. Launching the live version changes nothing (already_launched). A deprecated template "+
			"or version refuses (409, naming the deprecation): revive it first.",
		auth.Operator, "template.launch", http.StatusOK, 400, 404, 409, 413, 422), d.launchTemplate)
	huma.Register(g.v1, op("rollbackTemplate", http.MethodPost, "/templates/{id}/rollback", "Roll a template back to its previous launch",
		"Launches previous, the version launched before the live one, as a normal launch: the launch log keeps the trail, "+
			"and previous becomes the version rolled off. 409 when there is nothing to roll back to.",
		auth.Operator, "template.rollback", http.StatusOK, 400, 404, 409), d.rollbackTemplate)
	huma.Register(g.v1, op("deprecateTemplate", http.MethodPost, "/templates/{id}/deprecate", "Deprecate (or revive) a template or one version",
		"Retires the template, or one version. Triggers and launches of it are refused (409, naming the reason), and a "+
			"deprecated template is listed only with include_deprecated. undo: true revives it; DELETE removes it.",
		auth.Operator, "template.deprecate", http.StatusOK, 400, 404, 409, 413, 422), d.deprecateTemplate)
	huma.Register(g.v1, op("triggerTemplate", http.MethodPost, "/templates/{id}/runs", "Trigger a run from a template",
		"Binds params into a version (stable when omitted) and submits the result through the path of POST /v1/runs: the "+
			"idempotency key, doctor_first, the queue (429 when full), cluster dispatch and the audit log behave alike. The "+
			"run records its template and version (GET /v1/runs?template=ID lists them). A param that is missing, unknown or "+
			"of the wrong type is 400 naming it; a deprecated template or version is 409 naming the deprecation; a draft "+
			"triggered without a version is 409. Secret params are masked in the response and never stored.",
		auth.Operator, "template.run", http.StatusAccepted, 400, 404, 409, 413, 422, 429), d.triggerTemplate)
}

// templateError maps a registry refusal to its problem; anything else is
// mapped like a runner's error.
func (d *Deps) templateError(err error) error {
	var te *templates.Error
	if !errors.As(err, &te) {
		return d.serviceError(err)
	}
	switch te.Kind {
	case templates.BadConfig:
		var details map[string]any
		if len(te.Problems) > 0 {
			list := make([]map[string]any, len(te.Problems))
			for i, p := range te.Problems {
				item := map[string]any{"message": p.Message}
				if p.Path != "" {
					item["path"] = p.Path
				}
				if p.Line > 0 {
					item["line"], item["column"] = p.Line, p.Column
				}
				list[i] = item
			}
			details = map[string]any{"errors": list}
		}
		var perr *templates.ParamError
		if errors.As(err, &perr) {
			details = map[string]any{"param": perr.Name}
		}
		return errBadConfig(te.Msg, details)
	case templates.NotFound:
		return errNotFound(te.Msg)
	case templates.Conflict:
		return errConflict(te.Msg)
	}
	return errUnprocessable(te.Msg, nil)
}

// pathID refuses an id the registry could not hold with 400, as for any
// bad parameter.
func pathID(id string) error {
	if err := db.CheckTemplateID(id); err != nil {
		return errBadConfig("path parameter id: "+err.Error(), nil)
	}
	return nil
}

// by names the caller for the registry's records.
func by(ctx context.Context) *string {
	name := principalFrom(ctx).Name
	return &name
}

type registerTemplateInput struct {
	Body RegisterTemplateRequest
}

type templateSummaryOutput struct {
	Body TemplateSummary
}

func (d *Deps) registerTemplate(ctx context.Context, in *registerTemplateInput) (*templateSummaryOutput, error) {
	b := in.Body
	tags := make([]string, len(b.Tags))
	for i, t := range b.Tags {
		tags[i] = string(t)
	}
	v, err := d.Templates.Register(ctx, templates.RegisterRequest{
		ID: b.ID, Config: b.Config, Format: string(b.ConfigFormat), Description: b.Description,
		Tags: tags, Launch: b.Launch, By: by(ctx),
	})
	if err != nil {
		return nil, d.templateError(err)
	}
	sum := sha256.Sum256([]byte(b.Config))
	fp := hex.EncodeToString(sum[:])
	d.audit(ctx, principalFrom(ctx), "template.register", nil, &fp, "ok")
	return &templateSummaryOutput{Body: TemplateSummary{TemplateVersionInfo: toVersionInfo(v)}}, nil
}

type listTemplatesInput struct {
	IncludeDeprecated bool `query:"include_deprecated" doc:"List deprecated templates too."`
}

type listTemplatesOutput struct {
	Body TemplateList
}

func (d *Deps) listTemplates(ctx context.Context, in *listTemplatesInput) (*listTemplatesOutput, error) {
	sums, err := d.Templates.List(ctx, in.IncludeDeprecated)
	if err != nil {
		return nil, d.templateError(err)
	}
	out := &listTemplatesOutput{Body: TemplateList{Templates: make([]TemplateSummary, len(sums))}}
	for i, s := range sums {
		st := toTemplateState(s.State)
		out.Body.Templates[i] = TemplateSummary{TemplateVersionInfo: toVersionInfo(s.Newest), State: &st}
	}
	return out, nil
}

type templateVersionInput struct {
	ID      string `path:"id" doc:"Template id."`
	Version string `query:"version" doc:"The version: a channel (stable when omitted, previous, newest, dev, test, staging, pre-prod, canary, prod) or a number."`
}

type templateDetailOutput struct {
	Body TemplateDetail
}

func (d *Deps) getTemplate(ctx context.Context, in *templateVersionInput) (*templateDetailOutput, error) {
	if err := pathID(in.ID); err != nil {
		return nil, err
	}
	sel, err := querySelector(in.Version)
	if err != nil {
		return nil, err
	}
	if sel == nil {
		sel = &templates.Selector{}
	}
	detail, err := d.Templates.Get(ctx, in.ID, *sel)
	if err != nil {
		return nil, d.templateError(err)
	}
	return &templateDetailOutput{Body: toTemplateDetail(detail)}, nil
}

func (d *Deps) deleteTemplate(ctx context.Context, in *templateVersionInput) (*struct{}, error) {
	if err := pathID(in.ID); err != nil {
		return nil, err
	}
	sel, err := querySelector(in.Version)
	if err != nil {
		return nil, err
	}
	if err := d.Templates.Delete(ctx, in.ID, sel, by(ctx)); err != nil {
		return nil, d.templateError(err)
	}
	d.audit(ctx, principalFrom(ctx), "template.delete", nil, nil, "ok")
	return nil, nil
}

type templateIDInput struct {
	ID string `path:"id" doc:"Template id."`
}

type promoteTemplateInput struct {
	ID   string `path:"id" doc:"Template id."`
	Body PromoteTemplateRequest
}

type promoteTemplateOutput struct {
	Body ChannelAssignment
}

func (d *Deps) promoteTemplate(ctx context.Context, in *promoteTemplateInput) (*promoteTemplateOutput, error) {
	if err := pathID(in.ID); err != nil {
		return nil, err
	}
	target, err := in.Body.Version.selector(templates.Selector{})
	if err != nil {
		return nil, err
	}
	tag, v, err := d.Templates.Promote(ctx, in.ID, string(in.Body.Tag), target, by(ctx))
	if err != nil {
		return nil, d.templateError(err)
	}
	d.audit(ctx, principalFrom(ctx), "template.promote", nil, nil, "ok")
	return &promoteTemplateOutput{Body: ChannelAssignment{ID: in.ID, Tag: tag, Version: v}}, nil
}

type launchTemplateInput struct {
	ID   string `path:"id" doc:"Template id."`
	Body *LaunchTemplateRequest
}

type launchOutput struct {
	Body LaunchResponse
}

func (d *Deps) launchTemplate(ctx context.Context, in *launchTemplateInput) (*launchOutput, error) {
	if err := pathID(in.ID); err != nil {
		return nil, err
	}
	var v *VersionSelector
	if in.Body != nil {
		v = in.Body.Version
	}
	target, err := v.selector(templates.Channel(templates.Newest))
	if err != nil {
		return nil, err
	}
	out, err := d.Templates.Launch(ctx, in.ID, target, by(ctx))
	if err != nil {
		return nil, d.templateError(err)
	}
	d.audit(ctx, principalFrom(ctx), "template.launch", nil, nil, "ok")
	return &launchOutput{Body: toLaunchResponse(in.ID, out)}, nil
}

func (d *Deps) rollbackTemplate(ctx context.Context, in *templateIDInput) (*launchOutput, error) {
	if err := pathID(in.ID); err != nil {
		return nil, err
	}
	out, err := d.Templates.Rollback(ctx, in.ID, by(ctx))
	if err != nil {
		return nil, d.templateError(err)
	}
	d.audit(ctx, principalFrom(ctx), "template.rollback", nil, nil, "ok")
	return &launchOutput{Body: toLaunchResponse(in.ID, out)}, nil
}

type deprecateTemplateInput struct {
	ID   string `path:"id" doc:"Template id."`
	Body *DeprecateTemplateRequest
}

type deprecateTemplateOutput struct {
	Body DeprecationResult
}

func (d *Deps) deprecateTemplate(ctx context.Context, in *deprecateTemplateInput) (*deprecateTemplateOutput, error) {
	if err := pathID(in.ID); err != nil {
		return nil, err
	}
	b := in.Body
	if b == nil {
		b = &DeprecateTemplateRequest{}
	}
	var sel *templates.Selector
	if b.Version != nil {
		s, err := b.Version.selector(templates.Selector{})
		if err != nil {
			return nil, err
		}
		sel = &s
	}
	status, err := d.Templates.Deprecate(ctx, in.ID, sel, b.Reason, b.Undo, by(ctx))
	if err != nil {
		return nil, d.templateError(err)
	}
	action := "template.deprecate"
	if b.Undo {
		action = "template.undeprecate"
	}
	d.audit(ctx, principalFrom(ctx), action, nil, nil, "ok")
	out := &deprecateTemplateOutput{Body: DeprecationResult{ID: in.ID, Status: TemplateStatus(status)}}
	if sel != nil && sel.Version > 0 {
		out.Body.Version = &sel.Version
	}
	return out, nil
}

type triggerTemplateInput struct {
	ID   string `path:"id" doc:"Template id."`
	Body *TriggerTemplateRequest
}

type triggerTemplateOutput struct {
	Body TriggeredRun
}

func (d *Deps) triggerTemplate(ctx context.Context, in *triggerTemplateInput) (*triggerTemplateOutput, error) {
	if err := pathID(in.ID); err != nil {
		return nil, err
	}
	b := in.Body
	if b == nil {
		b = &TriggerTemplateRequest{}
	}
	if len(b.Env) > 0 {
		return nil, errUnprocessable("env: this server does not take environment overrides; the run reads the environment of the server that executes it", nil)
	}
	if err := labelsError(b.Labels); err != nil {
		return nil, err
	}
	sel, err := b.Version.selector(templates.Selector{})
	if err != nil {
		return nil, err
	}
	p := principalFrom(ctx)
	who := actor(ctx, p)
	res, err := d.Templates.Trigger(ctx, in.ID, templates.TriggerRequest{
		Version: sel, Params: b.Params, Name: b.Name, Labels: b.Labels, TimeoutSecs: b.TimeoutSecs,
		DoctorFirst: b.DoctorFirst, IdempotencyKey: b.IdempotencyKey, Clock: b.Clock, Concurrency: b.Concurrency,
		Actor: &who,
	})
	if err != nil {
		return nil, d.templateError(err)
	}
	d.audit(ctx, p, "template.run", &res.RunID, nil, "ok")
	return &triggerTemplateOutput{Body: TriggeredRun{
		RunID: res.RunID, Status: RunStatus(res.Status), SubmittedAt: res.SubmittedAt.UTC(), TemplateID: res.TemplateID,
		TemplateVersion: res.Version, Params: res.Params, Replayed: res.Replayed, Warnings: res.Warnings,
	}}, nil
}
