package hub

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/scion-go/scion/hub/transport"
)

// WatchConnections exports cl's counts in the Hub's /metrics: open
// connections, refusals by cap and connections closed to make room. Call
// it once, with the limiter the Hub serves on.
func (s *Server) WatchConnections(cl *transport.ConnLimiter) {
	s.metrics.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scion_connections_open", Help: "Client connections the Hub holds open."},
			func() float64 { return float64(cl.Stats().Open) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "scion_connections_refused_per_address_total",
			Help: "Connections refused because their client address held its cap."},
			func() float64 { return float64(cl.Stats().RefusedPerAddr) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "scion_connections_refused_total_cap_total",
			Help: "Connections refused at the global cap with no quiet connection to close."},
			func() float64 { return float64(cl.Stats().RefusedTotal) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "scion_connections_closed_to_make_room_total",
			Help: "Quiet connections and slow uploads closed at the global cap to admit a new one."},
			func() float64 { return float64(cl.Stats().Evicted) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "scion_uploads_closed_to_make_room_total",
			Help: "Connections receiving a request body (the slowest) closed at the global cap to admit a new one."},
			func() float64 { return float64(cl.Stats().EvictedUploads) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "scion_request_bodies_too_slow_total",
			Help: "Request bodies cut (their connection closed) for arriving too slowly."},
			func() float64 { return float64(cl.Stats().SlowBodies) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "scion_connections_refused_per_caller_total",
			Help: "Requests answered 429 because their caller held its cap of busy connections."},
			func() float64 { return float64(cl.Stats().RefusedPerCaller) }),
	)
}
