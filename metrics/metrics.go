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
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is every collector the service updates.
type Metrics struct {
	Registry *prometheus.Registry

	HTTPRequests *prometheus.CounterVec   // route, method, status
	HTTPDuration *prometheus.HistogramVec // route, method
	BodyBytes    prometheus.Gauge         // request body bytes held or reserved, out of the server's budget
	// PreauthBodyBytes are those of requests not (yet) authenticated by a
	// bearer token, out of the pre-auth budget.
	PreauthBodyBytes prometheus.Gauge

	TaskCommands *prometheus.CounterVec // command, outcome
	TasksEntered *prometheus.CounterVec // status
	Answers      *prometheus.CounterVec // via, action: answers recorded, by the channel they came through
	MCPRequests  *prometheus.CounterVec // method, outcome: requests to /mcp
	A2ARequests  *prometheus.CounterVec // method, outcome: requests to /a2a, either binding
	Waiters      prometheus.Gauge       // long-polls and streams waiting on this replica
	// ParkedPolls are the long-polls among Waiters that wait on a connection
	// taken off the HTTP server, with no goroutine of their own;
	// ParkedIdle are the connections held the same way until their client
	// sends a request: new ones, and those of answered parked polls.
	ParkedPolls prometheus.Gauge
	ParkedIdle  prometheus.Gauge
	Wakeups     prometheus.Counter // wake-up entries read by the fan-in readers
	// WakeupsIgnored are wake-ups a waiter left aside unread: none of their
	// event types was one it waits for (?kinds=).
	WakeupsIgnored prometheus.Counter

	RedisCommands   *prometheus.CounterVec   // command
	RedisRoundTrips *prometheus.CounterVec   // pool: "requests", "wakeups" (fan-in reads and background workers) or "connect" (new connections' set-up)
	RedisErrors     *prometheus.CounterVec   // command
	RedisLatency    *prometheus.HistogramVec // pool

	HookEvents       *prometheus.CounterVec // outcome: stored, duplicate, signature_invalid, closed, rate_limited, not_found
	HookRedeliveries prometheus.Counter     // events delivered again after their visibility ran out
	HookDeadLetters  prometheus.Counter     // events moved to the dead-letter list
	HookPending      prometheus.Histogram   // a group's unacknowledged events, observed at each read

	Notify Notify // outbound notifications

	// ToolCalls are tool calls by outcome: started, replayed,
	// invalid_arguments, refused, not_found, unavailable, error. No label
	// names the tool: names are chosen by publishers, without bound.
	ToolCalls *prometheus.CounterVec

	// SlackInteractions are requests to the Slack interactions route, by
	// outcome: answered, unmapped, not_requester, closed, invalid, error,
	// signature_invalid, malformed, unread, challenge, ignored.
	SlackInteractions *prometheus.CounterVec
	Connections       Connections // provider sign-in

	// LogLinesSuppressed are log records held back because the same message
	// was written less than an interval before (a Redis outage repeats its
	// warnings on every retry).
	LogLinesSuppressed prometheus.Counter
}

// New makes a registry with every collector, plus the Go and process collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg := promauto.With(r)
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return reg.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	counter := func(name, help string) prometheus.Counter {
		return reg.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return reg.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	histograms := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return reg.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	m := &Metrics{
		Registry: r,

		HTTPRequests: counters("taskhook_http_requests_total", "HTTP requests by route template, method and status.",
			"route", "method", "status"),
		HTTPDuration: histograms("taskhook_http_request_duration_seconds", "HTTP request latency by route template.",
			[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 30, 60}, "route", "method"),
		BodyBytes: gauge("taskhook_http_body_bytes_reserved",
			"Bytes of the in-flight request body budget (TASKHOOK_MAX_INFLIGHT_BODY_BYTES) reserved by bodies being read or held."),
		PreauthBodyBytes: gauge("taskhook_http_preauth_body_bytes_reserved",
			"Bytes of the pre-auth body budget (TASKHOOK_MAX_PREAUTH_BODY_BYTES) reserved by bodies read before a bearer token is verified."),

		TaskCommands: counters("taskhook_task_commands_total", "Task commands by kind and outcome.", "command", "outcome"),
		TasksEntered: counters("taskhook_tasks_entered_total", "Tasks that entered each status through this replica.", "status"),
		Answers:      counters("taskhook_answers_total", "Answers recorded through this replica, by channel and action.", "via", "action"),
		MCPRequests: counters("taskhook_mcp_requests_total",
			"MCP requests by JSON-RPC method (\"other\" for one not served) and outcome (\"ok\", the JSON-RPC error code, or the HTTP status of a request refused before it was read).",
			"method", "outcome"),
		A2ARequests: counters("taskhook_a2a_requests_total",
			"A2A requests by method (SendMessage, GetTask, ...; either binding) and outcome (\"ok\" or the A2A error reason, such as TASK_NOT_FOUND).",
			"method", "outcome"),
		Waiters: gauge("taskhook_waiters", "Long-polls and event streams waiting on this replica."),
		ParkedPolls: gauge("taskhook_parked_polls",
			"Long-polls waiting on a connection taken off the HTTP server, with no goroutine of their own (counted in taskhook_waiters too)."),
		ParkedIdle: gauge("taskhook_parked_idle_connections",
			"Connections held with no goroutine until their client sends a request: new ones, and those of answered parked long-polls."),
		Wakeups: counter("taskhook_wakeups_total", "Wake-up entries read by the per-partition fan-in readers."),
		WakeupsIgnored: counter("taskhook_wakeups_ignored_total",
			"Wake-ups a waiting request left aside without reading: none of their event types was one it asked for."),

		RedisCommands:   counters("taskhook_redis_commands_total", "Redis commands sent, by command name.", "command"),
		RedisRoundTrips: counters("taskhook_redis_roundtrips_total", "Redis round trips (a pipeline counts once), by pool.", "pool"),
		RedisErrors:     counters("taskhook_redis_errors_total", "Redis commands that failed (not counting nil replies).", "command"),
		RedisLatency: histograms("taskhook_redis_roundtrip_seconds", "Redis round-trip latency by pool.",
			[]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .5, 1, 5}, "pool"),

		HookEvents:       counters("taskhook_hook_posts_total", "Posts to hook callback URLs by outcome.", "outcome"),
		HookRedeliveries: counter("taskhook_hook_redeliveries_total", "Hook events delivered again after their visibility ran out."),
		HookDeadLetters:  counter("taskhook_hook_dead_letters_total", "Hook events moved to the dead-letter list."),
		HookPending: reg.NewHistogram(prometheus.HistogramOpts{
			Name: "taskhook_hook_group_pending", Help: "Unacknowledged events of a hook's consumer group, observed at each read.",
			Buckets: []float64{0, 1, 5, 10, 50, 100, 500, 1000, 10000},
		}),

		ToolCalls: counters("taskhook_tool_calls_total",
			"Tool calls by outcome (started, replayed, invalid_arguments, refused, not_found, unavailable, error); no label names the tool.", "outcome"),

		SlackInteractions: counters("taskhook_slack_interactions_total",
			"Requests to the Slack interactions route by outcome (an answer each, for answers).", "outcome"),

		LogLinesSuppressed: counter("taskhook_log_lines_suppressed_total",
			"Log records not written because the same message was written less than an interval before; the next line of it counts them."),
	}
	m.Notify = newNotify(r)
	m.Connections = newConnections(r)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
