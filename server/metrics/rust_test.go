package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRustNames(t *testing.T) {
	m := New()
	m.RunFinished("completed", "ok", time.Second, 3)
	m.RunFinished("failed", "error", 0, 0)
	m.QueueDepth.Set(2)
	m.InFlight.Set(1)
	m.IdempotencyReplays.Inc()
	m.ClusterClaims.WithLabelValues("run").Add(4)
	m.ClusterClaims.WithLabelValues("shard").Add(5)
	m.Reclaimed("run", 2, 1)
	m.Reclaimed("shard", 3, 0)
	m.ClusterMembers.Set(3)
	m.SetCluster(true)
	m.SetHistoryDown(false)
	m.ObserveHTTP("get-run", "/v1/runs/{id}", "GET", "200", time.Millisecond)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	text := rec.Body.String()
	for _, want := range []string{
		`faucet_serve_runs_total{reason="ok",status="completed"} 1`,
		`faucet_serve_runs_total{reason="error",status="failed"} 1`,
		`faucet_serve_runs_queued 2`,
		`faucet_serve_runs_in_flight 1`,
		`faucet_serve_idempotency_hits_total 1`,
		`faucet_serve_runs_claimed_total 4`,
		`faucet_serve_shards_claimed_total 5`,
		`faucet_serve_runs_reclaimed_total{outcome="requeued"} 2`,
		`faucet_serve_runs_reclaimed_total{outcome="failed"} 1`,
		`faucet_serve_shards_reclaimed_total{outcome="requeued"} 3`,
		`faucet_serve_cluster_enabled 1`,
		`faucet_serve_cluster_instances 3`,
		`faucet_serve_history_degraded 0`,
		`faucet_serve_requests_total{method="GET",path="/v1/runs/{id}",status="200"} 1`,
		`faucet_serve_request_duration_seconds_count{method="GET",path="/v1/runs/{id}"} 1`,
		// faucet's own names stay.
		`faucet_runs_finished_total{reason="ok",status="completed"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	for _, own := range []string{"faucet_cluster_enabled ", "faucet_history_down "} {
		if strings.Contains(text, own) {
			t.Errorf("%s is exported under faucet's name too", own)
		}
	}
}
