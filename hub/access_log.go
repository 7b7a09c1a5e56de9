package hub

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/scion-go/scion/hub/httpapi"
)

// probeRoutes are what load balancers and Prometheus poll: logged at
// debug, so the access log shows what people and brokers did.
var probeRoutes = map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /metrics": true}

// accessLog is the access log's line writer (nil when Options.AccessLog
// is off). A line names the route pattern and the path, never the query
// string (a redirect's code or state) or a header; the caller is the
// authenticated principal, empty for a request refused before that.
func (s *Server) accessLog() func(*http.Request, *httpapi.Access, int, time.Duration) {
	if !s.opts.AccessLog {
		return nil
	}
	return func(r *http.Request, a *httpapi.Access, status int, took time.Duration) {
		level := slog.LevelInfo
		if probeRoutes[r.Pattern] {
			level = slog.LevelDebug
		}
		if !s.log.Enabled(context.Background(), level) {
			return
		}
		s.log.LogAttrs(context.Background(), level, "request",
			slog.String("request_id", a.ID), slog.String("method", r.Method), slog.String("route", r.Pattern),
			slog.String("path", r.URL.Path), slog.Int("status", status),
			slog.Float64("ms", float64(took.Microseconds())/1000), slog.String("caller", a.Caller()),
			slog.String("remote", r.RemoteAddr))
	}
}
