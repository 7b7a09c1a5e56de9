package signin

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// providerTimeout bounds one call to the provider (discovery, the key
// set, a device or token request).
const providerTimeout = 15 * time.Second

// Client is the Hub's side of the device flow against one provider. It
// discovers the provider on first use and keeps it once discovery has
// worked. Safe for concurrent use.
type Client struct {
	cfg *Config
	hc  *http.Client
	log *slog.Logger

	mu       sync.Mutex // guards provider and the provider's styleOK
	provider *Provider
}

// NewClient is a client for cfg, logging its refusals (with a reason,
// never a token, code or secret) to log.
func NewClient(cfg *Config, log *slog.Logger) *Client {
	if log == nil {
		log = slog.Default()
	}
	return &Client{cfg: cfg, hc: &http.Client{Timeout: providerTimeout}, log: log}
}
