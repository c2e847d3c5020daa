package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// A server started while its Postgres is down serves HTTP at once but
// acknowledges nothing until the database answers; then it migrates,
// recovers and becomes ready without a restart. When the database stops
// again, reads and submits answer 503 unavailable, not 500, until it is
// back. The same holds in cluster mode.
func TestPostgresOutageAtStartAndMidFlight(t *testing.T) {
	ctx := context.Background()
	pg, err := testpg.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	// Durable commits, as on a production server: the throwaway server's
	// asynchronous ones would lose acknowledged runs to the stops. The
	// checkpoint makes the settings themselves survive the first stop.
	for _, stmt := range []string{"CREATE DATABASE solo", "CREATE DATABASE members",
		"ALTER DATABASE solo SET synchronous_commit = on", "ALTER DATABASE members SET synchronous_commit = on", "CHECKPOINT"} {
		if err := execSQL(pg.URL(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	solo := start(t, serverOpts{history: pg.DatabaseURL("solo"), dataDir: dataDir, bin: fastBin, unready: true})
	member := start(t, serverOpts{history: pg.DatabaseURL("members"), bin: fastBin, unready: true,
		args: []string{"--cluster", "--lease-ttl-secs", clusterLease, "--cluster-poll-secs", clusterPoll}})
	servers := []*server{solo, member}
	out := t.TempDir()
	submit := func(s *server, i int) string {
		b, _ := json.Marshal(client.SubmitRequest{Config: generateToFile(3, filepath.Join(out, fmt.Sprintf("%p-%d.jsonl", s, i)))})
		return string(b)
	}

	for _, s := range servers {
		if status, _, body := s.call("GET", "/healthz", ""); status != http.StatusOK {
			t.Fatalf("/healthz while connecting: %d %s", status, body)
		}
		if rs := s.ready(); rs.History != client.ReadyStatusHistoryConnecting || rs.HistoryOk || rs.Status != client.ReadyStatusStatusNotReady {
			t.Fatalf("/readyz while connecting: %+v", rs)
		}
		for _, c := range [][2]string{{"POST", "/v1/runs"}, {"GET", "/v1/runs"}, {"GET", "/v1/runs/x"}, {"GET", "/v1/audit"}} {
			body := ""
			if c[0] == "POST" {
				body = submit(s, 0)
			}
			if status, p, got := s.call(c[0], c[1], body); status != http.StatusServiceUnavailable || p.Error.Code != "unavailable" {
				t.Fatalf("%s %s while connecting: %d %s; want 503 unavailable", c[0], c[1], status, got)
			}
		}
	}

	if err := pg.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	ids := map[*server]string{}
	for _, s := range servers {
		awaitHistory(t, s, client.ReadyStatusHistoryReady)
		ids[s] = s.submit(client.SubmitRequest{Config: generateToFile(3, filepath.Join(out, fmt.Sprintf("%p-1.jsonl", s)))}).RunId
		if rec := s.await(ids[s], client.RunStatusCompleted); rec.RecordsWritten != 3 {
			t.Fatalf("run after the history came back: %+v", rec)
		}
	}

	// Mid-flight: every history read is 503, never 500.
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		id := ids[s]
		for _, c := range [][2]string{{"GET", "/v1/runs"}, {"GET", "/v1/runs/" + id}, {"GET", "/v1/runs/" + id + "/logs?format=jsonl"},
			{"GET", "/v1/audit"}, {"POST", "/v1/runs/" + id + "/cancel"}, {"DELETE", "/v1/runs/" + id}, {"POST", "/v1/runs"}} {
			body := ""
			if c[1] == "/v1/runs" && c[0] == "POST" {
				body = submit(s, 2)
			}
			if status, p, got := s.call(c[0], c[1], body); status != http.StatusServiceUnavailable || p.Error.Code != "unavailable" {
				t.Errorf("%s %s with Postgres stopped: %d %s; want 503 unavailable", c[0], c[1], status, got)
			}
		}
		if rs := s.ready(); rs.History != client.ReadyStatusHistoryUnavailable || rs.HistoryOk {
			t.Fatalf("/readyz with Postgres stopped: %+v", rs)
		}
	}
	if err := pg.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		awaitHistory(t, s, client.ReadyStatusHistoryReady)
		if rec := s.get(ids[s]); rec.Status != client.RunStatusCompleted {
			t.Fatalf("run after the outage: %+v", rec)
		}
	}
	// The run was kept by the database, not by the process.
	solo.stop()
	again := start(t, serverOpts{history: pg.DatabaseURL("solo"), dataDir: dataDir, bin: fastBin})
	if rec := again.get(ids[solo]); rec.Status != client.RunStatusCompleted || rec.RecordsWritten != 3 {
		t.Fatalf("run after a restart: %+v", rec)
	}
}

// awaitHistory polls /readyz until its history state is want.
func awaitHistory(t *testing.T, s *server, want client.ReadyStatusHistory) {
	t.Helper()
	testwait.Until(t, 2*time.Minute, func() error {
		if rs := s.ready(); rs.History != want {
			return fmt.Errorf("/readyz never said history %s: %+v\n%s", want, rs, s.stderr.String())
		}
		return nil
	})
}
