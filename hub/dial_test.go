package hub_test

import (
	"context"
	"net/http"

	"github.com/coder/websocket"

	"github.com/scion-go/scion/wire"
)

// dialControl opens a control channel to the Hub as a broker would
// (header: the signed upgrade, see wire.SignHeaders). The broker dials
// with its own transport (broker/connect.go); the tests need only this.
func dialControl(ctx context.Context, url string, header http.Header, opts wire.Options) (*wire.Conn, *http.Response, error) {
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader:      header,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, resp, err
	}
	return wire.NewConn(ws, opts), resp, nil
}
