package host

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/pipeline"
)

// maxKnownSecrets bounds the secrets a process's idle output is masked with:
// those of its most recent sessions.
const maxKnownSecrets = 64

// output routes the log lines of one plugin process. The pool hands a process
// to one session at a time, so what it logs meanwhile belongs to that
// session: it goes to the session's logger, the session's secrets masked.
// What it logs while idle goes to the host's log, masked of every secret its
// recent sessions handed it. A line that reaches faucet only after its
// session ended counts as idle output.
type output struct {
	host *slog.Logger
	// name is the connector's: the file name until its Spec names it.
	name atomic.Pointer[string]
	// argv is how the plugin is run (its executable, its arguments) and
	// launcher what runs it when that is another program (nice(1)), which
	// go-plugin's own lines would otherwise name instead.
	argv     []string
	launcher string
	session  atomic.Pointer[sessionOutput]
	// idle masks the idle output; nil masks nothing.
	idle atomic.Pointer[redact.Redactor]

	mu      sync.Mutex
	secrets []string // the known secrets, oldest first
	current []string // the secrets of the session in progress
}

// sessionOutput is where a session's lines go.
type sessionOutput struct {
	log    *slog.Logger
	redact *redact.Redactor
}

func newOutput(host *slog.Logger, name string, argv []string, launcher string) *output {
	o := &output{host: host, argv: argv, launcher: launcher}
	o.name.Store(&name)
	return o
}

// attach sends the process's output to the session ctx describes (see
// pipeline.SessionLog) until detach.
func (o *output) attach(ctx context.Context) {
	sl, _ := pipeline.SessionLogFrom(ctx)
	log := sl.Logger
	if log == nil {
		log = o.host
	}
	o.mu.Lock()
	o.current = sl.Secrets
	known := o.secrets
	o.mu.Unlock()
	o.session.Store(&sessionOutput{log: log, redact: redact.New(sl.Secrets, known)})
}

// detach ends the session: its secrets join those masked in idle output
// before the output stops going to the session.
func (o *output) detach() {
	o.mu.Lock()
	for _, s := range o.current {
		if s != "" && !slices.Contains(o.secrets, s) {
			o.secrets = append(o.secrets, s)
		}
	}
	o.secrets = o.secrets[max(0, len(o.secrets)-maxKnownSecrets):]
	o.current = nil
	o.idle.Store(redact.New(o.secrets))
	o.mu.Unlock()
	o.session.Store(nil)
}

// log writes one line of the process's output, tagged with its connector.
func (o *output) log(level slog.Level, msg string, args ...any) {
	log, r := o.host, o.idle.Load()
	if s := o.session.Load(); s != nil {
		log, r = s.log, s.redact
	}
	msg, args = r.String(msg), r.Args(args)
	log.Log(context.Background(), level, msg, append([]any{"connector", *o.name.Load()}, args...)...)
}

// stream returns a writer that logs each line written to it as the
// process's output on the named stream.
func (o *output) stream(name string) io.Writer {
	return &lineWriter{emit: func(line string) { o.log(slog.LevelInfo, line, "stream", name) }}
}

// hclog is go-plugin's logger for the process: its own lines about the
// process (see hostLine) and the log lines the plugin writes to stderr,
// which go-plugin relays under a sub-logger named after the executable.
func (o *output) hclog() hclog.Logger {
	l := hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Trace})
	l.RegisterSink(hclogSink{o})
	return l
}

type hclogSink struct{ out *output }

func (s hclogSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	var lvl slog.Level
	switch {
	case level >= hclog.Error:
		lvl = slog.LevelError
	case level >= hclog.Warn:
		lvl = slog.LevelWarn
	case level >= hclog.Info:
		lvl = slog.LevelInfo
	default:
		lvl = slog.LevelDebug
	}
	if name == "" {
		s.out.hostLine(lvl, msg, args...)
		return
	}
	s.out.log(lvl, msg, args...)
}

// hostLine logs one of go-plugin's own lines (starting the process, its
// address, its exit). They are about the pooled process rather than any
// run, so they go to the host's log, never to a session's; below a warning
// they are debug detail. They name the plugin's own executable, not the
// launcher that started it.
func (o *output) hostLine(level slog.Level, msg string, args ...any) {
	if level < slog.LevelWarn {
		level = slog.LevelDebug
	}
	args = slices.Clone(args)
	for i := 0; i+1 < len(args); i += 2 {
		switch v := args[i+1].(type) {
		case string:
			if o.launcher != "" && v == o.launcher && len(o.argv) > 0 {
				args[i+1] = o.argv[0]
			}
		case []string:
			if o.launcher != "" && len(v) > 0 && v[0] == o.launcher {
				args[i+1] = o.argv
			}
		}
	}
	r := o.idle.Load()
	msg, args = r.String(msg), r.Args(args)
	o.host.Log(context.Background(), level, msg, append([]any{"connector", *o.name.Load()}, args...)...)
}
