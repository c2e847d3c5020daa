// Package templates is faucet serve's pipeline template registry: a config
// registered once under an id, in immutable numbered versions, with
// channels pointing at versions, one launched (live) version, rollback,
// deprecation, and runs triggered from a version with params. The Service
// holds the rules every front end shares (the HTTP API, the CLI through it,
// and callers in Go); the store keeps the registry, and triggered runs are
// admitted through the same path as every submitted run.
package templates

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/audit"
)

// Loader loads a pipeline config the way a submitted run's config is
// loaded (the server's defaults, environment and connector catalog).
type Loader interface {
	Load(config []byte, format string) (*pipeline.Plan, error)
}

// Submitter admits a run through the path every submitted run takes: a
// queue slot, the idempotency key, the run record with its audit entry.
type Submitter interface {
	Submit(ctx context.Context, r Run) (Accepted, error)
}

// SubmitFunc is a Submitter as a function.
type SubmitFunc func(ctx context.Context, r Run) (Accepted, error)

// Submit calls f.
func (f SubmitFunc) Submit(ctx context.Context, r Run) (Accepted, error) { return f(ctx, r) }

// Run is a run triggered from a template version, for the Submitter.
type Run struct {
	// Config is the version's document with its params bound, as JSON.
	Config string
	// TemplateID and Version name what produced Config.
	TemplateID string
	Version    int
	// Secrets are the values of secret params that Config holds.
	Secrets []string
	// Fingerprint stands for Config in the audit entry and the idempotency
	// claim: the fingerprint of Config with secrets masked.
	Fingerprint    string
	Name           *string
	Labels         map[string]string
	TimeoutSecs    *int64
	DoctorFirst    bool
	IdempotencyKey *string
	Clock          *string
	Concurrency    *int
	// Actor is who submits, for the submission's audit entry.
	Actor *audit.Actor
}

// Accepted is an admitted (or, for a repeated idempotency key, replayed)
// run.
type Accepted struct {
	RunID       string
	Status      db.RunStatus
	SubmittedAt time.Time
	Replayed    bool
	Warnings    []string
}

// Config configures a Service.
type Config struct {
	Store  db.TemplateStore
	Loader Loader
	// Submitter admits triggered runs.
	Submitter Submitter
	// Clustered says runs are stored whole for the member that claims them:
	// a template with secret params is refused, since its values would be
	// stored with the run.
	Clustered bool
	Log       *slog.Logger
}

// Service is the registry.
type Service struct {
	cfg Config
	log *slog.Logger
}

// New returns a Service.
func New(cfg Config) *Service {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: log}
}

// Bounds of request fields.
const (
	MaxDescriptionLen = 1024
	MaxReasonLen      = 1024
)

// RegisterRequest registers a new version.
type RegisterRequest struct {
	// ID is the template's id; empty derives it from the config's name.
	ID string
	// Config is the document, stored exactly as given.
	Config string
	// Format is yaml (when empty) or json.
	Format      string
	Description *string
	// Tags are channels to point at the new version.
	Tags []string
	// Launch makes the new version the live one.
	Launch bool
	By     *string
}

// Register checks a template's document (its params, its references to
// them, and the pipeline it makes with placeholder values) and stores it
// as the template's next version.
func (s *Service) Register(ctx context.Context, req RegisterRequest) (db.TemplateVersion, error) {
	format := req.Format
	if format == "" {
		format = db.TemplateFormatYAML
	}
	if format != db.TemplateFormatYAML && format != db.TemplateFormatJSON {
		return db.TemplateVersion{}, unprocessable("config_format %q: want yaml or json", format)
	}
	if req.Description != nil && len(*req.Description) > MaxDescriptionLen {
		return db.TemplateVersion{}, unprocessable("description: longer than %d bytes", MaxDescriptionLen)
	}
	doc, err := pipeline.ParseDocument([]byte(req.Config), pipeline.Format(format))
	if err != nil {
		return db.TemplateVersion{}, badConfig(pipeline.ConfigProblems(err))
	}
	root, ok := doc.Tree().(map[string]any)
	if !ok {
		return db.TemplateVersion{}, badConfig([]*pipeline.ConfigError{doc.Problem("a template is a pipeline config: an object with version and pipeline")})
	}
	params, probs := declared(doc)
	if len(probs) > 0 {
		return db.TemplateVersion{}, badConfig(probs)
	}
	if secret := params.secret(); s.cfg.Clustered && len(secret) > 0 {
		return db.TemplateVersion{}, unprocessable("the template declares secret param(s) %s, which a clustered server cannot take: "+
			"a run is stored whole for the member that claims it, so the value would be stored too; "+
			"read the secret from the claiming member's environment instead (${env:NAME} in the config)", strings.Join(secret, ", "))
	}
	name, _ := root["name"].(string)
	id := req.ID
	if id == "" {
		if id = slug(name); id == "" {
			return db.TemplateVersion{}, unprocessable("no template id given, and the config has no name to derive one from")
		}
	}
	if err := db.CheckTemplateID(id); err != nil {
		return db.TemplateVersion{}, unprocessable("%s", err)
	}
	tags, err := assignable(req.Tags)
	if err != nil {
		return db.TemplateVersion{}, err
	}
	if err := s.check(doc, params); err != nil {
		return db.TemplateVersion{}, err
	}
	decls, err := json.Marshal(params)
	if err != nil {
		return db.TemplateVersion{}, fmt.Errorf("encode params: %w", err)
	}
	d := db.TemplateDraft{
		ID: id, Description: req.Description, Format: format, Body: req.Config, Params: decls,
		CreatedBy: req.By, Tags: tags, Launch: req.Launch,
	}
	if name != "" {
		d.Name = &name
	}
	v, err := s.cfg.Store.TemplateRegister(ctx, d)
	if err != nil {
		return db.TemplateVersion{}, storeError(err)
	}
	s.log.Info("template registered", "template", id, "version", v.Version, "launched", req.Launch, "principal", deref(req.By))
	return v, nil
}

// assignable reads the channels of a register: each at most once, none
// derived.
func assignable(raw []string) ([]string, error) {
	var out []string
	for _, r := range raw {
		c, err := ParseAssignable(r)
		if err != nil {
			return nil, unprocessable("tags: %s", err)
		}
		if contains(out, c) {
			return nil, conflict("tags: channel %s is named twice; a channel points at one version", c)
		}
		out = append(out, c)
	}
	return out, nil
}

// check loads the pipeline the document makes with placeholder values for
// the params nothing gives a value to yet, reporting what is wrong where it
// stands in the document. A problem with a value a param went into is left
// for the trigger that binds a real value to find.
func (s *Service) check(doc *pipeline.Document, params Params) error {
	bound, err := params.bind(nil, true)
	if err != nil {
		return fmt.Errorf("bind placeholders: %w", err)
	}
	tree, used, probs := bindDocument(doc, bound.Values)
	if len(probs) > 0 {
		return badConfig(probs)
	}
	body, err := encode(tree)
	if err != nil {
		return err
	}
	if _, err := s.cfg.Loader.Load(body, db.TemplateFormatJSON); err != nil {
		problems := pipeline.ConfigProblems(err)
		if problems == nil {
			return fmt.Errorf("load the template's pipeline: %w", err)
		}
		if problems = without(problems, used); len(problems) > 0 {
			doc.Place(problems)
			return badConfig(problems)
		}
	}
	return nil
}

// encode is tree as JSON, keys sorted.
func encode(tree map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// slug derives an id from a config's name: lowercase letters and digits,
// every run of other characters one "-", at most db.MaxTemplateIDLen
// characters.
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
			if b.Len() >= db.MaxTemplateIDLen {
				break
			}
			continue
		}
		dash = true
	}
	return b.String()
}

// checkID refuses a path's id the registry could not hold.
func checkID(id string) error {
	if err := db.CheckTemplateID(id); err != nil {
		return unprocessable("%s", err)
	}
	return nil
}

// List returns the newest version of every template with its state,
// newest registered first; deprecated templates only when asked.
func (s *Service) List(ctx context.Context, includeDeprecated bool) ([]db.TemplateSummary, error) {
	out, err := s.cfg.Store.TemplateList(ctx, db.TemplateListFilter{IncludeDeprecated: includeDeprecated})
	return out, storeError(err)
}

// Get returns the version sel picks, with the template's state.
func (s *Service) Get(ctx context.Context, id string, sel Selector) (db.TemplateDetail, error) {
	if err := checkID(id); err != nil {
		return db.TemplateDetail{}, err
	}
	v, err := s.version(ctx, id, sel)
	if err != nil {
		return db.TemplateDetail{}, err
	}
	d, err := s.cfg.Store.TemplateGet(ctx, id, v)
	return d, storeError(err)
}

// version resolves sel against the template's state; a pinned version is
// checked by whatever reads it next.
func (s *Service) version(ctx context.Context, id string, sel Selector) (int, error) {
	if sel.Version > 0 {
		return sel.Version, nil
	}
	st, err := s.cfg.Store.TemplateState(ctx, id)
	if err != nil {
		return 0, storeError(err)
	}
	return resolve(id, st, sel)
}

// Delete deletes the version sel picks, with what points at it, or with a
// nil sel the whole template.
func (s *Service) Delete(ctx context.Context, id string, sel *Selector, by *string) error {
	if err := checkID(id); err != nil {
		return err
	}
	var version *int
	if sel != nil {
		v, err := s.version(ctx, id, *sel)
		if err != nil {
			return err
		}
		version = &v
	}
	if err := storeError(s.cfg.Store.TemplateDelete(ctx, id, version)); err != nil {
		return err
	}
	s.log.Info("template deleted", "template", id, "version", deref(version), "principal", deref(by))
	return nil
}

// Promote points an assignable channel at the version target picks, and
// returns that version. A channel never follows a target that moves later.
func (s *Service) Promote(ctx context.Context, id, channel string, target Selector, by *string) (string, int, error) {
	if err := checkID(id); err != nil {
		return "", 0, err
	}
	c, err := ParseAssignable(channel)
	if err != nil {
		return "", 0, unprocessable("tag: %s", err)
	}
	v, err := s.version(ctx, id, target)
	if err != nil {
		return "", 0, err
	}
	if err := storeError(s.cfg.Store.TemplateTag(ctx, id, c, v, by)); err != nil {
		return "", 0, err
	}
	s.log.Info("template channel promoted", "template", id, "channel", c, "version", v, "principal", deref(by))
	return c, v, nil
}

// Launch makes the version target picks the live one. The zero Selector
// is stable, which is live already: a caller launching what it just
// registered passes Channel(Newest).
func (s *Service) Launch(ctx context.Context, id string, target Selector, by *string) (db.LaunchOutcome, error) {
	if err := checkID(id); err != nil {
		return db.LaunchOutcome{}, err
	}
	v, err := s.version(ctx, id, target)
	if err != nil {
		return db.LaunchOutcome{}, err
	}
	out, err := s.cfg.Store.TemplateLaunch(ctx, id, v, by)
	if err != nil {
		return db.LaunchOutcome{}, storeError(err)
	}
	s.log.Info("template launched", "template", id, "version", out.Version, "already_launched", out.AlreadyLaunched, "principal", deref(by))
	return out, nil
}

// Rollback launches the previous version.
func (s *Service) Rollback(ctx context.Context, id string, by *string) (db.LaunchOutcome, error) {
	if err := checkID(id); err != nil {
		return db.LaunchOutcome{}, err
	}
	out, err := s.cfg.Store.TemplateRollback(ctx, id, by)
	if err != nil {
		return db.LaunchOutcome{}, storeError(err)
	}
	s.log.Info("template rolled back", "template", id, "version", out.Version, "principal", deref(by))
	return out, nil
}

// Deprecate retires the template, or the version sel picks (nil: the
// template), for reason; undo revives it. It returns the template's status
// after the change.
func (s *Service) Deprecate(ctx context.Context, id string, sel *Selector, reason *string, undo bool, by *string) (db.TemplateStatus, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	if reason != nil && len(*reason) > MaxReasonLen {
		return "", unprocessable("reason: longer than %d bytes", MaxReasonLen)
	}
	var version *int
	if sel != nil {
		v, err := s.version(ctx, id, *sel)
		if err != nil {
			return "", err
		}
		version = &v
	}
	var d *db.TemplateDeprecation
	if !undo {
		d = &db.TemplateDeprecation{DeprecatedBy: by, Reason: reason}
	}
	if err := storeError(s.cfg.Store.TemplateDeprecate(ctx, id, version, d)); err != nil {
		return "", err
	}
	st, err := s.cfg.Store.TemplateState(ctx, id)
	if err != nil {
		return "", storeError(err)
	}
	s.log.Info("template deprecation changed", "template", id, "version", deref(version), "deprecated", !undo, "principal", deref(by))
	return st.Status(), nil
}

// TriggerRequest triggers a run from a template version.
type TriggerRequest struct {
	// Version picks the version; the zero Selector is stable.
	Version Selector
	// Params are the values of the declared params: strings, numbers
	// (float64 or json.Number) and booleans, converted to the declared
	// types.
	Params map[string]any
	// The rest is the submission's, as for any run; Name defaults to the
	// name of the config the params were bound into.
	Name           *string
	Labels         map[string]string
	TimeoutSecs    *int64
	DoctorFirst    bool
	IdempotencyKey *string
	Clock          *string
	Concurrency    *int
	Actor          *audit.Actor
}

// Triggered is a run triggered from a template.
type Triggered struct {
	Accepted
	TemplateID string
	Version    int
	// Params are the bound values, secret ones masked.
	Params map[string]any
}

// Trigger binds params into the version req.Version picks and submits the
// result as a run. A deprecated template or version refuses, naming the
// deprecation; a param that cannot be used is a BadConfig naming it.
func (s *Service) Trigger(ctx context.Context, id string, req TriggerRequest) (Triggered, error) {
	if err := checkID(id); err != nil {
		return Triggered{}, err
	}
	v, err := s.version(ctx, id, req.Version)
	if err != nil {
		return Triggered{}, err
	}
	detail, err := s.cfg.Store.TemplateGet(ctx, id, v)
	if err != nil {
		return Triggered{}, storeError(err)
	}
	st := detail.State
	if st.Deprecation != nil {
		return Triggered{}, storeError(&db.DeprecatedError{ID: id, Deprecation: *st.Deprecation})
	}
	if d, ok := st.VersionDeprecations[v]; ok {
		return Triggered{}, storeError(&db.DeprecatedError{ID: id, Version: &v, Deprecation: d})
	}
	var params Params
	if err := json.Unmarshal(detail.Version.Params, &params); err != nil {
		return Triggered{}, fmt.Errorf("decode params of template %s version %d: %w", id, v, err)
	}
	if secret := params.secret(); s.cfg.Clustered && len(secret) > 0 {
		return Triggered{}, unprocessable("template %s version %d declares secret param(s) %s, which a clustered server cannot take: "+
			"the run is stored whole for the member that claims it", id, v, strings.Join(secret, ", "))
	}
	bound, err := params.bind(req.Params, false)
	var perr *ParamError
	if errors.As(err, &perr) {
		return Triggered{}, &Error{Kind: BadConfig, Msg: perr.Error(), err: err}
	}
	if err != nil {
		return Triggered{}, err
	}
	for _, k := range []string{LabelTemplate, LabelTemplateVersion} {
		if _, ok := req.Labels[k]; ok {
			return Triggered{}, &Error{Kind: BadConfig, Msg: fmt.Sprintf("labels.%s: set by the trigger, from the template version", k)}
		}
	}
	doc, err := pipeline.ParseDocument([]byte(detail.Version.Body), pipeline.Format(detail.Version.Format))
	if err != nil {
		return Triggered{}, fmt.Errorf("parse template %s version %d: %w", id, v, err)
	}
	config, err := materialize(doc, bound.Values)
	if err != nil {
		return Triggered{}, err
	}
	masked, err := materialize(doc, bound.Redacted())
	if err != nil {
		return Triggered{}, err
	}
	sum := sha256.Sum256(masked)
	acc, err := s.cfg.Submitter.Submit(ctx, Run{
		Config: string(config), TemplateID: id, Version: v, Secrets: bound.SecretValues(),
		Fingerprint: hex.EncodeToString(sum[:]), Name: req.Name, Labels: req.Labels, TimeoutSecs: req.TimeoutSecs,
		DoctorFirst: req.DoctorFirst, IdempotencyKey: req.IdempotencyKey, Clock: req.Clock,
		Concurrency: req.Concurrency, Actor: req.Actor,
	})
	if err != nil {
		// A value a param gave the pipeline is wrong: say where the
		// template's text has it, not where the bound JSON does.
		doc.Place(pipeline.ConfigProblems(err))
		return Triggered{}, err
	}
	s.log.Info("template run submitted", "template", id, "version", v, "run_id", acc.RunID, "replayed", acc.Replayed)
	return Triggered{Accepted: acc, TemplateID: id, Version: v, Params: bound.Redacted()}, nil
}

// The labels a template-triggered run carries on the wire, for faucet
// clients that find a run's template there.
const (
	LabelTemplate        = "template"
	LabelTemplateVersion = "template_version"
)

// materialize is doc with values bound, as JSON.
func materialize(doc *pipeline.Document, values map[string]any) ([]byte, error) {
	tree, _, probs := bindDocument(doc, values)
	if len(probs) > 0 {
		// Registration found every reference declared.
		return nil, fmt.Errorf("bind params: %w", pipeline.ConfigErrors(probs))
	}
	return encode(tree)
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
