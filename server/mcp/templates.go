package mcp

import (
	"context"
	"net/http"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/openapi/client"
)

// The template tools carry the Rust faucet's names (list_templates,
// get_template, register_template, launch_template, rollback_template,
// deprecate_template, run_template), and promote_template and
// delete_template, which it lacks, are named after them.

type listTemplatesIn struct {
	IncludeDeprecated bool `json:"include_deprecated,omitempty" jsonschema:"List deprecated templates too."`
}

func listTemplates() toolDef {
	return define(sdk.Tool{
		Name: "list_templates",
		Description: "List the registered pipeline templates: the newest version of each, with its release state " +
			"(stable, previous and newest versions, channels, deprecation) and the typed params it takes.",
	}, false, nil,
		func(ctx context.Context, api client.ClientInterface, in listTemplatesIn) outcome {
			p := &client.ListTemplatesParams{}
			if in.IncludeDeprecated {
				p.IncludeDeprecated = &in.IncludeDeprecated
			}
			return answer(api.ListTemplates(ctx, p))
		})
}

type templateIn struct {
	ID      string `json:"id" jsonschema:"The template's id."`
	Version any    `json:"version,omitempty"`
}

// templateShape bounds a template id and version argument, and more.
func templateShape(versionDoc string, more shape) shape {
	more["id"] = maxLen(maxTemplateIDBytes)
	if versionDoc != "" {
		more["version"] = func(p *jsonschema.Schema) { versionArg(p); p.Description = versionDoc }
	}
	return more
}

func getTemplate() toolDef {
	return define(sdk.Tool{
		Name: "get_template",
		Description: "One template version with its config body, its declared params, the template's release state " +
			"and its launch log. A draft has no stable version yet: ask for version newest.",
	}, false, templateShape(versionDoc+" Default stable.", shape{}).apply,
		func(ctx context.Context, api client.ClientInterface, in templateIn) outcome {
			return answer(api.GetTemplate(ctx, in.ID, &client.GetTemplateParams{Version: versionQuery(in.Version)}))
		})
}

type registerIn struct {
	Config       string   `json:"config" jsonschema:"The config document, stored exactly as given; it may declare params and refer to them as ${param.NAME}."`
	ConfigFormat string   `json:"config_format,omitempty" jsonschema:"yaml (the default) or json."`
	ID           string   `json:"id,omitempty" jsonschema:"The template id; made from the config's name when omitted."`
	Description  string   `json:"description,omitempty" jsonschema:"What the template does."`
	Tags         []string `json:"tags,omitempty" jsonschema:"Channels to point at the new version."`
	Launch       bool     `json:"launch,omitempty" jsonschema:"Make the new version live (stable) at once. A register alone moves nobody."`
}

func registerTemplate(maxConfig int) toolDef {
	sh := configProps(maxConfig)
	sh["id"] = maxLen(maxTemplateIDBytes)
	sh["description"] = maxLen(maxTextBytes)
	sh["tags"] = func(p *jsonschema.Schema) {
		p.Items.Enum = assignableChannels
		p.MaxItems = ptr(len(assignableChannels))
	}
	return define(sdk.Tool{
		Name: "register_template",
		Description: "Register a config, which declares typed params (params: {NAME: {type, required, default, " +
			"secret, description}}), as a template's next version. The config is checked as a submit would be, its " +
			"params filled with placeholders. Unless launch is set, runs keep using the launched version.",
	}, true, sh.apply,
		func(ctx context.Context, api client.ClientInterface, in registerIn) outcome {
			req := client.RegisterTemplateRequest{Config: in.Config, Id: opt(in.ID), Description: opt(in.Description)}
			if in.ConfigFormat != "" {
				f := client.ConfigFormat(in.ConfigFormat)
				req.ConfigFormat = &f
			}
			if len(in.Tags) > 0 {
				tags := make([]client.VersionChannel, len(in.Tags))
				for i, t := range in.Tags {
					tags[i] = client.VersionChannel(t)
				}
				req.Tags = &tags
			}
			if in.Launch {
				req.Launch = &in.Launch
			}
			return answer(api.RegisterTemplate(ctx, req))
		})
}

// withSelector calls the API with the version argument as a request body
// takes it, or answers why it cannot be one.
func withSelector(v any, call func(*client.VersionSelector) (*http.Response, error)) outcome {
	s, err := selector(v)
	if err != nil {
		return outcome{res: textError(err.Error())}
	}
	return answer(call(s))
}

func launchTemplate() toolDef {
	return define(sdk.Tool{
		Name: "launch_template",
		Description: "Make a template version live (stable): what runs that name no version use from now on. The " +
			"version it replaces becomes previous. Launching the live version changes nothing.",
	}, true, templateShape(versionDoc+" Default newest.", shape{}).apply,
		func(ctx context.Context, api client.ClientInterface, in templateIn) outcome {
			return withSelector(in.Version, func(v *client.VersionSelector) (*http.Response, error) {
				return api.LaunchTemplate(ctx, in.ID, client.LaunchTemplateRequest{Version: v})
			})
		})
}

type templateIDIn struct {
	ID string `json:"id" jsonschema:"The template's id."`
}

func rollbackTemplate() toolDef {
	return define(sdk.Tool{
		Name:        "rollback_template",
		Description: "Launch the version that was live before the current one (previous), as a normal launch.",
	}, true, templateShape("", shape{}).apply,
		func(ctx context.Context, api client.ClientInterface, in templateIDIn) outcome {
			return answer(api.RollbackTemplate(ctx, in.ID))
		})
}

type promoteIn struct {
	ID      string `json:"id" jsonschema:"The template's id."`
	Tag     string `json:"tag" jsonschema:"The channel to point: dev, test, staging, pre-prod, canary or prod."`
	Version any    `json:"version,omitempty"`
}

func promoteTemplate() toolDef {
	return define(sdk.Tool{
		Name: "promote_template",
		Description: "Point a channel (dev, test, staging, pre-prod, canary, prod) at a template version, so runs " +
			"that name the channel use it. stable, previous and newest cannot be pointed: stable moves by launching.",
	}, true, templateShape(versionDoc+" Another channel copies its version. Default stable.", shape{"tag": enum(assignableChannels)}).apply,
		func(ctx context.Context, api client.ClientInterface, in promoteIn) outcome {
			return withSelector(in.Version, func(v *client.VersionSelector) (*http.Response, error) {
				return api.PromoteTemplate(ctx, in.ID, client.PromoteTemplateRequest{Tag: client.VersionChannel(in.Tag), Version: v})
			})
		})
}

type deprecateIn struct {
	ID      string `json:"id" jsonschema:"The template's id."`
	Version any    `json:"version,omitempty"`
	Reason  string `json:"reason,omitempty" jsonschema:"Why it is retired; refused runs name it."`
	Undo    bool   `json:"undo,omitempty" jsonschema:"Revive instead of retire."`
}

func deprecateTemplate() toolDef {
	return define(sdk.Tool{
		Name: "deprecate_template",
		Description: "Retire a template, or one version of it (undo: true revives it): its runs and launches are " +
			"refused, naming the reason, and a deprecated template is listed only on request.",
	}, true, templateShape(versionDoc+" Omitted: the whole template.", shape{"reason": maxLen(maxTextBytes)}).apply,
		func(ctx context.Context, api client.ClientInterface, in deprecateIn) outcome {
			return withSelector(in.Version, func(v *client.VersionSelector) (*http.Response, error) {
				req := client.DeprecateTemplateRequest{Version: v, Reason: opt(in.Reason)}
				if in.Undo {
					req.Undo = &in.Undo
				}
				return api.DeprecateTemplate(ctx, in.ID, req)
			})
		})
}

type runTemplateIn struct {
	ID             string            `json:"id" jsonschema:"The template's id."`
	Version        any               `json:"version,omitempty"`
	Params         map[string]any    `json:"params,omitempty" jsonschema:"Values of the template's declared params: strings, numbers, booleans."`
	Env            map[string]string `json:"env,omitempty" jsonschema:"Not supported by this server: a run reads the environment of the server that executes it."`
	Name           string            `json:"name,omitempty" jsonschema:"Display name of the run; the config's name by default."`
	Labels         map[string]string `json:"labels,omitempty" jsonschema:"Labels stored on the run."`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"A repeat with the same params and key returns the same run."`
	TimeoutSecs    int64             `json:"timeout_secs,omitempty" jsonschema:"Fail the run when it executes longer than this."`
	DoctorFirst    bool              `json:"doctor_first,omitempty" jsonschema:"Probe every connector before queueing; a failed probe refuses the run."`
}

func runTemplate() toolDef {
	sh := submitShape(shape{"params": params, "env": stringMap})
	return define(sdk.Tool{
		Name: "run_template",
		Description: "Run a registered template with params, as POST /v1/templates/{id}/runs does: the params are " +
			"bound into the version (stable by default) and the result is submitted like run_pipeline's config. A " +
			"missing, unknown or mistyped param is an error naming it; secret params are masked in the answer. " +
			"Follow the run with get_run.",
	}, true, templateShape(versionDoc+" Default stable.", sh).apply,
		func(ctx context.Context, api client.ClientInterface, in runTemplateIn) outcome {
			s, err := selector(in.Version)
			if err != nil {
				return outcome{res: textError(err.Error())}
			}
			req := client.TriggerTemplateRequest{Version: s, Name: opt(in.Name), IdempotencyKey: opt(in.IdempotencyKey)}
			if len(in.Params) > 0 {
				req.Params = &in.Params
			}
			if len(in.Env) > 0 {
				req.Env = &in.Env
			}
			if len(in.Labels) > 0 {
				req.Labels = &in.Labels
			}
			if in.TimeoutSecs > 0 {
				req.TimeoutSecs = &in.TimeoutSecs
			}
			if in.DoctorFirst {
				req.DoctorFirst = &in.DoctorFirst
			}
			return accepted(api.TriggerTemplate(ctx, in.ID, req))
		})
}

func deleteTemplate() toolDef {
	return define(sdk.Tool{
		Name: "delete_template",
		Description: "Delete one version of a template (with the channels and launch-log entries that point at it), " +
			"or, with no version, the whole template. The runs it produced are kept.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true)},
	}, true, templateShape(versionDoc+" Omitted: the whole template.", shape{}).apply,
		func(ctx context.Context, api client.ClientInterface, in templateIn) outcome {
			o := answer(api.DeleteTemplate(ctx, in.ID, &client.DeleteTemplateParams{Version: versionQuery(in.Version)}))
			if !o.res.IsError {
				o = marshalAnswer(map[string]any{"deleted": true, "id": in.ID, "version": in.Version})
			}
			return o
		})
}

// toolDefs is faucet's tool set, read-only tools first.
func toolDefs(maxConfig int) []toolDef {
	return []toolDef{
		listConnectors(), getConnectorSchema(), scaffoldConfig(), validateConfig(maxConfig),
		getRun(), listRuns(), getRunLogs(), listTemplates(), getTemplate(),
		runPipeline(maxConfig), registerTemplate(maxConfig), launchTemplate(), rollbackTemplate(),
		promoteTemplate(), deprecateTemplate(), runTemplate(), deleteTemplate(),
	}
}
