package db

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/pressly/goose/v3"
)

// Dialect is a database faucet can keep its history in. The dialect packages
// (db/postgres, db/sqlite) register themselves from init, the way database/sql
// drivers do, because they import this package for its types.
type Dialect struct {
	// Name is the dialect's name: "postgres" or "sqlite".
	Name string
	// Open connects to dsn, migrates the schema up and returns a Store.
	Open func(ctx context.Context, dsn string, opts Options) (Store, error)
	// Migrator returns a goose provider over the dialect's embedded migrations
	// connected to dsn, for `faucet migrate`; closing the Closer releases the
	// connection.
	Migrator func(ctx context.Context, dsn string) (*goose.Provider, io.Closer, error)
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
			return "", "", fmt.Errorf("%w %q: want memory, sqlite:PATH, sqlite://PATH, postgres://… or postgresql://…", ErrBadURL, raw)
		}
		return "", "", fmt.Errorf("%w %q: unknown scheme %q (want memory, sqlite:, postgres: or postgresql:)", ErrBadURL, raw, scheme)
	}
	if dsn == "" {
		return "", "", fmt.Errorf("%w %q: missing SQLite file path", ErrBadURL, raw)
	}
	return "sqlite", dsn, nil
}
