package wire

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"

	"github.com/coder/websocket"
)

// hijackBuf is the size of the read and write buffers Accept gives a
// connection, instead of net/http's 4 KiB each: the Hub holds one
// connection per broker, mostly idle, and frames are small. Large messages
// bypass the buffers (bufio reads and writes big slices directly), so this
// costs at most one extra syscall for frames between 1 and 4 KiB.
const hijackBuf = 1 << 10

// Accept upgrades an HTTP request to a control channel (the Hub side).
// Compression is off (frames are small, and per-connection deflate state
// would cost far more memory than it saves), and the connection's I/O
// buffers are small.
//
// Run the Conn on its own goroutine and return from the HTTP handler:
//
//	c, err := wire.Accept(w, r, opts)
//	if err != nil { return } // Accept has answered the request
//	c.Handle(...)
//	go func() { reason := c.Run(ctx); ... }()
//
// net/http then releases the request and its connection state, and the
// Run goroutine's stack stays shallow. An idle connection costs about half
// of what it does with Run inside the handler (see bench/wire).
func Accept(w http.ResponseWriter, r *http.Request, opts Options) (*Conn, error) {
	ws, err := websocket.Accept(smallBuffers{w}, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, err
	}
	return NewConn(ws, opts), nil
}

// smallBuffers is a ResponseWriter whose Hijack hands out small buffers.
type smallBuffers struct{ http.ResponseWriter }

func (s smallBuffers) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// Keep whatever the client sent right behind its request. It must end
	// up inside the new reader's buffer: coder/websocket re-seats the
	// reader on the bare conn, keeping only what is buffered.
	br := bufio.NewReaderSize(conn, hijackBuf)
	if n := brw.Reader.Buffered(); n > 0 {
		early, _ := brw.Reader.Peek(n)
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn), max(n, hijackBuf))
		if _, err := br.Peek(n); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	return conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, hijackBuf)), nil
}
