package triggers

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
)

// The kinds of trigger; the history keeps the fires of the two a server
// watches itself.
const (
	KindWebhook       = "webhook"
	KindObjectArrival = db.TriggerKindObjectArrival
	KindSchedule      = db.TriggerKindSchedule
)

//go:embed triggers.schema.json
var schemaJSON []byte

// Schema returns the JSON Schema of the triggers file format (version 1),
// which `faucet schema triggers` prints.
func Schema() json.RawMessage { return append(json.RawMessage(nil), schemaJSON...) }

var fileSchema = sync.OnceValue(func() *pipeline.DocumentSchema {
	s, err := pipeline.CompileSchema("triggers-v1", schemaJSON)
	if err != nil {
		panic(fmt.Sprintf("embedded triggers schema: %v", err))
	}
	return s
})

// Bounds of what a triggers file refers to.
const (
	// MaxFileBytes bounds the triggers file and every config file it names.
	MaxFileBytes = 4 << 20
	// defaultPoll is object_arrival's poll_interval_secs when unset.
	defaultPoll = 30 * time.Second
)

// Trigger is one trigger of a triggers file, checked and compiled.
type Trigger struct {
	Name    string
	Kind    string
	Enabled bool

	// config is the pipeline config the trigger runs, parsed; configName
	// names it in problems (its file, or the trigger's config key).
	config     *pipeline.Document
	configName string
	// inlineAt is where an inline config stands in the triggers file; nil
	// for a config file.
	inlineAt []any
	runName  string
	labels   map[string]string
	timeout  *int64

	// webhook
	methods      []string
	dedupeHeader string
	debounce     time.Duration

	// object_arrival
	dir       string
	glob      string
	poll      time.Duration
	beginning bool

	// schedule
	cronSpec string
	schedule cron.Schedule
	location *time.Location

	// fingerprint identifies the settings that decide which events the
	// trigger fires for: a change re-arms it (see db.TriggerStore.TriggerArm).
	fingerprint string
}

// Set is the triggers of one file, in the file's order.
type Set struct {
	// Path is the file they were read from.
	Path     string
	Triggers []*Trigger
	// doc is the file, which places the problems of inline configs.
	doc *pipeline.Document
}

// Lookup returns the trigger called name.
func (s *Set) Lookup(name string) *Trigger {
	if s == nil {
		return nil
	}
	for _, t := range s.Triggers {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// fileDoc is the triggers file's shape once its schema has checked it.
type fileDoc struct {
	Version  int       `json:"version"`
	Triggers []specDoc `json:"triggers"`
}

type specDoc struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Enabled *bool  `json:"enabled"`
	Config  any    `json:"config"`
	Run     struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		TimeoutSecs *int64            `json:"timeout_secs"`
	} `json:"run"`

	Methods      []string `json:"methods"`
	DedupeHeader string   `json:"dedupe_header"`
	DebounceSecs int64    `json:"debounce_secs"`

	Store *struct {
		Path string `json:"path"`
		Glob string `json:"glob"`
	} `json:"store"`
	PollIntervalSecs *float64 `json:"poll_interval_secs"`
	StartAt          string   `json:"start_at"`

	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
}

// Load reads, checks and compiles a triggers file and the pipeline configs
// it names. Every problem comes back at once, as pipeline.ConfigErrors
// naming its file, line and column (ConfigProblems lists them).
func Load(file string) (*Set, error) {
	data, err := readBounded(file)
	if err != nil {
		return nil, fmt.Errorf("read triggers file: %w", err)
	}
	return parse(data, file)
}

// parse is Load for a file's contents; file names it and anchors its
// relative paths.
func parse(data []byte, file string) (*Set, error) {
	format := pipeline.FormatYAML
	if strings.EqualFold(filepath.Ext(file), ".json") {
		format = pipeline.FormatJSON
	}
	doc, err := pipeline.ParseDocument(data, format)
	if err != nil {
		return nil, located(file, err)
	}
	if err := doc.Check(fileSchema()); err != nil {
		return nil, located(file, err)
	}
	raw, err := json.Marshal(doc.Tree())
	if err != nil {
		return nil, fmt.Errorf("triggers file %s: %w", file, err)
	}
	var fd fileDoc
	if err := json.Unmarshal(raw, &fd); err != nil {
		return nil, fmt.Errorf("triggers file %s: %w", file, err)
	}
	c := compiler{doc: doc, file: file, dir: filepath.Dir(file)}
	set := &Set{Path: file, doc: doc}
	seen := map[string]int{}
	for i, sd := range fd.Triggers {
		if prev, ok := seen[sd.Name]; ok {
			c.problem(fmt.Sprintf("trigger name %q is used by triggers[%d] already", sd.Name, prev), "triggers", i, "name")
			continue
		}
		seen[sd.Name] = i
		if t := c.trigger(i, sd); t != nil {
			set.Triggers = append(set.Triggers, t)
		}
	}
	if len(c.probs) > 0 {
		return nil, c.probs
	}
	return set, nil
}

// located names file in every problem err carries.
func located(file string, err error) error {
	probs := pipeline.ConfigProblems(err)
	if probs == nil {
		return fmt.Errorf("triggers file %s: %w", file, err)
	}
	for _, p := range probs {
		if p.File == "" {
			p.File = file
		}
	}
	return pipeline.ConfigErrors(probs)
}

// readBounded reads a file of at most MaxFileBytes.
func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, MaxFileBytes+1)
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			break
		}
	}
	if n > MaxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, MaxFileBytes)
	}
	return buf[:n], nil
}

// compiler carries the problems of one file.
type compiler struct {
	doc   *pipeline.Document
	file  string
	dir   string
	probs pipeline.ConfigErrors
}

func (c *compiler) problem(msg string, at ...any) {
	p := c.doc.Problem(msg, at...)
	p.File = c.file
	c.probs = append(c.probs, p)
}

// cronParser reads five fields, or six with leading seconds, and the
// descriptors; @every is refused separately: its slots depend on when it
// is asked, so members would not agree on them.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func (c *compiler) trigger(i int, sd specDoc) *Trigger {
	at := func(elems ...any) []any { return append([]any{"triggers", i}, elems...) }
	t := &Trigger{Name: sd.Name, Kind: sd.Type, Enabled: sd.Enabled == nil || *sd.Enabled, runName: sd.Run.Name, labels: sd.Run.Labels, timeout: sd.Run.TimeoutSecs}
	if t.runName == "" {
		t.runName = "{name}"
	}
	ok := c.config(t, sd.Config, at("config"))
	fp := []string{t.Kind}
	switch t.Kind {
	case KindWebhook:
		t.methods = sd.Methods
		if len(t.methods) == 0 {
			t.methods = []string{"POST"}
		}
		t.dedupeHeader = sd.DedupeHeader
		if h := strings.ToLower(t.dedupeHeader); secretHeaders[h] {
			c.problem(fmt.Sprintf("dedupe_header %s carries credentials, which would be stored as the runs' idempotency key", t.dedupeHeader), at("dedupe_header")...)
			ok = false
		}
		t.debounce = time.Duration(sd.DebounceSecs) * time.Second
	case KindObjectArrival:
		t.dir = sd.Store.Path
		if !filepath.IsAbs(t.dir) {
			t.dir = filepath.Join(c.dir, t.dir)
		}
		t.dir = filepath.Clean(t.dir)
		t.glob = sd.Store.Glob
		if t.glob == "" {
			t.glob = "*"
		}
		if _, err := path.Match(t.glob, ""); err != nil || strings.HasPrefix(t.glob, "/") || strings.Contains("/"+t.glob+"/", "/../") {
			c.problem(fmt.Sprintf("glob %q is not a pattern of paths inside the directory", t.glob), at("store", "glob")...)
			ok = false
		}
		t.poll = defaultPoll
		if sd.PollIntervalSecs != nil {
			t.poll = time.Duration(*sd.PollIntervalSecs * float64(time.Second))
		}
		t.beginning = sd.StartAt == "beginning"
		fp = append(fp, t.dir, t.glob, sd.StartAt)
	case KindSchedule:
		t.cronSpec = strings.TrimSpace(sd.Cron)
		tz := sd.Timezone
		if tz == "" {
			tz = "UTC"
		}
		loc, err := time.LoadLocation(tz)
		if err != nil {
			c.problem(fmt.Sprintf("timezone %q is not an IANA time zone (such as Europe/Berlin or UTC)", tz), at("timezone")...)
			ok = false
		}
		t.location = loc
		switch {
		case strings.HasPrefix(t.cronSpec, "@every"):
			c.problem("@every is not supported: its slots depend on when the server asks, so cluster members would not agree on them; write a cron expression (every 5 minutes: \"*/5 * * * *\")", at("cron")...)
			ok = false
		case strings.HasPrefix(t.cronSpec, "TZ=") || strings.HasPrefix(t.cronSpec, "CRON_TZ="):
			c.problem("cron carries a time zone: set it in timezone instead", at("cron")...)
			ok = false
		default:
			sched, err := cronParser.Parse(t.cronSpec)
			if err != nil {
				c.problem(fmt.Sprintf("cron %q does not parse: %v (want minute hour day-of-month month day-of-week, an optional leading seconds field, or @daily and the like)", t.cronSpec, err), at("cron")...)
				ok = false
				break
			}
			// The parser reads the expression in the process's zone;
			// the trigger's is the one it means.
			if spec, isSpec := sched.(*cron.SpecSchedule); isSpec && loc != nil {
				spec.Location = loc
			}
			t.schedule = sched
		}
		fp = append(fp, t.cronSpec, tz)
	}
	if !ok {
		return nil
	}
	sum := sha256.Sum256([]byte(strings.Join(fp, "\x00")))
	t.fingerprint = hex.EncodeToString(sum[:])
	return t
}

// config reads the pipeline config a trigger names, and checks the
// ${trigger.*} references in it against the trigger's kind.
func (c *compiler) config(t *Trigger, v any, at []any) bool {
	var doc *pipeline.Document
	var err error
	switch x := v.(type) {
	case string:
		name := x
		if !filepath.IsAbs(name) {
			name = filepath.Join(c.dir, name)
		}
		t.configName = name
		data, rerr := readBounded(name)
		if rerr != nil {
			c.problem(fmt.Sprintf("read the pipeline config: %v", rerr), at...)
			return false
		}
		format := pipeline.FormatAuto
		switch strings.ToLower(filepath.Ext(name)) {
		case ".json":
			format = pipeline.FormatJSON
		case ".yaml", ".yml":
			format = pipeline.FormatYAML
		}
		if doc, err = pipeline.ParseDocument(data, format); err != nil {
			for _, p := range pipeline.ConfigProblems(err) {
				p.File = name
				c.probs = append(c.probs, p)
			}
			return false
		}
	case map[string]any:
		t.configName = c.file + ": " + pipeline.PathString(at...)
		t.inlineAt = at
		raw, merr := json.Marshal(x)
		if merr == nil {
			doc, err = pipeline.ParseDocument(raw, pipeline.FormatJSON)
		}
		if merr != nil || err != nil {
			c.problem(fmt.Sprintf("the inline config does not parse: %v", errors.Join(merr, err)), at...)
			return false
		}
	}
	t.config = doc
	ok := true
	for _, r := range references(doc.Tree(), nil) {
		if msg := refProblem(t.Kind, r.name); msg != "" {
			ok = false
			if _, inline := v.(map[string]any); inline {
				c.problem(msg, append(at, r.at...)...)
				continue
			}
			p := doc.Problem(msg, r.at...)
			p.File = t.configName
			c.probs = append(c.probs, p)
		}
	}
	return ok
}

// secretHeaders carry credentials: no config may read them, and none is an
// idempotency key.
var secretHeaders = map[string]bool{"authorization": true, "proxy-authorization": true, "cookie": true}
