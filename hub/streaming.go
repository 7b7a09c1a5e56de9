package hub

import (
	"net/http"

	"github.com/scion-go/scion/hub/transport"
)

// streaming adapts a stream route's handler to lift the write timeout.
func streaming(h func(http.ResponseWriter, *http.Request, *Caller)) func(http.ResponseWriter, *http.Request, *Caller) {
	return func(w http.ResponseWriter, r *http.Request, c *Caller) {
		sw := transport.NewStreamingWriter(w)
		defer sw.Extend()
		h(sw, r, c)
	}
}
