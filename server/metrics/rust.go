package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The Rust faucet's serve exports its metrics as faucet_serve_*. This
// server exports them too, with the Rust names and labels, beside its own,
// so a dashboard or an alert written for the Rust faucet keeps working.
// Most are the same counts as faucet's own instruments, read from them at
// each scrape (rustFamily); the HTTP ones, labelled by route template, are
// instruments of their own (Metrics.rust).

// rustHTTP are the Rust faucet's request instruments, labelled by the
// matched route template (never the raw path, which would explode the
// series).
type rustHTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newRustHTTP() rustHTTP {
	return rustHTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_serve_requests_total",
			Help: "Requests by method, route template and status (the Rust faucet's name of these counts).",
		}, []string{"method", "path", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "faucet_serve_request_duration_seconds",
			Help:    "Request durations by method and route template (the Rust faucet's name of these durations).",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "path"}),
	}
}

// rustSource is one of faucet's instruments a Rust family reads: its
// children whose labels carry the where values, each becoming one series
// labelled fixed (the family's leading labels) then by the copied labels.
type rustSource struct {
	from   prometheus.Collector
	where  map[string]string
	fixed  []string
	copied []string
}

// rustFamily is a Rust-named family over faucet's instruments.
type rustFamily struct {
	desc    *prometheus.Desc
	kind    prometheus.ValueType
	sources []rustSource
}

// rustFamilies are the Rust faucet's serve metrics that faucet's own
// instruments already count.
func (m *Metrics) rustFamilies() []rustFamily {
	fam := func(name, help string, kind prometheus.ValueType, labels []string, sources ...rustSource) rustFamily {
		return rustFamily{desc: prometheus.NewDesc(name, help, labels, nil), kind: kind, sources: sources}
	}
	run, shard := map[string]string{"kind": "run"}, map[string]string{"kind": "shard"}
	return []rustFamily{
		fam("faucet_serve_runs_total", "Runs that reached a terminal status, by status and reason (faucet_runs_finished_total).",
			prometheus.CounterValue, []string{"status", "reason"}, rustSource{from: m.RunsFinished, copied: []string{"status", "reason"}}),
		fam("faucet_serve_runs_queued", "Runs waiting for an execution slot (faucet_runs_queued).",
			prometheus.GaugeValue, nil, rustSource{from: m.QueueDepth}),
		fam("faucet_serve_runs_in_flight", "Runs executing now (faucet_runs_in_flight).",
			prometheus.GaugeValue, nil, rustSource{from: m.InFlight}),
		fam("faucet_serve_idempotency_hits_total", "Submissions replayed by their idempotency key (faucet_idempotency_replays_total).",
			prometheus.CounterValue, nil, rustSource{from: m.IdempotencyReplays}),
		fam("faucet_serve_runs_claimed_total", "Runs this instance claimed from the cluster (faucet_cluster_claims_total{kind=\"run\"}).",
			prometheus.CounterValue, nil, rustSource{from: m.ClusterClaims, where: run}),
		fam("faucet_serve_shards_claimed_total", "Shards this instance claimed from the cluster (faucet_cluster_claims_total{kind=\"shard\"}).",
			prometheus.CounterValue, nil, rustSource{from: m.ClusterClaims, where: shard}),
		fam("faucet_serve_runs_reclaimed_total", "Runs of dead members this instance requeued or failed as poison, by outcome.",
			prometheus.CounterValue, []string{"outcome"},
			rustSource{from: m.ClusterReclaims, where: run, fixed: []string{"requeued"}},
			rustSource{from: m.ClusterPoisoned, where: run, fixed: []string{"failed"}}),
		fam("faucet_serve_shards_reclaimed_total", "Shards of dead members this instance requeued or failed as poison, by outcome.",
			prometheus.CounterValue, []string{"outcome"},
			rustSource{from: m.ClusterReclaims, where: shard, fixed: []string{"requeued"}},
			rustSource{from: m.ClusterPoisoned, where: shard, fixed: []string{"failed"}}),
		fam("faucet_serve_cluster_enabled", "1 when this instance runs with --cluster.",
			prometheus.GaugeValue, nil, rustSource{from: m.clusterEnabled}),
		fam("faucet_serve_cluster_instances", "Cluster members alive at this instance's last heartbeat (faucet_cluster_members).",
			prometheus.GaugeValue, nil, rustSource{from: m.ClusterMembers}),
		fam("faucet_serve_history_degraded", "1 while the history database does not answer (GET /readyz says history unavailable or connecting).",
			prometheus.GaugeValue, nil, rustSource{from: m.historyDown}),
	}
}

// rustCollector serves the Rust families.
type rustCollector struct{ families []rustFamily }

func (c rustCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.families {
		ch <- f.desc
	}
}

func (c rustCollector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c.families {
		for _, src := range f.sources {
			for _, m := range collect(src.from) {
				labels := map[string]string{}
				for _, lp := range m.GetLabel() {
					labels[lp.GetName()] = lp.GetValue()
				}
				if !matches(labels, src.where) {
					continue
				}
				values := append([]string(nil), src.fixed...)
				for _, l := range src.copied {
					values = append(values, labels[l])
				}
				v := m.GetGauge().GetValue()
				if m.Counter != nil {
					v = m.GetCounter().GetValue()
				}
				ch <- prometheus.MustNewConstMetric(f.desc, f.kind, v, values...)
			}
		}
	}
}

// collect reads every series of c.
func collect(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var out []*dto.Metric
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) == nil {
			out = append(out, &d)
		}
	}
	return out
}

func matches(labels, where map[string]string) bool {
	for k, v := range where {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// SetCluster says whether this instance runs in a cluster.
func (m *Metrics) SetCluster(on bool) { m.clusterEnabled.Set(boolValue(on)) }

// SetHistoryDown says whether the history database answers.
func (m *Metrics) SetHistoryDown(down bool) { m.historyDown.Set(boolValue(down)) }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
