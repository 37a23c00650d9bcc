// Package metrics holds the Prometheus collectors of one server instance. Each
// instance has its own registry, so tests can run many servers side by side.
// No label ever carries an id or a token.
//
// It imports nothing of the module.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is every collector the service updates.
type Metrics struct {
	Registry *prometheus.Registry

	HTTPRequests *prometheus.CounterVec   // route, method, status
	HTTPDuration *prometheus.HistogramVec // route, method
	BodyBytes    prometheus.Gauge         // request body bytes held or reserved, out of the server's budget

	TaskCommands *prometheus.CounterVec // command, outcome
	TasksEntered *prometheus.CounterVec // status
	Waiters      prometheus.Gauge       // long-polls and streams waiting on this replica
	Wakeups      prometheus.Counter     // wake-up entries read by the fan-in readers

	RedisCommands   *prometheus.CounterVec   // command
	RedisRoundTrips *prometheus.CounterVec   // pool: "requests", "wakeups" or "connect" (new connections' set-up)
	RedisErrors     *prometheus.CounterVec   // command
	RedisLatency    *prometheus.HistogramVec // pool

	HookEvents       *prometheus.CounterVec // outcome: stored, duplicate, signature_invalid, closed, rate_limited, not_found
	HookRedeliveries prometheus.Counter     // events delivered again after their visibility ran out
	HookDeadLetters  prometheus.Counter     // events moved to the dead-letter list
	HookPending      prometheus.Histogram   // a group's unacknowledged events, observed at each read

	Notify Notify // outbound notifications
}

// New makes a registry with every collector, plus the Go and process collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { r.MustRegister(c) }
	m := &Metrics{Registry: r}
	m.HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskhook_http_requests_total", Help: "HTTP requests by route template, method and status.",
	}, []string{"route", "method", "status"})
	m.HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "taskhook_http_request_duration_seconds", Help: "HTTP request latency by route template.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 30, 60},
	}, []string{"route", "method"})
	m.BodyBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "taskhook_http_body_bytes_reserved",
		Help: "Bytes of the in-flight request body budget (TASKHOOK_MAX_INFLIGHT_BODY_BYTES) reserved by bodies being read or held.",
	})
	m.TaskCommands = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskhook_task_commands_total", Help: "Task commands by kind and outcome.",
	}, []string{"command", "outcome"})
	m.TasksEntered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskhook_tasks_entered_total", Help: "Tasks that entered each status through this replica.",
	}, []string{"status"})
	m.Waiters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "taskhook_waiters", Help: "Long-polls and event streams waiting on this replica.",
	})
	m.Wakeups = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "taskhook_wakeups_total", Help: "Wake-up entries read by the per-partition fan-in readers.",
	})
	m.RedisCommands = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskhook_redis_commands_total", Help: "Redis commands sent, by command name.",
	}, []string{"command"})
	m.RedisRoundTrips = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskhook_redis_roundtrips_total", Help: "Redis round trips (a pipeline counts once), by pool.",
	}, []string{"pool"})
	m.RedisErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskhook_redis_errors_total", Help: "Redis commands that failed (not counting nil replies).",
	}, []string{"command"})
	m.RedisLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "taskhook_redis_roundtrip_seconds", Help: "Redis round-trip latency by pool.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .5, 1, 5},
	}, []string{"pool"})
	m.HookEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskhook_hook_posts_total", Help: "Posts to hook callback URLs by outcome.",
	}, []string{"outcome"})
	m.HookRedeliveries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "taskhook_hook_redeliveries_total", Help: "Hook events delivered again after their visibility ran out.",
	})
	m.HookDeadLetters = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "taskhook_hook_dead_letters_total", Help: "Hook events moved to the dead-letter list.",
	})
	m.HookPending = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "taskhook_hook_group_pending", Help: "Unacknowledged events of a hook's consumer group, observed at each read.",
		Buckets: []float64{0, 1, 5, 10, 50, 100, 500, 1000, 10000},
	})
	for _, c := range []prometheus.Collector{
		m.HTTPRequests, m.HTTPDuration, m.BodyBytes, m.TaskCommands, m.TasksEntered, m.Waiters, m.Wakeups,
		m.RedisCommands, m.RedisRoundTrips, m.RedisErrors, m.RedisLatency,
		m.HookEvents, m.HookRedeliveries, m.HookDeadLetters, m.HookPending,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	m.Notify = newNotify(r)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
