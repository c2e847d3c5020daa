package postgres_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// closedPort returns a loopback URL nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "postgres://postgres@" + addr + "/faucet?sslmode=disable"
}

// withRole rewrites a test database URL to log in as role.
func withRole(t *testing.T, raw, role string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "secret")
	return u.String()
}

// captureLogs routes the default slog logger into a buffer for the test.
func captureLogs(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, c := range []struct{ raw, names string }{
		{"postgres://postgres:s3cr3t@127.0.0.1:99999999/faucet", "99999999"},
		{"postgres://%zz:s3cr3t@host/db", "%zz"},
		{"postgresql://u:s3cr3t@host/db?sslmode=bogus", "sslmode"},
		{"mysql://u:s3cr3t@host/db", `unknown scheme "mysql"`},
		{"", "empty"},
	} {
		s, err := db.Open(t.Context(), c.raw, db.Options{})
		if !errors.Is(err, db.ErrBadURL) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%q) = %v, want ErrBadURL", c.raw, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.names) || strings.Contains(msg, "s3cr3t") {
			t.Errorf("Open(%q) error %q: want it to name %q and hide the password", c.raw, msg, c.names)
		}
	}
}

func TestOpenUnreachableRetriesThenGivesUp(t *testing.T) {
	logs := captureLogs(t)
	raw := closedPort(t)
	s, err := db.Open(t.Context(), raw, db.Options{ConnectBudget: 700 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("Open of an unreachable server succeeded")
	}
	if got := db.TransienceOf(err); got != db.Transient {
		t.Fatalf("unreachable server: verdict %v (%v), want transient", got, err)
	}
	// The error names the server it could not reach and why.
	addr := strings.TrimSuffix(strings.TrimPrefix(raw, "postgres://postgres@"), "/faucet?sslmode=disable")
	for _, want := range []string{addr, "connection refused", "gave up after"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("unreachable server: error %q does not say %q", err, want)
		}
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("no retry was logged for a transient failure:\n%s", logs)
	}
}

func TestOpenUnauthorizedFailsAtOnce(t *testing.T) {
	logs := captureLogs(t)
	raw := withRole(t, testpg.Database(t), "no_such_role")

	_, err := db.Open(t.Context(), raw, db.Options{})
	if err == nil {
		t.Fatal("Open with an unknown role succeeded")
	}
	if got := db.TransienceOf(err); got != db.Permanent {
		t.Fatalf("unknown role: verdict %v (%v), want permanent", got, err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("the error leaks the password: %v", err)
	}
	const why = `role "no_such_role" does not exist`
	if !strings.Contains(err.Error(), why) {
		t.Errorf("unknown role: error %q does not say %s", err, why)
	}
	if strings.Contains(logs.String(), "retrying") {
		t.Fatalf("a permanent failure was retried:\n%s", logs)
	}
}

func TestOpenMissingDatabaseIsPermanent(t *testing.T) {
	u, err := url.Parse(testpg.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_database"
	_, err = db.Open(t.Context(), u.String(), db.Options{})
	if db.TransienceOf(err) != db.Permanent {
		t.Fatalf("missing database: %v (verdict %v), want a permanent error", err, db.TransienceOf(err))
	}
	const why = `database "no_such_database" does not exist`
	if !strings.Contains(err.Error(), why) {
		t.Fatalf("missing database: error %q does not say %s", err, why)
	}
}

func TestDriverErrorsAreClassified(t *testing.T) {
	s, err := db.Open(t.Context(), testpg.Database(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The schema refuses an unknown status: a constraint violation, which no
	// retry can fix.
	err = s.RunSubmit(t.Context(), &db.RunRecord{RunID: "r1", Status: "bogus", SubmittedAt: time.Now()}, nil)
	if err == nil || db.TransienceOf(err) != db.Permanent {
		t.Fatalf("check violation: %v (verdict %v), want a permanent error", err, db.TransienceOf(err))
	}
}

// TestConnectionsKilled terminates the store's server connections under it:
// calls on a killed connection fail with a transient verdict, and the pool
// recovers on its own.
func TestConnectionsKilled(t *testing.T) {
	raw := testpg.Database(t)
	s, err := db.Open(t.Context(), raw, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := &db.RunRecord{RunID: "r1", Status: db.StatusQueued, SubmittedAt: time.Now()}
	if err := s.RunSubmit(t.Context(), rec, nil); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(t.Context(), os.Getenv(testpg.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(t.Context())
	var killed int
	err = admin.QueryRow(t.Context(),
		"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1",
		strings.TrimPrefix(u.Path, "/")).Scan(&killed)
	if err != nil || killed == 0 {
		t.Fatalf("terminate the store's connections: %d killed, %v", killed, err)
	}
	failures := 0
	for {
		got, err := s.RunGet(t.Context(), "r1")
		if err == nil {
			if got.Status != db.StatusQueued {
				t.Fatalf("read back %+v", got)
			}
			t.Logf("recovered after %d failed calls", failures)
			break
		}
		if db.TransienceOf(err) != db.Transient {
			t.Fatalf("call on a killed connection: %v (verdict %v), want transient", err, db.TransienceOf(err))
		}
		if failures++; failures > killed {
			t.Fatalf("still failing after %d calls: %v", failures, err)
		}
	}
}
