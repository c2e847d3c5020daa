package metrics

import "github.com/prometheus/client_golang/prometheus"

// Triggers are the instruments of the --triggers file's triggers, each
// series labelled by the trigger's name and kind (webhook, object_arrival,
// schedule). A nil *Triggers counts nothing.
type Triggers struct {
	fires     *prometheus.CounterVec
	coalesced *prometheus.CounterVec
	failures  *prometheus.CounterVec
	healthy   *prometheus.GaugeVec
	active    prometheus.Gauge
}

// NewTriggers registers the trigger instruments on m's registry.
func (m *Metrics) NewTriggers() *Triggers {
	labels := []string{"trigger", "kind"}
	t := &Triggers{
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_trigger_fires_total",
			Help: "Runs a trigger started on this server.",
		}, labels),
		coalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_trigger_coalesced_total",
			Help: "Webhook fires that started no run: within debounce_secs of the last run, or a repeated dedupe_header value (replayed).",
		}, labels),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "faucet_trigger_failures_total",
			Help: "Fires that started no run because of an error (a config that does not load, a full queue, an unreachable history), and watcher steps that failed.",
		}, labels),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "faucet_trigger_healthy",
			Help: "1 while the trigger is healthy, 0 after 3 consecutive failures until it succeeds again.",
		}, labels),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "faucet_triggers_active",
			Help: "Enabled triggers of the --triggers file in force.",
		}),
	}
	m.reg.MustRegister(t.fires, t.coalesced, t.failures, t.healthy, t.active)
	return t
}

// Init makes every series of a trigger exist from its start, at zero.
func (t *Triggers) Init(trigger, kind string, healthy bool) {
	if t == nil {
		return
	}
	t.fires.WithLabelValues(trigger, kind)
	t.coalesced.WithLabelValues(trigger, kind)
	t.failures.WithLabelValues(trigger, kind)
	t.Health(trigger, kind, healthy)
}

// Fired counts a run a trigger started.
func (t *Triggers) Fired(trigger, kind string) {
	if t != nil {
		t.fires.WithLabelValues(trigger, kind).Inc()
	}
}

// Coalesced counts a fire that started no run, by design.
func (t *Triggers) Coalesced(trigger, kind string) {
	if t != nil {
		t.coalesced.WithLabelValues(trigger, kind).Inc()
	}
}

// Failed counts a fire or watcher step that failed.
func (t *Triggers) Failed(trigger, kind string) {
	if t != nil {
		t.failures.WithLabelValues(trigger, kind).Inc()
	}
}

// Health sets a trigger's health gauge.
func (t *Triggers) Health(trigger, kind string, ok bool) {
	if t == nil {
		return
	}
	v := 0.0
	if ok {
		v = 1
	}
	t.healthy.WithLabelValues(trigger, kind).Set(v)
}

// Active sets how many triggers are in force.
func (t *Triggers) Active(n int) {
	if t != nil {
		t.active.Set(float64(n))
	}
}

// Forget removes the series of a trigger no longer in force.
func (t *Triggers) Forget(trigger, kind string) {
	if t == nil {
		return
	}
	for _, v := range []*prometheus.CounterVec{t.fires, t.coalesced, t.failures} {
		v.DeleteLabelValues(trigger, kind)
	}
	t.healthy.DeleteLabelValues(trigger, kind)
}
