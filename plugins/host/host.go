// Package host runs connectors as plugin processes: it discovers them, starts
// them with go-plugin's handshake (gRPC only, a clean environment), keeps a
// pool of warm processes, detects crashes, and kills every child on Close.
// It gives the executor its sessions (pipeline.Connectors) and the config
// loader its schemas (pipeline.Catalog).
package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// PluginDirEnv names the environment variable listing plugin directories
// (separated like PATH).
const PluginDirEnv = "FAUCET_PLUGIN_DIR"

// Options configures a Host.
type Options struct {
	// PluginDirs are searched for plugin executables, in order. Missing
	// directories are skipped. See DefaultPluginDirs.
	PluginDirs []string
	// Executable is the faucet binary that serves the built-in connectors as
	// `Executable connector serve NAME`; default os.Executable().
	Executable string
	// Builtins are the Specs of the connectors compiled into Executable.
	Builtins []sdk.Spec
	// Env is passed to plugins on top of the minimal environment: "NAME=value"
	// entries as given, bare "NAME" entries copied from faucet's environment.
	// Plugins run with GOMAXPROCS=1 unless Env sets it.
	Env []string
	// Logger receives the host's and the plugins' logs; each plugin's lines
	// are tagged connector=<name>.
	Logger *slog.Logger
	// MaxIdle warm processes are kept per connector; 0 means 2, negative none.
	MaxIdle int
	// IdleTimeout stops a process idle that long; 0 means five minutes.
	IdleTimeout time.Duration
	// StartTimeout bounds a plugin's handshake; 0 means ten seconds.
	StartTimeout time.Duration
	// Stdout is where the stdout sink prints; default os.Stdout. Plugins
	// inherit it and write to it directly.
	Stdout *os.File
	// Nice, when positive, starts every plugin at that lower CPU priority
	// (through nice(1), so every thread of the plugin has it): a server
	// keeps answering its API promptly while pipelines saturate the CPU,
	// and the pipelines still get every cycle the API leaves.
	Nice int
	// Files, when set, returns what bounds the files connectors open
	// (faucet serve's file roots and its own files), asked at every call;
	// nil leaves them unconfined (faucet run). Plugins speaking a protocol
	// before 1.3 cannot be told.
	Files func() *sdk.Files
}

// DefaultPluginDirs returns the directories in FAUCET_PLUGIN_DIR followed by
// the per-user default, $XDG_DATA_HOME/faucet/plugins (or
// ~/.local/share/faucet/plugins). A --plugin-dir flag goes before them.
func DefaultPluginDirs() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv(PluginDirEnv)) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if data := os.Getenv("XDG_DATA_HOME"); data != "" {
		dirs = append(dirs, filepath.Join(data, "faucet", "plugins"))
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".local", "share", "faucet", "plugins"))
	}
	return dirs
}

// Connector is a connector the host found, identified by its Spec.
type Connector struct {
	sdk.Spec
	// Source and Sink say which roles it plays.
	Source, Sink bool
	// Path is the executable serving it.
	Path string
	// Builtin is true for the connectors compiled into faucet.
	Builtin bool
	// readsUpstream sinks read their source plugin directly.
	readsUpstream bool
	args          []string
}

// Host owns the plugin processes. It is safe for concurrent use.
type Host struct {
	opts       Options
	log        *slog.Logger
	connectors map[string]*Connector
	// nice is the nice(1) executable plugins start through; empty to start
	// them directly.
	nice string
	// unconfined holds the names of connectors warned about for not
	// receiving the file roots.
	unconfined sync.Map
	// access is the file access message calls carry, kept while
	// Options.Files returns the same Files.
	access atomic.Pointer[accessMsg]

	mu     sync.Mutex
	closed bool
	idle   map[string][]*proc
	busy   map[*proc]struct{}
	done   chan struct{}
	// pending counts the launches under way and the processes being
	// stopped in the background, so Close returns only once every process
	// it started has exited: none outlives the host. Each Add happens under
	// mu before closed is set, so none races Close's Wait.
	pending sync.WaitGroup
}

// New discovers the connectors: the built-ins, and every executable in the
// plugin directories, each started and asked for its Spec (a plugin's name
// is what its Spec says, never its file name). A plugin that fails the
// handshake is an error. Of two connectors with one name the first found is
// used, as a shell runs the first command on PATH: a built-in before any
// plugin, an earlier plugin directory before a later one, and within a
// directory the file that sorts first; the hidden one is logged as a
// warning. The processes started for discovery stay in the pool, warm.
func New(ctx context.Context, opts Options) (*Host, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxIdle == 0 {
		opts.MaxIdle = 2
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 5 * time.Minute
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Executable == "" && len(opts.Builtins) > 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locate the faucet binary for built-in connectors: %w", err)
		}
		opts.Executable = exe
	}
	h := &Host{
		opts:       opts,
		log:        opts.Logger,
		connectors: map[string]*Connector{},
		idle:       map[string][]*proc{},
		busy:       map[*proc]struct{}{},
		done:       make(chan struct{}),
	}
	for _, s := range opts.Builtins {
		h.connectors[s.Name] = &Connector{
			Spec: s, Source: len(s.SourceSchema) > 0, Sink: len(s.SinkSchema) > 0,
			Path: opts.Executable, Builtin: true, args: []string{"connector", "serve", s.Name},
			readsUpstream: len(s.SinkSchema) > 0,
		}
	}
	if opts.Nice > 0 {
		nice, err := exec.LookPath("nice")
		if err != nil {
			h.log.Warn("plugins run at normal CPU priority: nice(1) not found", "error", err)
		}
		h.nice = nice
	}
	go h.reap()
	if err := h.discover(ctx); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// discover asks every plugin executable in the plugin directories for its
// Spec, in parallel.
func (h *Host) discover(ctx context.Context) error {
	var paths []string
	for _, dir := range h.opts.PluginDirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("plugin directory: %w", err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
				continue
			}
			paths = append(paths, path)
		}
	}
	type found struct {
		c   *Connector
		p   *proc
		err error
	}
	results := make([]found, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Go(func() {
			c, p, err := h.identify(ctx, path)
			results[i] = found{c, p, err}
		})
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if prev, dup := h.connectors[r.c.Name]; dup {
			// Like a command on PATH: the built-in, then the first plugin
			// directory, wins; the one it hides is named, not fatal.
			used := prev.Path
			if prev.Builtin {
				used = "the built-in connector"
			}
			h.log.Warn("connector found twice; the first one found is used", "connector", r.c.Name, "using", used, "ignoring", r.c.Path)
			r.p.kill()
			continue
		}
		h.connectors[r.c.Name] = r.c
		h.mu.Lock()
		r.p.idle = time.Now()
		h.idle[r.c.Name] = append(h.idle[r.c.Name], r.p)
		h.mu.Unlock()
		h.log.Debug("plugin found", "connector", r.c.Name, "path", r.c.Path, "version", r.c.Version)
	}
	return errors.Join(errs...)
}

// identify starts the plugin at path and asks for its Spec.
func (h *Host) identify(ctx context.Context, path string) (*Connector, *proc, error) {
	p, err := h.launch(ctx, filepath.Base(path), path)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	defer cancel()
	resp, err := p.rpc.Spec(ctx, &connectorv1.SpecRequest{})
	if err != nil {
		p.kill()
		return nil, nil, fmt.Errorf("plugin %s: spec: %w", path, err)
	}
	c := &Connector{
		Spec: sdk.Spec{
			Name: resp.GetName(), Version: resp.GetVersion(), Description: resp.GetDescription(),
			SourceSchema: resp.GetSourceSchema(), SinkSchema: resp.GetSinkSchema(),
			Shardable: resp.GetCapabilities().GetShardable(), WriteModes: resp.GetCapabilities().GetWriteModes(),
			IndependentSessions: resp.GetCapabilities().GetIndependentSessions(),
			RejectsRecords:      resp.GetCapabilities().GetRejectsRecords(),
		},
		Source:        resp.GetKind() == connectorv1.Kind_KIND_SOURCE || resp.GetKind() == connectorv1.Kind_KIND_BOTH,
		Sink:          resp.GetKind() == connectorv1.Kind_KIND_SINK || resp.GetKind() == connectorv1.Kind_KIND_BOTH,
		Path:          path,
		readsUpstream: resp.GetCapabilities().GetReadsUpstream(),
	}
	switch {
	case c.Name == "":
		err = errors.New("its spec has no name")
	case !c.Source && !c.Sink:
		err = errors.New("its spec declares neither a source nor a sink")
	case c.Source && !json.Valid(c.SourceSchema), c.Sink && !json.Valid(c.SinkSchema):
		err = errors.New("its config schema is not valid JSON")
	}
	if err != nil {
		p.kill()
		return nil, nil, fmt.Errorf("plugin %s: %w", path, err)
	}
	p.out.name.Store(&c.Name)
	return c, p, nil
}

// Connectors lists every connector found, sorted by name.
func (h *Host) Connectors() []Connector {
	out := make([]Connector, 0, len(h.connectors))
	for _, c := range h.connectors {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Connector) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Lookup returns the connector with the given name.
func (h *Host) Lookup(name string) (Connector, bool) {
	c, ok := h.connectors[name]
	if !ok {
		return Connector{}, false
	}
	return *c, true
}

// ConnectorSchema implements pipeline.Catalog.
func (h *Host) ConnectorSchema(role pipeline.Role, name string) (json.RawMessage, bool) {
	c, ok := h.connectors[name]
	switch {
	case !ok:
		return nil, false
	case role == pipeline.RoleSource && c.Source:
		return c.SourceSchema, true
	case role == pipeline.RoleSink && c.Sink:
		return c.SinkSchema, true
	}
	return nil, false
}

// ConnectorNames implements pipeline.Catalog.
func (h *Host) ConnectorNames(role pipeline.Role) []string {
	var names []string
	for name, c := range h.connectors {
		if (role == pipeline.RoleSource && c.Source) || (role == pipeline.RoleSink && c.Sink) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Close kills every plugin process, idle or busy, and waits until they are
// gone. Sessions still open fail.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	var all []*proc
	for _, ps := range h.idle {
		all = append(all, ps...)
	}
	for p := range h.busy {
		all = append(all, p)
	}
	h.idle = map[string][]*proc{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Go(p.kill)
	}
	wg.Wait()
	h.pending.Wait()
	return nil
}

// connector resolves a name for a role, with the error the executor reports.
func (h *Host) connector(name string, role pipeline.Role) (*Connector, error) {
	c, ok := h.connectors[name]
	if !ok || (role == pipeline.RoleSource && !c.Source) || (role == pipeline.RoleSink && !c.Sink) {
		return nil, fmt.Errorf("unknown %s connector %q (known: %s)", role, name, strings.Join(h.ConnectorNames(role), ", "))
	}
	return c, nil
}
