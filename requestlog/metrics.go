package requestlog

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskhook/taskhook/metrics"
)

// httpMetrics hands out the request counter and latency histogram of each
// route, method and status, looked up in the vectors once and then kept:
// a vector lookup hashes its labels and takes a lock on every request.
// It holds one entry per child the vectors hold, no more.
type httpMetrics struct {
	m        *metrics.Metrics
	children sync.Map // httpLabels -> httpChildren
}

type httpLabels struct {
	route, method string
	status        int
}

type httpChildren struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func (h *httpMetrics) observe(route, method string, status int, seconds float64) {
	key := httpLabels{route: route, method: method, status: status}
	c, ok := h.children.Load(key)
	if !ok {
		c, _ = h.children.LoadOrStore(key, httpChildren{
			requests: h.m.HTTPRequests.WithLabelValues(route, method, strconv.Itoa(status)),
			duration: h.m.HTTPDuration.WithLabelValues(route, method),
		})
	}
	ch := c.(httpChildren)
	ch.requests.Inc()
	ch.duration.Observe(seconds)
}
