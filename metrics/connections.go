package metrics

import "github.com/prometheus/client_golang/prometheus"

// Connections is the collectors of provider sign-in (package connections).
type Connections struct {
	Signins *prometheus.CounterVec // outcome: authorized, declined, failed, rejected (the loop guard failed the task)
}

func newConnections(r *prometheus.Registry) Connections {
	c := Connections{
		Signins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskhook_signins_total", Help: "Provider sign-ins by outcome.",
		}, []string{"outcome"}),
	}
	r.MustRegister(c.Signins)
	return c
}
