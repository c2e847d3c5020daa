package db

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
)

// Dialect is a database faucet can keep its history in. The dialect packages
// (db/postgres, db/sqlite) register themselves from init, the way database/sql
// drivers do, because they import this package for its types.
type Dialect struct {
	// Name is the dialect's name: "postgres" or "sqlite".
	Name string
	// Open connects to dsn, migrates the schema up (db.MigrateUp) and returns
	// a Store. Open passes opts with their defaults applied. Every error it
	// returns carries a transience verdict (*Error) or wraps ErrBadURL or
	// ErrSchemaTooNew.
	Open func(ctx context.Context, dsn string, opts Options) (Store, error)
	// Migrator returns a goose provider over the dialect's embedded migrations
	// connected to dsn, for `faucet migrate`; closing the Closer releases the
	// connection. opts are appended to the dialect's own provider options
	// (tests register a future Go migration to fake a newer schema).
	Migrator func(ctx context.Context, dsn string, opts ...goose.ProviderOption) (*goose.Provider, io.Closer, error)
}

var (
	dialectsMu sync.RWMutex
	dialects   = map[string]Dialect{}
)

// Register makes a dialect available to Open. It panics on a duplicate name,
// which can only be a programming error.
func Register(d Dialect) {
	dialectsMu.Lock()
	defer dialectsMu.Unlock()
	if _, dup := dialects[d.Name]; dup {
		panic("db: dialect registered twice: " + d.Name)
	}
	dialects[d.Name] = d
}

// LookupDialect returns a registered dialect.
func LookupDialect(name string) (Dialect, error) {
	dialectsMu.RLock()
	defer dialectsMu.RUnlock()
	d, ok := dialects[name]
	if !ok {
		names := make([]string, 0, len(dialects))
		for n := range dialects {
			names = append(names, n)
		}
		sort.Strings(names)
		return Dialect{}, fmt.Errorf("%w: dialect %q is not compiled in (have: %s)", ErrBadURL, name, strings.Join(names, ", "))
	}
	return d, nil
}

// MemoryDSN is the SQLite DSN of a private in-memory database.
const MemoryDSN = ":memory:"

// ParseURL splits a history URL into its dialect and the DSN that dialect
// understands. Accepted forms: "memory" (in-memory SQLite), "sqlite:PATH",
// "sqlite://PATH", "postgres://…" and "postgresql://…".
func ParseURL(raw string) (dialect, dsn string, err error) {
	switch {
	case raw == "memory":
		return "sqlite", MemoryDSN, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return "postgres", raw, nil
	case strings.HasPrefix(raw, "sqlite://"):
		dsn = strings.TrimPrefix(raw, "sqlite://")
	case strings.HasPrefix(raw, "sqlite:"):
		dsn = strings.TrimPrefix(raw, "sqlite:")
	case raw == "":
		return "", "", fmt.Errorf("%w: empty", ErrBadURL)
	default:
		scheme, _, found := strings.Cut(raw, ":")
		if !found {
			return "", "", fmt.Errorf("%w %q: want memory, sqlite:PATH, sqlite://PATH, postgres://… or postgresql://…", ErrBadURL, RedactURL(raw))
		}
		return "", "", fmt.Errorf("%w %q: unknown scheme %q (want memory, sqlite:, postgres: or postgresql:)", ErrBadURL, RedactURL(raw), scheme)
	}
	if dsn == "" {
		return "", "", fmt.Errorf("%w %q: missing SQLite file path", ErrBadURL, RedactURL(raw))
	}
	return "sqlite", dsn, nil
}

// redacted replaces a secret in RedactURL's output.
const redacted = "xxxxx"

// RedactURL returns raw fit for an error message or a log line: the password
// of a URL's userinfo and the value of a password query parameter are
// replaced. Input that does not parse as a URL with userinfo (a missing "//",
// a stray character) has everything between its scheme and its last "@"
// replaced, since that span may hold a password the parser did not see.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && (u.User != nil || !strings.Contains(raw, "@")) {
		secret := false
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redacted)
			secret = true
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", redacted)
			u.RawQuery = q.Encode()
			secret = true
		}
		if !secret {
			return raw
		}
		return u.String()
	}
	if at := strings.LastIndex(raw, "@"); at >= 0 {
		start := 0
		if i := strings.Index(raw, "://"); i >= 0 && i < at {
			start = i + len("://")
		} else if i := strings.Index(raw, ":"); i >= 0 && i < at {
			start = i + 1
		}
		raw = raw[:start] + redacted + raw[at:]
	}
	return redactPasswordParams(raw)
}

// redactPasswordParams replaces the value of the password parameters in the
// query of a URL the parser refused.
func redactPasswordParams(raw string) string {
	base, query, found := strings.Cut(raw, "?")
	if !found {
		return raw
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		if strings.HasPrefix(p, "password=") {
			params[i] = "password=" + redacted
		}
	}
	return base + "?" + strings.Join(params, "&")
}

// Open opens the run-history store named by url (see ParseURL), migrated to
// the newest schema this binary knows.
//
// Transient or unclassified connection failures are retried with capped
// exponential backoff for opts.ConnectBudget; a permanent failure
// (authentication, a read-only file) returns at once. There is no fallback:
// a server keeps retrying Open itself and refuses work meanwhile, because a
// run acknowledged into a history that is not the configured one is lost.
// A malformed URL, a dialect that is not compiled in and a schema newer than
// this binary wrap ErrBadURL or ErrSchemaTooNew: usage errors, never worth
// a retry.
func Open(ctx context.Context, url string, opts Options) (Store, error) {
	name, dsn, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	d, err := LookupDialect(name)
	if err != nil {
		return nil, err
	}
	return connect(ctx, d, dsn, opts.WithDefaults())
}

// connect opens d, retrying retriable failures within opts.ConnectBudget.
func connect(ctx context.Context, d Dialect, dsn string, opts Options) (Store, error) {
	const (
		firstDelay = 100 * time.Millisecond
		maxDelay   = time.Second
	)
	deadline := time.Now().Add(opts.ConnectBudget)
	delay := firstDelay
	for attempt := 1; ; attempt++ {
		st, err := d.Open(ctx, dsn, opts)
		if err == nil {
			return st, nil
		}
		if !Retriable(err) || errors.Is(err, ErrBadURL) || errors.Is(err, ErrSchemaTooNew) {
			return nil, err
		}
		wait := min(delay, time.Until(deadline))
		if wait <= 0 {
			return nil, fmt.Errorf("open %s history: gave up after %d attempts in %s: %w", d.Name, attempt, opts.ConnectBudget, err)
		}
		slog.Warn("run history unreachable; retrying", "dialect", d.Name, "attempt", attempt, "retry_in", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("open %s history: %w (last error: %v)", d.Name, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(delay*2, maxDelay)
	}
}

// WithDefaults fills the zero fields of o with their defaults (a fresh
// instance id, DefaultLeaseTTL, time.Now, DefaultConnectBudget).
func (o Options) WithDefaults() Options {
	if o.InstanceID == "" {
		o.InstanceID = NewInstanceID()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.ConnectBudget <= 0 {
		o.ConnectBudget = DefaultConnectBudget
	}
	return o
}

// NewInstanceID returns a fresh instance id: the host name, for operators
// reading the membership table, and a random suffix, so two instances on one
// host never share an id.
func NewInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "faucet"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}
