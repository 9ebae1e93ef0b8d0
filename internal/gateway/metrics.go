package gateway

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/store"
)

// metrics are the gateway's Prometheus metrics, served at /metrics.
type metrics struct {
	reg     *prometheus.Registry
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	// allowed are the series of a call allowed and answered with success, every call's but a
	// few: looked up once, not by their labels at every call.
	allowedCalls   prometheus.Counter
	allowedLatency prometheus.Observer
}

func newMetrics(st store.Consents) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "capgate_calls_total", Help: "Calls by decision outcome and error code (empty for success).",
		}, []string{"decision", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "capgate_call_duration_seconds", Help: "Time from a call's arrival at the broker to its answer.",
			Buckets: []float64{.0001, .00025, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"decision"}),
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "capgate_consents_pending", Help: "Consent requests waiting for the person.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cs, err := st.ListConsents(ctx, store.ConsentPending)
		if err != nil {
			return -1
		}
		return float64(len(cs))
	})
	allowed := string(policy.Allow)
	m.allowedCalls, m.allowedLatency = m.calls.WithLabelValues(allowed, ""), m.latency.WithLabelValues(allowed)
	m.reg.MustRegister(m.calls, m.latency, pending,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

var _ broker.Meter = (*metrics)(nil)

// CallDone counts a finished call: the broker's Meter.
func (m *metrics) CallDone(outcome, code string, took time.Duration) {
	if outcome == string(policy.Allow) && code == "" {
		m.allowedCalls.Inc()
		m.allowedLatency.Observe(took.Seconds())
		return
	}
	m.calls.WithLabelValues(outcome, code).Inc()
	m.latency.WithLabelValues(outcome).Observe(took.Seconds())
}
