package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/faucet-dev/faucet/plugins/builtin/stdout"
	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// proc is one running plugin process.
type proc struct {
	// out routes what the process logs: to the session using it, or to the
	// host's log while it is idle.
	out    *output
	client *plugin.Client
	cmd    *exec.Cmd
	rpc    connectorv1.ConnectorServiceClient
	// version is the connector protocol version negotiated with it.
	version int
	tail    *tail
	idle    time.Time
	// peer is the process this one last exchanged records with directly
	// (source and sink of a pipe), guarded by the host's mu.
	peer *proc

	mu     sync.Mutex
	broken bool
}

// markBroken keeps the process from going back to the pool.
func (p *proc) markBroken() {
	p.mu.Lock()
	p.broken = true
	p.mu.Unlock()
}

func (p *proc) isBroken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken || p.client.Exited()
}

// exited waits up to d for the process to end and, if it did, returns why:
// its exit status and the panic or fatal error it printed, if any.
func (p *proc) exited(d time.Duration) (string, bool) {
	deadline := time.Now().Add(d)
	for !p.client.Exited() {
		if time.Now().After(deadline) {
			return "", false
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.markBroken()
	cause := "exited"
	if ps := p.cmd.ProcessState; ps != nil {
		cause = ps.String()
	}
	if line := p.tail.fatal(); line != "" {
		cause += ": " + line
	}
	return cause, true
}

// kill stops the process: gracefully if it answers, by force after that.
func (p *proc) kill() {
	p.markBroken()
	p.client.Kill()
}

// launch starts a plugin process and completes the handshake.
func (h *Host) launch(ctx context.Context, label, path string, args ...string) (*proc, error) {
	cmd := exec.Command(path, args...)
	if h.nice != "" {
		cmd = exec.Command(h.nice, append([]string{"-n", strconv.Itoa(h.opts.Nice), path}, args...)...)
	}
	cmd.Env = h.env()
	// The stdout sink writes straight to faucet's own standard output.
	cmd.ExtraFiles = []*os.File{h.opts.Stdout}
	cmd.Env = append(cmd.Env, stdout.FDEnv+"=3")
	dieWithParent(cmd)

	out := newOutput(h.log, label, append([]string{path}, args...), h.nice)
	t := &tail{}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		VersionedPlugins: protocol.PluginSets(nil),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     h.opts.StartTimeout,
		Stderr:           &lineWriter{emit: t.add},
		// What a plugin prints to os.Stdout or os.Stderr once serving is
		// relayed by go-plugin; it becomes log lines too.
		SyncStdout:      out.stream("stdout"),
		SyncStderr:      out.stream("stderr"),
		Logger:          out.hclog(),
		GRPCDialOptions: protocol.DialOptions(),
	})
	p := &proc{out: out, client: client, cmd: cmd, tail: t}
	fail := func(err error) (*proc, error) {
		client.Kill()
		if line := t.fatal(); line != "" {
			err = fmt.Errorf("%w: %s", err, line)
		}
		return nil, err
	}
	conn, err := client.Client()
	if err != nil {
		return fail(fmt.Errorf("plugin %s: handshake: %w", path, err))
	}
	version := client.NegotiatedVersion()
	if version < protocol.Version1 || version > protocol.Latest {
		return fail(fmt.Errorf("plugin %s: speaks connector protocol %d, faucet speaks %d to %d", path, version, protocol.Version1, protocol.Latest))
	}
	raw, err := conn.Dispense(protocol.PluginName)
	if err != nil {
		return fail(fmt.Errorf("plugin %s: %w", path, err))
	}
	rpc, ok := raw.(connectorv1.ConnectorServiceClient)
	if !ok {
		return fail(fmt.Errorf("plugin %s: unexpected client type %T", path, raw))
	}
	p.rpc, p.version = rpc, version
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	h.log.Debug("plugin started", "connector", label, "path", path, "pid", cmd.Process.Pid, "protocol", version)
	return p, nil
}

// pluginProcs is the GOMAXPROCS a plugin runs with unless Options.Env sets
// one. A plugin serves one session at a time, and a short session is a
// handful of goroutine hand-offs (gRPC reader, writer, handler): with more
// than one P each hand-off wakes an idle thread that spins looking for work
// and parks again, which cost a trivial run more CPU than its records did.
// One P keeps a large transfer's throughput, since the source, the sink and
// faucet are separate processes that already run in parallel.
const pluginProcs = "GOMAXPROCS=1"

// env is the whole environment of a plugin: the minimum a process needs plus
// what faucet's configuration passes on (which wins over pluginProcs: a
// process takes the last of duplicate entries). Nothing else leaks from
// faucet's own environment (credentials, tokens).
func (h *Host) env() []string {
	env := []string{pluginProcs}
	for _, name := range []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LC_ALL", "USER"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for _, kv := range h.opts.Env {
		if strings.Contains(kv, "=") {
			env = append(env, kv)
		} else if v, ok := os.LookupEnv(kv); ok {
			env = append(env, kv+"="+v)
		}
	}
	return env
}

// checkout hands out an idle process of the connector, the one last paired
// with peer if there is one, or starts one. The caller has it exclusively
// until checkin.
func (h *Host) checkout(ctx context.Context, c *Connector, peer *proc) (*proc, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errors.New("plugin host is closed")
	}
	for idle := h.idle[c.Name]; len(idle) > 0; idle = h.idle[c.Name] {
		// The most recently used process, unless peer's partner is idle: a
		// sink keeps its connection to the source it read last.
		i := len(idle) - 1
		if peer != nil {
			if j := slices.IndexFunc(idle, func(p *proc) bool { return p.peer == peer }); j >= 0 {
				i = j
			}
		}
		p := idle[i]
		h.idle[c.Name] = slices.Delete(idle, i, i+1)
		if !p.isBroken() {
			h.busy[p] = struct{}{}
			h.mu.Unlock()
			p.out.attach(ctx)
			return p, nil
		}
		h.pending.Go(p.kill)
	}
	h.pending.Add(1)
	h.mu.Unlock()
	defer h.pending.Done()

	p, err := h.launch(ctx, c.Name, c.Path, c.args...)
	if err != nil {
		return nil, fmt.Errorf("connector %s: %w", c.Name, err)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		p.kill()
		return nil, errors.New("plugin host is closed")
	}
	h.busy[p] = struct{}{}
	p.out.attach(ctx)
	h.mu.Unlock()
	return p, nil
}

// pair records that src and dst exchange records directly, so a later pipe
// can pair them again.
func (h *Host) pair(src, dst *proc) {
	h.mu.Lock()
	src.peer, dst.peer = dst, src
	h.mu.Unlock()
}

// checkin returns a process to the pool, or stops it when it is broken,
// exited, or beyond the idle limit.
func (h *Host) checkin(name string, p *proc) {
	p.out.detach()
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.busy, p)
	switch {
	case h.closed:
		// Close found p busy and stops it itself.
	case !p.isBroken() && len(h.idle[name]) < h.opts.MaxIdle:
		p.idle = time.Now()
		h.idle[name] = append(h.idle[name], p)
	default:
		h.pending.Go(p.kill)
	}
}

// reap stops processes idle longer than IdleTimeout, until the host closes.
func (h *Host) reap() {
	t := time.NewTicker(max(h.opts.IdleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-h.done:
			return
		case now := <-t.C:
			h.mu.Lock()
			for name, ps := range h.idle {
				kept := ps[:0]
				for _, p := range ps {
					if now.Sub(p.idle) > h.opts.IdleTimeout || p.isBroken() {
						h.pending.Go(p.kill)
					} else {
						kept = append(kept, p)
					}
				}
				h.idle[name] = kept
			}
			h.mu.Unlock()
		}
	}
}

// tail keeps the last lines a plugin wrote to stderr, to explain a crash.
type tail struct {
	mu    sync.Mutex
	lines []string
}

const tailLines = 50

// add keeps line, dropping the oldest beyond tailLines.
func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

// lineWriter hands each complete line written to it to emit.
type lineWriter struct {
	mu   sync.Mutex
	part []byte
	emit func(line string)
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, b...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.emit(string(w.part[:i]))
		w.part = w.part[i+1:]
	}
}

// fatal returns the panic or fatal error line the plugin printed, if any.
func (t *tail) fatal() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") || strings.HasPrefix(l, "faucet connector: ") {
			return l
		}
	}
	return ""
}
