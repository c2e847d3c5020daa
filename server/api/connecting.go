package api

import (
	"encoding/json"
	"net/http"

	"github.com/faucet-dev/faucet/server/metrics"
)

// Connecting is the API while the server has not reached its history
// database yet: /healthz answers 200 (the process is alive), /readyz 503
// with history "connecting", /metrics as always, and every other route 503
// unavailable, so nothing is accepted that could not be kept.
func Connecting(cluster bool, m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, HealthStatus{Status: "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusServiceUnavailable, ReadyStatus{
			Status: "not_ready", History: HistoryConnecting, QueueOK: true, Cluster: ClusterStatus{Enabled: cluster},
		})
	})
	if m != nil {
		m.SetCluster(cluster)
		m.SetHistoryDown(true)
		mux.Handle("GET /metrics", m.Handler())
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		p := errUnavailable("the run history database has not been reached yet; the server keeps trying, retry later").
			WithHeader("Retry-After", "5")
		p.Instance = r.URL.Path
		WriteProblem(w, p)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
