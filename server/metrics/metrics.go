// Package metrics defines faucet serve's Prometheus metrics on a registry of
// its own, so several servers in one process (tests) never collide.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the server's instruments.
type Metrics struct {
	reg *prometheus.Registry

	RunsSubmitted      prometheus.Counter
	RunsFinished       *prometheus.CounterVec
	RunDuration        *prometheus.HistogramVec
	RecordsWritten     prometheus.Counter
	IdempotencyReplays prometheus.Counter
	QueueDepth         prometheus.Gauge
	InFlight           prometheus.Gauge
	HTTPDuration       *prometheus.HistogramVec

	// Cluster mode.
	ClusterClaims   *prometheus.CounterVec
	ClusterReclaims *prometheus.CounterVec
	ClusterPoisoned *prometheus.CounterVec
	ClusterMembers  prometheus.Gauge
	ShardsInFlight  prometheus.Gauge
	ShardsFinished  *prometheus.CounterVec
	ClusterShards   *prometheus.GaugeVec
	LeasesLost      *prometheus.CounterVec
	ClusterLeader   prometheus.Gauge

	// Log streams.
	LogFollowers prometheus.Gauge
	LogFeeds     prometheus.Gauge

	// CatalogWrites counts what finished runs recorded into the catalog.
	CatalogWrites *prometheus.CounterVec

	// Completion callbacks.
	CallbackDeliveries *prometheus.CounterVec
	CallbackAttempt    prometheus.Histogram
	CallbackLatency    prometheus.Histogram
	CallbacksInFlight  prometheus.Gauge

	// The Rust faucet's names of these counts (rust.go); the two gauges are
	// exported under those names only.
	rust           rustHTTP
	clusterEnabled prometheus.Gauge
	historyDown    prometheus.Gauge
}

// New registers every instrument, plus the Go runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg:            reg,
		rust:           newRustHTTP(),
		clusterEnabled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "faucet_cluster_enabled"}),
		historyDown:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "faucet_history_down"}),
		LogFollowers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_log_followers",
			Help: "Clients following a run's log stream (SSE) now.",
		}),
		CatalogWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_catalog_writes_total",
			Help: "Catalog writes of finished runs, by what was written (lineage: an invocation's datasets and edges; snapshot: a run's config) and outcome (ok, failed: logged, the run untouched).",
		}, []string{"kind", "outcome"}),
		LogFeeds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_log_feeds",
			Help: "Runs executed elsewhere whose persisted log one shared poller reads for this server's followers.",
		}),
		CallbackDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_callback_deliveries_total",
			Help: "Completion callback attempts this instance made, by result: delivered, retried (it will try again), failed (it gave up: the target refused it, or the attempts ran out).",
		}, []string{"result"}),
		CallbackAttempt: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faucet_callback_attempt_duration_seconds",
			Help:    "Duration of completion callback attempts, from connect to the target's answer.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		CallbackLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "faucet_callback_delivery_latency_seconds",
			Help:    "Time from a run's terminal record to its callback's delivery, retries included.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800},
		}),
		CallbacksInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_callbacks_in_flight",
			Help: "Completion callback attempts in progress on this instance.",
		}),
		RunsSubmitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faucet_runs_submitted_total",
			Help: "Runs accepted by POST /v1/runs (idempotency replays excluded).",
		}),
		RunsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_runs_finished_total",
			Help: "Runs that reached a terminal status, by status and reason (ok, error, cancelled, timeout, server_shutdown, recovered).",
		}, []string{"status", "reason"}),
		RunDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "faucet_run_duration_seconds",
			Help:    "Wall time of runs from start of execution to their terminal status.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}, []string{"status"}),
		RecordsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faucet_records_written_total",
			Help: "Records acknowledged by sinks across all runs.",
		}),
		IdempotencyReplays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "faucet_idempotency_replays_total",
			Help: "Submissions answered with an existing run because their idempotency key and payload matched.",
		}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_runs_queued",
			Help: "Runs accepted and waiting for an execution slot.",
		}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_runs_in_flight",
			Help: "Runs executing now.",
		}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "faucet_http_request_duration_seconds",
			Help:    "HTTP request durations by API operation, method and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation", "method", "code"}),
		ClusterClaims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_cluster_claims_total",
			Help: "Runs and shards this instance claimed from the cluster, by kind (run, shard).",
		}, []string{"kind"}),
		ClusterReclaims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_cluster_reclaims_total",
			Help: "Runs and shards whose owner's lease lapsed that this instance put back to pending, by kind.",
		}, []string{"kind"}),
		ClusterPoisoned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_cluster_poisoned_total",
			Help: "Runs and shards this instance failed as poison (their lease lapsed after --cluster-max-attempts takeovers, so on their last of max-attempts+1 executions), by kind.",
		}, []string{"kind"}),
		ClusterMembers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_cluster_members",
			Help: "Cluster members that heartbeated within the lease, as of this instance's last heartbeat.",
		}),
		ShardsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_cluster_shards_in_flight",
			Help: "Source shards executing on this instance now.",
		}),
		ShardsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_cluster_shards_finished_total",
			Help: "Source shards this instance executed to an end, by status (completed, failed, cancelled).",
		}, []string{"status"}),
		ClusterShards: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "faucet_cluster_shards",
			Help: "Source shards of the cluster's sharded runs still in progress, on every member, by state (pending, running, completed, failed, cancelled), as of this instance's last sweep.",
		}, []string{"state"}),
		LeasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_cluster_leases_lost_total",
			Help: "Runs and shards this instance stopped executing because its lease on them lapsed and another member took them over, by kind.",
		}, []string{"kind"}),
		ClusterLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_cluster_leader",
			Help: "1 while this instance holds the cluster's leader lease (it runs the reclaim, sharded-run and retention sweeps), else 0.",
		}),
	}
	reg.MustRegister(
		m.RunsSubmitted, m.RunsFinished, m.RunDuration, m.RecordsWritten,
		m.IdempotencyReplays, m.QueueDepth, m.InFlight, m.HTTPDuration,
		m.ClusterClaims, m.ClusterReclaims, m.ClusterPoisoned, m.ClusterMembers,
		m.ShardsInFlight, m.ShardsFinished, m.ClusterShards, m.LeasesLost, m.ClusterLeader, m.LogFollowers, m.LogFeeds, m.CatalogWrites,
		m.CallbackDeliveries, m.CallbackAttempt, m.CallbackLatency, m.CallbacksInFlight,
		m.rust.requests, m.rust.duration, rustCollector{families: m.rustFamilies()},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Handler serves the Prometheus text exposition of this registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ObserveHTTP records one request of an operation served at the route
// template path.
func (m *Metrics) ObserveHTTP(operation, path, method, code string, d time.Duration) {
	m.HTTPDuration.WithLabelValues(operation, method, code).Observe(d.Seconds())
	m.rust.requests.WithLabelValues(method, path, code).Inc()
	m.rust.duration.WithLabelValues(method, path).Observe(d.Seconds())
}

// RunFinished records a terminal run.
func (m *Metrics) RunFinished(status, reason string, d time.Duration, records int64) {
	m.RunsFinished.WithLabelValues(status, reason).Inc()
	if d > 0 {
		m.RunDuration.WithLabelValues(status).Observe(d.Seconds())
	}
	if records > 0 {
		m.RecordsWritten.Add(float64(records))
	}
}

// ClusterShardStates sets the cluster's shards of sharded runs in progress
// by state; every state is set, so one that emptied reads 0.
func (m *Metrics) ClusterShardStates(pending, running, completed, failed, cancelled int) {
	for state, n := range map[string]int{
		"pending": pending, "running": running, "completed": completed, "failed": failed, "cancelled": cancelled,
	} {
		m.ClusterShards.WithLabelValues(state).Set(float64(n))
	}
}

// Reclaimed records one reclaim pass over runs or shards (kind).
func (m *Metrics) Reclaimed(kind string, requeued, poisoned int) {
	if requeued > 0 {
		m.ClusterReclaims.WithLabelValues(kind).Add(float64(requeued))
	}
	if poisoned > 0 {
		m.ClusterPoisoned.WithLabelValues(kind).Add(float64(poisoned))
	}
}
