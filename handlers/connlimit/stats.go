package connlimit

import "github.com/prometheus/client_golang/prometheus"

// Reasons a connection is refused, the label of
// ticketd_connections_refused_total.
const (
	refusedTotal = "total"
	refusedPerIP = "per_ip"
)

// stats are a Listener's Prometheus metrics.
type stats struct {
	open         prometheus.GaugeFunc
	limit        *prometheus.GaugeVec
	refused      *prometheus.CounterVec
	acceptErrors prometheus.Counter
}

func newStats(l *Listener) *stats {
	s := &stats{
		open: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ticketd_connections_open",
			Help: "Client connections open on the API listener.",
		}, func() float64 { return float64(l.Open()) }),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ticketd_connections_limit",
			Help: "The API listener's connection caps (TICKETD_MAX_CONNS, TICKETD_MAX_CONNS_PER_IP); 0 is no cap.",
		}, []string{"scope"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketd_connections_refused_total",
			Help: "Connections closed at accept because a cap was reached, by cap (total, per_ip).",
		}, []string{"reason"}),
		acceptErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ticketd_accept_errors_total",
			Help: "Failed accepts on the API listener (EMFILE, ENFILE, ...), each retried after a backoff.",
		}),
	}
	s.limit.WithLabelValues(refusedTotal).Set(float64(l.limits.Total))
	s.limit.WithLabelValues(refusedPerIP).Set(float64(l.limits.PerIP))
	s.refused.WithLabelValues(refusedTotal)
	s.refused.WithLabelValues(refusedPerIP)
	return s
}

// Collectors are the listener's metrics, to register with the /metrics
// registry.
func (l *Listener) Collectors() []prometheus.Collector {
	return []prometheus.Collector{l.stats.open, l.stats.limit, l.stats.refused, l.stats.acceptErrors}
}
