package testpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the shared test server's URL.
const EnvURL = "TEST_DATABASE_URL"

// Database creates an empty database on the shared test server for t and drops
// it when t ends. Without TEST_DATABASE_URL the test fails: the README's test
// command always provides a server, and a suite that quietly skips Postgres
// proves nothing about it.
func Database(t testing.TB) string {
	t.Helper()
	return create(t, "")
}

// Clone creates a database for t on the shared test server as a copy of the
// template database named template, and drops it when t ends: copying a
// prepared database costs a fraction of preparing one. The first caller on
// a server prepares the template with prepare, under an advisory lock, so
// concurrent test processes prepare it once; later callers, in this process
// or another, copy it as it is, so template must name its content (a hash of
// the migrations that built it, say).
func Clone(t testing.TB, template string, prepare func(ctx context.Context, url string) error) string {
	t.Helper()
	if err := templates.ensure(template, prepare); err != nil {
		t.Fatalf("prepare template database %s: %v", template, err)
	}
	return create(t, template)
}

// templates remembers the templates this process made sure exist.
var templates = &templateSet{done: map[string]error{}}

type templateSet struct {
	mu   sync.Mutex
	done map[string]error
}

// ensure creates template on the server unless it exists, once per process.
func (s *templateSet) ensure(template string, prepare func(ctx context.Context, url string) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err, ok := s.done[template]; ok {
		return err
	}
	err := createTemplate(template, prepare)
	s.done[template] = err
	return err
}

// createTemplate prepares the template in a database of its own and renames
// it into place, so a template that exists is complete.
func createTemplate(template string, prepare func(ctx context.Context, url string) error) error {
	base, err := serverURL()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", template); err != nil {
		return err
	}
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", template).Scan(&exists); err != nil || exists {
		return err
	}
	building := template + "_building"
	for _, stmt := range []string{"DROP DATABASE IF EXISTS " + building + " WITH (FORCE)", "CREATE DATABASE " + building} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	u.Path = "/" + building
	if err := prepare(ctx, u.String()); err != nil {
		return err
	}
	_, err = admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, template))
	return err
}

func serverURL() (string, error) {
	base := os.Getenv(EnvURL)
	if base == "" {
		return "", fmt.Errorf("%s is not set: run the tests with `go run github.com/go-task/task/v3/cmd/task test`, which starts a throwaway PostgreSQL server", EnvURL)
	}
	return base, nil
}

// create creates a database for t, a copy of template (empty: the server's
// default), and drops it when t ends.
func create(t testing.TB, template string) string {
	t.Helper()
	base, err := serverURL()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "faucet_test_" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to test postgres at %s: %v", EnvURL, err)
	}
	defer admin.Close(ctx)
	stmt := "CREATE DATABASE " + name
	if template != "" {
		stmt += " TEMPLATE " + template
	}
	if _, err := admin.Exec(ctx, stmt); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop test database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}
