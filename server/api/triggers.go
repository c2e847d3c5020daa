package api

import (
	"context"
	"errors"
	"net/http"
	"net/textproto"
	"net/url"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/server/audit"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/triggers"
)

// Reloader re-reads the server's --default-config and --triggers files and
// swaps them in, both or neither.
type Reloader interface {
	Reload(ctx context.Context) (Reloaded, error)
}

// Reloaded is the body of POST /v1/reload.
type Reloaded struct {
	Reloaded bool   `json:"reloaded" doc:"false when the server runs without --default-config and --triggers: nothing was read."`
	Path     string `json:"path,omitempty" doc:"The --default-config file now in force."`
	Triggers string `json:"triggers,omitempty" doc:"The --triggers file now in force."`
	Reason   string `json:"reason,omitempty" doc:"Why nothing was reloaded."`
}

// ReloadError is a reload refused because a file is invalid; the files in
// force before stay in force (422).
type ReloadError struct{ Err error }

func (e *ReloadError) Error() string { return e.Err.Error() }
func (e *ReloadError) Unwrap() error { return e.Err }

// TriggerCoalesced is the body of a webhook fire the trigger's debounce
// coalesced: no run was started.
type TriggerCoalesced struct {
	Status string `json:"status" enum:"coalesced"`
}

func (d *Deps) registerTriggers(g groups, maxBody int64) {
	for _, m := range []struct{ method, id string }{{http.MethodPost, "fireTrigger"}, {http.MethodPut, "fireTriggerPut"}} {
		huma.Register(g.v1, huma.Operation{
			OperationID: m.id, Method: m.method, Path: "/triggers/{name}",
			Summary: "Fire a webhook trigger (" + m.method + ")", Tags: []string{"triggers"},
			Description: "Starts a run of the named webhook trigger of the --triggers file, submitted as the principal " +
				"trigger:NAME. The request body (any JSON, or none) is the config's ${trigger.body…}; the trigger's " +
				"dedupe_header, when the request carries it, is the run's idempotency key (a repeat replays the run, 202). " +
				"A fire within the trigger's debounce_secs of the last run it started is 200 coalesced and starts nothing. " +
				"404 for a name that is no enabled webhook trigger (or a server without --triggers); 400 for a method " +
				"the trigger does not take, or a body its config cannot read.",
			DefaultStatus: http.StatusAccepted, MaxBodyBytes: maxBody,
			Errors: []int{400, 404, 409, 413, 422, 429, 503},
			Responses: map[string]*huma.Response{
				"200": {Description: "Coalesced by debounce_secs: no run was started.", Content: map[string]*huma.MediaType{
					"application/json": {Schema: g.v1.OpenAPI().Components.Schemas.Schema(reflectType[TriggerCoalesced](), true, "")},
				}},
			},
			Metadata: map[string]any{metaRole: auth.Operator, metaAction: "trigger.fire"},
		}, d.fireTrigger(m.method))
	}
	// The handler reads the body raw, as the trigger's config does, and it
	// may be empty; the document says what a caller sends and gets.
	item := g.v1.OpenAPI().Paths["/v1/triggers/{name}"]
	accepted := g.v1.OpenAPI().Components.Schemas.Schema(reflectType[SubmitResponse](), true, "")
	for _, op := range []*huma.Operation{item.Post, item.Put} {
		// In place: the registered handler shares the request body's
		// description, and reads Required from it.
		op.RequestBody.Required = false
		op.RequestBody.Content = map[string]*huma.MediaType{
			"application/json": {Schema: &huma.Schema{Description: "Any JSON value, or no body: the config reads it as ${trigger.body} and ${trigger.body.PATH}."}},
		}
		op.Responses["202"] = &huma.Response{Description: "A run was started, or replayed for a repeated dedupe_header value.", Content: map[string]*huma.MediaType{
			"application/json": {Schema: accepted},
		}}
	}

	huma.Register(g.v1, huma.Operation{
		OperationID: "reload", Method: http.MethodPost, Path: "/reload",
		Summary: "Re-read --default-config and --triggers", Tags: []string{"admin"},
		Description: "Reads and checks the --default-config and --triggers files again and swaps both in at once: " +
			"configs submitted from then on merge over the new defaults, and the new triggers replace the old " +
			"(a run loaded before keeps its config, and in a cluster a run is loaded by the member that claims it; a schedule or directory keeps its fired slots and files). " +
			"An invalid file is 422 naming the problem, and the files in force stay. Without either flag, 200 " +
			"with reloaded false. Audited as config.reload (config.reload.rejected, config.reload.noop). Admin only.",
		Errors:   []int{422},
		Metadata: map[string]any{metaRole: auth.Admin, metaAction: "config.reload", metaFileProblem: true},
	}, d.reload)
}

// fireTriggerInput is a webhook call: its body is the trigger's to read,
// whatever its content type.
type fireTriggerInput struct {
	Name    string `path:"name" maxLength:"128" doc:"The trigger's name in the --triggers file."`
	RawBody []byte
	header  http.Header
	query   url.Values
}

// Resolve keeps the request's headers and query, which the trigger's
// dedupe_header and its config's ${trigger.header.NAME} and
// ${trigger.query.NAME} read.
func (in *fireTriggerInput) Resolve(ctx huma.Context) []error {
	in.header = http.Header{}
	ctx.EachHeader(func(name, value string) {
		in.header.Add(textproto.CanonicalMIMEHeaderKey(name), value)
	})
	u := ctx.URL()
	in.query = u.Query()
	return nil
}

type fireTriggerOutput struct {
	Status int
	Body   any
}

// fireTrigger is the handler of a webhook call with method.
func (d *Deps) fireTrigger(method string) func(context.Context, *fireTriggerInput) (*fireTriggerOutput, error) {
	return func(ctx context.Context, in *fireTriggerInput) (*fireTriggerOutput, error) {
		return d.fire(ctx, method, in)
	}
}

func (d *Deps) fire(ctx context.Context, method string, in *fireTriggerInput) (*fireTriggerOutput, error) {
	if d.Triggers == nil {
		return nil, errNotFound("no webhook trigger " + in.Name + ": the server runs without --triggers")
	}
	fired, err := d.Triggers.Fire(ctx, in.Name, triggers.Call{
		Method: method, Header: in.header, Query: in.query, Body: in.RawBody, SourceIP: sourceIPFrom(ctx),
	})
	var callErr *triggers.CallError
	switch {
	case errors.Is(err, triggers.ErrUnknownTrigger):
		return nil, errNotFound("no enabled webhook trigger named " + in.Name)
	case errors.As(err, &callErr):
		return nil, errBadConfig(callErr.Error(), nil)
	case err != nil:
		return nil, d.serviceError(err)
	}
	if fired.Coalesced {
		return &fireTriggerOutput{Status: http.StatusOK, Body: TriggerCoalesced{Status: "coalesced"}}, nil
	}
	r := fired.Run
	return &fireTriggerOutput{Status: http.StatusAccepted, Body: SubmitResponse{
		RunID: r.RunID, Status: RunStatus(r.Status), SubmittedAt: r.SubmittedAt.UTC(), Replayed: r.Replayed, Warnings: r.Warnings,
	}}, nil
}

type reloadOutput struct {
	Body Reloaded
}

func (d *Deps) reload(ctx context.Context, _ *struct{}) (*reloadOutput, error) {
	p := principalFrom(ctx)
	if d.Reloader == nil {
		d.audit(ctx, p, "config.reload.noop", nil, nil, audit.ResultOK)
		return &reloadOutput{Body: Reloaded{Reason: "nothing to reload"}}, nil
	}
	out, err := d.Reloader.Reload(ctx)
	var rerr *ReloadError
	switch {
	case errors.As(err, &rerr):
		d.audit(ctx, p, "config.reload.rejected", nil, nil, audit.ResultOK)
		return nil, errUnprocessable(rerr.Error(), nil)
	case err != nil:
		return nil, d.serviceError(err)
	}
	action := "config.reload"
	if !out.Reloaded {
		action = "config.reload.noop"
	}
	d.audit(ctx, p, action, nil, nil, audit.ResultOK)
	return &reloadOutput{Body: out}, nil
}
