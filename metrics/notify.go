package metrics

import "github.com/prometheus/client_golang/prometheus"

// Notify is the collectors of outbound notifications (callbacks.Dispatcher).
type Notify struct {
	Deliveries    *prometheus.CounterVec // outcome: delivered, retried, dropped, endpoint_dead, dead_lettered, deferred, skipped
	Latency       prometheus.Histogram   // one attempt's HTTP round trip
	Lag           prometheus.Histogram   // from the event's commit to its delivery
	Attempts      prometheus.Histogram   // attempts a notification took, observed when it is settled for good
	DeadEndpoints prometheus.Counter     // endpoints marked dead (404, 410, a refused address)
	InFlight      prometheus.Gauge       // deliveries under way on this replica
	OutboxAge     prometheus.Gauge       // age of the oldest undelivered notification, seconds
	// Deferred counts deliveries that could not start at once because a
	// share of the delivery slots was taken (share: endpoint, owner, host;
	// never the owner or host itself, which are unbounded).
	Deferred *prometheus.CounterVec
	Waiting  prometheus.Gauge // deliveries waiting for their share on this replica
}

func newNotify(r *prometheus.Registry) Notify {
	n := Notify{
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskhook_notify_deliveries_total", Help: "Notification delivery attempts by outcome.",
		}, []string{"outcome"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "taskhook_notify_delivery_seconds", Help: "Notification delivery attempt latency (the receiver's answer).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		Lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "taskhook_notify_lag_seconds", Help: "From an event's commit to its notification's delivery.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 300, 3600},
		}),
		Attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "taskhook_notify_attempts", Help: "Attempts a notification took, observed when it is settled for good.",
			Buckets: []float64{1, 2, 3, 4, 5, 6, 7, 8, 10, 16},
		}),
		DeadEndpoints: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskhook_notify_dead_endpoints_total", Help: "Notification endpoints marked dead (404, 410, a refused address).",
		}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "taskhook_notify_in_flight", Help: "Notification deliveries under way on this replica.",
		}),
		OutboxAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "taskhook_notify_outbox_age_seconds", Help: "Age of the oldest undelivered notification.",
		}),
		Deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskhook_notify_deferred_total",
			Help: "Notification deliveries that could not start at once because their endpoint's, owner's or host's share of the slots was taken.",
		}, []string{"share"}),
		Waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "taskhook_notify_waiting", Help: "Notification deliveries waiting for their share of the slots.",
		}),
	}
	r.MustRegister(n.Deliveries, n.Latency, n.Lag, n.Attempts, n.DeadEndpoints, n.InFlight, n.OutboxAge, n.Deferred, n.Waiting)
	return n
}
