package db_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/sqlite"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		raw, dialect, dsn string
	}{
		{"memory", "sqlite", db.MemoryDSN},
		{"sqlite:history.db", "sqlite", "history.db"},
		{"sqlite:/var/lib/faucet/history.db", "sqlite", "/var/lib/faucet/history.db"},
		{"sqlite://history.db", "sqlite", "history.db"},
		{"sqlite:///var/lib/faucet/history.db", "sqlite", "/var/lib/faucet/history.db"},
		{"postgres://u:p@db.internal:5432/faucet?sslmode=require", "postgres", "postgres://u:p@db.internal:5432/faucet?sslmode=require"},
		{"postgresql://db.internal/faucet", "postgres", "postgresql://db.internal/faucet"},
	}
	for _, c := range cases {
		dialect, dsn, err := db.ParseURL(c.raw)
		if err != nil || dialect != c.dialect || dsn != c.dsn {
			t.Errorf("ParseURL(%q) = %q, %q, %v; want %q, %q", c.raw, dialect, dsn, err, c.dialect, c.dsn)
		}
	}
	for _, raw := range []string{"", "sqlite:", "sqlite://", "mysql://host/db", "history.db", "file:history.db"} {
		if _, _, err := db.ParseURL(raw); !errors.Is(err, db.ErrBadURL) {
			t.Errorf("ParseURL(%q) = %v, want ErrBadURL", raw, err)
		}
	}
}

// TestParseURLNeverShowsAPassword feeds ParseURL bad URLs holding the
// password "s3cr3t" in every place one can hide: the error must name the
// problem without it.
func TestParseURLNeverShowsAPassword(t *testing.T) {
	cases := []struct{ raw, names string }{
		{"mysql://admin:s3cr3t@db.internal:3306/faucet", "db.internal"},
		{"mysql://admin:s3cr3t@db.internal/faucet?password=s3cr3t", "db.internal"},
		{"mysql://db.internal/faucet?sslmode=off&password=s3cr3t", "sslmode=off"},
		{"postgress://admin:s3cr3t@db.internal/faucet", "postgress"},
		{"postgress://admin:s3cr3t@db internal/faucet", "db internal"},
		{"postgress://admin:s3%@db.internal/faucet?password=s3cr3t", "db.internal"},
		{"admin:s3cr3t@db.internal/faucet", "db.internal"},
		{"mysql:admin:s3cr3t@db.internal/faucet", "db.internal"},
	}
	for _, c := range cases {
		_, _, err := db.ParseURL(c.raw)
		if !errors.Is(err, db.ErrBadURL) {
			t.Errorf("ParseURL(%q) = %v, want ErrBadURL", c.raw, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "s3%") || !strings.Contains(msg, c.names) {
			t.Errorf("ParseURL(%q) error %q: want it to name %q and hide the password", c.raw, msg, c.names)
		}
	}
}

func TestRedactURL(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"postgres://u:p@db/faucet", "postgres://u:xxxxx@db/faucet"},
		{"postgres://u@db/faucet", "postgres://u@db/faucet"},
		{"postgres://db/faucet?password=p&sslmode=off", "postgres://db/faucet?password=xxxxx&sslmode=off"},
		{"sqlite:/var/lib/faucet/history db", "sqlite:/var/lib/faucet/history db"},
		{"u:p@db/faucet", "u:xxxxx@db/faucet"},
		{"x://u:p%@db/faucet", "x://xxxxx@db/faucet"},
		{"x://db/%zz?password=p&a=1&oldpassword=q", "x://db/%zz?password=xxxxx&a=1&oldpassword=q"},
	}
	for _, c := range cases {
		if got := db.RedactURL(c.raw); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

func TestLookupDialect(t *testing.T) {
	if _, err := db.LookupDialect("sqlite"); err != nil {
		t.Fatalf("sqlite is registered: %v", err)
	}
	_, err := db.LookupDialect("oracle")
	if !errors.Is(err, db.ErrBadURL) || !strings.Contains(err.Error(), "sqlite") {
		t.Fatalf("unknown dialect: %v, want ErrBadURL listing the compiled-in dialects", err)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	d, err := db.LookupDialect("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a dialect twice did not panic")
		}
	}()
	db.Register(d)
}

func TestOpenMemory(t *testing.T) {
	s, err := db.Open(t.Context(), "memory", db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Dialect() != "sqlite" || s.InstanceID() == "" {
		t.Fatalf("memory store: dialect %q, instance %q", s.Dialect(), s.InstanceID())
	}
}

func TestOpenBadURLIsAUsageError(t *testing.T) {
	for _, raw := range []string{"mysql://host/db", "sqlite:", ""} {
		if s, err := db.Open(t.Context(), raw, db.Options{}); !errors.Is(err, db.ErrBadURL) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%q) = %v, want ErrBadURL", raw, err)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	o := db.Options{}.WithDefaults()
	if o.InstanceID == "" || o.LeaseTTL != db.DefaultLeaseTTL || o.ConnectBudget != db.DefaultConnectBudget {
		t.Fatalf("defaults: %+v", o)
	}
	if a, b := db.NewInstanceID(), db.NewInstanceID(); a == b {
		t.Fatalf("two instance ids are equal: %q", a)
	}
	set := db.Options{InstanceID: "x", LeaseTTL: 1, ConnectBudget: 2}.WithDefaults()
	if set.InstanceID != "x" || set.LeaseTTL != 1 || set.ConnectBudget != 2 {
		t.Fatalf("WithDefaults overwrote set fields: %+v", set)
	}
}

func TestTransience(t *testing.T) {
	cause := errors.New("boom")
	cases := []struct {
		err       error
		want      db.Transience
		retriable bool
	}{
		{&db.Error{Op: "x", Transience: db.Transient, Err: cause}, db.Transient, true},
		{fmt.Errorf("wrapped: %w", &db.Error{Op: "x", Transience: db.Permanent, Err: cause}), db.Permanent, false},
		{cause, db.Unknown, true},
		{nil, db.Unknown, false},
	}
	for _, c := range cases {
		if got := db.TransienceOf(c.err); got != c.want {
			t.Errorf("TransienceOf(%v) = %v, want %v", c.err, got, c.want)
		}
		if got := db.Retriable(c.err); got != c.retriable {
			t.Errorf("Retriable(%v) = %v, want %v", c.err, got, c.retriable)
		}
	}
	e := &db.Error{Op: "run upsert", Transience: db.Transient, Err: cause}
	if !errors.Is(e, cause) || e.Error() != "run upsert: boom" {
		t.Fatalf("db.Error = %q, unwraps to cause: %v", e.Error(), errors.Is(e, cause))
	}
}

func TestRunRecordJSONShape(t *testing.T) {
	b, err := json.Marshal(db.RunRecord{RunID: "r1", Status: db.StatusQueued})
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"run_id", "name", "labels", "status", "submitted_at", "started_at", "finished_at",
		"elapsed_secs", "records_written", "invocations", "error", "idempotency_key", "attempt"} {
		if _, ok := wire[field]; !ok {
			t.Errorf("marshalled run lacks %q: %s", field, b)
		}
	}
	if _, ok := wire["labels"].(map[string]any); !ok {
		t.Errorf("labels = %v, want {}", wire["labels"])
	}
	if _, ok := wire["invocations"].([]any); !ok {
		t.Errorf("invocations = %v, want []", wire["invocations"])
	}
	for _, internal := range []string{"config_body", "doctor_report", "callback"} {
		if _, ok := wire[internal]; ok {
			t.Errorf("unset %q is marshalled: %s", internal, b)
		}
	}
}

func TestParseRunStatus(t *testing.T) {
	for _, s := range db.AllStatuses {
		got, err := db.ParseRunStatus(string(s))
		if err != nil || got != s {
			t.Errorf("ParseRunStatus(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := db.ParseRunStatus("done"); err == nil {
		t.Error("ParseRunStatus accepted an unknown status")
	}
	terminal := map[db.RunStatus]bool{db.StatusCompleted: true, db.StatusFailed: true, db.StatusCancelled: true}
	for _, s := range db.AllStatuses {
		if s.Terminal() != terminal[s] {
			t.Errorf("%s.Terminal() = %v", s, s.Terminal())
		}
	}
}
