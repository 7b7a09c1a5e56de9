package hub

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/httpapi"
)

// metrics are the Hub's Prometheus metrics, on a registry of its own so
// that several Hubs in one test process do not collide.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	dispatch *prometheus.HistogramVec
	created  prometheus.Counter
	queued   prometheus.Counter
	// channels counts the control channels brokers opened: beyond the
	// first of each broker, its reconnects.
	channels prometheus.Counter
	// jobs counts delegated Jobs by the cluster they ran on and how they
	// ended (refused, or a terminal state): the cluster label keeps a
	// spoke's results apart from the local cluster's ("ambient"). The
	// Jobs room counts in it and chooses its cluster label
	// (hub/jobs/metrics.go).
	jobs *prometheus.CounterVec
	// rtt is the control channels' heartbeat round trip; reconnects the
	// channels a broker opened again in this process (seenBrokers).
	rtt         prometheus.Histogram
	reconnects  prometheus.Counter
	seenBrokers sync.Map
	// createTime is a create's latency, from the request to the broker's
	// answer, by outcome (ok or the error code).
	createTime *prometheus.HistogramVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scion_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "scion_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
		dispatch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "scion_dispatch_duration_seconds", Help: "Hub-to-broker command latency by method.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .5, 1, 5, 30},
		}, []string{"method", "outcome"}),
		created: prometheus.NewCounter(prometheus.CounterOpts{Name: "scion_agents_created_total", Help: "Agents created."}),
		queued: prometheus.NewCounter(prometheus.CounterOpts{Name: "scion_dispatches_queued_total",
			Help: "Commands queued for an offline runtime broker."}),
		channels: prometheus.NewCounter(prometheus.CounterOpts{Name: "scion_broker_channels_opened_total",
			Help: "Control channels opened by runtime brokers; beyond one per broker, its reconnects."}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scion_jobs_total",
			Help: "Delegated Jobs by cluster and outcome (refused, succeeded, failed, cancelled, error)."}, []string{"cluster", "outcome"}),
	}
	m.rtt = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "scion_broker_channel_rtt_seconds",
		Help:    "Control-channel heartbeat round trip (ping to pong), all brokers.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}})
	m.reconnects = prometheus.NewCounter(prometheus.CounterOpts{Name: "scion_broker_reconnects_total",
		Help: "Control channels a runtime broker opened again after its first in this Hub process."})
	m.createTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "scion_agent_create_duration_seconds",
		Help:    "Agent create latency, from the request to the broker's answer, by outcome (ok or the error code).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"outcome"})
	m.reg.MustRegister(m.rtt, m.reconnects, m.createTime, &stateCollector{s: s})
	m.reg.MustRegister(m.requests, m.latency, m.dispatch, m.created, m.queued, m.channels, m.jobs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scion_brokers_connected", Help: "Brokers with a live control channel to this Hub."},
			func() float64 { return float64(s.sessions.Count()) }))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// wrap records every request's route pattern (never its raw path, which
// would explode the label space), status and latency, names the request
// (X-Request-Id on the answer) and hands it to logAccess.
func (m *metrics) wrap(h http.Handler, logAccess func(*http.Request, *httpapi.Access, int, time.Duration)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		acc := &httpapi.Access{ID: httpapi.RequestID(r)}
		w.Header().Set(api.HeaderRequestID, acc.ID)
		r = r.WithContext(httpapi.WithAccess(r.Context(), acc))
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		took := time.Since(start)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
		m.latency.WithLabelValues(route).Observe(took.Seconds())
		if logAccess != nil {
			logAccess(r, acc, rec.status, took)
		}
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets the WebSocket upgrade through the recorder.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := r.ResponseWriter.(http.Hijacker); ok {
		r.status = http.StatusSwitchingProtocols
		return h.Hijack()
	}
	return nil, nil, errors.New("hijack not supported")
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// createLabel labels a create's latency: ok, or the error's code.
func createLabel(err error) string {
	if err == nil {
		return "ok"
	}
	return api.AsError(err).Code
}
