package wire

import (
	"context"
	"net/http"

	"github.com/coder/websocket"
)

// What the tests reach that the package itself does not.

// lookup is the pending call id, or nil.
func (c *Conn) lookup(id uint64) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[id]
}

// decodeFrames calls fn with each frame of a message: one frame, or
// several separated by whitespace (the writer batches queued frames into
// one message, joined by newlines). Frames do not share memory with data.
func decodeFrames(data []byte, fn func(*Frame) error) error {
	return decodeFramesInto(data, new(Frame), nil, fn)
}

// dial opens a control channel as a broker would (header: the signed
// upgrade). The broker dials with its own transport (broker/connect.go).
func dial(ctx context.Context, url string, header http.Header, opts Options) (*Conn, *http.Response, error) {
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader:      header,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, resp, err
	}
	return NewConn(ws, opts), resp, nil
}
